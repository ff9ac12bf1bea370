"""What the CLI writes (repaired windows, reports, graphs) and the exit code it promises.

Every file goes through one atomic writer; a write that fails for reasons of
the place (missing or read-only folder, full disk) is exit 2 with the path and
the reason, before any spill is committed and before anything is printed.
"""

from __future__ import annotations

import errno
import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from verifier.cli import main
from verifier.io import item_from_json
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
SCENARIOS = ROOT / "models" / "scenarios"

FAILED = {
    "id": "o2",
    "kind": "observation",
    "source": "pip install x",
    "exit_code": 1,
    "modality": "failed",
    "shows": "!x.installs",
}
REJECTION = {"id": "rej1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"}
PROSE = {"id": "p1", "kind": "prose", "text": "long discussion"}
BEFORE = {"format": "ctxproof-window/1", "items": [FAILED, REJECTION, PROSE]}
AFTER = {"format": "ctxproof-window/1", "items": [PROSE]}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def rows(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def windows(tmp_path: Path) -> tuple[str, str]:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(BEFORE), "utf-8")
    after.write_text(json.dumps(AFTER), "utf-8")
    return str(before), str(after)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding one unrelated entry."""
    db = tmp_path / "s.db"
    s = SqliteStore(db)
    s.spill([item_from_json({"id": "old", "kind": "prose", "text": "kept"})])
    s.close()
    return db


@pytest.fixture
def umask022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def enospc(monkeypatch: pytest.MonkeyPatch) -> None:
    def write(_fd: int, _data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)


# ------------------------------------------------------------ planted symlinks


def test_repair_does_not_follow_a_symlink_planted_at_out_tmp(
    windows: tuple[str, str], store: Path, tmp_path: Path
) -> None:
    before, after = windows
    out = tmp_path / "fixed.json"
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    (tmp_path / "fixed.json.tmp").symlink_to(victim)
    code, _, err = run("check", before, after, "--store", str(store), "--repair", str(out))
    assert code == 1, err
    assert victim.read_text("utf-8") == "precious"
    assert json.loads(out.read_text("utf-8"))["format"] == "ctxproof-window/1"


def test_report_does_not_follow_symlinks_planted_in_its_folder(tmp_path: Path) -> None:
    rep = tmp_path / "rep"
    rep.mkdir()
    victims = []
    for name in ("index.html.tmp", "report.json.tmp"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious", "utf-8")
        (rep / name).symlink_to(victim)
        victims.append(victim)
    code, _, err = run("audit", str(SCENARIOS / "exit_code_laundered.jsonl"), "--report", str(rep))
    assert code == 1, err
    assert [v.read_text("utf-8") for v in victims] == ["precious", "precious"]
    assert (rep / "index.html").read_text("utf-8").startswith("<!doctype html>")


def test_graph_does_not_follow_a_symlink_planted_at_out_tmp(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    (tmp_path / "g.json.tmp").symlink_to(victim)
    code, _, _ = run(
        "graph", str(SCENARIOS / "exit_code_laundered.jsonl"), "--out", str(tmp_path / "g.json")
    )
    assert code == 0
    assert victim.read_text("utf-8") == "precious"


# ------------------------------------------------------------ modes


def test_output_files_get_their_mode_from_the_umask(
    windows: tuple[str, str], store: Path, tmp_path: Path, umask022: None
) -> None:
    before, after = windows
    out = tmp_path / "fixed.json"
    assert run("check", before, after, "--store", str(store), "--repair", str(out))[0] == 1
    trace = str(SCENARIOS / "exit_code_laundered.jsonl")
    assert run("audit", trace, "--report", str(tmp_path / "rep"))[0] == 1
    assert run("graph", trace, "--out", str(tmp_path / "g.dot"))[0] == 0
    for path in (out, tmp_path / "rep" / "index.html", tmp_path / "rep" / "report.json"):
        assert path.stat().st_mode & 0o777 == 0o644, path
    assert (tmp_path / "g.dot").stat().st_mode & 0o777 == 0o644


# ------------------------------------------------------------ failing writes


def test_repair_into_a_missing_folder_is_exit_2_and_spills_nothing(
    windows: tuple[str, str], store: Path, tmp_path: Path
) -> None:
    before, after = windows
    out = tmp_path / "missing" / "fixed.json"
    code, stdout, err = run(
        "check", before, after, "--store", str(store), "--repair", str(out), "--format", "json"
    )
    assert (code, stdout) == (2, "")
    assert str(out) in err and "No such file or directory" in err
    assert "internal error" not in err
    assert rows(store) == 1  # nothing was committed


@pytest.mark.parametrize("target", ["store", "before", "after", "link to after"])
def test_repair_onto_the_store_or_an_input_is_exit_2_and_loses_nothing(
    windows: tuple[str, str], store: Path, tmp_path: Path, target: str
) -> None:
    """OUT naming the store (or a window read) would replace it with the repaired window:
    the spill just reported, and every earlier entry, lost."""
    before, after = windows
    link = tmp_path / "link.json"
    link.symlink_to(after)
    out = {"store": str(store), "before": before, "after": after, "link to after": str(link)}
    kept = {path: Path(path).read_bytes() for path in (str(store), before, after)}
    code, stdout, err = run("check", before, after, "--store", str(store), "--repair", out[target])
    assert (code, stdout) == (2, "")
    assert "would replace it" in err
    assert {path: Path(path).read_bytes() for path in kept} == kept
    assert rows(store) == 1


def test_repair_on_a_full_disk_is_exit_2_spills_nothing_and_leaves_no_file(
    windows: tuple[str, str], store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = windows
    out = tmp_path / "fixed.json"
    listed = sorted(p.name for p in tmp_path.iterdir())
    enospc(monkeypatch)
    code, stdout, err = run("check", before, after, "--store", str(store), "--repair", str(out))
    assert (code, stdout) == (2, "")
    assert str(out) in err and "No space left on device" in err
    assert rows(store) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == listed


def test_repair_into_a_read_only_folder_is_exit_2(
    windows: tuple[str, str],
    store: Path,
    tmp_path: Path,
    make_readonly: Callable[[Path], None],
) -> None:
    before, after = windows
    folder = tmp_path / "ro"
    folder.mkdir()
    make_readonly(folder)
    code, stdout, err = run(
        "check", before, after, "--store", str(store), "--repair", str(folder / "fixed.json")
    )
    assert (code, stdout) == (2, "")
    assert str(folder / "fixed.json") in err
    assert "Read-only file system" in err or "Permission denied" in err
    assert rows(store) == 1


def test_a_store_that_cannot_be_created_is_exit_2_and_out_is_not_written(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    before, after = windows
    out = tmp_path / "fixed.json"
    db = tmp_path / "missing" / "new.db"
    code, stdout, err = run("check", before, after, "--store", str(db), "--repair", str(out))
    assert (code, stdout) == (2, "")
    assert str(db) in err and "cannot be opened for writing" in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after.json", "before.json"]


@pytest.mark.parametrize(
    "bad_after",
    [
        "{not json",
        json.dumps({"format": "ctxproof-window/1", "items": [{"id": "x", "kind": "nope"}]}),
        json.dumps(
            {
                "format": "ctxproof-window/1",
                "items": [{"id": "c", "kind": "claim", "derived_from": ["nowhere"]}],
            }
        ),
    ],
)
def test_bad_input_with_repair_does_not_create_the_store(
    windows: tuple[str, str], tmp_path: Path, bad_after: str
) -> None:
    before, after = windows
    Path(after).write_text(bad_after, "utf-8")
    new = tmp_path / "new.db"
    code, stdout, err = run(
        "check", before, after, "--store", str(new), "--repair", str(tmp_path / "o.json")
    )
    assert (code, stdout) == (2, ""), err
    assert not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after.json", "before.json"]


def test_a_repair_that_spills_creates_the_store_last(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    before, after = windows
    new = tmp_path / "new.db"
    code, _, err = run(
        "check", before, after, "--store", str(new), "--repair", str(tmp_path / "o.json")
    )
    assert code == 1, err
    assert rows(new) == 2  # the failed observation and the rejection
    assert run("check", before, str(tmp_path / "o.json"), "--store", str(new))[0] == 0


def test_a_repair_with_nothing_to_spill_creates_no_store(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    before, _ = windows
    new = tmp_path / "new.db"
    code, _, err = run(
        "check", before, before, "--store", str(new), "--repair", str(tmp_path / "o.json")
    )
    assert code == 0, err
    assert not new.exists()
    assert (tmp_path / "o.json").exists()


def test_report_on_a_full_disk_is_exit_2_with_no_output_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "rep"
    enospc(monkeypatch)
    code, stdout, err = run(
        "audit",
        str(SCENARIOS / "exit_code_laundered.jsonl"),
        "--report",
        str(rep),
        "--format",
        "json",
    )
    assert (code, stdout) == (2, "")
    assert "No space left on device" in err and "internal error" not in err
    assert not rep.exists()  # the folder made for the report is removed again


def test_report_on_a_full_disk_keeps_an_earlier_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "rep"
    trace = str(SCENARIOS / "exit_code_laundered.jsonl")
    assert run("audit", trace, "--report", str(rep))[0] == 1
    def files() -> dict[str, bytes]:
        return {str(p.relative_to(rep)): p.read_bytes() for p in rep.rglob("*") if p.is_file()}

    before = files()
    assert "index.html" in before and any(n.startswith("traces") for n in before)
    enospc(monkeypatch)
    assert run("audit", trace, "--report", str(rep))[0] == 2
    assert files() == before


def test_report_where_a_file_stands_is_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", "utf-8")
    code, stdout, err = run(
        "audit", str(SCENARIOS / "exit_code_laundered.jsonl"), "--report", str(blocker / "rep")
    )
    assert (code, stdout) == (2, "")
    assert str(blocker / "rep") in err and "internal error" not in err


def test_graph_into_a_missing_folder_is_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "g.graphml"
    code, stdout, err = run(
        "graph", str(SCENARIOS / "exit_code_laundered.jsonl"), "--out", str(out)
    )
    assert (code, stdout) == (2, "")
    assert str(out) in err and "No such file or directory" in err


# ------------------------------------------------------------ exit agreement


@pytest.mark.parametrize("trace", sorted(p.name for p in CORPUS.glob("*.jsonl")))
def test_the_json_exit_field_is_the_process_exit(trace: str) -> None:
    code, out, _ = run("audit", str(CORPUS / trace), "--format", "json")
    if code == 2:
        assert out == ""  # bad input: nothing that promises another exit
    else:
        assert [json.loads(line)["exit"] for line in out.splitlines()] == [code]


def test_check_json_exit_agrees_with_the_process_with_and_without_repair(
    windows: tuple[str, str], store: Path, tmp_path: Path
) -> None:
    before, after = windows
    for extra in ([], ["--store", str(store), "--repair", str(tmp_path / "o.json")]):
        code, out, _ = run("check", before, after, "--format", "json", *extra)
        assert json.loads(out)["exit"] == code == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "tests/corpus/cf007_fires.jsonl"],
        ["audit", "tests/corpus/cf007_fires.jsonl", "--format", "json"],
        ["--version"],
        ["--help"],
    ],
    ids=["audit", "audit-json", "version", "help"],
)
def test_a_standard_output_that_takes_nothing_is_exit_2(argv: list[str]) -> None:
    """A full disk behind standard output is an output that cannot be written: exit 2,
    one line saying so, never an internal error."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = _entry(argv, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "ctxproof: standard output: cannot write: No space left on device\n"


