"""A second solver as a check: every query asked of z3 is asked of cvc5 too.

With ``--cross-check cvc5`` (or ``CTXPROOF_CROSS_CHECK=cvc5``; the ``cvc5``
extra) :mod:`verifier.solver` hands each query to :func:`answer` as our own
formulas — what the z3 solver holds and what the query adds — translated here
for cvc5 (not through z3's terms, so a fault in one translation shows), and an
answer that disagrees with z3's (sat against unsat) is an internal error that
names the query and where it was written. Soundness is then not one solver's
word. cvc5 is imported only when the cross-check is on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verifier.errors import InputError, InternalError, OutputError
from verifier.formula import And, Atom, Const, Formula, Iff, Implies, Not, Or, render

__all__ = ["ENV", "answer", "disagreement", "enabled"]

ENV = "CTXPROOF_CROSS_CHECK"


def enabled() -> bool:
    """Is the cross-check on? (An unknown solver name is bad input.)"""
    value = os.environ.get(ENV, "")
    if not value:
        return False
    if value != "cvc5":
        raise InputError(
            f"{ENV}={value!r}: the only second solver is 'cvc5'", fix=f"set {ENV}=cvc5 or unset it"
        )
    return True


def _cvc5() -> Any:
    try:
        import cvc5
    except ImportError:
        raise InputError(
            "--cross-check cvc5 needs the cvc5 solver",
            fix="pip install 'ctxproof[cvc5]'",
        ) from None
    return cvc5


def answer(formulas: Sequence[Formula]) -> str:
    """cvc5's answer on the conjunction of the formulas: sat, unsat or unknown."""
    cvc5 = _cvc5()
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setLogic("QF_UF")
    kind = cvc5.Kind
    boolean = tm.getBooleanSort()
    names: dict[str, Any] = {}
    done: dict[Formula, Any] = {}

    def term(node: Formula) -> Any:
        hit = done.get(node)
        if hit is not None:
            return hit
        if isinstance(node, Const):
            out = tm.mkBoolean(node.value)
        elif isinstance(node, Atom):
            if node.name not in names:
                names[node.name] = tm.mkConst(boolean, f"a{len(names)}")
            out = names[node.name]
        elif isinstance(node, Not):
            out = tm.mkTerm(kind.NOT, term(node.arg))
        elif isinstance(node, And | Or):
            args = [term(a) for a in node.args]
            op = kind.AND if isinstance(node, And) else kind.OR
            out = args[0] if len(args) == 1 else tm.mkTerm(op, *args)
        elif isinstance(node, Implies):
            out = tm.mkTerm(kind.IMPLIES, term(node.left), term(node.right))
        else:
            assert isinstance(node, Iff)
            out = tm.mkTerm(kind.EQUAL, term(node.left), term(node.right))
        done[node] = out
        return out

    for f in formulas:
        solver.assertFormula(term(f))
    result = solver.checkSat()
    if result.isSat():
        return "sat"
    if result.isUnsat():
        return "unsat"
    return "unknown"


def disagreement(formulas: Sequence[Formula], z3_says: str, cvc5_says: str) -> InternalError:
    """The error for two solvers that disagree, with the query written to a file."""
    text = "\n".join(render(f) for f in formulas) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    import tempfile  # only here: a disagreement is rare, and tempfile costs every start

    from verifier.fsutil import atomic_write  # (it imports tempfile too)

    path = Path(tempfile.gettempdir()) / f"ctxproof-disagreement-{digest}.txt"
    try:
        atomic_write(path, text)  # a link planted at that name is replaced, not followed
        where = f"its formulas (one a line, their conjunction asked) are in {path}"
    except OutputError:
        where = "its formulas could not be written"
    return InternalError(
        f"the solvers disagree on query {digest}: z3 says {z3_says}, cvc5 says {cvc5_says};"
        f" {where}"
    )
