"""Each unsafe reference policy (models/policies/) makes a rewrite the checker refuses.

Every test builds a small window, runs the model on it through ``run_policy``
(loaded by path, as ``ctxproof fuzz`` loads a policy), and checks the rewrite
``before -> after`` with the store holding what the policy spilled. The
assertions name the rule that characterises each model's failure.

"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifier import (
    MemoryStore,
    RewriteResult,
    audit_trace,
    check_rewrite,
    item_from_json,
    load_policy,
    parse_trace_text,
    run_policy,
)
from verifier.policies import PolicyResult

Obj = dict[str, Any]
MODELS = Path(__file__).resolve().parents[2] / "models" / "policies"


def rewrite(
    name: str, window: list[Obj], budget: int, *, background: tuple[str, ...] = ()
) -> tuple[PolicyResult, RewriteResult, set[tuple[str, tuple[str, ...]]]]:
    policy = load_policy(f"{MODELS / name}.py:{name}")
    res = run_policy(policy, window, budget)
    assert res.ok, res.message
    store = MemoryStore()
    store.spill(list(res.spilled))
    result = check_rewrite(
        [item_from_json(o) for o in window],
        res.window,
        store=store,
        background=background,
        claimed_preserved=res.claimed_preserved,
    )
    return res, result, {(f.code, f.items) for f in result.findings}


def test_naive_summarizer_drops_a_rejection_and_a_rationale_and_claims_them() -> None:
    why = {"id": "why1", "kind": "claim", "formula": "migrations.need_locks", "tokens": 30}
    rej = {
        "id": "rej1",
        "kind": "commitment",
        "type": "rejection",
        "formula": "!db.mysql",
        "rationale": ["why1"],
        "tokens": 30,
    }
    dec = {
        "id": "d1",
        "kind": "commitment",
        "type": "decision",
        "formula": "db.postgres",
        "rationale": ["why1"],
        "tokens": 30,
    }
    prose = {"id": "p41", "kind": "prose", "text": "schema drafted", "tokens": 30}
    res, result, found = rewrite("naive_summarizer", [why, rej, dec, prose], 80)
    assert [it.id for it in res.window] == ["summary@1", "d1", "p41"]
    assert result.verdict == "refuse"
    assert ("CF001", ("rej1",)) in found
    assert ("CF004", ("d1", "why1")) in found
    assert ("CF006", ("rej1",)) in found  # it certified its own output


def test_keep_recent_drops_an_old_commitment_and_a_tool_call() -> None:
    c1 = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "db.pg", "tokens": 20}
    call = {"id": "call1", "kind": "prose", "text": "run make test", "tokens": 20}
    result_obs = {
        "id": "r1",
        "kind": "observation",
        "call": "call1",
        "source": "make test",
        "exit_code": 0,
        "modality": "verified",
        "tokens": 20,
    }
    recent = {"id": "p1", "kind": "prose", "tokens": 20}
    res, _, found = rewrite("keep_recent", [c1, call, result_obs, recent], 40)
    assert [it.id for it in res.window] == ["r1", "p1"]
    assert ("CF001", ("c1",)) in found
    assert ("TP001", ("r1", "call1")) in found  # the kept result r1 answers an evicted call


def test_keep_recent_evicts_an_old_failure() -> None:
    failed = {
        "id": "o1",
        "kind": "observation",
        "modality": "failed",
        "source": "make test",
        "tokens": 30,
    }
    res, _, found = rewrite("keep_recent", [failed, {"id": "p", "kind": "prose", "tokens": 5}], 10)
    assert [it.id for it in res.window] == ["p"]
    assert ("WR008", ("o1",)) in found


RELEVANCE_WINDOW: list[Obj] = [
    {
        "id": "t1",
        "kind": "commitment",
        "type": "obligation",
        "formula": "task.migrations_applied",
        "score": 90,
        "tokens": 20,
    },
    {
        "id": "o1",
        "kind": "observation",
        "source": "pip install psycopg2==2.8.6",
        "exit_code": 1,
        "modality": "failed",
        "score": 5,
        "tokens": 40,
    },
    {"id": "p2", "kind": "prose", "text": "focus: migrations", "score": 60, "tokens": 20},
]


def test_relevance_eviction_evicts_the_failed_attempt_first() -> None:
    res, result, found = rewrite("relevance_eviction", RELEVANCE_WINDOW, 50)
    assert [it.id for it in res.window] == ["t1", "p2"]
    assert found == {("WR008", ("o1",))}
    assert result.verdict == "refuse"


def test_relevance_eviction_leads_to_a_rerun_of_the_failed_command() -> None:
    res, _, _ = rewrite("relevance_eviction", RELEVANCE_WINDOW, 50)
    rerun = {
        "id": "o3",
        "kind": "observation",
        "source": "pip install psycopg2==2.8.6",
        "exit_code": 1,
        "modality": "failed",
    }
    events = [
        {"event": "header", "format": "ctxproof-trace/1", "budget": 50},
        {"event": "append", "items": RELEVANCE_WINDOW},
        {"event": "rewrite", "policy": "relevance", "window": [it.as_json() for it in res.window]},
        {"event": "append", "items": [rerun]},
    ]
    trace = parse_trace_text("\n".join(json.dumps(e) for e in events) + "\n", "t.jsonl")
    findings = audit_trace(trace).findings
    assert ("WR008", 1, ("o1",)) in {(f.code, f.pass_, f.items) for f in findings}
    # the agent tried it again: a re-run of the command whose failure was evicted
    assert [(f.pass_, f.items) for f in findings if f.code == "CP003"] == [(1, ("o3", "o1"))]


def test_digest_of_digests_loses_the_evidence_of_what_it_merges() -> None:
    window: list[Obj] = [
        {
            "id": "o1",
            "kind": "observation",
            "source": "make test",
            "exit_code": 0,
            "modality": "verified",
            "shows": "tests.passed",
            "tokens": 40,
        },
        {
            "id": "o2",
            "kind": "observation",
            "source": "git rev-parse --short HEAD",
            "exit_code": 0,
            "modality": "verified",
            "shows": "head.3f2a9c1",
            "tokens": 40,
        },
        {
            "id": "k1",
            "kind": "claim",
            "formula": "tests.passed",
            "modality": "verified",
            "witnesses": ["o1"],
            "load_bearing": True,
            "tokens": 20,
        },
        {
            "id": "k2",
            "kind": "claim",
            "formula": "head.3f2a9c1",
            "modality": "verified",
            "witnesses": ["o2"],
            "tokens": 20,
        },
        {"id": "k3", "kind": "claim", "formula": "ci.refunds_v2_off", "tokens": 20},
        {
            "id": "inv1",
            "kind": "commitment",
            "type": "invariant",
            "formula": "tests.passed",
            "modality": "verified",
            "witnesses": ["o1"],
            "tokens": 20,
        },
    ]
    res, _, found = rewrite("digest_of_digests", window, 100)
    digest = res.window[0].as_json()
    assert [it.id for it in res.window] == ["digest@1", "inv1"]
    assert digest["covers"] == ["k1", "k2", "k3"]
    assert digest["formula"] == "(tests.passed) & (head.3f2a9c1)"  # k3's content is gone
    assert ("WR005", ("digest@1",)) in found  # says verified; its witnesses are retained nowhere
    assert ("WR001", ("inv1", "o1")) in found  # the invariant's witness was dropped
    assert ("CF001", ("k1",)) in found  # the merge is invalid, so it carries nothing
    assert ("CF007", ("digest@1", "k3")) in found  # it does not entail the covered k3


def test_paraphraser_launders_a_failure() -> None:
    failed_run = {
        "id": "o1",
        "kind": "observation",
        "source": "make test",
        "exit_code": 1,
        "modality": "failed",
        "shows": "make_test.exit1",
        "tokens": 80,
    }
    claim = {
        "id": "k1",
        "kind": "claim",
        "formula": "make_test.exit1",
        "modality": "failed",
        "witnesses": ["o1"],
        "tokens": 40,
    }
    res, _, found = rewrite("paraphraser", [failed_run, claim], 70)
    assert [it.modality for it in res.window] == ["unverified", "unverified"]
    assert [it.tokens for it in res.window] == [40, 20]
    assert ("WR004", ("o1",)) in found and ("WR004", ("k1",)) in found
    assert ("WR007", ("o1",)) in found  # a rewritten observation is no longer the primitive


PRESSURE_WINDOW: list[Obj] = [
    {"id": "c1", "kind": "commitment", "type": "decision", "formula": "db.pg", "tokens": 20},
    {"id": "call1", "kind": "prose", "text": "run make test", "tokens": 20},
    {
        "id": "r1",
        "kind": "observation",
        "call": "call1",
        "source": "make test",
        "exit_code": 1,
        "modality": "failed",
        "tokens": 20,
    },
    {"id": "p1", "kind": "prose", "tokens": 20},
]


def test_pressure_pruner_is_safe_below_twice_the_budget_and_not_above() -> None:
    res, result, found = rewrite("pressure_pruner", PRESSURE_WINDOW, 41)  # pressure 1.95
    assert res.spill == ("c1", "call1", "r1", "p1")
    assert [it.kind for it in res.window] == ["stub"] * 4
    assert result.verdict == "accept" and not found
    res, result, found = rewrite("pressure_pruner", PRESSURE_WINDOW, 40)  # pressure 2.0
    assert [it.id for it in res.window] == ["r1", "p1"]
    assert result.verdict == "refuse"
    assert ("CF001", ("c1",)) in found
    assert ("TP001", ("r1", "call1")) in found  # r1 answers the evicted call1
    res, result, found = rewrite("pressure_pruner", PRESSURE_WINDOW, 30)  # pressure 2.67
    assert [it.id for it in res.window] == ["p1"]
    assert ("WR008", ("r1",)) in found


def test_tool_output_clearer_keeps_the_pairing_and_loses_the_evidence() -> None:
    window: list[Obj] = [
        {"id": "callA", "kind": "prose", "text": "make test", "tokens": 10},
        {
            "id": "rA",
            "kind": "observation",
            "call": "callA",
            "source": "make test",
            "exit_code": 0,
            "modality": "verified",
            "shows": "tests.passed",
            "tokens": 60,
        },
        {
            "id": "kA",
            "kind": "claim",
            "formula": "tests.passed",
            "modality": "verified",
            "witnesses": ["rA"],
            "load_bearing": True,
            "tokens": 10,
        },
        {"id": "callB", "kind": "prose", "text": "pip install x", "tokens": 10},
        {
            "id": "rB",
            "kind": "observation",
            "call": "callB",
            "source": "pip install x",
            "exit_code": 1,
            "modality": "failed",
            "tokens": 60,
        },
    ]
    res, _, found = rewrite("tool_output_clearer", window, 100)
    assert [it.id for it in res.window] == ["callA", "rA:cleared", "kA", "callB", "rB:cleared"]
    assert [(it.kind, it.call) for it in res.window if it.id.endswith(":cleared")] == [
        ("prose", "callA"),
        ("prose", "callB"),
    ]
    assert ("WR001", ("kA", "rA")) in found
    assert ("WR008", ("rB",)) in found
    # the placeholders keep every call answered: no tool pairing finding
    assert not any(code in ("TP001", "TP002") for code, _ in found)
