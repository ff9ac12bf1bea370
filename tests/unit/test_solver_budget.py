"""The solver budget users control, and atoms z3 must keep apart."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.errors import InputError
from verifier.formula import Atom
from verifier.solver import Session, solver_budget


def php(holes: int) -> list[str]:
    """The pigeonhole principle for holes + 1 pigeons: unsatisfiable, and hard."""
    out = [" | ".join(f"p{p}h{h}" for h in range(holes)) for p in range(holes + 1)]
    for h in range(holes):
        for p in range(holes + 1):
            out += [f"!(p{p}h{h} & p{q}h{h})" for q in range(p + 1, holes + 1)]
    return out


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(args), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def _trace(tmp_path: Path) -> Path:
    lines = [
        {"event": "header", "format": "ctxproof-trace/1", "background": php(9)},
        {"event": "append", "items": [{"id": "p", "kind": "prose"}]},
        {
            "event": "rewrite",
            "policy": "p",
            "diff": {"remove": [], "put": [{"id": "k", "kind": "claim", "formula": "p0h0"}]},
        },
    ]
    path = tmp_path / "hard.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    return path


def test_a_small_rlimit_reaches_undecided_quickly(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    started = time.perf_counter()
    code, out, err = run("audit", str(trace), "--rlimit", "20000", "--format", "json")
    assert code == 3, err
    assert time.perf_counter() - started < 30
    result = json.loads(out)
    reason = result["rewrites"][0]["undecided"][0]
    assert "ran out of its budget" in reason and "rlimit 20000" in reason


def test_the_budget_holds_for_one_command_only(tmp_path: Path) -> None:
    run("audit", str(_trace(tmp_path)), "--rlimit", "20000")
    assert solver_budget()[0] == 3_000_000


def test_a_bad_budget_in_the_environment_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXPROOF_RLIMIT", "lots")
    with pytest.raises(InputError, match="CTXPROOF_RLIMIT"):
        solver_budget()
    code, _, err = run("audit", str(_trace(tmp_path)))
    assert code == 2 and "CTXPROOF_RLIMIT" in err
    monkeypatch.setenv("CTXPROOF_RLIMIT", "20000")
    monkeypatch.setenv("CTXPROOF_TIMEOUT", "0")
    code, _, err = run("audit", str(_trace(tmp_path)))
    assert code == 2 and "CTXPROOF_TIMEOUT" in err


def test_a_timeout_is_a_budget_too(tmp_path: Path) -> None:
    code, out, _ = run("audit", str(_trace(tmp_path)), "--timeout", "0.05", "--format", "json")
    assert code == 3
    assert "timeout 0.05 s" in json.loads(out)["rewrites"][0]["undecided"][0]


def test_atoms_that_differ_after_a_nul_stay_apart() -> None:
    session = Session()
    assert not session.entails([Atom("x\x00a")], Atom("x\x00b")).holds
    assert session.entails([Atom("x\x00a")], Atom("x\x00a")).holds
