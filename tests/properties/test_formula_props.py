"""Properties of the formula language and of the solver session (SPEC §3).

Every answer of :class:`verifier.solver.Session` is compared with a brute-force
truth table over all assignments of the atoms involved, computed here by an
evaluator that shares no code with :mod:`verifier`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.errors import InputError
from verifier.formula import (
    FALSE,
    TRUE,
    And,
    Atom,
    Const,
    Formula,
    Iff,
    Implies,
    Not,
    Or,
    atoms,
    evaluate,
    evaluate_partial,
    extend_model,
    render,
)
from verifier.parser import parse_formula
from verifier.solver import Session

KEYWORDS = frozenset({"true", "false", "and", "or", "not"})

# valid atom names that stress the lexer: every allowed punctuation mark, and
# names that begin with a keyword
TRICKY_NAMES = (
    "a",
    "b",
    "c",
    "_",
    "A1",
    "db.postgres",
    "db.mysql",
    "x:y",
    "u@v",
    "p/q",
    "nota",
    "not.x",
    "not/y",
    "and.b",
    "andy",
    "or_x",
    "order",
    "truex",
    "false_",
    "true.ok",
)

atom_names: st.SearchStrategy[str] = st.one_of(
    st.sampled_from(TRICKY_NAMES),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:@/]{0,5}", fullmatch=True).filter(
        lambda s: s not in KEYWORDS
    ),
)

vocabularies: st.SearchStrategy[list[str]] = st.lists(
    atom_names, min_size=1, max_size=8, unique=True
)


MAX_ATOMS = 8


def _shapes(depth: int) -> st.SearchStrategy[Formula]:
    """Formula ASTs over the placeholder atoms 0..MAX_ATOMS-1, at most depth levels deep."""
    leaf: st.SearchStrategy[Formula] = st.sampled_from(
        [*(Atom(str(i)) for i in range(MAX_ATOMS)), TRUE, FALSE]
    )
    if depth <= 1:
        return leaf
    sub = _shapes(depth - 1)
    return st.one_of(
        leaf,
        sub.map(Not),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
        st.builds(Implies, sub, sub),
        st.builds(Iff, sub, sub),
    )


# built once: strategies made per example would be validated again at every draw
_SHAPES = {d: _shapes(d) for d in (1, 2, 3, 4)}


def name_atoms(f: Formula, names: Sequence[str]) -> Formula:
    """The shape f with placeholder atom i named names[i mod len(names)]."""
    if isinstance(f, Atom):
        return Atom(names[int(f.name) % len(names)])
    if isinstance(f, Not):
        return Not(name_atoms(f.arg, names))
    if isinstance(f, And):
        return And(tuple(name_atoms(a, names) for a in f.args))
    if isinstance(f, Or):
        return Or(tuple(name_atoms(a, names) for a in f.args))
    if isinstance(f, Implies):
        return Implies(name_atoms(f.left, names), name_atoms(f.right, names))
    if isinstance(f, Iff):
        return Iff(name_atoms(f.left, names), name_atoms(f.right, names))
    return f


def formulas(names: Sequence[str], depth: int = 4) -> st.SearchStrategy[Formula]:
    """Random formula ASTs over names (up to MAX_ATOMS of them), at most depth levels deep."""
    return _SHAPES[depth].map(lambda f: name_atoms(f, names))


# -- an independent evaluator ---------------------------------------------------------------


def truth(f: Formula, env: dict[str, bool]) -> bool:
    if isinstance(f, Const):
        return f.value
    if isinstance(f, Atom):
        return env[f.name]
    if isinstance(f, Not):
        return not truth(f.arg, env)
    if isinstance(f, And):
        return all(truth(a, env) for a in f.args)
    if isinstance(f, Or):
        return any(truth(a, env) for a in f.args)
    if isinstance(f, Implies):
        return not truth(f.left, env) or truth(f.right, env)
    return truth(f.left, env) == truth(f.right, env)


def names_in(*fs: Formula) -> list[str]:
    out: set[str] = set()
    stack = list(fs)
    while stack:
        f = stack.pop()
        if isinstance(f, Atom):
            out.add(f.name)
        elif isinstance(f, Not):
            stack.append(f.arg)
        elif isinstance(f, And | Or):
            stack.extend(f.args)
        elif isinstance(f, Implies | Iff):
            stack.extend((f.left, f.right))
    return sorted(out)


def assignments(names: Sequence[str]) -> Iterator[dict[str, bool]]:
    for values in itertools.product((False, True), repeat=len(names)):
        yield dict(zip(names, values, strict=True))


def models(fs: Sequence[Formula], over: Sequence[Formula] = ()) -> Iterator[dict[str, bool]]:
    """Every assignment of the atoms of fs and over that satisfies all of fs."""
    for env in assignments(names_in(*fs, *over)):
        if all(truth(f, env) for f in fs):
            yield env


def brute_entails(bg: Sequence[Formula], premises: Sequence[Formula], goal: Formula) -> bool:
    return all(truth(goal, env) for env in models([*bg, *premises], [goal]))


def brute_satisfiable(fs: Sequence[Formula]) -> bool:
    return any(True for _ in models(fs))


def background_for(names: Sequence[str]) -> st.SearchStrategy[list[Formula]]:
    """No background, or one or two satisfiable background formulas over the same atoms.

    (An unsatisfiable background is bad input: see test_unsatisfiable_background_is_refused.)
    """
    return st.one_of(
        st.just([]), st.lists(formulas(names, 3), min_size=1, max_size=2).filter(brute_satisfiable)
    )


# -- the parser and the printer -------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_render_then_parse_gives_an_equivalent_formula(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    f = data.draw(formulas(names))
    text = render(f)
    g = parse_formula(text)
    assert names_in(g) == names_in(f), text
    for env in assignments(names_in(f)):
        assert truth(g, env) == truth(f, env), (text, env)
    # printing what was parsed is a fixpoint: the same text gives the same tree
    assert parse_formula(render(g)) == g, text


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_evaluate_and_atoms_agree_with_the_reference(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    f = data.draw(formulas(names))
    assert sorted(atoms(f)) == names_in(f)
    for env in assignments(names_in(f)):
        assert evaluate(f, env) == truth(f, env), (render(f), env)


# -- the solver against truth tables ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_entails_single_premise_matches_truth_table(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    p = data.draw(formulas(names), label="premise")
    q = data.draw(formulas(names), label="goal")
    res = Session(bg).entails([p], q)
    # unsatisfiable premises make every entailment vacuous: unknown, never holds
    assert res.unknown == res.vacuous == (not brute_satisfiable([*bg, p]))
    if not res.unknown:
        assert res.holds == brute_entails(bg, [p], q), (render(p), render(q))
        assert res.holds != res.fails


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_entails_premise_list_matches_truth_table(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    ps = data.draw(st.lists(formulas(names, 3), min_size=0, max_size=4), label="premises")
    q = data.draw(formulas(names), label="goal")
    res = Session(bg).entails(ps, q)
    assert res.unknown == res.vacuous == (not brute_satisfiable([*bg, *ps]))
    if not res.unknown:
        assert res.holds == brute_entails(bg, ps, q), ([render(p) for p in ps], render(q))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_entails_counterexample_satisfies_premises_and_falsifies_goal(
    data: st.DataObject,
) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    ps = data.draw(st.lists(formulas(names, 3), min_size=1, max_size=3), label="premises")
    q = data.draw(formulas(names), label="goal")
    res = Session(bg).entails(ps, q)
    assert res.unknown == (not brute_satisfiable([*bg, *ps]))
    if res.fails:
        cex = res.counterexample
        assert cex is not None
        assert all(evaluate(b, cex) for b in bg), cex
        assert all(evaluate(p, cex) for p in ps), cex
        assert not evaluate(q, cex), cex


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_valid_matches_truth_table_and_its_counterexample_refutes(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    q = data.draw(formulas(names), label="goal")
    res = Session(bg).valid(q)
    assert not res.unknown
    assert res.holds == brute_entails(bg, [], q), render(q)
    if res.fails:
        cex = res.counterexample
        assert cex is not None
        assert all(evaluate(b, cex) for b in bg), cex
        assert not evaluate(q, cex), cex


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_satisfiable_matches_truth_table_and_its_model_satisfies(data: st.DataObject) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    ps = data.draw(st.lists(formulas(names), min_size=1, max_size=3), label="formulas")
    res = Session(bg).satisfiable(ps)
    assert not res.unknown
    assert res.holds == brute_satisfiable([*bg, *ps]), [render(p) for p in ps]
    if res.holds:
        model = res.counterexample
        assert model is not None
        assert all(evaluate(b, model) for b in bg), model
        assert all(evaluate(p, model) for p in ps), model


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_equivalent_matches_truth_table_and_its_counterexample_separates(
    data: st.DataObject,
) -> None:
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    p = data.draw(formulas(names), label="left")
    q = data.draw(formulas(names), label="right")
    res = Session(bg).equivalent(p, q)
    if res.unknown:  # one side is unsatisfiable with the background: vacuous
        assert res.vacuous
        assert not brute_satisfiable([*bg, p]) or not brute_satisfiable([*bg, q])
        return
    same = brute_entails(bg, [p], q) and brute_entails(bg, [q], p)
    assert res.holds == same, (render(p), render(q))
    if res.fails:  # the counterexample tells the two apart
        cex = res.counterexample
        assert cex is not None
        assert all(evaluate(b, cex) for b in bg), cex
        assert evaluate(p, cex) != evaluate(q, cex), cex


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_reported_model_does_not_depend_on_what_the_session_asked_before(
    data: st.DataObject,
) -> None:
    """A model that can reach a report (a satisfiable set's, an entailment's refutation) is
    a function of the question alone: a session that answered other questions first
    gives the same one as a fresh session, whether Python or the solver found it."""
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    ps = data.draw(st.lists(formulas(names), min_size=1, max_size=3), label="formulas")
    q = data.draw(formulas(names), label="goal")
    earlier = data.draw(
        st.lists(st.lists(formulas(names, 3), min_size=1, max_size=3), max_size=4),
        label="asked before",
    )
    used = Session(bg)
    for fs in earlier:
        used.satisfiable(fs)
        used.entails(fs[:-1], fs[-1])
    for fresh, again in (
        (Session(bg).satisfiable(ps), used.satisfiable(ps)),
        (Session(bg).entails(ps, q), used.entails(ps, q)),
    ):
        assert fresh.verdict == again.verdict
        assert fresh.counterexample == again.counterexample, ([render(p) for p in ps], render(q))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_one_session_answers_many_questions_consistently(data: st.DataObject) -> None:
    """Literals and slices are cached per session: later answers must not drift."""
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    session = Session(bg)
    pool = data.draw(st.lists(formulas(names, 3), min_size=2, max_size=5), label="pool")
    questions = data.draw(
        st.lists(
            st.tuples(st.lists(st.sampled_from(pool), max_size=3), st.sampled_from(pool)),
            min_size=1,
            max_size=8,
        ),
        label="questions",
    )
    for ps, q in questions:
        res = session.entails(ps, q)
        assert res.unknown == (not brute_satisfiable([*bg, *ps]))
        if not res.unknown:
            assert res.holds == brute_entails(bg, ps, q), ([render(p) for p in ps], render(q))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_minimal_core_is_unsatisfiable_and_minimal(data: st.DataObject) -> None:
    """Deletion in order gives a core that is unsat, and unsat no more without any member."""
    names = data.draw(vocabularies)
    bg = data.draw(background_for(names))
    fs = data.draw(st.lists(formulas(names, 2), min_size=1, max_size=5), label="formulas")
    core = Session(bg).minimal_core([(f"f{i}", f) for i, f in enumerate(fs)])
    if brute_satisfiable([*bg, *fs]):
        assert core.status == "sat"
        return
    assert core.status == "unsat"
    members = [fs[int(label[1:])] for label in core.labels]
    assert not brute_satisfiable([*bg, *members])
    for i in range(len(members)):
        assert brute_satisfiable([*bg, *members[:i], *members[i + 1 :]])
    # deletion in the given order: a member's index order is kept
    assert list(core.labels) == sorted(core.labels, key=lambda label: int(label[1:]))


def test_minimal_core_follows_the_deletion_order() -> None:
    a, b, c = parse_formula("a"), parse_formula("!a"), parse_formula("a -> false")
    # {a, !a} and {a, a -> false} are both cores: deletion drops 'a' first only if the
    # rest stays unsat — it does not ({!a, a->false} is sat), so 'a' stays; then '!a' goes
    core = Session().minimal_core([("a", a), ("not a", b), ("a false", c)])
    assert core.labels == ("a", "a false")
    core = Session().minimal_core([("not a", b), ("a false", c), ("a", a)])
    assert core.labels == ("a false", "a")


def test_unsatisfiable_background_is_refused() -> None:
    with pytest.raises(InputError, match=r"background is unsatisfiable.*'background\[0\]'"):
        Session([parse_formula("a"), parse_formula("b"), parse_formula("!a")])
    Session([parse_formula("a"), parse_formula("a -> b")])  # satisfiable: accepted


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_greedy_model_satisfies_every_formula_and_only_a_satisfiable_set_gets_one(
    data: st.DataObject,
) -> None:
    from verifier.solver import greedy_model

    names = data.draw(vocabularies)
    fs = data.draw(st.lists(formulas(names, 2), min_size=1, max_size=6), label="formulas")
    found = greedy_model(fs)
    if found is not None:
        assert all(evaluate(f, found) for f in fs)
        assert all(a in found for f in fs for a in atoms(f))  # nothing left to a default
    if not brute_satisfiable(fs):
        assert found is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_partial_evaluation_is_the_value_of_every_completion(data: st.DataObject) -> None:
    """evaluate_partial says True or False only when every completion of the partial
    assignment gives that value (None may still hide a tautology: ``a -> a``), and on a
    total assignment it is evaluate."""
    names = data.draw(vocabularies)
    f = data.draw(formulas(names), label="formula")
    known = {
        n: v for n in names if (v := data.draw(st.sampled_from([True, False, None]))) is not None
    }
    free = sorted(atoms(f) - set(known))
    values = {
        evaluate(f, {**known, **dict(zip(free, row, strict=True))})
        for row in itertools.product((False, True), repeat=len(free))
    }
    said = evaluate_partial(f, known)
    if said is not None:
        assert values == {said}, render(f)
    if not free:
        assert said == evaluate(f, known), render(f)


def _search_extend(model: dict[str, bool], node: Formula, max_free: int) -> bool:
    """extend_model as specified: the new atoms' assignments tried in order, true first."""
    free = sorted(atoms(node) - set(model))
    if len(free) > max_free:
        return False
    for row in itertools.product((True, False), repeat=len(free)):
        if evaluate(node, {**model, **dict(zip(free, row, strict=True))}):
            model.update(zip(free, row, strict=True))
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_extend_model_tries_the_new_atoms_true_first(data: st.DataObject) -> None:
    """Literals included (which it settles without a search): the same answer and the
    same model as the search over the new atoms' assignments, true first."""
    names = data.draw(vocabularies)
    atom = Atom(data.draw(st.sampled_from(names)))
    literals: list[Formula] = [atom, Not(atom)]
    f: Formula = data.draw(st.sampled_from(literals) | formulas(names, 2), label="formula")
    model = {
        n: v for n in names if (v := data.draw(st.sampled_from([True, False, None]))) is not None
    }
    max_free = data.draw(st.integers(0, 3))
    mine, reference = dict(model), dict(model)
    assert extend_model(mine, f, max_free) == _search_extend(reference, f, max_free)
    assert mine == reference
