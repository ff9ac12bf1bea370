"""Output sets (fuzz, prove, report) written as one, through the one safe writer.

Every file goes through :mod:`verifier.fsutil` (a link planted at any name is
never followed), a cleanup never follows a link, a full disk leaves the earlier
set as it was, and the temporaries of a killed run are removed by the next run
into the same folder (docs/formats.md, "Output files").
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from verifier import crosscheck, fsutil
from verifier.cli import main
from verifier.errors import OutputError
from verifier.formula import render
from verifier.fsutil import atomic_write, folder_lock, remove_strays, stage, write_set
from verifier.parser import parse_formula

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "models" / "scenarios"
SPECS = ROOT / "models" / "specs"
MODELS = ROOT / "models" / "policies"
TRACE = str(SCENARIOS / "exit_code_laundered.jsonl")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def files(folder: Path) -> dict[str, bytes]:
    """Every file below folder (links as the text of their target), by relative path."""
    out: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = b"-> " + os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


def enospc_after(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """os.write to a file fails with ENOSPC once `after` bytes were written to files (a full
    disk: a pipe, such as the one to a policy's process, takes its bytes still)."""
    real = os.write
    written = [0]

    def write(fd: int, data: Any) -> int:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return real(fd, data)
        if written[0] + len(data) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written[0] += len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


# ------------------------------------------------------------ issue 23, item 1


def test_prove_does_not_follow_a_link_planted_at_its_temporary_name(tmp_path: Path) -> None:
    out = tmp_path / "proofs"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    for code in ("CF001", "WR008", "CF004", "TP001", "TP002", "WR001", "WR002", "WR004"):
        (out / f".cex-{code}.jsonl.tmp").symlink_to(victim)
    spec = str(SPECS / "naive_summarizer.toml")
    status, text, err = run("prove", spec, "--items", "4", "--passes", "2", "--out", str(out))
    assert status == 1, err
    assert victim.read_text("utf-8") == "precious"
    written = sorted(out.glob("cex-*.jsonl"))
    assert written, text
    for path in written:
        assert not path.is_symlink() and path.read_text("utf-8").startswith('{"event": "header"')


def test_prove_writes_its_counterexamples_as_one_set(tmp_path: Path) -> None:
    out = tmp_path / "proofs"
    out.mkdir()
    (out / "cex-WR002.jsonl").write_text("from an earlier proof\n", "utf-8")
    (out / "cex-NOTARULE.jsonl").write_text("not ours\n", "utf-8")
    (out / "notes.txt").write_text("the user's\n", "utf-8")
    spec = str(SPECS / "naive_summarizer.toml")
    code, text, err = run(
        "prove", spec, "--items", "4", "--passes", "2", "--out", str(out), "--format", "json"
    )
    assert code == 1, err
    found = {c["code"] for c in json.loads(text)["stats"]["counterexamples"]}
    names = {p.name for p in out.iterdir()}
    assert found and {f"cex-{c}.jsonl" for c in found} <= names
    assert "cex-NOTARULE.jsonl" in names and "notes.txt" in names
    if "WR002" not in found:
        assert "cex-WR002.jsonl" not in names  # an earlier proof's, not this one's


def test_a_proof_that_holds_makes_no_folder(tmp_path: Path) -> None:
    out = tmp_path / "proofs"
    code, _, err = run("prove", str(SPECS / "spill_first.toml"), "--items", "3", "--out", str(out))
    assert code == 0, err
    assert not out.exists()


def test_the_disagreement_file_does_not_follow_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    formulas = [parse_formula("a & !b"), parse_formula("b | c")]
    text = "\n".join(render(f) for f in formulas) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    planted = tmp_path / f"ctxproof-disagreement-{digest}.txt"
    planted.symlink_to(victim)
    err = crosscheck.disagreement(formulas, "sat", "unsat")
    assert str(planted) in str(err)
    assert victim.read_text("utf-8") == "precious"
    assert not planted.is_symlink() and planted.read_text("utf-8") == text


# ------------------------------------------------------------ issue 23, item 2


def test_report_cleanup_does_not_follow_traces_as_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.html").write_text("<p>mine</p>", "utf-8")
    (elsewhere / ".x.abcdefgh.ctxproof.tmp").write_text("looks like ours", "utf-8")
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "traces").symlink_to(elsewhere, target_is_directory=True)
    code, out, err = run("audit", TRACE, "--report", str(rep))
    assert code == 2, err
    assert out == ""
    assert "traces" in err and "symbolic link" in err and "Traceback" not in err
    assert sorted(p.name for p in elsewhere.iterdir()) == [
        ".x.abcdefgh.ctxproof.tmp",
        "precious.html",
    ]
    assert (rep / "traces").is_symlink()


