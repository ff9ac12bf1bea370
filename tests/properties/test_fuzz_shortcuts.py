"""Shrinking's shortcuts give the counterexamples playing every candidate afresh gives.

With ``verifier.fuzz.SHORTCUTS`` the sessions of a run share one solver
session, a candidate played while shrinking one rule answers for another rule
first shown by the same session, and the policy is not called again on an
input it answered twice alike. Off, every candidate is played afresh, by
itself (the reference). On generated policies (keep the newest items that fit,
spill or drop the rest, drop items of one kind, forget the reasons of
decisions) and generated sessions, both must find the same rules and write the
same counterexamples, byte for byte, each replaying to its rule.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import stub_for
from verifier.audit import Auditor, audit_trace
from verifier.errors import InputError
from verifier.fuzz import (
    BACKGROUND,
    Plan,
    _Plays,
    fuzz,
    run_session,
    session_plans,
    solver_session,
)
from verifier.io import parse_trace_text
from verifier.policies import Policy
from verifier.policies.loading import as_policy

Obj = dict[str, Any]
KINDS = ("prose", "observation", "claim", "commitment")


def _make(keep_share: int, spill: bool, drop_kind: str | None, unreason: bool) -> Policy:
    """A policy of the family: keep the newest items within ``keep_share`` percent of the
    budget (spill the rest behind stubs, or drop it), drop every item of ``drop_kind``,
    and with ``unreason`` keep decisions without their rationale."""

    def policy(window: list[Obj], budget: int) -> Obj:
        room = budget * keep_share // 100
        kept: list[Obj] = []
        spilled: list[str] = []
        used = 0
        for item in reversed(window):
            if item["kind"] == drop_kind:
                continue
            size = item.get("tokens", 10)
            if item["kind"] == "commitment" and unreason and item.get("rationale"):
                item = {k: v for k, v in item.items() if k != "rationale"}
            if used + size <= room or item["kind"] == "stub":
                kept.append(item)
                used += size
            elif spill:
                kept.append({**stub_for(item), "tokens": 1})
                spilled.append(item["id"])
                used += 1
        return {"window": list(reversed(kept)), "spill": spilled}

    name = f"keep{keep_share}_{'spill' if spill else 'drop'}_{drop_kind}_{unreason}"
    return as_policy(policy, name)


policies = st.builds(
    _make,
    st.integers(30, 95),
    st.booleans(),
    st.sampled_from((None, *KINDS)),
    st.booleans(),
)


def _fuzz(policy: Policy, out: Path, seed: int) -> Any:
    return fuzz(
        policy,
        sessions=8,
        passes=4,
        seed_value=seed,
        shrink_calls=20,
        out_dir=out,
        card=False,
        policy_timeout=None,
    )


def _shown(report: Any) -> tuple[Any, ...]:
    return (
        dict(report.findings_by_rule),
        dict(report.texts),
        dict(report.unshrunk),
        [(c.code, Path(c.path).name, c.pass_, c.items, c.message) for c in report.counterexamples],
        report.rewrites,
        report.pressures,
    )


def _generated(count: int) -> list[tuple[int, bool, str | None, bool, int]]:
    """Policies of the family and seeds, drawn from a fixed seed (fuzz runs hypothesis
    itself: a test around it draws its cases up front)."""
    rnd = random.Random(25)
    return [
        (
            rnd.randint(30, 95),
            rnd.random() < 0.5,
            rnd.choice((None, *KINDS)),
            rnd.random() < 0.5,
            rnd.randint(0, 50),
        )
        for _ in range(count)
    ]


FAST_CASES = (1, 7)
"""The cases of the fast tier (a few seconds each, several rules each); the others, some of
which take half a minute, run in the long tier (make test-slow)."""


@pytest.mark.parametrize(
    ("keep", "spill", "drop", "unreason", "seed"),
    [
        case if i in FAST_CASES else pytest.param(*case, marks=pytest.mark.slow)
        for i, case in enumerate(_generated(8))
    ],
)
def test_fuzz_with_shortcuts_writes_what_fuzz_without_writes(
    keep: int,
    spill: bool,
    drop: str | None,
    unreason: bool,
    seed: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = _make(keep, spill, drop, unreason)
    fast = _fuzz(policy, tmp_path / "fast", seed)
    with monkeypatch.context() as m:
        m.setattr("verifier.fuzz.SHORTCUTS", False)
        slow = _fuzz(policy, tmp_path / "slow", seed)
    assert _shown(fast) == _shown(slow)
    assert fast.shrinking["plays"] == slow.shrinking["plays"]  # the same candidates
    for cex in fast.counterexamples:
        replay = audit_trace(parse_trace_text(Path(cex.path).read_bytes(), cex.path))
        assert cex.code in {f.code for f in replay.findings}


def test_a_search_that_answers_for_another_rule_is_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules first shown by one session whose searches would try the same candidates with
    the same answers: the later rule settles where the earlier search did, without a
    search of its own, and writes what its own search writes."""
    keep, spill, drop, unreason, seed = _generated(8)[7]
    policy = _make(keep, spill, drop, unreason)
    answered: list[str] = []
    same_search = _Plays.same_search

    def counted(self: _Plays, code: str, search: Any) -> Any:
        found = same_search(self, code, search)
        if found is not None:
            answered.append(code)
        return found

    monkeypatch.setattr(_Plays, "same_search", counted)
    fast = _fuzz(policy, tmp_path / "fast", seed)
    assert answered  # this case has such rules
    for code in answered:
        assert fast.shrinking["by_rule"][code]["played"] == 0
    with monkeypatch.context() as m:
        m.setattr("verifier.fuzz.SHORTCUTS", False)
        slow = _fuzz(policy, tmp_path / "slow", seed)
    assert _shown(fast) == _shown(slow)
    for code in answered:
        assert fast.shrinking["by_rule"][code]["plays"] == slow.shrinking["by_rule"][code]["plays"]


