"""The premise index answers exactly what the whole premise set answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_formula_props import background_for, formulas, vocabularies

from verifier.formula import Formula
from verifier.solver import CombinedPremises, PremiseIndex, PremiseSet, Session


def _same(a: object, b: object) -> None:
    from verifier.solver import Result

    assert isinstance(a, Result) and isinstance(b, Result)
    assert (a.verdict, a.vacuous) == (b.verdict, b.vacuous)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_combined_indexes_answer_like_one_premise_set(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    session = Session(bg)
    window = data.draw(st.lists(formulas(names, 2), max_size=4), label="window")
    stored = data.draw(st.lists(formulas(names, 2), max_size=6), label="store")
    dropped = data.draw(st.sets(st.integers(0, 5)), label="removed from the store")
    goals = data.draw(st.lists(formulas(names, 2), min_size=1, max_size=3), label="goals")
    w_idx, s_idx = PremiseIndex(session), PremiseIndex(session)
    for i, f in enumerate(window):
        w_idx.add(f"w{i}", f"w{i}", f)
    kept: list[Formula] = []
    for i, f in enumerate(stored):
        s_idx.add(f"s{i}", f"s{i}", f)
        s_idx.consistent()  # a cached state that later additions and removals must update
        if i in dropped:
            s_idx.remove(f"s{i}")
        else:
            kept.append(f)
    combined = CombinedPremises(session, [w_idx, s_idx])
    whole = PremiseSet(session, [*window, *kept])
    assert combined.consistent().holds == whole.consistent().holds
    for goal in goals:
        _same(combined.entails(goal), whole.entails(goal))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_cached_consistency_follows_additions_and_removals(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    session = Session(data.draw(background_for(names)))
    idx = PremiseIndex(session)
    present: dict[str, Formula] = {}
    steps = data.draw(
        st.lists(st.tuples(st.booleans(), st.integers(0, 5), formulas(names, 2)), max_size=10)
    )
    for add, k, f in steps:
        key = f"k{k}"
        if add and key not in present:
            idx.add(key, key, f)
            present[key] = f
        elif not add:
            idx.remove(key)
            present.pop(key, None)
        assert idx.consistent().holds == session.consistency(list(present.values())).holds
