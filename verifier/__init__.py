"""ctxproof: formal verification of self-editing context windows.

The public API:

* :func:`check_rewrite` — check one rewrite (before, after, store) and get a verdict,
  findings and a repair; windows may be plain item dicts;
* :func:`audit_trace` — check every event of a trace; :class:`Auditor` — the same,
  fed one event at a time;
* :func:`load_trace`, :func:`load_window`, :func:`parse_trace_text`,
  :func:`parse_window_text` — read files or JSON text; :func:`window_from_dicts`,
  :func:`trace_from_dicts`, :func:`item_from_json` — build from plain dicts;
  :func:`forget_reads` — drop what the reader keeps of the last window it read;
* :func:`ref_of`, :func:`stub_for` — the store key of an item, and its stub;
* :func:`parse_formula` — formula text to its AST (:mod:`verifier.formula`);
* :func:`guard` — gate a rewrite in an agent loop: accept, repair (spilling first) or keep;
* :class:`SqliteStore`, :class:`MemoryStore` — the durable store;
* :func:`load_policy`, :func:`run_policy`, :func:`run_twice` — load a rewrite policy
  (a Python function or a spec) and run it, its errors turned into PL001/PL002;
* :func:`fuzz` — validate a policy against the simulated agent.

Names are imported on first use, so ``import verifier`` is cheap and loads no solver.
The reference is docs/api.md; the rules are in docs/rules.md, the file formats in
docs/formats.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from verifier.audit import Auditor, TraceReport, audit_trace
    from verifier.check import Guarded, Repair, RewriteResult, check_rewrite, guard
    from verifier.errors import (
        CtxproofError,
        FormulaError,
        InputError,
        InternalError,
        StoreError,
    )
    from verifier.findings import RULES, Finding
    from verifier.fuzz import FuzzReport, fuzz
    from verifier.io import (
        forget_reads,
        item_from_json,
        load_trace,
        load_window,
        parse_trace_text,
        parse_window_text,
        ref_of,
        stub_for,
        trace_from_dicts,
        window_from_dicts,
    )
    from verifier.parser import parse_formula
    from verifier.policies import Policy, PolicyResult, load_policy, run_policy, run_twice
    from verifier.store import MemoryStore, SqliteStore, Store
    from verifier.window import Item, Trace, Window

_WHERE: dict[str, str] = {
    "Auditor": "verifier.audit",
    "TraceReport": "verifier.audit",
    "audit_trace": "verifier.audit",
    "Guarded": "verifier.check",
    "Repair": "verifier.check",
    "RewriteResult": "verifier.check",
    "check_rewrite": "verifier.check",
    "guard": "verifier.check",
    "CtxproofError": "verifier.errors",
    "FormulaError": "verifier.errors",
    "InputError": "verifier.errors",
    "InternalError": "verifier.errors",
    "StoreError": "verifier.errors",
    "RULES": "verifier.findings",
    "Finding": "verifier.findings",
    "FuzzReport": "verifier.fuzz",
    "fuzz": "verifier.fuzz",
    "forget_reads": "verifier.io",
    "item_from_json": "verifier.io",
    "load_trace": "verifier.io",
    "load_window": "verifier.io",
    "parse_trace_text": "verifier.io",
    "parse_window_text": "verifier.io",
    "ref_of": "verifier.io",
    "stub_for": "verifier.io",
    "trace_from_dicts": "verifier.io",
    "window_from_dicts": "verifier.io",
    "parse_formula": "verifier.parser",
    "Policy": "verifier.policies",
    "PolicyResult": "verifier.policies",
    "load_policy": "verifier.policies",
    "run_policy": "verifier.policies",
    "run_twice": "verifier.policies",
    "MemoryStore": "verifier.store",
    "SqliteStore": "verifier.store",
    "Store": "verifier.store",
    "Item": "verifier.window",
    "Trace": "verifier.window",
    "Window": "verifier.window",
}

__all__ = [
    "RULES",
    "Auditor",
    "CtxproofError",
    "Finding",
    "FormulaError",
    "FuzzReport",
    "Guarded",
    "InputError",
    "InternalError",
    "Item",
    "MemoryStore",
    "Policy",
    "PolicyResult",
    "Repair",
    "RewriteResult",
    "SqliteStore",
    "Store",
    "StoreError",
    "Trace",
    "TraceReport",
    "Window",
    "__version__",
    "audit_trace",
    "check_rewrite",
    "forget_reads",
    "fuzz",
    "guard",
    "item_from_json",
    "load_policy",
    "load_trace",
    "load_window",
    "parse_formula",
    "parse_trace_text",
    "parse_window_text",
    "ref_of",
    "run_policy",
    "run_twice",
    "stub_for",
    "trace_from_dicts",
    "window_from_dicts",
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxproof")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'verifier' has no attribute {name!r}")
    module = importlib.import_module(where)
    # ``fuzz`` is the name of a function and of its module, which Python binds to the
    # package whenever it is imported: the name stays the module, callable as the function
    found: Any = module if where == f"verifier.{name}" else getattr(module, name)
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE, "__version__"})
