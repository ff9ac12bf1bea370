"""The propositional formula language (docs/formats.md, "Formulas"): its AST and evaluation.

The AST is made of frozen, slotted dataclasses, so formulas hash and compare by
value. Formula text is read by :func:`verifier.parser.parse_formula`, which
builds this AST. No solver code lives here.

>>> f = Implies(Atom("db.postgres"), Not(Atom("db.mysql")))
>>> render(f)
'db.postgres -> !db.mysql'
>>> evaluate(And((Atom("a"), Not(Atom("b")))), {"a": True, "b": False})
True
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Union

__all__ = [
    "MAX_DEPTH",
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
    "render",
]

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


class _BlankAtom:
    """An Atom's slots in a class of no behaviour of its own (see :func:`new_atom`)."""

    __slots__ = Atom.__slots__


def _new_atom(name: str) -> Atom:
    """``Atom(name)``, filled in as a blank of its slots that then becomes an Atom."""
    node: Any = object.__new__(_BlankAtom)
    node.name = name
    node.depth = 1
    node.__class__ = Atom
    atom: Atom = node
    return atom


def _blank_atom_fits() -> bool:
    """Can a blank of an Atom's slots become an Atom? (Else :func:`new_atom` is Atom.)"""
    try:
        made = _new_atom("a")
    except TypeError:
        return False
    return type(made) is Atom and made == Atom("a")


new_atom: Callable[[str], Atom] = _new_atom if _blank_atom_fits() else Atom
"""``Atom(name)``, the same node, made in about half the time: a frozen dataclass's
``__init__`` sets each field through ``object.__setattr__``. For the reader and the
solver, which make tens of thousands of atoms in one check."""


def atom_formula(name: str) -> Formula:
    """The default formula of an item: the atom named by its id, whatever its characters."""
    return new_atom(name)


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

    >>> a, b, c = Atom("a"), Atom("b"), Atom("c")
    >>> evaluate_partial(Implies(a, Implies(b, c)), {"c": True})  # a -> (b -> c)
    True
    >>> evaluate_partial(And((a, b)), {"a": True}) is None  # a & b
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
