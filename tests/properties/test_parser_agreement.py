"""The hand-written formula parser agrees with the grammar, token for token and error for error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.errors import FormulaError
from verifier.formula import MAX_DEPTH, Formula, walk
from verifier.parser import _fast_parse, parse_formula, parse_with_grammar

SPACES = [" ", "", "", "  ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u2003", "\u3000"]
WORDS = ["a", "b.c", "x_1:y@z/w", "true", "false", "and", "or", "not", "andy", "nota", "orb",
         "True", "_", "9x", "é"]  # fmt: skip
OPS = ["!", "&", "|", "->", "<->", "(", ")", "-", "<", ">", "<-", "=", "~"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Token soup: mostly well-formed pieces, sometimes broken, with odd whitespace."""
    parts = draw(st.lists(st.sampled_from(WORDS + OPS), min_size=1, max_size=14))
    out = []
    for p in parts:
        out.append(draw(st.sampled_from(SPACES)))
        out.append(p)
    out.append(draw(st.sampled_from(SPACES)))
    return "".join(out)


@st.composite
def formulas(draw: st.DrawFn, depth: int = 4) -> str:
    """Well-formed formulas of every operator, with random spacing and parentheses."""
    sp = draw(st.sampled_from([" ", "", "  ", "\t", "\n"]))
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "c.d", "true", "false", "e_1"]))
    kind = draw(st.sampled_from(["!", "not ", "&", "and", "|", "or", "->", "<->", "()"]))
    inner = formulas(depth - 1)
    if kind in ("!", "not "):
        return f"{kind}{sp}{draw(inner)}"
    if kind == "()":
        return f"({sp}{draw(inner)}{sp})"
    pad = " " if kind.isalpha() else sp
    return f"{draw(inner)}{pad}{kind}{pad}{draw(inner)}"


def _agree(text: str) -> None:
    fast = _fast_parse(text)
    try:
        ref: Formula | None = parse_with_grammar(text)
        error = None
    except FormulaError as exc:
        ref, error = None, str(exc)
    if fast is None:
        assert ref is None, (text, ref)
        with pytest.raises(FormulaError) as raised:
            parse_formula.__wrapped__(text)
        assert str(raised.value) == error
        return
    assert fast == ref, text
    assert ref is not None
    assert [n.depth for n in walk(fast)] == [n.depth for n in walk(ref)]


@settings(max_examples=600, deadline=None)
@given(formulas())
def test_well_formed_formulas_parse_the_same(text: str) -> None:
    _agree(text)


@settings(max_examples=800, deadline=None)
@given(texts())
def test_token_soup_parses_or_fails_the_same(text: str) -> None:
    _agree(text)


@pytest.mark.parametrize(
    "text", ["a\v", "\va & b", "a\u00a0& b", "a & b\u2003", "!\u3000a", "a\x0b & b"]
)
def test_only_the_grammars_whitespace_is_whitespace(text: str) -> None:
    with pytest.raises(FormulaError, match="unexpected character"):
        parse_formula(text)


def test_deep_nesting_fails_the_same() -> None:
    deep = "!" * (MAX_DEPTH + 1) + "a"
    assert _fast_parse(deep) is None
    with pytest.raises(FormulaError, match="deeper than"):
        parse_formula(deep)
    fine = "!" * (MAX_DEPTH - 1) + "a"
    assert parse_formula(fine) == parse_with_grammar(fine)


@st.composite
def flat_formulas(draw: st.DrawFn) -> str:
    """Literals joined by binary operators, no parentheses: what the flat shortcut reads
    (one operator throughout) and what it must leave to the full parse (mixed ones,
    chained implications, keywords and constants among the names)."""
    names = ["a", "b.c", "x_1:y@z/w", "and", "or", "not", "true", "false", "andy"]
    sp = st.sampled_from(["", " ", "  ", "\t", "\n"])
    ops = draw(st.lists(st.sampled_from(["&", "|", "->", "<->"]), min_size=1, max_size=4))
    if draw(st.booleans()):
        ops = [ops[0]] * len(ops)
    out = [draw(sp)]
    for i in range(len(ops) + 1):
        out.append(draw(st.sampled_from(["", "!"])) + draw(st.sampled_from(names)))
        if i < len(ops):
            out += [draw(sp), ops[i], draw(sp)]
    out.append(draw(sp))
    return "".join(out)


@settings(max_examples=600, deadline=None)
@given(flat_formulas())
def test_flat_formulas_parse_the_same(text: str) -> None:
    _agree(text)


def test_the_flat_shortcut_is_taken_where_it_reads_alike() -> None:
    from verifier import parser

    for text in ["a & !b & c", "a|b", "!a -> b", "a <-> !b"]:
        assert parser._flat_parse(text) == parse_with_grammar(text)
    for text in ["a -> b -> c", "a & b | c", "a & true", "a and b", "a"]:
        assert parser._flat_parse(text) is None
