"""The README's "Validate your own policy in five minutes" runs as written.

The long tier runs it at the README's own sizes and compares every line it shows; the fast
tier runs the same files and commands on a few sessions, and checks what they must say
(the first policy caught with its counterexamples, the second safe, the pytest example
green). With ``CTXPROOF_UPDATE_GOLDEN=1`` the outputs shown in the README are replaced by
what the commands print now (review the diff).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parents[2]
SECONDS = re.compile(r", \d+(\.\d+)? s$")


def _section() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    start = text.index("## Validate your own policy in five minutes")
    end = text.index("\n## ", start + 10)
    return text[start:end]


def _blocks(section: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w+)\n(.*?)```", section, re.S)]


def _written(tmp_path: Path) -> list[str]:
    """The README's two Python files written to tmp_path; its console blocks."""
    blocks = _blocks(_section())
    files = [b for lang, b in blocks if lang == "python"]
    assert len(files) == 2
    for body in files:
        name = body.splitlines()[0].removeprefix("# ").strip()
        (tmp_path / name).write_text(body, "utf-8")
    commands = [b for lang, b in blocks if lang == "console"]
    assert len(commands) == 4
    return commands


def _pytest(tmp_path: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_walkthrough_runs_on_a_few_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    commands = _written(tmp_path)
    said: list[tuple[int, str]] = []
    for block in commands:
        command = block.splitlines()[0].removeprefix("$ ").split()
        if command[0] == "pytest":
            test = tmp_path / command[-1]
            test.write_text(re.sub(r"sessions=\d+", "sessions=3", test.read_text("utf-8")))
            _pytest(tmp_path, command[1:])
            continue
        if "--sessions" in command:
            command[command.index("--sessions") + 1] = "4"
        out, err = io.StringIO(), io.StringIO()
        said.append((main(command[1:], stdout=out, stderr=err), out.getvalue()))
    (caught, first), (replayed, _), (safe, second) = said
    assert caught == 1 and "CF001 commitment-dropped" in first and "shrunk: fuzz-out/cex-" in first
    assert replayed == 1  # the counterexample the README audits replays with its finding
    assert safe == 0 and "no findings" in second and "saved" in second


@pytest.mark.slow
def test_the_walkthrough_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    commands = _written(tmp_path)
    updated: dict[str, str] = {}
    for block in commands:
        lines = block.rstrip("\n").splitlines()
        command, shown = lines[0].removeprefix("$ ").split(), lines[1:]
        if command[0] == "pytest":
            _pytest(tmp_path, command[1:])
            continue
        out, err = io.StringIO(), io.StringIO()
        code = main(command[1:], stdout=out, stderr=err)
        assert code in (0, 1), err.getvalue()
        if os.environ.get("CTXPROOF_UPDATE_GOLDEN"):
            updated[block] = lines[0] + "\n" + out.getvalue()
            continue
        got = [SECONDS.sub("", line) for line in out.getvalue().splitlines()]
        assert got == [SECONDS.sub("", line) for line in shown]
    if updated:
        readme = ROOT / "README.md"
        text = readme.read_text("utf-8")
        for old, new in updated.items():
            text = text.replace(old, new, 1)
        readme.write_text(text, "utf-8")
