"""docs/ARCHITECTURE.md: ``rundir.RunDir`` is the only place that knows a run folder's layout. No other module
of the product spells the name of a run's file or folder; they ask ``RunDir`` for the path. (The comparison
grid's own folder, ``lab.compare.folder.GridDir``, and a model folder's ``config.json`` are other layouts.)"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("reference_impls", "lab", "app")
OWNER = ROOT / "reference_impls" / "rundir.py"
#: names that only a run folder has (``config.json`` is left out: a saved model folder has one too)
RUN_NAMES = ("status.json", "metrics.jsonl", "samples.jsonl", "warm_start.jsonl", "reference.safetensors",
             "pairs.jsonl", "episodes.jsonl", "trainer_state.json", "optimizer.pt", "checkpoints")


def spellings(path: Path) -> list[tuple[int, str]]:
    """String literals (f-string parts included) of ``path`` that name a run file, with their line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if text in RUN_NAMES or text.startswith("rng_rank"):
                found.append((node.lineno, text))
    return sorted(found)


def test_only_rundir_spells_the_run_folder_layout():
    offenders = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for pkg in PRODUCT
                 for path in sorted((ROOT / pkg).rglob("*.py")) if path != OWNER
                 for line, text in spellings(path)]
    assert not offenders, "ask RunDir for these paths:\n" + "\n".join(offenders)


def test_the_check_sees_a_spelled_run_file(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('from pathlib import Path\n\nrows = (Path("run") / "metrics.jsonl").read_text()\n'
                      'rng = Path("ckpt") / f"rng_rank{0}.pt"\nok = "metrics"\n')
    assert spellings(module) == [(3, "metrics.jsonl"), (4, "rng_rank")]
    assert spellings(OWNER)  # the owner itself spells them (so the check reads what it should)
