"""Unit tests of the formula parser (SPEC §3)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from verifier.errors import FormulaError, InputError
from verifier.formula import (
    FALSE,
    MAX_DEPTH,
    TRUE,
    And,
    Atom,
    Iff,
    Implies,
    Not,
    Or,
    new_atom,
    render,
)
from verifier.io import item_from_json
from verifier.parser import MAX_LENGTH, parse_formula

a, b, c, d = Atom("a"), Atom("b"), Atom("c"), Atom("d")


# -- precedence: ! > & > | > -> > <-> ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("!a & b", And((Not(a), b))),
        ("!(a & b)", Not(And((a, b)))),
        ("a | b & c", Or((a, And((b, c))))),
        ("a & b | c", Or((And((a, b)), c))),
        ("a | b -> c", Implies(Or((a, b)), c)),
        ("a -> b | c", Implies(a, Or((b, c)))),
        ("a -> b <-> c", Iff(Implies(a, b), c)),
        ("a <-> b -> c", Iff(a, Implies(b, c))),
        ("!a | b & c -> d", Implies(Or((Not(a), And((b, c)))), d)),
        ("(a <-> b) & c", And((Iff(a, b), c))),
        ("!!a", Not(Not(a))),
    ],
)
def test_precedence(text: str, tree: object) -> None:
    assert parse_formula(text) == tree


def test_implication_is_right_associative() -> None:
    assert parse_formula("a -> b -> c") == Implies(a, Implies(b, c))
    assert parse_formula("a -> b -> c -> d") == Implies(a, Implies(b, Implies(c, d)))
    assert parse_formula("(a -> b) -> c") == Implies(Implies(a, b), c)


def test_and_or_chains_are_flat() -> None:
    assert parse_formula("a & b & c") == And((a, b, c))
    assert parse_formula("a | b | c | d") == Or((a, b, c, d))


def test_constants() -> None:
    assert parse_formula("true") == TRUE
    assert parse_formula("false") == FALSE
    assert parse_formula("true -> false") == Implies(TRUE, FALSE)


def test_whitespace_is_insignificant() -> None:
    assert parse_formula("a&b|!c->d") == parse_formula("  a & b | ! c -> d  ")
    assert parse_formula("a<->b") == Iff(a, b)


# -- keywords ----------------------------------------------------------------------------------


def test_keyword_operators() -> None:
    assert parse_formula("not a") == Not(a)
    assert parse_formula("a and b") == And((a, b))
    assert parse_formula("a or b") == Or((a, b))
    assert parse_formula("not a and b or c") == parse_formula("!a & b | c")
    assert parse_formula("a and not b -> c or d") == parse_formula("a & !b -> c | d")


@pytest.mark.parametrize(
    "name", ["nota", "not.x", "not/y", "andy", "and.b", "or_x", "order", "truex", "false_"]
)
def test_names_that_begin_with_a_keyword_are_atoms(name: str) -> None:
    assert parse_formula(name) == Atom(name)
    assert parse_formula(f"{name} & a") == And((Atom(name), a))
    assert parse_formula(f"not {name}") == Not(Atom(name))


@pytest.mark.parametrize("keyword", ["and", "or", "not"])
def test_a_bare_keyword_is_not_an_atom(keyword: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(keyword)


# -- atoms -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["db.postgres", "x:y", "user@host", "path/to/file", "a.b:c@d/e_1", "_", "_x9", "A", "v1.2.3"],
)
def test_atoms_with_punctuation(name: str) -> None:
    assert parse_formula(name) == Atom(name)
    assert parse_formula(f"!{name}") == Not(Atom(name))
    assert render(Atom(name)) == name


def test_background_axiom_from_the_spec() -> None:
    assert parse_formula("db.postgres -> !db.mysql") == Implies(
        Atom("db.postgres"), Not(Atom("db.mysql"))
    )


# -- errors ------------------------------------------------------------------------------------


def _column(message: str) -> int:
    found = re.search(r"column (\d+)", message)
    assert found is not None, message
    return int(found.group(1))


@pytest.mark.parametrize(
    ("text", "column", "expected"),
    [
        ("a $ b", 3, "'&' or '->'"),
        ("& a", 1, "an atom"),
        ("a b", 3, "'&'"),
        ("a <-> <-> b", 7, "an atom"),
        ("(a", 3, "')'"),
        ("1a", 1, "an atom"),
        ("a & )", 5, "an atom"),
        ("and", 1, "an atom"),
    ],
)
def test_syntax_error_names_column_and_expectation(text: str, column: int, expected: str) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    message = info.value.message
    assert _column(message) == column
    assert "expected" in message
    assert expected in message.split("expected", 1)[1]
    assert repr(text) in message


@pytest.mark.parametrize("text", ["a &", "!", "a ->", "(a | b", "not"])
def test_incomplete_formula_says_where_it_ends_too_early(text: str) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    message = info.value.message
    assert "end of formula" in message
    assert "expected" in message
    assert 1 <= _column(message) <= len(text) + 1


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_formula_is_an_error(text: str) -> None:
    with pytest.raises(FormulaError, match="empty"):
        parse_formula(text)


def test_formula_error_is_input_error() -> None:
    with pytest.raises(InputError):
        parse_formula("a &&")
    with pytest.raises(ValueError):
        parse_formula("a &&")


def test_item_with_bad_formula_names_the_item() -> None:
    with pytest.raises(InputError) as info:
        item_from_json({"id": "c7", "kind": "commitment", "type": "decision", "formula": "a & | b"})
    err = info.value
    assert err.item == "c7"
    assert "column 5" in err.message
    assert "expected" in err.message
    assert "'c7'" in err.render()


def test_observation_with_bad_shows_names_the_item() -> None:
    with pytest.raises(InputError) as info:
        item_from_json({"id": "o1", "kind": "observation", "shows": "(x"})
    assert info.value.item == "o1"
    assert "column" in info.value.message


# -- bounds ------------------------------------------------------------------------------------


def test_length_bound() -> None:
    at_bound = "a" * MAX_LENGTH
    assert parse_formula(at_bound) == Atom(at_bound)
    with pytest.raises(FormulaError, match=str(MAX_LENGTH)):
        parse_formula("a" * (MAX_LENGTH + 1))
    long_conj = " & ".join(["a"] * (MAX_LENGTH // 4))
    assert len(long_conj) <= MAX_LENGTH
    assert isinstance(parse_formula(long_conj), And)
    with pytest.raises(FormulaError, match="characters long"):
        parse_formula(long_conj + " & " + "b" * 10)


def test_negation_nesting_bound() -> None:
    assert parse_formula("!" * (MAX_DEPTH - 1) + "a").depth == MAX_DEPTH
    with pytest.raises(FormulaError, match=f"deeper than {MAX_DEPTH}"):
        parse_formula("!" * MAX_DEPTH + "a")


def test_parenthesis_nesting_bound() -> None:
    assert parse_formula("(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH) == a
    with pytest.raises(FormulaError, match=f"deeper than {MAX_DEPTH}"):
        parse_formula("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1))


def test_implication_chain_nesting_bound() -> None:
    ok = " -> ".join(["a"] * MAX_DEPTH)
    assert parse_formula(ok).depth == MAX_DEPTH
    with pytest.raises(FormulaError, match=f"deeper than {MAX_DEPTH}"):
        parse_formula(" -> ".join(["a"] * (MAX_DEPTH + 1)))


def test_nesting_error_is_not_a_recursion_error() -> None:
    deep = "(" * 5_000 + "a" + ")" * 5_000
    with pytest.raises(FormulaError):
        parse_formula(deep)
    with pytest.raises(FormulaError):
        parse_formula("!" * 5_000 + "a")


@pytest.mark.parametrize("text", ["a &", "!", "a ->", "(a | b", "not", "a & not", "a &  "])
def test_unexpected_end_is_reported_at_the_end(text: str) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    assert f"column {len(text) + 1}:" in info.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a # b", "'&' or '->' or '<->' or '|' or end of formula"),
        ("(a #", "'&' or ')' or '->' or '<->' or '|'"),
        ("a & # b", "'!' or '(' or an atom"),
        ("#a", "'!' or '(' or an atom"),
    ],
)
def test_an_unexpected_character_names_what_could_stand_there(text: str, expected: str) -> None:
    """What the grammar accepts after the text before it, as for an unexpected token;
    not every token there is (after an atom, no atom and no '(')."""
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    column = text.index("#") + 1
    assert f"column {column}: unexpected character '#', expected {expected};" in str(info.value)


def test_a_formula_hash_is_the_hash_of_its_fields_and_is_kept() -> None:
    """A compound node keeps its hash (the dataclass's: that of its compared fields)."""
    f = parse_formula("(a & b) -> !c")
    assert isinstance(f, Implies)
    assert hash(f) == hash((f.left, f.right))
    assert f._hash == hash(f)  # kept after the first use
    assert hash(parse_formula("(a & b) -> !c")) == hash(f) and parse_formula("(a & b) -> !c") == f
    assert hash(And((Atom("a"), Atom("b")), 5)) == hash(And((Atom("a"), Atom("b"))))


def test_a_pickled_formula_hashes_afresh_in_another_process() -> None:
    """Strings hash differently in another process: a kept hash must not travel."""
    import pickle
    import subprocess
    import sys

    f = parse_formula("!(a | b) <-> (c -> d & e)")
    assert isinstance(f, Iff)
    hash(f)  # keep it
    data = pickle.dumps([f, f.left, f.right])
    code = (
        "import pickle, sys\n"
        "from verifier.parser import parse_formula\n"
        "f, left, right = pickle.loads(sys.stdin.buffer.read())\n"
        "g = parse_formula('!(a | b) <-> (c -> d & e)')\n"
        "assert f == g and f in {g} and left in {g.left} and right in {g.right}\n"
        "assert f.depth == g.depth\n"
    )
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=data,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()


# -- one front door: parse_formula, the grammar (lark) only where the fast path gives up ------


def test_parse_formula_is_the_public_front_door() -> None:
    import verifier
    from verifier import parser

    assert verifier.parse_formula is parser.parse_formula
    assert "parse_formula" in verifier.__all__


def test_lark_is_loaded_only_for_a_formula_the_fast_path_refuses() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from verifier.errors import FormulaError\n"
        "from verifier.parser import parse_formula\n"
        "parse_formula('a & !(b | c) -> d')\n"
        "print('lark' in sys.modules)\n"
        "try:\n"
        "    parse_formula('a & ')\n"
        "except FormulaError as exc:\n"
        "    print('lark' in sys.modules, exc.message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "False",
        "True formula 'a & ': column 5: unexpected end of formula,"
        " expected '!' or '(' or an atom",
    ]


