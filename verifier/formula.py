"""The propositional formula language (docs/formats.md, "Formulas"): grammar, AST and evaluation.

Formulas are parsed by a LALR grammar (lark); nothing is ever evaluated as
Python. The AST is made of frozen, slotted dataclasses, so formulas hash and
compare by value. No solver code lives here.

>>> parse("db.postgres -> !db.mysql")
Implies(left=Atom(name='db.postgres'), right=Not(arg=Atom(name='db.mysql')))
>>> evaluate(parse("a & !b"), {"a": True, "b": False})
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Union

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from verifier.errors import FormulaError

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "And",
    "Atom",
    "Const",
    "Formula",
    "Iff",
    "Implies",
    "Not",
    "Or",
    "atoms",
    "conj",
    "evaluate",
    "parse",
    "render",
]

MAX_LENGTH = 20_000
"""Longest formula text accepted, in characters."""

MAX_DEPTH = 200
"""Deepest formula accepted, counted in AST levels."""


@dataclass(frozen=True, slots=True)
class Const:
    value: bool
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Atom:
    name: str
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Not:
    arg: Formula
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class And:
    args: tuple[Formula, ...]
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple[Formula, ...]
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Implies:
    left: Formula
    right: Formula
    depth: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Iff:
    left: Formula
    right: Formula
    depth: int = field(default=1, compare=False, repr=False)


Formula = Union[Const, Atom, Not, And, Or, Implies, Iff]  # noqa: UP007 - a runtime alias

TRUE = Const(True)
FALSE = Const(False)

_GRAMMAR = r"""
?start: iff
?iff: imp
    | iff IFF imp          -> iff
?imp: disj
    | disj IMP imp         -> imp
?disj: conj
    | disj OR conj         -> disj
?conj: neg
    | conj AND neg         -> conj
?neg: NOT neg              -> neg
    | atom
?atom: NAME                -> name
    | "(" iff ")"

IFF: "<->"
IMP: "->"
OR.2: "|" | /or(?![A-Za-z0-9_.:@\/])/
AND.2: "&" | /and(?![A-Za-z0-9_.:@\/])/
NOT.2: "!" | /not(?![A-Za-z0-9_.:@\/])/
NAME: /[A-Za-z_][A-Za-z0-9_.:@\/]*/

