"""Properties of the reference policies and of the spec interpreter (docs/policies.md).

* Each policy model a spec can express and its spec (models/specs/) give the
  same window and the same spills on generated windows; the tool-output
  clearer, which a spec can only approximate, removes what its spec removes.
* ``check_rewrite`` accepts every rewrite of the safe models (spill-first,
  summarize-with-spill, and the pressure pruner below its threshold).
* A spec never lies about preservation, and its output is always valid.

Windows come from :func:`verifier.strategies.policy_windows`: every kind, link
and field of the data model, stubs whose items the store holds, consistent
content.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from verifier import MemoryStore, check_rewrite, item_from_json, load_policy, ref_of, run_policy
from verifier.parser import parse_formula
from verifier.policies import Policy, PolicyResult, SpecPolicy, parse_spec, window_tokens
from verifier.policies.spec import spec_to_toml
from verifier.strategies import policy_windows, spec_texts

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models" / "policies"
SPECS = ROOT / "models" / "specs"

parse_formula("true")  # build the formula parser before hypothesis times the first example

EXPRESSIBLE = [
    "spill_first",
    "keep_recent",
    "relevance_eviction",
    "paraphraser",
    "pressure_pruner",
    "naive_summarizer",
]


def model(name: str) -> Policy:
    return load_policy(f"{MODELS / name}.py:{name}")


def spec(name: str) -> Policy:
    return load_policy(str(SPECS / f"{name}.toml"))


@st.composite
def window_and_budget(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], int]:
    window, stored = draw(policy_windows())
    total = window_tokens(window)
    budget = draw(st.integers(0, 2 * total + 2))
    return window, stored, budget


def ran(policy: Policy, window: list[Obj], budget: int, pass_no: int = 1) -> PolicyResult:
    res = run_policy(policy, window, budget, pass_no=pass_no)
    assert res.ok, res.message
    return res


@pytest.mark.parametrize("name", EXPRESSIBLE)
@settings(max_examples=150, deadline=None)
@given(case=window_and_budget(), pass_no=st.integers(1, 9))
def test_spec_and_model_give_the_same_rewrite(
    name: str, case: tuple[list[Obj], list[Obj], int], pass_no: int
) -> None:
    window, _, budget = case
    by_model = ran(model(name), window, budget, pass_no)
    by_spec = ran(spec(name), window, budget, pass_no)
    note(f"model: {[it.raw for it in by_model.window]}")
    note(f"spec:  {[it.raw for it in by_spec.window]}")
    assert [it.raw for it in by_spec.window] == [it.raw for it in by_model.window]
    assert by_spec.spill == by_model.spill


@settings(max_examples=150, deadline=None)
@given(case=window_and_budget())
def test_the_clearer_spec_removes_what_the_clearer_clears(
    case: tuple[list[Obj], list[Obj], int],
) -> None:
    window, _, budget = case
    by_model = ran(model("tool_output_clearer"), window, budget)
    by_spec = ran(spec("tool_output_clearer"), window, budget)
    placeholders = [it for it in by_model.window if it.id.endswith(":cleared")]
    results = [it for it in window if it["kind"] == "observation" and "call" in it]
    assert len(placeholders) == len(results)
    assert all(it.kind == "prose" and it.call is not None for it in placeholders)
    without = [it.raw for it in by_model.window if it not in placeholders]
    assert [it.raw for it in by_spec.window] == without


def accepted(
    policy: Policy, window: list[Obj], stored: list[Obj], budget: int, pass_no: int = 1
) -> PolicyResult:
    res = ran(policy, window, budget, pass_no)
    store = MemoryStore()
    store.spill([item_from_json(o) for o in stored])
    store.spill(list(res.spilled))  # the harness writes the spills before the rewrite
    result = check_rewrite(
        [item_from_json(o) for o in window],
        res.window,
        store=store,
        claimed_preserved=res.claimed_preserved,
    )
    note(f"after: {[it.raw for it in res.window]}")
    assert result.verdict == "accept", [(f.code, f.items, f.message) for f in result.findings]
    assert not result.findings
    return res


@pytest.mark.parametrize("policy", ["spill_first", "summarize_with_spill", "spill_first.toml"])
@settings(max_examples=120, deadline=None)
@given(case=window_and_budget(), pass_no=st.integers(1, 9))
def test_the_safe_policies_are_accepted(
    policy: str, case: tuple[list[Obj], list[Obj], int], pass_no: int
) -> None:
    window, stored, budget = case
    chosen = spec("spill_first") if policy.endswith(".toml") else model(policy)
    res = accepted(chosen, window, stored, budget, pass_no)
    assert window_tokens(res.window) <= window_tokens(window)  # they do compress
    before = {it["id"]: it for it in window}
    for sid in res.spill:
        now = [it for it in res.window if it.id == sid]
        if now:  # left its stub
            assert now[0].kind == "stub" and now[0].stub_ref == item_from_json(before[sid]).ref
        else:  # folded into the summary, and spilled all the same
            assert before[sid]["kind"] == "prose"


@settings(max_examples=120, deadline=None)
@given(case=policy_windows(min_size=1), data=st.data())
def test_the_pressure_pruner_is_safe_below_its_threshold(
    case: tuple[list[Obj], list[Obj]], data: st.DataObject
) -> None:
    window, stored = case
    total = window_tokens(window)
    budget = data.draw(st.integers(total // 2 + 1, 2 * total + 2))  # pressure below 2
    accepted(model("pressure_pruner"), window, stored, budget)


@settings(max_examples=120, deadline=None)
@given(text=spec_texts(), case=window_and_budget(), pass_no=st.integers(1, 9), data=st.data())
def test_a_spec_never_lies_about_preservation(
    text: str, case: tuple[list[Obj], list[Obj], int], pass_no: int, data: st.DataObject
) -> None:
    window, stored, budget = case
    policy = SpecPolicy(parse_spec(text))
    ages = {it["id"]: data.draw(st.integers(0, 4)) for it in window}
    store = MemoryStore()
    store.spill([item_from_json(o) for o in stored])  # the window's stubs resolve
    res = run_policy(policy, window, budget, pass_no=pass_no, ages=ages, store=store)
    assert res.ok, res.message  # a spec's output is always a valid window
    before = {it["id"]: it for it in window}
    unchanged = [it.id for it in res.window if it.id in before and it.as_json() == before[it.id]]
    assert list(res.claimed_preserved or ()) == unchanged
    for sid in res.spill:  # each spilled id left its stub
        (stub,) = [it for it in res.window if it.id == sid]
        assert stub.kind == "stub" and stub.stub_ref == item_from_json(before[sid]).ref
    if (
        policy.spec.stop == "fits"
        and window_tokens(window) <= budget
        and not (policy.spec.demote_orphans)
    ):
        assert [it.as_json() for it in res.window] == window  # it fits: nothing to do
    store.spill(list(res.spilled))
    result = check_rewrite(
        [item_from_json(o) for o in window],
        res.window,
        store=store,
        claimed_preserved=res.claimed_preserved,
        with_repair=False,
    )
    assert not [f for f in result.findings if f.code == "CF006"]


@settings(max_examples=200, deadline=None)
@given(
    text=spec_texts(),
    name=st.text(min_size=1, max_size=12),
    comments=st.lists(st.text(max_size=20), max_size=3),
)
def test_a_spec_written_as_toml_reads_back_as_itself(
    text: str, name: str, comments: list[str]
) -> None:
    spec = replace(parse_spec(text), name=name)
    notes = {i: [c] for i, c in enumerate(comments)}
    written = spec_to_toml(spec, comments=comments, rule_comments=notes)
    assert parse_spec(written) == spec
    assert spec_to_toml(parse_spec(written), comments=comments, rule_comments=notes) == written


@settings(max_examples=150, deadline=None)
@given(text=spec_texts(), case=window_and_budget(), pass_no=st.integers(1, 9))
def test_each_item_gets_the_action_its_reading_names(
    text: str, case: tuple[list[Obj], list[Obj], int], pass_no: int
) -> None:
    window, stored, budget = case
    spec_ = replace(parse_spec(text), stop="all", demote_orphans=False)  # every item visited
    store = {ref_of(o): o for o in stored}
    policy = SpecPolicy(spec_)
    readings = policy.readings(window, budget, store=store)
    assert [r.id for r in readings] == [it["id"] for it in window]
    out = {it["id"]: it for it in policy(window, budget, pass_no=pass_no, store=store)["window"]}
    for r, before in zip(readings, window, strict=True):
        assert r.action == ("keep" if r.rule is None else spec_.rules[r.rule].do)
        assert r.stub == (before["kind"] == "stub")
        after = out.get(r.id)
        if r.action == "keep":
            assert after == before
        elif r.action in ("evict", "summarize"):
            assert after is None
        elif r.action == "spill":
            assert after is not None and after["kind"] == "stub"
        else:  # soften, demote: the item stays, changed or not
            assert after is not None and after["kind"] == before["kind"]
