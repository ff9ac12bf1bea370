"""The formula parser (docs/formats.md, "Formulas"): :func:`parse_formula`, the front door.

Well-formed formulas are parsed here by operator precedence; anything this fast
path would not accept goes to the LALR grammar of :mod:`verifier.grammar` (lark),
the reference, which also words every syntax error, so lark is imported only on
that path. Both build the AST of :mod:`verifier.formula`; nothing is ever
evaluated as Python.

>>> parse_formula("db.postgres -> !db.mysql")
Implies(left=Atom(name='db.postgres'), right=Not(arg=Atom(name='db.mysql')))
>>> from verifier.formula import evaluate
>>> evaluate(parse_formula("a & !b"), {"a": True, "b": False})
True
"""

from __future__ import annotations

import re
from functools import lru_cache

from verifier.errors import FormulaError, wrong_type
from verifier.formula import (
    FALSE,
    MAX_DEPTH,
    TRUE,
    And,
    Formula,
    Iff,
    Implies,
    Not,
    Or,
    new_atom,
)

__all__ = ["MAX_LENGTH", "parse_formula", "parse_with_grammar"]

MAX_LENGTH = 20_000
"""Longest formula text accepted, in characters."""


def _max_paren_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch == "(":
            depth += 1
            best = max(best, depth)
        elif ch == ")":
            depth -= 1
    return best


_WS = " \t\f\r\n"
"""The white space the grammar skips (not ``\\v``, nor any other Unicode space)."""
_NAME = r"[A-Za-z_][A-Za-z0-9_.:@/]*"
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_TOKEN = re.compile(rf"<->|->|[()!&|]|{_NAME}")
_LEXES = re.compile(rf"(?:[{_WS}]*+(?:<->|->|[()!&|]|{_NAME}+))*+[{_WS}]*+")
"""Text made only of tokens and white space: what the grammar's lexer accepts (every
quantifier possessive: a name is read whole, so a failing match never backtracks)."""
_BARE = re.compile(rf"(!?)({_NAME})")
"""A formula that is one name, or one name negated (no white space)."""
_FLAT = re.compile(
    rf"[{_WS}]*+!?{_NAME}+(?:[{_WS}]*+(?:&|\||<->|->)[{_WS}]*+!?{_NAME}+)++[{_WS}]*+"
)
"""Literals (names, or names negated with no space) joined by binary operators, no
parentheses: most formulas items carry."""
_FLAT_TOKEN = re.compile(rf"(!?)({_NAME})|(&|\||<->|->)")
_KEYWORD_OPS = {"and": "&", "or": "|", "not": "!"}
_CONSTANTS = {"true", "false"}
_BINARY = {"&": (4, True), "|": (3, True), "->": (2, False), "<->": (1, True)}
"""operator -> (precedence, left-associative); ``!`` binds tighter than all."""


def _tokens(text: str) -> list[str] | None:
    """The formula's tokens as the grammar reads them, or None where it would not lex.

    Names come as ``$name``; the keywords ``and``, ``or`` and ``not`` as their operators.
    """
    if _LEXES.fullmatch(text) is None:
        return None
    ops = _KEYWORD_OPS
    return [
        ops.get(tok, "$" + tok) if tok[0] in _NAME_START else tok
        for tok in _TOKEN.findall(text)
    ]


def _apply(op: str, operands: list[Formula]) -> bool:
    """Pop the operands of op, push its node; False when they are missing or too deep."""
    if op == "!":
        if not operands:
            return False
        arg = operands.pop()
        node: Formula = Not(arg, arg.depth + 1)
    else:
        if len(operands) < 2:
            return False
        right = operands.pop()
        left = operands.pop()
        if op in ("&", "|"):
            kind = And if op == "&" else Or
            args = (*left.args, right) if isinstance(left, kind) else (left, right)
            node = kind(args, max(a.depth for a in args) + 1)
        else:
            kind2 = Implies if op == "->" else Iff
            node = kind2(left, right, max(left.depth, right.depth) + 1)
    if node.depth > MAX_DEPTH:
        return False
    operands.append(node)
    return True