%import common.WS
%ignore WS
"""

_KEYWORDS = {"and", "or", "not"}


def _check_depth(node: Formula, _text: str) -> Formula:
    if node.depth > MAX_DEPTH:
        raise FormulaError(
            f"formula nests deeper than {MAX_DEPTH} levels",
            fix="split it into several items or flatten it",
        )
    return node


@v_args(inline=True)
class _Build(Transformer[Token, Formula]):
    """Builds the AST while the LALR parser reduces: no recursion over the tree."""

    def name(self, tok: Token) -> Formula:
        value = str(tok)
        if value == "true":
            return TRUE
        if value == "false":
            return FALSE
        return Atom(value)

    def neg(self, _op: Token, arg: Formula) -> Formula:
        return _check_depth(Not(arg, arg.depth + 1), "")

    def conj(self, left: Formula, _op: Token, right: Formula) -> Formula:
        args = (*left.args, right) if isinstance(left, And) else (left, right)
        return _check_depth(And(args, max(a.depth for a in args) + 1), "")

    def disj(self, left: Formula, _op: Token, right: Formula) -> Formula:
        args = (*left.args, right) if isinstance(left, Or) else (left, right)
        return _check_depth(Or(args, max(a.depth for a in args) + 1), "")

    def imp(self, left: Formula, _op: Token, right: Formula) -> Formula:
        return _check_depth(Implies(left, right, max(left.depth, right.depth) + 1), "")

    def iff(self, left: Formula, _op: Token, right: Formula) -> Formula:
        return _check_depth(Iff(left, right, max(left.depth, right.depth) + 1), "")


_LARK = Lark(_GRAMMAR, parser="lalr", lexer="basic", transformer=_Build())

_EXPECTED_NAMES = {
    "IFF": "'<->'",
    "IMP": "'->'",
    "OR": "'|'",
    "AND": "'&'",
    "NOT": "'!'",
    "NAME": "an atom",
    "LPAR": "'('",
    "RPAR": "')'",
    "$END": "end of formula",
}


def _describe_expected(expected: set[str] | frozenset[str]) -> str:
    names = sorted({_EXPECTED_NAMES.get(e, e) for e in expected})
    return " or ".join(names) if names else "something else"


def _max_paren_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch == "(":
            depth += 1
            best = max(best, depth)
        elif ch == ")":
            depth -= 1
    return best


_PLAIN = re.compile(r"\s*(!?)\s*([A-Za-z_][A-Za-z0-9_.:@/]*)\s*")
_RESERVED = frozenset({"and", "or", "not", "true", "false"})


@lru_cache(maxsize=65_536)
def parse(text: str) -> Formula:
    """Parse formula text into an AST.

    Raises:
        FormulaError: on a syntax error (with the column and what was expected),
            or when the text is longer than MAX_LENGTH or nests deeper than MAX_DEPTH.
    """
    if len(text) > MAX_LENGTH:
        raise FormulaError(
            f"formula is {len(text)} characters long, more than the bound of {MAX_LENGTH}",
            fix="split it into several items",
        )
    if _max_paren_depth(text) > MAX_DEPTH:
        raise FormulaError(
            f"formula nests parentheses deeper than {MAX_DEPTH} levels",
            fix="flatten it or split it into several items",
        )
    if not text.strip():
        raise FormulaError("formula is empty", fix="write a formula, or 'true'")
    plain = _PLAIN.fullmatch(text)
    if plain is not None and plain.group(2) not in _RESERVED:
        # the common case, an atom or a negated atom, without the parser
        atom = Atom(plain.group(2))
        return Not(atom, 2) if plain.group(1) else atom
    try:
        tree = _LARK.parse(text)
    except UnexpectedCharacters as exc:
        raise FormulaError(
            f"formula {text!r}: column {exc.column}: unexpected character"
            f" {text[exc.pos_in_stream or 0]!r}"
            f", expected {_describe_expected(exc.allowed or set())}",
            fix="atoms are [A-Za-z_][A-Za-z0-9_.:@/]*; operators are ! & | -> <->",
        ) from None
    except UnexpectedToken as exc:
        at_end = exc.token.type == "$END"
        found = "end of formula" if at_end else repr(str(exc.token))
        column = exc.column if isinstance(exc.column, int) and exc.column > 0 else len(text) + 1
        if at_end:
            column = len(text) + 1
        expected = _describe_expected(exc.expected)
        if at_end and text.count("(") > text.count(")"):
            expected = "')': a parenthesis is still open"
        raise FormulaError(
            f"formula {text!r}: column {column}: unexpected {found}, expected {expected}",
            fix="check the operators and parentheses",
        ) from None
    except UnexpectedEOF as exc:
        raise FormulaError(
            f"formula {text!r}: column {len(text) + 1}: unexpected end of formula"
            f", expected {_describe_expected(set(exc.expected))}",
            fix="complete the formula",
        ) from None
    except FormulaError:
        raise
    except LarkError as exc:  # pragma: no cover - other lark failures
        raise FormulaError(f"formula {text!r}: {exc}") from None
    result: Formula = tree  # type: ignore[assignment]  # the inline transformer built it
    return _check_depth(result, text)


def atom_formula(name: str) -> Formula:
    """The default formula of an item: the atom named by its id, whatever its characters."""
    return Atom(name)


def conj(parts: list[Formula] | tuple[Formula, ...]) -> Formula:
    """Conjunction of parts (TRUE when empty)."""
    if not parts:
        return TRUE
    if len(parts) == 1:
        return parts[0]
    return And(tuple(parts), max(p.depth for p in parts) + 1)


def _children(node: Formula) -> tuple[Formula, ...]:
    if isinstance(node, Not):
        return (node.arg,)
    if isinstance(node, And | Or):
        return node.args
    if isinstance(node, Implies | Iff):
        return (node.left, node.right)
    return ()


def walk(node: Formula) -> Iterator[Formula]:
    """Every node of the formula, parents before children, iteratively."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(_children(cur))


def atoms(node: Formula) -> frozenset[str]:
    """The names of the atoms that occur in the formula."""
    if isinstance(node, Atom):
        return frozenset((node.name,))
    return _atoms_of(node)


@lru_cache(maxsize=65_536)
def _atoms_of(node: Formula) -> frozenset[str]:
    return frozenset(n.name for n in walk(node) if isinstance(n, Atom))


def evaluate(node: Formula, assignment: Mapping[str, bool]) -> bool:
    """Truth value of a formula under an assignment; atoms missing from it are False."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Atom):
        return bool(assignment.get(node.name, False))
    if isinstance(node, Not):
        return not evaluate(node.arg, assignment)
    if isinstance(node, And):
        return all(evaluate(a, assignment) for a in node.args)
    if isinstance(node, Or):
        return any(evaluate(a, assignment) for a in node.args)
    if isinstance(node, Implies):
        return (not evaluate(node.left, assignment)) or evaluate(node.right, assignment)
    return evaluate(node.left, assignment) == evaluate(node.right, assignment)


def _render_atom(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:@/]*", name) and name not in (
        _KEYWORDS | {"true", "false"}
    ):
        return name
    return f"<{name!r}>"


def render(node: Formula) -> str:
    """Text for a formula, fully parenthesised below the top level."""
    if isinstance(node, Const):
        return "true" if node.value else "false"
    if isinstance(node, Atom):
        return _render_atom(node.name)
    if isinstance(node, Not):
        inner = render(node.arg)
        return f"!{inner}" if isinstance(node.arg, Atom | Const | Not) else f"!({inner})"
    if isinstance(node, And | Or):
        sep = " & " if isinstance(node, And) else " | "
        return sep.join(_wrap(a) for a in node.args)
    sep = " -> " if isinstance(node, Implies) else " <-> "
    return f"{_wrap(node.left)}{sep}{_wrap(node.right)}"


def _wrap(node: Formula) -> str:
    text = render(node)
    return text if isinstance(node, Atom | Const | Not) else f"({text})"