def _entry(argv: list[str], **streams: Any) -> subprocess.CompletedProcess[str]:
    """The console script's entry point run in a process of its own, from the checkout,
    with the standard streams (and ``preexec_fn``) given."""
    return subprocess.run(
        [sys.executable, "-c", "from verifier.cli import entry; entry()", *argv],
        text=True,
        cwd=ROOT,
        check=False,
        **streams,
    )


def _without(fd: int) -> Callable[[], None]:
    """A preexec function: the child starts with that descriptor closed (Python then
    gives None for the stream)."""
    return lambda: os.close(fd)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["audit", "tests/corpus/cf007_fires.jsonl"], 2),
        (["audit", "tests/corpus/cf007_quiet.jsonl", "--format", "json"], 2),
        (["audit", "tests/corpus/cf007_quiet.jsonl"], 0),  # clean text: nothing to write
        (["--version"], 2),
        (["--help"], 2),
    ],
    ids=["audit", "audit-json", "audit-clean-text", "version", "help"],
)
def test_a_closed_standard_output_is_exit_2(argv: list[str], code: int) -> None:
    """Started with standard output closed: results cannot be written (exit 2, one line
    saying so), and a run that writes nothing keeps its exit code; never a traceback."""
    done = _entry(argv, stderr=subprocess.PIPE, preexec_fn=_without(1))
    assert done.returncode == code, done.stderr
    wanted = "ctxproof: standard output: cannot write: Bad file descriptor\n" if code else ""
    assert done.stderr == wanted


@pytest.mark.parametrize(
    ("trace", "code"),
    [
        ("cf007_fires.jsonl", 1),
        ("cf007_quiet.jsonl", 0),
        ("bad_background_syntax.jsonl", 2),
    ],
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_closed_standard_error_keeps_results_and_exit(trace: str, code: int, fmt: str) -> None:
    """Started with standard error closed: the results and the exit code are those of a
    run whose messages go nowhere."""
    argv = ["audit", f"tests/corpus/{trace}", "--format", fmt]
    done = _entry(argv, stdout=subprocess.PIPE, preexec_fn=_without(2))
    usual = _entry(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (usual.returncode, usual.stdout)
    assert done.returncode == code


def test_a_trace_path_with_a_newline_stays_on_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "a\nb.jsonl"
    odd.write_bytes((CORPUS / "cf007_fires.jsonl").read_bytes())
    code, out, _ = run("audit", str(odd))
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith(str(tmp_path) + "/a\\nb.jsonl:4: pass 1: CF007 ")