def test_report_removes_its_own_stale_pages_and_nothing_else(tmp_path: Path) -> None:
    rep = tmp_path / "rep"
    (rep / "traces").mkdir(parents=True)
    (rep / "traces" / "0009-old.html").write_text("stale", "utf-8")
    (rep / "traces" / "notes.txt").write_text("the user's", "utf-8")
    victim = tmp_path / "victim.html"
    victim.write_text("precious", "utf-8")
    (rep / "traces" / "0010-link.html").symlink_to(victim)
    code, _, err = run("audit", TRACE, "--report", str(rep))
    assert code == 1, err
    names = sorted(p.name for p in (rep / "traces").iterdir())
    assert names == ["0001-exit_code_laundered.html", "notes.txt"]
    assert victim.read_text("utf-8") == "precious"


def test_write_set_refuses_a_subfolder_that_is_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sub").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutputError, match="symbolic link"):
        write_set(tmp_path / "out", {"sub/a.txt": "x", "b.txt": "y"})
    assert list(elsewhere.iterdir()) == []
    assert not (tmp_path / "out" / "b.txt").exists()


# ------------------------------------------------------------ issue 23, item 7


def _fuzz(out: Path, *more: str) -> tuple[int, str, str]:
    policy = f"{MODELS / 'naive_summarizer.py'}:naive_summarizer"
    return run("fuzz", policy, "--sessions", "6", "--passes", "4", "--out", str(out), *more)


def test_a_full_disk_leaves_the_earlier_fuzz_output_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "fz"
    out.mkdir()
    earlier = {
        "scorecard.json": b'{"policy": "earlier"}\n',
        "pressure.png": b"earlier plot",
        "cex-CF007.jsonl": b"earlier counterexample\n",
    }
    for name, data in earlier.items():
        (out / name).write_bytes(data)
    enospc_after(monkeypatch, 2000)
    code, text, err = _fuzz(out)
    assert code == 2, err
    assert "No space left on device" in err and text == ""
    assert files(out) == earlier


def test_fuzz_writes_its_whole_set(tmp_path: Path) -> None:
    out = tmp_path / "fz"
    out.mkdir()
    (out / "cex-WR006.jsonl").write_text("an earlier run's\n", "utf-8")
    code, _, err = _fuzz(out, "--format", "json")
    assert code == 1, err
    names = {p.name for p in out.iterdir()}
    card = json.loads((out / "scorecard.json").read_text("utf-8"))
    assert {"scorecard.json", "pressure.png"} <= names
    assert {f"cex-{c}.jsonl" for c in card["findings_by_rule"]} == names - {
        "scorecard.json",
        "pressure.png",
    }
    assert all(c["message"] for c in card["counterexamples"])


def test_a_stray_temporary_is_removed_by_the_next_run_into_the_folder(tmp_path: Path) -> None:
    rep = tmp_path / "rep"
    rep.mkdir()
    # a run killed between writing a temporary file and putting it in place
    script = textwrap.dedent(
        f"""
        import os
        from verifier.fsutil import stage
        stage({str(rep / "index.html")!r}, "half")
        stage({str(rep / "report.json")!r}, "half")
        os.kill(os.getpid(), {int(signal.SIGKILL)})
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert proc.returncode == -signal.SIGKILL
    strays = [p.name for p in rep.iterdir() if p.name.endswith(".tmp")]
    assert len(strays) == 2
    (rep / "notes.tmp").write_text("not one of ours", "utf-8")
    code, _, err = run("audit", TRACE, "--report", str(rep))
    assert code == 1, err
    assert sorted(p.name for p in rep.iterdir()) == [
        "index.html",
        "notes.tmp",
        "report.json",
        "traces",
    ]


def test_a_live_writers_temporaries_are_left_alone(tmp_path: Path) -> None:
    """Another process holding the folder (its file staged) is waited for, not cleaned."""
    script = textwrap.dedent(
        f"""
        import sys
        from verifier.fsutil import stage
        staged = stage({str(tmp_path / "a.txt")!r}, "theirs")
        print("staged", flush=True)
        sys.stdin.readline()
        staged.commit()
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "staged"
        done = threading.Event()

        def write() -> None:
            atomic_write(tmp_path / "b.txt", "ours")
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.3)
        assert not done.is_set()  # it waits for the folder
        assert any(p.name.startswith(".a.txt.") for p in tmp_path.iterdir())
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    writer.join(timeout=30)
    assert done.is_set()
    assert (tmp_path / "a.txt").read_text("utf-8") == "theirs"
    assert (tmp_path / "b.txt").read_text("utf-8") == "ours"


