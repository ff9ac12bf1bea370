"""Fuzz throughput: rewrites checked per second, against the policy alone; and what
running the policy in a process of its own costs per call.

For each policy model (three by default, every one of ``models/policies/``
with ``--bench-all-models``) and two pressures (each turn of the simulated
agent fills the window to about 1.2 or about 2.5 budgets), a round explores
the same seeded sessions of 10 passes over windows of about a hundred items
(budgets of 700 to 1,000 tokens): drawing the session, the agent, the policy
run twice per rewrite (PL002), the audit of every append and rewrite; no
shrinking. ``test_fuzz`` calls the policy in the benchmark's process,
``test_fuzz_isolated`` in a worker process of its own, as ``ctxproof fuzz``
does (one worker for all rounds, started before them). The floor replays, in
the same run, every call the policy received during one such exploration, on
copies of the same windows: the policy alone. Rewrites per second are the
rewrites of a round over its median time.

The second group of each model and pressure times the rewrites' pairs of calls
alone, with their validation: in this process (``run_twice``, the floor) and
in the policy's own process (``PolicyProcess.run_twice``: the window out and
the result back over a pipe). Its notes give the median time per call; their
difference is what isolation costs a call.

End to end, the two policies of the README's walkthrough (``newest_first`` drops
what does not fit: eight rules found; ``newest_first_spilling`` spills it: none)
are fuzzed as ``ctxproof fuzz --sessions 50`` fuzzes them (each in a process of
its own): the same sessions, explored, each rule found shrunk (at most 300
sessions played per rule) and its counterexample written and replayed; the
unsafe policy's run is measured against the safe one's, its floor. Of the sessions
shrinking tries, ``shrink_played`` were played; the others were answered from an earlier
play (docs/fuzz.md, "Shrinking").
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from verifier.fuzz import explore_chunk, fuzz, session_plans
from verifier.io import item_from_json
from verifier.policies import Policy, load_policy, run_policy
from verifier.policies.isolated import PolicyProcess
from verifier.window import Item

MODELS_DIR = Path(__file__).resolve().parent.parent / "models" / "policies"
ALL_MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.py"))
DEFAULT_MODELS = ("keep_recent", "naive_summarizer", "spill_first")
PRESSURES = {"1.2": (1.15, 1.25), "2.5": (2.4, 2.6)}
PASSES = 10
SESSIONS = 6
SEED = 3
ROUNDS = 5

Call = tuple[list[dict[str, Any]], int, dict[str, Any]]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "model" in metafunc.fixturenames:
        every = metafunc.config.getoption("--bench-all-models")
        metafunc.parametrize("model", ALL_MODELS if every else DEFAULT_MODELS)
    if "pressure" in metafunc.fixturenames:
        metafunc.parametrize("pressure", list(PRESSURES))


def _policy(name: str) -> Policy:
    return load_policy(f"{MODELS_DIR / name}.py:{name}")


def _explore(policy: Policy | PolicyProcess, pressure: str) -> Any:
    lo, hi = PRESSURES[pressure]
    # the window fills in twelve pieces: about a hundred items
    plans = session_plans(
        PASSES, (lo, hi), max_budget=1000, min_budget=700, always_fill=True, fill_pieces=12
    )
    return explore_chunk(policy, 0, SESSIONS, SEED, PASSES, "support", plans)


@functools.cache
def _recorded(name: str, pressure: str) -> tuple[tuple[Call, ...], int]:
    """Every call the policy receives in one exploration (copies), and the rewrites."""
    inner = _policy(name)
    calls: list[Call] = []

    def run(window: list[dict[str, Any]], budget: int, **kw: Any) -> Any:
        calls.append(copy.deepcopy((window, budget, kw)))
        return inner.function(window, budget, **kw)

    wrapped = Policy(
        inner.name, run, inner.takes_pass_no, inner.takes_ages, inner.spec, inner.takes_store
    )
    chunk = _explore(wrapped, pressure)
    return tuple(calls), chunk.rewrites


def _describe(benchmark: Any, model: str, pressure: str, role: str) -> None:
    calls, rewrites = _recorded(model, pressure)
    benchmark.group = f"fuzz, {model}, pressure ~{pressure}"
    benchmark.extra_info.update(
        role=role,
        model=model,
        pressure=pressure,
        sessions=SESSIONS,
        rewrites=rewrites,
        policy_calls=len(calls),
        window_items=sum(len(w) for w, _, _ in calls) / len(calls) if calls else 0.0,
    )


def test_policy_alone(benchmark: Any, model: str, pressure: str) -> None:
    _describe(benchmark, model, pressure, "floor")
    calls, _ = _recorded(model, pressure)
    function = _policy(model).function

    def setup() -> tuple[tuple[list[Call]], dict[str, Any]]:
        return (copy.deepcopy(list(calls)),), {}

    def replay(fresh: list[Call]) -> None:
        for window, budget, kw in fresh:
            function(window, budget, **kw)

    benchmark.pedantic(replay, setup=setup, rounds=ROUNDS, iterations=1)


def test_fuzz(benchmark: Any, model: str, pressure: str) -> None:
    _describe(benchmark, model, pressure, "fuzz")
    _, rewrites = _recorded(model, pressure)
    policy = _policy(model)
    chunk = benchmark.pedantic(_explore, args=(policy, pressure), rounds=ROUNDS, iterations=1)
    benchmark.extra_info["findings"] = sum(chunk.counts.values())
    assert chunk.rewrites == rewrites  # the same sessions every round


def test_fuzz_isolated(benchmark: Any, model: str, pressure: str) -> None:
    _describe(benchmark, model, pressure, "fuzz, policy in its own process")
    _, rewrites = _recorded(model, pressure)
    with PolicyProcess(f"{MODELS_DIR / model}.py:{model}") as proc:
        proc.start()
        chunk = benchmark.pedantic(_explore, args=(proc, pressure), rounds=ROUNDS, iterations=1)
        assert proc.faults == 0
    benchmark.extra_info["findings"] = sum(chunk.counts.values())
    assert chunk.rewrites == rewrites


Pair = tuple[tuple[Item, ...], int, dict[str, Any]]


@functools.cache
def _pairs(name: str, pressure: str) -> tuple[Pair, ...]:
    """The input of every rewrite of one exploration (the first call of each pair)."""
    calls, _ = _recorded(name, pressure)
    return tuple(
        (tuple(item_from_json(it) for it in window), budget, kw)
        for window, budget, kw in calls[::2]
    )


def _describe_calls(benchmark: Any, model: str, pressure: str, role: str) -> None:
    pairs = _pairs(model, pressure)
    benchmark.group = f"policy calls, {model}, pressure ~{pressure}"
    benchmark.extra_info.update(
        role=role,
        kind="calls",
        model=model,
        pressure=pressure,
        policy_calls=2 * len(pairs),
        window_items=sum(len(w) for w, _, _ in pairs) / len(pairs) if pairs else 0.0,
    )


def test_policy_calls_in_process(benchmark: Any, model: str, pressure: str) -> None:
    _describe_calls(benchmark, model, pressure, "floor")
    pairs = _pairs(model, pressure)
    policy = _policy(model)

    def calls() -> None:
        for window, budget, kw in pairs:
            run_policy(policy, window, budget, check_determinism=True, **kw)

    benchmark.pedantic(calls, rounds=ROUNDS, iterations=1)


def test_policy_calls_isolated(benchmark: Any, model: str, pressure: str) -> None:
    _describe_calls(benchmark, model, pressure, "in its own process")
    pairs = _pairs(model, pressure)
    with PolicyProcess(f"{MODELS_DIR / model}.py:{model}") as proc:
        proc.start()

        def calls() -> None:
            for window, budget, kw in pairs:
                assert proc.run_twice(window, budget, **kw).code is None

        benchmark.pedantic(calls, rounds=ROUNDS, iterations=1)


# -- end to end: exploring, shrinking what was found, writing the counterexamples -------------

README_POLICIES = Path(__file__).resolve().parent / "readme_policies.py"
E2E_SESSIONS = 50
E2E_ROUNDS = 3


def _bench_end_to_end(benchmark: Any, name: str, role: str, tmp_path: Path) -> None:
    """``fuzz`` as ``ctxproof fuzz --sessions 50`` runs it (seed 0, 10 passes, windows of
    about a hundred items), the policy in a process of its own: exploring, shrinking one
    session per rule found and writing the counterexamples; the scorecard and its plot
    aside (``card=False``)."""
    policy = load_policy(f"{README_POLICIES}:{name}")
    benchmark.group = (
        f"fuzz end to end, {E2E_SESSIONS} sessions: the README's safe policy vs its unsafe one"
    )
    reports: list[Any] = []

    def run() -> None:
        out = tmp_path / "out"
        reports.append(fuzz(policy, sessions=E2E_SESSIONS, out_dir=out, card=False))

    benchmark.pedantic(run, rounds=E2E_ROUNDS, iterations=1)
    last = reports[-1]
    assert {r.rewrites for r in reports} == {last.rewrites}  # the same sessions every round
    benchmark.extra_info.update(
        role=role,
        end_to_end=True,
        policy=name,
        sessions=last.sessions,
        rewrites=last.rewrites,
        findings=sum(last.findings_by_rule.values()),
        rules=len(last.findings_by_rule),
        shrink_plays=last.shrinking.get("plays", 0),
        shrink_played=sum(
            int(r.get("played", r.get("plays", 0)))
            for r in last.shrinking.get("by_rule", {}).values()
        ),
        shrink_seconds=last.shrinking.get("seconds", 0.0),
    )


def test_fuzz_end_to_end_safe(benchmark: Any, tmp_path: Path) -> None:
    _bench_end_to_end(benchmark, "newest_first_spilling", "floor", tmp_path)


def test_fuzz_end_to_end_unsafe(benchmark: Any, tmp_path: Path) -> None:
    _bench_end_to_end(benchmark, "newest_first", "unsafe", tmp_path)
