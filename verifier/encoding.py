"""Our formula AST to z3 terms, and z3 models back to plain assignments.

This module and :mod:`verifier.solver` are the only ones that import z3; no z3
type appears in a public signature outside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from verifier.formula import And, Atom, Const, Formula, Iff, Implies, Not, Or

__all__ = ["Encoder", "z3_module"]

_Z3: ModuleType | None = None


def z3_module() -> ModuleType:
    """The z3 module, imported on first use: a run the shortcuts settle (most checks, and
    every command that asks no question) never pays for importing it."""
    global _Z3
    if _Z3 is None:
        import z3

        _Z3 = z3
    return _Z3


class Encoder:
    """Converts formulas to z3 Bool terms in one z3 context, caching every node.

    Each atom name maps to one z3 Bool; a structurally equal formula is
    converted once.
    """

    def __init__(self, ctx: Any | None = None) -> None:
        self._ctx = ctx
        self._atoms: dict[str, Any] = {}
        self._cache: dict[Formula, Any] = {}
        self._fresh = 0

    @property
    def ctx(self) -> Any:
        """The z3 context, made when first needed (a check the shortcuts settle makes none)."""
        if self._ctx is None:
            self._ctx = z3_module().Context()
        return self._ctx

    def atom(self, name: str) -> Any:
        var = self._atoms.get(name)
        if var is None:
            # named by number: z3 cuts names at NUL, so two ids could share a variable;
            # the prefix keeps user atoms apart from our own naming literals
            var = z3_module().Bool(f"a!{len(self._atoms)}", self.ctx)
            self._atoms[name] = var
        return var

    def fresh(self, hint: str = "q") -> Any:
        self._fresh += 1
        return z3_module().Bool(f"{hint}!{self._fresh}", self.ctx)

    def convert(self, node: Formula) -> Any:
        """The z3 term for a formula."""
        hit = self._cache.get(node)
        if hit is not None:
            return hit
        z3 = z3_module()
        term: Any
        if isinstance(node, Const):
            term = z3.BoolVal(node.value, self.ctx)
        elif isinstance(node, Atom):
            term = self.atom(node.name)
        elif isinstance(node, Not):
            term = z3.Not(self.convert(node.arg), self.ctx)
        elif isinstance(node, And):
            term = z3.And([self.convert(a) for a in node.args] + [], self.ctx)
        elif isinstance(node, Or):
            term = z3.Or([self.convert(a) for a in node.args] + [], self.ctx)
        elif isinstance(node, Implies):
            term = z3.Implies(self.convert(node.left), self.convert(node.right), self.ctx)
        else:
            assert isinstance(node, Iff)
            term = self.convert(node.left) == self.convert(node.right)
        self._cache[node] = term
        return term

    def assignment(self, model: Any, names: Iterable[str]) -> dict[str, bool]:
        """Read the values of the named atoms from a z3 model (unset atoms: False)."""
        z3 = z3_module()
        out: dict[str, bool] = {}
        for name in sorted(set(names)):
            value = model.eval(self.atom(name), model_completion=True)
            out[name] = z3.is_true(value)
        return out