def test_remove_strays_takes_only_regular_files_of_our_pattern(tmp_path: Path) -> None:
    ours = ".index.html.abcd_123.ctxproof.tmp"
    (tmp_path / ours).write_text("x", "utf-8")
    (tmp_path / ".index.html.abcd1234.tmp").write_text("an older pattern, or not ours", "utf-8")
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    (tmp_path / ".a.abcdefgh.ctxproof.tmp").symlink_to(victim)
    (tmp_path / ".d.abcdefgh.ctxproof.tmp").mkdir()
    with folder_lock(tmp_path):
        pass  # taking the lock cleans
    assert not (tmp_path / ours).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".a.abcdefgh.ctxproof.tmp",
        ".d.abcdefgh.ctxproof.tmp",
        ".index.html.abcd1234.tmp",
        "victim",
    ]
    assert victim.read_text("utf-8") == "precious"
    assert remove_strays(tmp_path) == []


def test_nested_stages_in_one_folder_keep_each_other(tmp_path: Path) -> None:
    with stage(tmp_path / "a", "1") as a, stage(tmp_path / "b", "2") as b:
        assert a.tmp is not None and a.tmp.exists() and b.tmp is not None and b.tmp.exists()
        a.commit()
        b.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    assert not fsutil._held


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "socket", "folder"])
def test_an_output_path_that_is_no_file_is_refused_not_replaced(tmp_path: Path, kind: str) -> None:
    """Renaming over it would replace a device or a pipe (``--out /dev/null`` as root)."""
    import socket

    thing = tmp_path / "thing"
    out = tmp_path / "g.json"
    held = None
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "link to a fifo":
        os.mkfifo(thing)
        out.symlink_to(thing)
    elif kind == "socket":
        held = socket.socket(socket.AF_UNIX)
        held.bind(str(out))
    else:
        out.mkdir()
    try:
        before = os.lstat(out)
        code, text, err = run("graph", TRACE, "--out", str(out))
        assert code == 2 and text == "", err
        assert "which ctxproof does not replace" in err or "is a directory" in err
        after = os.lstat(out)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    finally:
        if held is not None:
            held.close()


@pytest.mark.slow
def test_runs_killed_while_writing_leave_no_temporaries_after_the_next(tmp_path: Path) -> None:
    """Issue 23, item 7: SIGKILL during audit --repair --report left stray temporaries
    (261 after 100 kills). Runs are killed at times spread over their writing; the next
    run into the same folders removes what they left."""
    import random

    corpus = ROOT / "tests" / "corpus"
    traces = sorted(str(p) for p in corpus.glob("*_fires.jsonl"))
    argv = [
        sys.executable, "-m", "verifier", "audit", *traces,
        "--repair", str(tmp_path / "rep"), "--report", str(tmp_path / "out"),
    ]  # fmt: skip
    started = time.perf_counter()
    whole = subprocess.run(argv, capture_output=True, check=False)
    assert whole.returncode == 1, whole.stderr
    took = time.perf_counter() - started
    draw = random.Random(23)
    left = 0
    for _ in range(25):
        with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            time.sleep(draw.uniform(0.6 * took, 1.05 * took))
            proc.kill()
            proc.wait()
        left += sum(1 for p in tmp_path.rglob("*") if p.name.endswith(".ctxproof.tmp"))
    code, _, err = run(*argv[3:])
    assert code == 1, err
    assert [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")] == []
    assert (tmp_path / "out" / "index.html").is_file()
    print(f"temporaries seen after kills: {left}")
