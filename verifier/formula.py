"""The propositional formula language (docs/formats.md, "Formulas"): grammar, AST and evaluation.

Formulas are parsed by operator precedence, checked against the LALR grammar of
:mod:`verifier.grammar` (lark), which also words every syntax error; nothing is ever evaluated as
Python. The AST is made of frozen, slotted dataclasses, so formulas hash and
compare by value. No solver code lives here.

>>> parse("db.postgres -> !db.mysql")
Implies(left=Atom(name='db.postgres'), right=Not(arg=Atom(name='db.mysql')))
>>> evaluate(parse("a & !b"), {"a": True, "b": False})
True
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Union

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
    "evaluate_partial",
    "is_true",
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
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        return self._hash or _keep_hash(self, (self.arg,))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.arg, self.depth)


@dataclass(frozen=True, slots=True)
class And:
    args: tuple[Formula, ...]
    depth: int = field(default=1, compare=False, repr=False)
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        return self._hash or _keep_hash(self, (self.args,))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.args, self.depth)


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple[Formula, ...]
    depth: int = field(default=1, compare=False, repr=False)
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        return self._hash or _keep_hash(self, (self.args,))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.args, self.depth)


@dataclass(frozen=True, slots=True)
class Implies:
    left: Formula
    right: Formula
    depth: int = field(default=1, compare=False, repr=False)
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        return self._hash or _keep_hash(self, (self.left, self.right))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.left, self.right, self.depth)


@dataclass(frozen=True, slots=True)
class Iff:
    left: Formula
    right: Formula
    depth: int = field(default=1, compare=False, repr=False)
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        return self._hash or _keep_hash(self, (self.left, self.right))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.left, self.right, self.depth)


def _keep_hash(node: Any, values: tuple[Any, ...]) -> int:
    """The hash a frozen dataclass gives (that of its compared fields), kept in the node:
    a compound formula's hash would walk the whole formula at every use.

    The kept hash holds in this process only (strings hash differently in another):
    a compound node pickles as its constructor's arguments, without it.
    """
    value = hash(values)
    object.__setattr__(node, "_hash", value)
    return value


Formula = Union[Const, Atom, Not, And, Or, Implies, Iff]  # noqa: UP007 - a runtime alias

TRUE = Const(True)
FALSE = Const(False)

_KEYWORDS = {"and", "or", "not"}


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
            return Not(Atom(name), 2) if negated else Atom(name)
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
                operands.append(const if const is not None else Atom(name))
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


def atom_formula(name: str) -> Formula:
    """The default formula of an item: the atom named by its id, whatever its characters."""
    return Atom(name)


def is_true(node: Formula) -> bool:
    """Is node the constant true? (``node == TRUE`` without the generic comparison, which
    costs four calls when node is of another class.)"""
    return type(node) is Const and node.value is True


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
    found: set[str] = set()
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, Atom):
            found.add(cur.name)
        elif isinstance(cur, Not):
            stack.append(cur.arg)
        elif isinstance(cur, And | Or):
            stack.extend(cur.args)
        elif isinstance(cur, Implies | Iff):
            stack.append(cur.left)
            stack.append(cur.right)
    return frozenset(found)


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


def evaluate_partial(node: Formula, known: Mapping[str, bool]) -> bool | None:
    """Truth value of a formula under a partial assignment (Kleene's three values).

    Atoms missing from ``known`` are unknown. True or False means the known
    atoms settle it: every completion of the assignment gives that value. None
    means they do not settle it subformula by subformula, which may still hide a
    tautology (``a -> a`` with ``a`` unknown).

    >>> evaluate_partial(parse("a -> (b -> c)"), {"c": True})
    True
    >>> evaluate_partial(parse("a & b"), {"a": True}) is None
    True
    """
    if isinstance(node, Atom):
        return known.get(node.name)
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Not):
        inner = evaluate_partial(node.arg, known)
        return None if inner is None else not inner
    if isinstance(node, And | Or):
        stop = isinstance(node, Or)  # the value that settles the whole: true for |, false for &
        out: bool | None = not stop
        for a in node.args:
            value = evaluate_partial(a, known)
            if value is stop:
                return stop
            if value is None:
                out = None
        return out
    left = evaluate_partial(node.left, known)
    right = evaluate_partial(node.right, known)
    if isinstance(node, Implies):
        if left is False or right is True:
            return True
        return False if left is True and right is False else None
    if left is None or right is None:
        return None
    return left == right


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


def extend_model(model: dict[str, bool], node: Formula, max_free: int = 8) -> bool:
    """Extend the model over the atoms of node it does not assign so that node holds.

    At most ``2**max_free`` assignments of the new atoms are tried, true first.
    On success the model is extended in place and True is returned; values it
    already held never change, so whatever it satisfied it still satisfies.
    """
    literal: tuple[str, bool] | None = None
    if isinstance(node, Atom):
        literal = (node.name, True)
    elif isinstance(node, Not) and isinstance(node.arg, Atom):
        literal = (node.arg.name, False)
    if literal is not None:
        # its atom takes its polarity, or already has a value: what the search below
        # would do, without it
        name, value = literal
        if name in model:
            return bool(model[name]) is value
        if max_free < 1:
            return False
        model[name] = value
        return True
    names = atoms(node)
    free = sorted(a for a in names if a not in model)
    if len(free) > max_free:
        return False
    trial = {a: model[a] for a in names if a in model}
    for values in itertools.product((True, False), repeat=len(free)):
        trial.update(zip(free, values, strict=True))
        if evaluate(node, trial):
            model.update(zip(free, values, strict=True))
            return True
    return False
