"""Fuzz throughput: rewrites checked per second, against the policy alone.

For each policy model (three by default, every one of ``models/policies/``
with ``--bench-all-models``) and two pressures (each turn of the simulated
agent fills the window to about 1.2 or about 2.5 budgets), a round explores
the same seeded sessions of 10 passes over windows of about a hundred items
(budgets of 700 to 1,000 tokens): drawing the session, the agent, the policy
run twice per rewrite (PL002), the audit of every append and rewrite; no
shrinking. The floor replays, in the same run, every call the policy received
during one such exploration, on copies of the same windows: the policy alone.
Rewrites per second are the rewrites of a round over its median time.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from verifier.fuzz import explore_chunk, session_plans
from verifier.policies import Policy, load_policy

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


def _explore(policy: Policy, pressure: str) -> Any:
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
