"""Importing a Claude Code session of 10, 50 and 100 MB that goes on after 5 compactions.

One seeded session file in the shape Claude Code writes: user prompts,
assistant text and tool calls (one per record, as Claude Code splits a
response), tool results of 1–8 KB (some failed), progress records between
them, and 5 ``compact_boundary`` records, each followed by its summary and
the session going on. The floor reads the same file as JSONL (``json.loads``
of every line): the least any importer must do. ``import`` is
``import_history("claude-code", [path])``, which returns the trace's text;
``command`` is ``ctxproof import claude-code FILE -o OUT`` run in this
process, which writes the trace as it reads the session (each event checked
as it is written) to a file staged beside OUT.

The command's peak memory (VmHWM) is measured once per size in a process of
its own (``python -m benchmarks.peak_import FILE``), outside the timed rounds.
With 5 compactions whatever the size, the window the model saw grows with the
file (a sixth of it); ``window of 8 MB`` imports sessions of the same sizes
with a compaction every 8 MB, one round each: what still grows with the file
there is the index the import keeps of every record (its uuid and parent, the
place of each message in the file, each item's id).
"""

from __future__ import annotations

import functools
import io
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from verifier.cli import main as ctxproof
from verifier.importers import import_history

SEED = 20260201
SIZES = {"10MB": 10_000_000, "50MB": 50_000_000, "100MB": 100_000_000}
COMPACTIONS = 5
WINDOW = 8_000_000
"""The bytes of session between two compactions in the ``window of 8 MB`` sessions."""
ROUNDS = 3
_WORDS = [
    "the",
    "proxy",
    "header",
    "test",
    "build",
    "cache",
    "client",
    "retry",
    "token",
    "schema",
    "module",
    "fails",
    "passes",
]


def _text(rng: random.Random, size: int) -> str:
    words = []
    total = 0
    while total < size:
        w = rng.choice(_WORDS)
        words.append(w)
        total += len(w) + 1
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines)


def session_lines(target: int, seed: int = SEED, compactions: int = COMPACTIONS) -> list[str]:
    """The JSONL lines of a session of about ``target`` bytes with ``compactions``
    compactions, evenly spread."""
    rng = random.Random(seed)
    sid = "5e55e55e-0000-4000-8000-000000000001"
    out: list[str] = []
    size = 0
    n = 0
    parent: str | None = None
    done = 0
    every = target // (compactions + 1)

    def put(rec: dict[str, Any]) -> None:
        nonlocal size
        line = json.dumps(rec)
        out.append(line)
        size += len(line) + 1

    def record(kind: str, content: Any, **kw: Any) -> None:
        nonlocal n, parent
        n += 1
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work",
            "sessionId": sid,
            "version": "2.0.31",
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": uuid,
            "timestamp": f"2026-02-01T10:{(n // 60) % 60:02d}:{n % 60:02d}.000Z",
            **kw,
        }
        put(rec)
        parent = uuid

    while size < target:
        record("user", _text(rng, rng.randint(40, 400)))
        for _ in range(rng.randint(1, 6)):
            call = f"toolu_{n:08d}"
            cmd = f"pytest -q tests/test_{rng.randint(0, 40)}.py"
            record("assistant", [{"type": "text", "text": _text(rng, rng.randint(20, 200))}])
            record(
                "assistant",
                [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": cmd}}],
            )
            n += 1
            put({"type": "progress", "uuid": f"p-{n}", "parentUuid": parent, "sessionId": sid})
            parent = f"p-{n}"
            failed = rng.random() < 0.2
            body = ("Exit code 1\n" if failed else "") + _text(rng, rng.randint(1000, 8000))
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call, "content": body}
            if failed:
                block["is_error"] = True
            record("user", [block])
        if done < compactions and size >= every * (done + 1):
            done += 1
            boundary = f"b-{done}"
            put(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": boundary,
                    "parentUuid": None,
                    "logicalParentUuid": parent,
                    "sessionId": sid,
                    "compactMetadata": {"trigger": "auto", "preTokens": 160000},
                }
            )
            parent = boundary
            record("user", _text(rng, 2000), isCompactSummary=True)
    assert done == compactions, done
    return out


