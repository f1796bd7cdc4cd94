"""Regression tests for issue 63 (hardening, round 4): BibTeX import in linear time and read as BibTeX reads it,
keys that differ only in case, two Import forms in one second, the source page, icon codes in deep links, one
trainer per run folder, crafted safetensors headers.

The sandbox's isolation of concurrent runs (item 9) is in tests/reference_impls/test_sandbox_isolation.py.
"""
from __future__ import annotations

import contextlib
import json
import re
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from papers.export import to_bibtex
from papers.importers import read_records
from papers.ingest import import_file
from papers.userstore import UserStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path):
    return UserStore(tmp_path / "user.sqlite")


def _bib(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.bib"
    path.write_text(text, encoding="utf-8")
    return path


# -- item 7: nested braces -----------------------------------------------------------------------------------
def test_bibtex_nested_braces_are_read_in_linear_time(tmp_path):
    """16 KB of nested braces in a title took 7 s to import (a quadratic unwrap, in the server process)."""
    depth = 8000  # a 16 KB title
    path = _bib(tmp_path, "@misc{deep, title = {" + "{" * depth + "Deep title" + "}" * depth + "}, year = {2025}}\n"
                "@misc{fine, title = {A fine title}}\n")
    t0 = time.perf_counter()
    records = list(read_records(path))
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0, f"{elapsed:.1f} s"
    assert [r.work.title for r in records] == ["Deep title", "A fine title"]


def test_a_100_kb_bibtex_title_is_refused_by_its_size_before_it_is_unwrapped(tmp_path):
    """100 KB of nested braces did not finish in 120 s. Read in a child process, so that a regression fails
    after 30 s instead of hanging the test run."""
    path = _bib(tmp_path, "@misc{huge, title = {" + "{" * 50_000 + "x" + "}" * 50_000 + "}}\n"
                          "@misc{fine, title = {A fine title}}\n")
    code = ("import sys, time\nfrom papers.importers import read_records\nt0 = time.perf_counter()\n"
            "records = list(read_records(sys.argv[1]))\nprint(time.perf_counter() - t0)\n"
            "for r in records:\n    print(r.error if r.error else r.work.title)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    elapsed, *lines = done.stdout.splitlines()
    assert float(elapsed) < 2.0 and done.returncode == 0, done.stderr
    assert lines == ["field 'title' is 100,001 characters long; at most 1,000 are allowed", "A fine title"]


# -- minor: '#' concatenation and @string ----------------------------------------------------------------------
def test_bibtex_concatenations_and_nested_strings_are_resolved(tmp_path):
    path = _bib(tmp_path, '@string{first = "Deep"}\n'
                          '@STRING{both = first # " Search"}\n'
                          '@misc{k1, title = both # { agents with } # "RL", year = 2025}\n'
                          '@misc{k2, title = {Planning in } # Jan # " " # 2025, year = 2025}\n'
                          '@misc{k3, title = {x} # nowhere, year = 2025}\n'
                          '@string{loop = loop # "x"}\n')
    records = list(read_records(path))
    assert [r.work.title for r in records[:2]] == ["Deep Search agents with RL", "Planning in January 2025"]
    assert records[2].work is None and records[2].error == "field 'title' uses @string 'nowhere', which is not defined"
    assert records[3].error == "@string 'loop' uses @string 'loop', which is not defined"


def test_bibtex_strings_cannot_blow_up_memory(tmp_path):
    """Each @string doubling the one before: 30 of them would be 2^30 times the first."""
    lines = ['@string{s0 = "' + "x" * 100 + '"}'] + [f"@string{{s{i} = s{i - 1} # s{i - 1}}}" for i in range(1, 31)]
    path = _bib(tmp_path, "\n".join(lines) + "\n@misc{k, title = s30}\n")
    t0 = time.perf_counter()
    records = list(read_records(path))
    assert time.perf_counter() - t0 < 2.0
    assert "once its @strings are resolved" in records[-1].error or "not defined" in records[-1].error


# -- minor: keys that differ only in case ------------------------------------------------------------------------
def test_a_key_differing_only_in_case_from_a_shipped_key_is_renamed(tmp_path, catalog, store):
    """`Search-R1` beside the shipped `search-r1` was stored as is: it took over `papers show Search-R1` (a key
    wins over a name) and BibTeX export wrote two entries BibTeX reads as one key."""
    assert "search-r1" in catalog
    path = _bib(tmp_path, "@misc{Search-R1, title = {A planted work with a shipped key}, year = 2025}\n"
                          "@misc{MINE, title = {My first work}, year = 2025}\n"
                          "@misc{mine, title = {My second work}, year = 2025}\n")
    report = import_file(path, catalog, store)
    assert report.added == 3
    keys = sorted(w.key for w in store.works())
    assert keys == ["MINE", "Search-R1-2", "mine-2"]
    merged = catalog.with_works(store.works())
    assert merged.resolve("Search-R1").key == "search-r1"
    exported = re.findall(r"^@\w+\{([^,]+),", to_bibtex(merged), re.M)
    assert len({k.lower() for k in exported}) == len(exported)
    # a later import keeps clear of the stored keys too, whatever their case
    again = _bib(tmp_path, "@misc{search-r1-2, title = {A third planted work}, year = 2025}\n")
    import_file(again, catalog, store)
    assert "search-r1-2-2" in {w.key for w in store.works()}


# -- item 8: two Import forms in the same second -------------------------------------------------------------------
def test_two_uploads_of_one_name_in_one_second_get_their_own_files(tmp_path, monkeypatch):
    from app.presentation import imports

    monkeypatch.setattr(time, "time", lambda: 1_767_000_000.0)
    first = imports.store_upload(tmp_path, "works.bib", b"@misc{a, title = {A}}")
    second = imports.store_upload(tmp_path, "works.bib", b"@misc{b, title = {B}}")
    assert first != second and first.read_bytes() != second.read_bytes()
    assert first.name.startswith("1767000000-") and first.suffix == ".bib" and first.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileNotFoundError):  # no other folder than the one given
        imports.store_upload(tmp_path / "missing", "../../x.csv", b"")


def test_two_import_forms_sent_at_once_both_keep_their_work(tmp_path, monkeypatch):
    """Both forms wrote uploads/<unix second>-form.csv: the second overwrote the first before it was read, so
    both imported the second's work (one of them as its duplicate) and the first work was lost."""
    from papers import ingest
    from test_app_pages import open_page

    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(time, "time", lambda: 1_767_000_000.0)  # the same second for both
    both_written = threading.Barrier(2, timeout=120)
    real_import = ingest.import_file

    def import_after_both_wrote(*args, **kwargs):
        both_written.wait()  # each form's file is written before either is read, as two browsers can do
        return real_import(*args, **kwargs)

    monkeypatch.setattr(ingest, "import_file", import_after_both_wrote)
    pages = [open_page("imports"), open_page("imports")]
    titles = ["Teaching a Lean prover with verifier rewards", "Web agents that plan their searches"]
    for page, title in zip(pages, titles):
        page.text_input[0].input(title)
        page.text_input[1].input("2026")
    threads = [threading.Thread(target=page.button[0].click().run) for page in pages]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for page in pages:
        assert not page.exception, [e.value for e in page.exception]
    assert sorted(w.title for w in UserStore().works()) == sorted(titles)
    uploads = sorted(p.name for p in (tmp_path / "data" / "uploads").iterdir())
    assert len(uploads) == 2 and all(name.startswith("1767000000-") for name in uploads), uploads


# -- minors: the source page ------------------------------------------------------------------------------------
@pytest.fixture
def fake_checkout(tmp_path, monkeypatch):
    from app.presentation import source

    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    (tmp_path / "lab" / "big.yaml").write_bytes(b"a: 1\n" * (2**20 // 5 + 1))  # just over 1 MiB
    (tmp_path / "lab" / "fine.py").write_text("x = 1\n")
    monkeypatch.setattr(source, "ROOT", tmp_path)
    return tmp_path


def test_the_source_page_names_a_file_that_is_not_utf8_or_too_large(fake_checkout):
    """A non-UTF-8 .py was a traceback on the page; a 30 MB yaml took 21 s to render (no size cap)."""
    from test_app_pages import open_page

    for path, message in (("lab/latin.py", "is not UTF-8 text"), ("lab/big.yaml", "at most 1 MiB")):
        at = open_page("source", path=path)
        assert not at.exception and any(message in w.value for w in at.warning), [w.value for w in at.warning]
        assert not at.code
    assert "x = 1" in open_page("source", path="lab/fine.py").code[0].value


def test_source_text_says_why_it_cannot_show_a_file(fake_checkout):
    from app.presentation.source import SourceUnreadable, source_text

    assert source_text("lab/fine.py") == "x = 1\n"
    with pytest.raises(SourceUnreadable, match=r"'lab/latin.py' is not UTF-8 text \(byte 0xe9 at line 1\)"):
        source_text("lab/latin.py")
    with pytest.raises(SourceUnreadable, match=r"'lab/big.yaml' is 1.0 MiB; the page shows files of at most 1 MiB"):
        source_text("lab/big.yaml")


# -- minors: icon codes from deep links ---------------------------------------------------------------------------
ICON_CODES = [":material/home:", "x :material/warning: y", ":smile:", "work:material/lock:"]


@pytest.mark.parametrize("text", ICON_CODES)
def test_md_escape_neutralises_icon_codes(text):
    """Streamlit renders :material/name: and :emoji: after escapes are resolved, so '\\:' did not stop them."""
    from app.presentation.common import md_escape

    rendered = md_escape(text).replace("\\", "")  # what the renderer sees once escapes are resolved
    assert not re.search(r":(material/)?[\w+-]+:", rendered), rendered
    assert rendered.replace("\u2060", "") == text  # nothing else changes: the text reads the same


def test_deep_links_with_icon_codes_show_them_as_text():
    from test_app_pages import open_page

    for view, param in (("work", "key"), ("taxonomy", "node")):
        at = open_page(view, **{param: ":material/home: planted"})
        shown = " ".join(w.value for w in at.warning)
        assert "planted" in shown and ":material/home:" not in shown.replace("\\", ""), shown


# -- minors: one trainer per run folder --------------------------------------------------------------------------
@contextlib.contextmanager
def held_by_another_process(folder: Path):
    """Another process holding ``folder`` (``RunDir.acquire_lock``) for the block; yields that process, killed
    after the block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom reference_impls.rundir import RunDir\n"
         f"lock = RunDir({str(folder)!r}).acquire_lock()\nprint('held', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_second_trainer_cannot_take_a_run_folder_that_one_holds(tmp_path):
    """Two `train --resume` of one run both trained into the same folder."""
    from reference_impls.rundir import RunDir, RunDirError

    with held_by_another_process(tmp_path) as holder:
        with pytest.raises(RunDirError, match=rf"another trainer is training into this run folder now "
                                              rf"\(process {holder.pid}\)"):
            RunDir(tmp_path).acquire_lock()
    with RunDir(tmp_path).acquire_lock():  # a dead holder's lock is gone
        with pytest.raises(RunDirError):
            RunDir(tmp_path).acquire_lock()  # and one holder at a time, in one process too
    RunDir(tmp_path).acquire_lock().release()
    assert list(tmp_path.iterdir()) == []  # nothing added to the run's layout


# -- minors: crafted safetensors ------------------------------------------------------------------------------------
def _safetensors(path: Path, header: dict, data_bytes: int) -> Path:
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + data_bytes)  # sparse: no disk is used for the data
    return path


def test_a_crafted_safetensors_checkpoint_is_refused_before_loading(tmp_path):
    """A valid header and 6 GB of sparse data made the resume's loader raise MemoryError, which its handler for
    damaged checkpoints did not catch."""
    import torch
    from safetensors.torch import save_file

    from reference_impls.rundir import RunDir

    shapes = {"w": (3, 4), "b": (4,)}
    good = tmp_path / "good.safetensors"
    save_file({"w": torch.zeros(3, 4), "b": torch.ones(4)}, str(good))
    assert RunDir.weights_problem(good) is None and RunDir.weights_problem(good, shapes) is None
    n = 6 * 2**30 // 4
    huge = _safetensors(tmp_path / "huge.safetensors", {"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}},
                        4 * n)
    assert RunDir.weights_problem(huge, shapes) == "huge.safetensors: tensor 'w' has shape [1610612736]; the model's is [3, 4]"
    planted = _safetensors(tmp_path / "planted.safetensors",
                           {"extra": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}, 4 * n)
    assert "tensor 'extra' is not one of the model's" in RunDir.weights_problem(planted, shapes)
    short = _safetensors(tmp_path / "short.safetensors", {"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}},
                         8)
    assert RunDir.weights_problem(short) == "short.safetensors: its header describes 48 bytes of tensors; the file holds 8"
    liar = tmp_path / "liar.safetensors"
    liar.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    assert "header length says 1,099,511,627,776 bytes" in RunDir.weights_problem(liar)
    lying_range = _safetensors(tmp_path / "range.safetensors",
                               {"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 4 * n]}}, 4 * n)
    assert "needs 48" in RunDir.weights_problem(lying_range)


def test_train_resume_of_a_held_run_folder_is_refused(tmp_path, capsys):
    """The trainer holds its run folder: a second `train --resume` while another process holds it gets an error line
    and exit 2, trains nothing; once the holder is gone the same resume runs (and an in-process caller's own hold
    is released when main returns)."""
    from reference_impls.train import main

    out = tmp_path / "run"
    args = ["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--group-size", "2", "--prompts-per-step", "1",
            "--max-completion-tokens", "8", "--out", str(out)]
    assert main([*args, "--steps", "1"]) == 0
    with held_by_another_process(out) as holder:
        capsys.readouterr()
        assert main(["--resume", str(out), "--steps", "2"]) == 2
        assert f"process {holder.pid}" in capsys.readouterr().err
        assert json.loads((out / "status.json").read_text())["step"] == 1
    assert main(["--resume", str(out), "--steps", "2"]) == 0
    assert json.loads((out / "status.json").read_text())["step"] == 2
