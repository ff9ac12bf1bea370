"""The formula grammar (lark, LALR): the reference parser, and the wording of syntax errors.

:func:`verifier.parser.parse_formula` parses well-formed formulas itself and comes here
for anything it would not accept, so lark is imported only on that path.
"""

from __future__ import annotations

from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from verifier.errors import FormulaError
from verifier.formula import (
    FALSE,
    MAX_DEPTH,
    TRUE,
    And,
    Atom,
    Formula,
    Iff,
    Implies,
    Not,
    Or,
)

__all__ = ["parse_with_grammar"]

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


@lru_cache(maxsize=1)
def _grammar() -> Lark:
    """The LALR parser, built on first use (most formulas never need it)."""
    return Lark(_GRAMMAR, parser="lalr", lexer="basic", transformer=_Build())

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



def _accepted_at(text: str, pos: int) -> set[str]:
    """What the grammar accepts after the text before ``pos``: the tokens that may come
    where a character no token starts with stands (the lexer's own list is every token)."""
    try:
        parser = _grammar().parse_interactive(text[:pos])
        parser.exhaust_lexer()
        accepted: set[str] = parser.accepts()  # type: ignore[no-untyped-call]
        return accepted
    except LarkError:  # pragma: no cover - the text before it was read without error
        return set()


def parse_with_grammar(text: str) -> Formula:
    """Parse with the LALR grammar: the reference, and the wording of every syntax error."""
    try:
        tree = _grammar().parse(text)
    except UnexpectedCharacters as exc:
        raise FormulaError(
            f"formula {text!r}: column {exc.column}: unexpected character"
            f" {text[exc.pos_in_stream or 0]!r}"
            f", expected {_describe_expected(_accepted_at(text, exc.pos_in_stream or 0))}",
            fix="atoms are [A-Za-z_][A-Za-z0-9_.:@/]*; operators are ! & | -> <->",
        ) from None
    except UnexpectedToken as exc:
        at_end = exc.token.type == "$END"
        found = "end of formula" if at_end else repr(str(exc.token))
        column = exc.column if isinstance(exc.column, int) and exc.column > 0 else len(text) + 1
        if at_end:
            column = len(text) + 1
        # the tokens the parser can take there (LALR's own list may name a token that a
        # reduction would reject: ')' with no parenthesis open)
        where = len(text) if at_end else exc.token.start_pos or 0
        accepted = _accepted_at(text, where) or set(exc.expected)
        expected = _describe_expected(accepted)
        if at_end and "RPAR" in accepted:
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