def _results(policy: Policy, plan: Any, codes: list[str], shared: bool) -> list[Any]:
    """Each code's session as a shrink plays it: through one set of plays (in turn, as the
    rules of one session are shrunk), or afresh."""
    if not shared:
        alone = [run_session(policy, plan, passes=4, stop_on=code) for code in codes]
        return [r.to_json() if c in r.codes() else None for c, r in zip(codes, alone, strict=True)]
    plays = _Plays(policy, 4, "support", False)
    for code in codes:
        plays.expect(code, (0, 0))
    out = []
    for code in codes:
        shown = plays.shows(plan, code, (0, 0))
        out.append(None if shown is None else shown.to_json())
        plays.done(code, (0, 0))
    return out


@settings(max_examples=15, deadline=None, derandomize=True)
@given(policy=policies, plan=session_plans(4), order=st.randoms(use_true_random=False))
def test_one_play_answers_for_every_rule_it_shows(policy: Policy, plan: Any, order: Any) -> None:
    """A play seeking one rule, kept, answers for each other rule as a play seeking that
    rule afresh would: the same session up to the same turn, or nothing when it does not
    show it."""
    whole = run_session(policy, plan, passes=4)
    codes = [*sorted(whole.codes()), "CF999"]  # and a rule it never shows
    order.shuffle(codes)
    fresh = _results(policy, plan, codes, shared=False)
    assert fresh.count(None) < len(codes) or not whole.codes()
    assert _results(policy, plan, codes, shared=True) == fresh


@settings(max_examples=20, deadline=None, derandomize=True)
@given(policy=policies, plan=session_plans(4), other=session_plans(4), cut=st.integers(0, 12))
def test_a_play_answers_for_a_plan_that_plays_the_same_turns_first(
    policy: Policy, plan: Plan, other: Plan, cut: int
) -> None:
    """A candidate with the plan's budget, world and first turns, and another tail, is
    answered from the plan's play as a play of its own would answer: the same session up
    to the turn that shows the rule, or nothing; without being played when the turns the
    play needed are all among the candidate's first turns."""
    candidate = Plan(plan.budget, plan.world, plan.turns[:cut] + other.turns, plan.fill_pieces)
    whole = run_session(policy, plan, passes=4)
    codes = [*sorted(whole.codes()), "CF999"]
    plays = _Plays(policy, 4, "support", False)
    for code in codes:
        plays.expect(code, (0, 0))
    for code in codes:
        plays.shows(plan, code, (0, 0))
        header = (plan.budget, plan.world, plan.fill_pieces)
        prefix = [p for p in plays.prefixes[(0, 0)][header] if p.turns == plan.turns][-1]
        at = prefix.first.get(code)
        needed = prefix.end if at is None or at < 0 else prefix.needs[at]
        fresh_before = plays.fresh
        shown = plays.shows(candidate, code, (0, 0))
        alone = run_session(policy, candidate, passes=4, stop_on=code)
        assert (None if shown is None else shown.to_json()) == (
            alone.to_json() if code in alone.codes() else None
        )
        answerable = at is not None or prefix.ended
        if answerable and needed <= min(cut, len(plan.turns)):
            assert plays.fresh == fresh_before  # answered, not played
        plays.done(code, (0, 0))


@given(plan=session_plans(4))
@settings(max_examples=10, deadline=None, derandomize=True)
def test_a_shared_solver_session_finds_what_a_session_of_its_own_finds(plan: Any) -> None:
    policy = _make(50, False, None, True)
    shared = solver_session()
    alone = run_session(policy, plan, passes=4).to_json()
    assert run_session(policy, plan, passes=4, session=shared).to_json() == alone
    # and again, after the shared session answered that one
    assert run_session(policy, plan, passes=4, session=shared).to_json() == alone


def test_a_policy_seen_to_vary_is_called_again(tmp_path: Path) -> None:
    """The policy's answers are kept only where it gave one result twice: a policy whose
    output varies is PL002 with the shortcuts as without them."""
    calls = [0]

    def varying(window: list[Obj], budget: int) -> list[Obj]:
        calls[0] += 1
        return window[calls[0] % 2 :]

    report = fuzz(
        varying, sessions=4, passes=3, out_dir=tmp_path, card=False, policy_timeout=None
    )
    assert "PL002" in report.findings_by_rule
    assert "PL002" not in report.unshrunk


def test_a_session_is_shared_only_with_audits_of_its_background() -> None:
    shared = solver_session()
    assert Auditor(BACKGROUND, session=shared).session is shared
    with pytest.raises(InputError, match="another background"):
        Auditor(["a -> b"], session=shared)
    with pytest.raises(InputError, match="background"):
        Auditor(["a &"], session=shared)  # the formula that does not parse is named
    with pytest.raises(TypeError):
        Auditor(BACKGROUND, session="shared")  # type: ignore[arg-type]