def _fast_parse(text: str) -> Formula | None:
    """The AST the grammar would build, without the grammar: operator precedence over a
    stack. None for anything the grammar would reject (the grammar then words the error).
    Checked against the grammar on generated formulas (tests/properties)."""
    bare = _BARE.fullmatch(text)
    if bare is not None:
        negated, name = bare.groups()
        if name not in _KEYWORD_OPS and name not in _CONSTANTS:
            return Not(new_atom(name), 2) if negated else new_atom(name)
    if _FLAT.fullmatch(text) is not None:
        flat = _flat_parse(text)
        if flat is not None:
            return flat
    tokens = _tokens(text)
    if not tokens:
        return None
    operands: list[Formula] = []
    ops: list[str] = []
    want_operand = True
    for tok in tokens:
        if want_operand:
            if tok[0] == "$":
                name = tok[1:]
                const = {"true": TRUE, "false": FALSE}.get(name)
                operands.append(const if const is not None else new_atom(name))
                want_operand = False
            elif tok in ("!", "("):
                ops.append(tok)
            else:
                return None
        elif tok in _BINARY:
            prec, left_assoc = _BINARY[tok]
            while ops and ops[-1] != "(":
                top = ops[-1]
                top_prec = 5 if top == "!" else _BINARY[top][0]
                if top_prec > prec or (top_prec == prec and left_assoc):
                    if not _apply(ops.pop(), operands):
                        return None
                else:
                    break
            ops.append(tok)
            want_operand = True
        elif tok == ")":
            while ops and ops[-1] != "(":
                if not _apply(ops.pop(), operands):
                    return None
            if not ops:
                return None
            ops.pop()
            # a parenthesised operand may still close a pending negation
        else:
            return None
    if want_operand:
        return None
    while ops:
        op = ops.pop()
        if op == "(" or not _apply(op, operands):
            return None
    return operands[0] if len(operands) == 1 else None


def _flat_parse(text: str) -> Formula | None:
    """The AST of literals joined by one operator (``a & !b & c``, ``a -> b``), built
    as the operator-precedence parse builds it; None for anything else (a keyword or a
    constant among the names, operators of two kinds, an implication chained)."""
    operands: list[Formula] = []
    op = None
    for negated, name, binary in _FLAT_TOKEN.findall(text):
        if binary:
            if op is None:
                op = binary
            elif binary != op or op in ("->", "<->"):
                return None  # precedence or associativity decide: the full parse
            continue
        if name in _KEYWORD_OPS or name in _CONSTANTS:
            return None
        operands.append(Not(new_atom(name), 2) if negated else new_atom(name))
    if op is None or len(operands) < 2:
        return None
    depth = max(a.depth for a in operands) + 1
    if op == "&":
        return And(tuple(operands), depth)
    if op == "|":
        return Or(tuple(operands), depth)
    left, right = operands
    return Implies(left, right, depth) if op == "->" else Iff(left, right, depth)


@lru_cache(maxsize=65_536)
def parse_formula(text: str) -> Formula:
    """Parse formula text into an AST: the one way the package reads a formula.

    Raises:
        TypeError: ``text`` is not a string.
        FormulaError: on a syntax error (with the column and what was expected),
            or when the text is longer than MAX_LENGTH or nests deeper than MAX_DEPTH.
    """
    if not isinstance(text, str):
        raise wrong_type("parse_formula", "text", text, "a string", "write the formula as text")
    if len(text) > MAX_LENGTH:
        raise FormulaError(
            f"formula is {len(text)} characters long, more than the bound of {MAX_LENGTH}",
            fix="split it into several items",
        )
    if "(" in text and _max_paren_depth(text) > MAX_DEPTH:
        raise FormulaError(
            f"formula nests parentheses deeper than {MAX_DEPTH} levels",
            fix="flatten it or split it into several items",
        )
    if not text.strip():
        raise FormulaError("formula is empty", fix="write a formula, or 'true'")
    fast = _fast_parse(text)
    if fast is not None:
        return fast
    return parse_with_grammar(text)


def parse_with_grammar(text: str) -> Formula:
    """Parse with the LALR grammar: the reference, and the wording of every syntax error."""
    from verifier.grammar import parse_with_grammar as parse_lalr

    return parse_lalr(text)