OPERAND = "'!' or '(' or an atom"
AFTER_OPERAND = "'&' or '->' or '<->' or '|' or end of formula"


@pytest.mark.parametrize(
    ("text", "column", "expected"),
    [
        ("a & (b |", 9, OPERAND),  # a parenthesis is open, but an operand is missing first
        ("(b ->", 6, OPERAND),
        ("(", 2, OPERAND),
        ("(!", 3, OPERAND),
        ("(a & b", 7, "')': a parenthesis is still open"),
        ("((a)", 5, "')': a parenthesis is still open"),
        ("a)", 2, AFTER_OPERAND),  # no parenthesis is open: ')' is not expected
        ("a & b)", 6, AFTER_OPERAND),
        ("a b", 3, AFTER_OPERAND),
        ("(a) b", 5, AFTER_OPERAND),
        ("(a b", 4, "'&' or ')' or '->' or '<->' or '|'"),
    ],
)
def test_a_syntax_error_names_what_could_stand_there(text: str, column: int, expected: str) -> None:
    """What was expected is what the grammar can take at that column: an operand where
    one is missing (even inside a parenthesis), ')' only where one is open."""
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    assert f"column {column}: " in info.value.message
    assert info.value.message.endswith(f"expected {expected}"), info.value.message


@pytest.mark.parametrize("name", ["a", "db.postgres", "x y", "", "é"])
def test_new_atom_is_the_atom_its_constructor_makes(name: str) -> None:
    made, reference = new_atom(name), Atom(name)
    assert type(made) is Atom
    assert made == reference and hash(made) == hash(reference) and repr(made) == repr(reference)
    assert (made.name, made.depth) == (name, 1)
    assert render(And((made, Not(made)))) == render(And((reference, Not(reference))))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "other"  # type: ignore[misc]