def bounded(label: str) -> int:
    """The compactions of the ``window of 8 MB`` session of that size."""
    return max(1, SIZES[label] // WINDOW)


@functools.cache
def session_file(label: str, compactions: int = COMPACTIONS) -> Path:
    folder = Path(tempfile.gettempdir()) / f"ctxproof-bench-import-{SEED}"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "" if compactions == COMPACTIONS else f"-{compactions}c"
    path = folder / f"session-{label}{suffix}.jsonl"
    if not path.exists():
        lines = session_lines(SIZES[label], compactions=compactions)
        path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def read_jsonl(path: Path) -> int:
    """The floor: every line parsed as JSON."""
    count = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                json.loads(line)
                count += 1
    return count


def peak_of(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.peak_import", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(params=list(SIZES))
def label(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def _describe(benchmark: Any, label: str, role: str) -> Path:
    path = session_file(label)
    benchmark.group = f"import claude-code, {label} session, {COMPACTIONS} compactions"
    benchmark.extra_info.update(role=role, bytes=path.stat().st_size)
    return path


def command(path: Path, out: Path) -> int:
    """``ctxproof import claude-code PATH -o OUT``, in this process."""
    args = ["import", "claude-code", str(path), "-o", str(out)]
    return ctxproof(args, stdout=io.StringIO(), stderr=io.StringIO())


def rewrites_in(trace: Path) -> int:
    with trace.open(encoding="utf-8") as f:
        return sum(1 for line in f if line.startswith('{"event":"rewrite"'))


def _peak(benchmark: Any, path: Path, rewrites: int) -> None:
    peak = peak_of(path)
    assert peak["exit_code"] == 0 and peak["rewrites"] == rewrites
    benchmark.extra_info.update(peak_mib=peak["peak_mib"], imports_mib=peak["imports_mib"])


def test_floor(benchmark: Any, label: str) -> None:
    path = _describe(benchmark, label, "floor")
    lines = benchmark.pedantic(read_jsonl, args=(path,), rounds=ROUNDS, iterations=1)
    assert lines > 1000


def test_import(benchmark: Any, label: str) -> None:
    path = _describe(benchmark, label, "import")
    text = benchmark.pedantic(
        import_history, args=("claude-code", [path]), rounds=ROUNDS, iterations=1
    )
    rewrites = sum(1 for line in text.splitlines() if line.startswith('{"event":"rewrite"'))
    assert rewrites == COMPACTIONS
    benchmark.extra_info.update(rewrites=rewrites, trace_bytes=len(text.encode("utf-8")))


def test_import_command(benchmark: Any, label: str, tmp_path: Path) -> None:
    path = _describe(benchmark, label, "command")
    out = tmp_path / "trace.jsonl"
    code = benchmark.pedantic(command, args=(path, out), rounds=ROUNDS, iterations=1)
    assert code == 0 and rewrites_in(out) == COMPACTIONS
    assert out.read_text("utf-8") == import_history("claude-code", [path])
    benchmark.extra_info.update(rewrites=COMPACTIONS, trace_bytes=out.stat().st_size)
    _peak(benchmark, path, COMPACTIONS)


def test_import_command_window(benchmark: Any, label: str, tmp_path: Path) -> None:
    """The same sizes with a compaction every 8 MB: the window stays the same size."""
    compactions = bounded(label)
    path = session_file(label, compactions)
    benchmark.group = "import claude-code, a compaction every 8 MB (window of 8 MB)"
    benchmark.extra_info.update(role="command", bytes=path.stat().st_size)
    out = tmp_path / "trace.jsonl"
    code = benchmark.pedantic(command, args=(path, out), rounds=1, iterations=1)
    assert code == 0 and rewrites_in(out) == compactions
    benchmark.extra_info.update(rewrites=compactions, trace_bytes=out.stat().st_size)
    _peak(benchmark, path, compactions)
