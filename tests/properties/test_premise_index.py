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


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_kept_model_satisfies_every_premise_and_asks_like_the_whole_set(
    data: st.DataObject,
) -> None:
    """With ``keep_model``, the index's model satisfies the background and every premise
    after any additions and removals, and ``satisfiable_with`` (which asks only the slice
    a formula reaches) answers what the whole set with that formula answers."""
    from verifier.formula import evaluate

    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    session = Session(bg)
    idx = PremiseIndex(session, keep_model=True)
    present: dict[str, Formula] = {}
    step = st.tuples(
        st.sampled_from(["add", "remove", "ask"]), st.integers(0, 5), formulas(names, 2)
    )
    steps = data.draw(st.lists(step, max_size=12))
    for what, k, f in steps:
        key = f"k{k}"
        if what == "add" and key not in present:
            idx.add(key, key, f)
            present[key] = f
        elif what == "remove":
            idx.remove(key)
            present.pop(key, None)
        elif what == "ask" and idx.consistent().holds:
            asked = idx.satisfiable_with(f)
            assert asked.holds == session.consistency([*present.values(), f]).holds
        whole = session.consistency(list(present.values()))
        model = idx.model()
        assert (model is not None) == whole.holds
        if model is not None:
            values = {n: model.get(n, False) for n in names}
            assert all(evaluate(b, values) for b in bg)
            assert all(evaluate(p, values) for p in present.values())


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_model_does_not_depend_on_the_questions_asked_before(data: st.DataObject) -> None:
    """The solver's model of the same formulas (what a counterexample is read from) is
    the same in a fresh session and in one that answered other questions first."""
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    before = data.draw(st.lists(st.lists(formulas(names, 2), max_size=3), max_size=4))
    asked = data.draw(st.lists(formulas(names, 2), min_size=1, max_size=3), label="asked")
    fresh = Session(bg).satisfiable(asked)
    busy = Session(bg)
    for fs in reversed(before):
        busy.satisfiable(fs)
    again = busy.satisfiable(asked)
    assert fresh.verdict == again.verdict
    assert fresh.counterexample == again.counterexample
