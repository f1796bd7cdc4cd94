"""The README is a newcomer's first screen and stays true: short, every link and image it shows exists (and so
does every relative link in docs/), every `make` target it names is the Makefile's, and every command it shows
is one its CLI accepts."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def section(text: str, heading: str) -> list[str]:
    """The non-empty lines under a ``## heading`` up to the next heading."""
    body = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if line.strip()]


def readme_commands() -> list[list[str]]:
    """The README's shell commands: the lines of its ```bash blocks, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    return [shlex.split(line.split("#", 1)[0].split(">", 1)[0]) for block in blocks for line in block.splitlines()
            if line.split("#", 1)[0].strip()]


def test_readme_fits_a_first_screen_and_says_the_comparison_in_a_few_lines():
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    compare = section(text, "What the comparison found")
    assert 0 < len(compare) <= 6
    assert "](docs/compare.md)" in " ".join(compare)
    assert not re.search(r"\bp\s*[<=]|Holm p", " ".join(compare)), "p-values live in docs/compare.md"


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").rglob("*.md"))], ids=lambda p: p.name)
def test_relative_links_and_images_exist(doc):
    missing = []
    for target in LINK.findall(without_code_blocks(doc.read_text())):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if path and not (doc.parent / path).exists():
            missing.append(target)
    assert not missing, f"{doc.relative_to(ROOT)} links to missing files: {missing}"


def test_make_targets_named_in_the_readme_exist():
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    named = {cmd[1] for cmd in readme_commands() if cmd[0] == "make"}
    named |= set(re.findall(r"`make (\w+)", README.read_text()))
    assert {"app", "test"} <= named <= targets


def test_readme_commands_are_accepted_by_their_clis():
    """Each ``python -m MODULE [SUBCOMMAND] --options`` line: ``--help`` of that command answers, and lists every
    option the line uses."""
    checked = 0
    for cmd in readme_commands():
        if cmd[0] == "make":
            continue
        assert cmd[0] == ".venv/bin/python" and cmd[1] == "-m", cmd
        module, rest = cmd[2], cmd[3:]
        sub = [rest[0]] if rest and not rest[0].startswith("-") and module in ("papers", "lab.compare") else []
        r = subprocess.run([sys.executable, "-m", module, *sub, "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
        for option in (a.split("=", 1)[0] for a in rest if a.startswith("--")):
            assert option in r.stdout, f"{' '.join(cmd)}: {option} is not an option of {module} {' '.join(sub)}"
        checked += 1
    assert checked >= 5
