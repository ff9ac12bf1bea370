"""ctxproof: formal verification of self-editing context windows.

The public API:

* :func:`check_rewrite` — check one rewrite (before, after, store) and get a verdict,
  findings and a repair;
* :func:`audit_trace` — check every event of a trace;
* :func:`load_trace`, :func:`load_window`, :func:`parse_trace_text` — read input;
* :class:`SqliteStore`, :class:`MemoryStore` — the durable store;
* :func:`load_policy`, :func:`run_policy`, :func:`run_twice` — load a rewrite policy
  (a Python function or a spec) and run it, its errors turned into PL001/PL002.
"""

from verifier.audit import TraceReport, audit_trace
from verifier.check import Guarded, Repair, RewriteResult, check_rewrite, guard
from verifier.errors import CtxproofError, FormulaError, InputError, InternalError, StoreError
from verifier.findings import RULES, Finding
from verifier.io import (
    item_from_json,
    load_trace,
    load_window,
    parse_trace_text,
    parse_window_text,
    ref_of,
    stub_for,
)
from verifier.policies import Policy, PolicyResult, load_policy, run_policy, run_twice
from verifier.store import MemoryStore, SqliteStore, Store
from verifier.window import Item, Trace, Window

__all__ = [
    "RULES",
    "CtxproofError",
    "Finding",
    "FormulaError",
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
    "audit_trace",
    "check_rewrite",
    "guard",
    "item_from_json",
    "load_policy",
    "load_trace",
    "load_window",
    "parse_trace_text",
    "parse_window_text",
    "ref_of",
    "run_policy",
    "run_twice",
    "stub_for",
]
