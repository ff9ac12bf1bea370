"""The public API checks its arguments at the door (docs/api.md, "Errors").

Every function and method of ``verifier.__all__`` is called with generated wrong
arguments: values of another type, lists of junk, item dicts with bad fields,
duplicate ids, unknown modes. What comes out is a result, a ``TypeError`` (a
value of the wrong type) or an :class:`InputError` (bad content), never an
``AttributeError``, a ``KeyError``, a bare ``ValueError`` or anything else; and
a ``TypeError`` of ours names the function and the argument.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import verifier
from verifier import (
    Auditor,
    InputError,
    MemoryStore,
    SqliteStore,
    StoreError,
    audit_trace,
    check_rewrite,
    forget_reads,
    guard,
    item_from_json,
    load_policy,
    load_trace,
    load_window,
    parse_formula,
    parse_trace_text,
    parse_window_text,
    ref_of,
    run_policy,
    run_twice,
    stub_for,
    trace_from_dicts,
    window_from_dicts,
)
from verifier.fuzz import keep_everything

DEC = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres"}
REJ = {"id": "r1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"}
OBS = {"id": "o1", "kind": "observation", "shows": "tests.pass", "modality": "verified"}
WINDOW = [DEC, REJ, OBS]
EVENTS: list[dict[str, Any]] = [
    {"event": "header", "format": "ctxproof-trace/1"},
    {"event": "append", "items": WINDOW},
    {"event": "rewrite", "policy": "p", "window": [DEC, OBS]},
]
TRACE_TEXT = "\n".join(json.dumps(e) for e in EVENTS) + "\n"
WINDOW_TEXT = json.dumps({"format": "ctxproof-window/1", "items": [DEC]})


@dataclass(frozen=True)
class Target:
    """A public function (or a method of a fresh object) and a call of it that works."""

    name: str
    call: Callable[..., Any]
    good: Mapping[str, Any]
    also: tuple[type[Exception], ...] = ()
    """Errors besides TypeError and InputError that its docs name (a store that cannot be
    opened is a StoreError)."""


def _store_with(method: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        store = MemoryStore()
        store.spill([REJ])
        return getattr(store, method)(**kwargs)

    return call


def _sqlite_with(method: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        store = SqliteStore("api-args.sqlite")
        try:
            return getattr(store, method)(**kwargs)
        finally:
            store.close()

    return call


def _auditor_with(method: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        auditor = Auditor()
        auditor.append([DEC, REJ])
        return getattr(auditor, method)(**kwargs)

    return call


TARGETS: tuple[Target, ...] = (
    Target("check_rewrite", check_rewrite, {
        "before": WINDOW, "after": [DEC, OBS], "store": None, "background": (),
        "mode": "support", "claimed_preserved": None, "pass_no": 1, "line": None,
        "policy": None, "with_repair": True,
    }),
    Target("guard", guard, {
        "before": WINDOW, "after": [DEC, OBS], "store": MemoryStore(), "background": (),
        "mode": "count", "claimed_preserved": ["d1"],
    }),
    Target("audit_trace", audit_trace, {
        "trace": trace_from_dicts(EVENTS), "store": None, "mode": "support", "graph": None,
        "until_pass": None, "repair": True,
    }),
    Target("Auditor", Auditor, {
        "background": ["db.postgres -> !db.mysql"], "name": "t", "store": None,
        "mode": "support", "graph": None, "repair": False, "session": None,
    }),
    Target("Auditor.append", _auditor_with("append"), {"items": [OBS], "line": 3}),
    Target("Auditor.spill", _auditor_with("spill"), {"items": [REJ], "line": None}),
    Target("Auditor.rewrite", _auditor_with("rewrite"), {
        "after": [DEC], "policy": "p", "claimed_preserved": ["d1"], "line": 4,
    }),
    Target("Auditor.feed", _auditor_with("feed"), {"ev": trace_from_dicts(EVENTS).events[1]}),
    Target("load_window", load_window, {"path": "window.json"}),
    Target("load_trace", load_trace, {"path": "trace.jsonl", "known_ids": None}),
    Target("parse_window_text", parse_window_text, {"data": WINDOW_TEXT, "name": "w"}),
    Target("parse_trace_text", parse_trace_text, {
        "data": TRACE_TEXT.encode(), "name": "t", "known_ids": None,
    }),
    Target("window_from_dicts", window_from_dicts, {"items": WINDOW, "background": []}),
    Target("trace_from_dicts", trace_from_dicts, {
        "events": EVENTS, "name": "t", "known_ids": None,
    }),
    Target("item_from_json", item_from_json, {"obj": DEC}),
    Target("ref_of", ref_of, {"item": DEC}),
    Target("stub_for", stub_for, {"item": DEC}),
    Target("forget_reads", forget_reads, {}),
    Target("parse_formula", parse_formula, {"text": "a -> b"}),
    Target("MemoryStore.spill", _store_with("spill"), {"items": [DEC]}),
    Target("MemoryStore.get", _store_with("get"), {"ref": ref_of(REJ)}),
    Target("MemoryStore.has_id", _store_with("has_id"), {"item_id": "r1"}),
    Target("MemoryStore.latest", _store_with("latest"), {"item_id": "r1"}),
    Target("SqliteStore", lambda **kw: SqliteStore(**kw).close(), {
        "path": "api-args.sqlite", "readonly": False,
    }, (StoreError,)),
    Target("SqliteStore.spill", _sqlite_with("spill"), {"items": [DEC]}),
    Target("SqliteStore.get", _sqlite_with("get"), {"ref": ref_of(DEC)}),
    Target("load_policy", load_policy, {"arg": "models/specs/spill_first.toml"}),
    Target("run_policy", run_policy, {
        "policy": keep_everything, "window": WINDOW, "budget": 10, "pass_no": 1,
        "ages": None, "store": None, "known": None, "check_determinism": False,
    }),
    Target("run_twice", run_twice, {
        "policy": keep_everything, "window": WINDOW, "budget": 10, "pass_no": 2,
        "ages": {"d1": 1}, "store": MemoryStore(), "known": None,
    }),
    Target("fuzz", verifier.fuzz, {
        "policy": keep_everything, "sessions": 1, "passes": 1, "seed_value": 0,
        "out_dir": "fuzz-out", "mode": "support", "jobs": 1, "policy_arg": None,
        "progress": None, "shrink_calls": 5, "runner": None,
    }),
)

ROOT = Path(__file__).resolve().parents[2]

# -- wrong values ------------------------------------------------------------------------------

_ALPHABET = "xyz:./_-!&|() \x00é"
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(_ALPHABET, max_size=6)
    | st.binary(max_size=4)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_FIELDS = ("id", "kind", "type", "formula", "modality", "rationale", "witnesses", "shows",
           "ref", "call", "tokens", "score", "covers", "derived_from", "modalty", "digest")
_item_like = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["d1", "r1", "o1", "x", ""]) | _scalars,
        "kind": st.sampled_from(["commitment", "claim", "observation", "prose", "stub", "note"])
        | _scalars,
    },
    optional={f: _json | st.sampled_from(["db.postgres", "!db.mysql", ["d1"], "verified"])
              for f in _FIELDS if f not in ("id", "kind")},
)
_objects = st.sampled_from([
    object(), {1, 2}, frozenset(), bytearray(b"x"), Path("nope.json"), Path("."),
    MemoryStore(), len, print, ValueError("x"), range(3), iter([1]),
    {"format": "ctxproof-window/1", "items": [DEC]}, (DEC, DEC), [DEC, DEC], [[DEC]],
    "support ", "Count", "strict", "models/specs/spill_first.toml", "not a list",
])
WRONG = st.one_of(
    _scalars,
    _json,
    _objects,
    _item_like,
    st.lists(_item_like, max_size=3),
    st.lists(_scalars | _objects, min_size=1, max_size=3),
)


@contextlib.contextmanager
def _in_scratch_folder() -> Iterator[Path]:
    """A fresh current folder holding a window, a trace and a spec to load (junk paths and
    stores are created there, never in the repository)."""
    old = Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        (here / "window.json").write_text(WINDOW_TEXT)
        (here / "trace.jsonl").write_text(TRACE_TEXT)
        (here / "models" / "specs").mkdir(parents=True)
        spec = ROOT / "models" / "specs" / "spill_first.toml"
        (here / "models" / "specs" / "spill_first.toml").write_bytes(spec.read_bytes())
        os.chdir(here)
        try:
            yield here
        finally:
            os.chdir(old)


def _call(target: Target, changes: Mapping[str, Any]) -> BaseException | None:
    expected: tuple[type[Exception], ...] = (TypeError, InputError, *target.also)
    try:
        target.call(**{**target.good, **changes})
    except expected as exc:
        return exc
    return None


# -- the properties ----------------------------------------------------------------------------


def test_every_target_works_with_its_good_arguments() -> None:
    """The calls the property starts from succeed, so what fails is what was changed."""
    named = {t.name.split(".")[0] for t in TARGETS}
    public = {n for n in verifier.__all__ if callable(getattr(verifier, n)) and n[0].islower()}
    assert public - named == set(), "a public function the property does not call"
    with _in_scratch_folder():
        for target in TARGETS:
            assert _call(target, {}) is None, target.name


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Target, dict[str, Any]]:
    target = draw(st.sampled_from([t for t in TARGETS if t.good]))
    names = sorted(target.good)
    changed = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    return target, {name: draw(WRONG) for name in changed}


def _check(case: tuple[Target, dict[str, Any]]) -> None:
    target, changes = case
    with _in_scratch_folder():
        exc = _call(target, changes)
    if isinstance(exc, TypeError) and str(exc).startswith(target.name):
        # ours: "func(): arg must be ..., not T; fix"
        assert any(f"{name}" in str(exc) for name in changes), str(exc)
    if isinstance(exc, InputError):
        assert exc.render(), "an InputError says what is wrong"


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow, HealthCheck.nested_given])
@given(_cases())
def test_wrong_arguments_raise_only_type_or_input_errors(
    case: tuple[Target, dict[str, Any]],
) -> None:
    _check(case)


@pytest.mark.slow
@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.nested_given])
@given(_cases())
def test_wrong_arguments_at_length(case: tuple[Target, dict[str, Any]]) -> None:
    _check(case)


# -- the cases the issue names -----------------------------------------------------------------


def test_the_frictions_of_the_issue() -> None:
    prose = {"id": "a", "kind": "prose"}
    with pytest.raises(InputError, match="id appears twice") as dup:
        check_rewrite([prose] * 2, [])
    assert "before[1]" in str(dup.value) and dup.value.item == "a"
    with pytest.raises(InputError, match=r"mode 'strict' is not one of 'support', 'count'"):
        check_rewrite([prose], [], mode="strict")
    with pytest.raises(InputError, match=r"did you mean 'count'\?"):
        check_rewrite([prose], [], mode="cuont")
    with pytest.raises(TypeError, match=r"check_rewrite\(\): before must be a list of items"):
        check_rewrite("not a list", [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"store must be a Store .*, not dict; .*MemoryStore"):
        check_rewrite([prose], [], store={})  # type: ignore[arg-type]
    store = MemoryStore()
    assert store.spill([prose]) == [ref_of(prose)]
    latest = store.latest("a")
    assert latest is not None and latest.as_json() == prose
    with pytest.raises(TypeError, match=r"wrap one item in a list"):
        store.spill(prose)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"guard\(\): store must be a Store"):
        guard([prose], [prose], None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pass its 'items'"):
        check_rewrite({"format": "ctxproof-window/1", "items": [prose]}, [])  # type: ignore[arg-type]


def test_a_typo_in_a_field_is_named() -> None:
    with pytest.raises(InputError) as exc:
        window_from_dicts([{"id": "c1", "kind": "claim", "modalty": "verified"}])
    assert exc.value.fix == "did you mean 'modality'?"
    with pytest.raises(InputError, match=r"did you mean 'observation'\?"):
        item_from_json({"id": "o", "kind": "observaton"})
    with pytest.raises(InputError, match=r"did you mean 'decision'\?"):
        item_from_json({"id": "c", "kind": "commitment", "type": "descision"})
    with pytest.raises(InputError, match="use one of commitment"):  # nothing close: the list
        item_from_json({"id": "n", "kind": "zzz"})


def test_fuzz_is_the_function_whichever_way_it_is_imported() -> None:
    import verifier.fuzz as module
    from verifier import FuzzReport, fuzz

    assert callable(fuzz) and module.Plan is not None
    with tempfile.TemporaryDirectory() as out:
        report = fuzz(keep_everything, sessions=1, passes=1, out_dir=out)
    assert isinstance(report, FuzzReport) and report.sessions == 1
    with pytest.raises(TypeError, match=r"fuzz\(\): sessions must be an int >= 1, not str"):
        fuzz(keep_everything, sessions="3")  # type: ignore[arg-type]
