"""Rewrite policies: loading them, running them, and the spec language.

A policy is a callable ``policy(window, budget)`` (docs/policies.md):
``window`` is the policy's own deep copy of the window as plain item dicts,
exactly as the trace holds them (no defaults filled in), ``budget`` an int of
tokens. It returns the new window (a list of item dicts) or a dict
``{"window": [...], "spill": [ids], "claimed_preserved": [ids]}``.

:func:`run_policy` runs one and validates what it returns; anything wrong
becomes a **PL001 policy-error** result, never an exception. :func:`run_twice`
runs it twice on equal copies and reports **PL002 policy-nondeterministic**
when the two outputs differ.

>>> def drop_prose(window, budget):
...     return [it for it in window if it["kind"] != "prose"]
>>> window = [{"id": "p", "kind": "prose"}, {"id": "o", "kind": "observation"}]
>>> res = run_policy(drop_prose, window, 10)
>>> [it.id for it in res.window], res.ok
(['o'], True)
>>> run_policy(lambda w, b: None, [], 10).code
'PL001'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifier.errors import InputError, want_bool, want_callable, want_int, wrong_type
from verifier.findings import Finding
from verifier.io import item_from_plain, items_argument
from verifier.policies.loading import Policy, as_policy, load_policy, one_line, spec_policy
from verifier.policies.spec import Spec, SpecPolicy, load_spec, parse_spec
from verifier.store import Store
from verifier.window import Item, Window, canonical_json

__all__ = [
    "AgeTracker",
    "Given",
    "Outcome",
    "Policy",
    "PolicyResult",
    "Spec",
    "SpecPolicy",
    "StoreView",
    "ids_checked_by_caller",
    "item_tokens",
    "load_policy",
    "load_spec",
    "nondeterministic",
    "outcome_of",
    "outcome_twice",
    "parse_spec",
    "policy_argument",
    "pressure_of",
    "run_policy",
    "run_twice",
    "spec_policy",
    "window_tokens",
]

_RESULT_KEYS = frozenset({"window", "spill", "claimed_preserved"})


def ids_checked_by_caller(item_id: str) -> bool:
    """The ``known`` of a caller that checks the ids a result cites or claims against the
    history it holds (``fuzz``: an id dropped at an earlier pass is known there, and
    claiming it is CF006, not PL001): every id passes validation here."""
    del item_id
    return True


def item_tokens(item: Item | Mapping[str, Any]) -> int:
    """An item's size for budgets: its ``tokens``, else ``max(1, len(canonical JSON) // 4)``.

    >>> item_tokens({"id": "p", "kind": "prose", "tokens": 7})
    7
    >>> item_tokens({"id": "p", "kind": "prose"})
    6
    """
    if isinstance(item, Item):
        return item.estimated_tokens()
    tokens = item.get("tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return tokens
    return max(1, len(canonical_json(item)) // 4)


def window_tokens(window: Iterable[Item | Mapping[str, Any]]) -> int:
    """The sum of :func:`item_tokens` over a window."""
    return sum(item_tokens(it) for it in window)


def pressure_of(window: Iterable[Item | Mapping[str, Any]], budget: int) -> float:
    """Tokens over budget; with a budget of 0: infinite when there are tokens, else 0."""
    total = window_tokens(window)
    if budget > 0:
        return total / budget
    return math.inf if total > 0 else 0.0


@dataclass
class AgeTracker:
    """Ages of ids: the number of rewrites since each id was first appended.

    >>> ages = AgeTracker()
    >>> ages.appended(["a"]); ages.rewritten(); ages.appended(["b", "a"])
    >>> ages.ages()
    {'a': 1, 'b': 0}
    """

    rewrites: int = 0
    first: dict[str, int] = field(default_factory=dict)

    def appended(self, ids: Iterable[str]) -> None:
        for i in ids:
            self.first.setdefault(i, self.rewrites)

    def rewritten(self) -> None:
        self.rewrites += 1

    def ages(self) -> dict[str, int]:
        return {i: self.rewrites - at for i, at in self.first.items()}


class StoreView(Mapping[str, dict[str, Any]]):
    """The durable store as a policy reads it: ``ref`` -> the stored item, as a plain dict.

    Read-only, and every read gives a fresh dict: a policy cannot change what the
    harness stored. Made from a :class:`~verifier.store.Store` (entries verified as
    they are read) or from a mapping of refs to item dicts; empty without either.

    >>> view = StoreView({"sha256:ab": {"id": "c1", "kind": "prose"}})
    >>> view["sha256:ab"], len(view), view.get("sha256:cd")
    ({'id': 'c1', 'kind': 'prose'}, 1, None)
    """

    __slots__ = ("_source",)

    def __init__(self, source: Store | Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._source: Store | Mapping[str, Mapping[str, Any]] = {} if source is None else source

    def __getitem__(self, ref: str) -> dict[str, Any]:
        if isinstance(self._source, Store):
            item = self._source.get(ref) if isinstance(ref, str) else None
            if item is None:
                raise KeyError(ref)
            found: dict[str, Any] = json.loads(item.raw)
            return found
        copied: dict[str, Any] = json.loads(json.dumps(self._source[ref]))
        return copied

    def __iter__(self) -> Iterator[str]:
        if isinstance(self._source, Store):
            return (it.ref for it in self._source.items())
        return iter(list(self._source))

    def __len__(self) -> int:
        return len(self._source)

    def __repr__(self) -> str:
        return f"StoreView({len(self)} entries)"


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """What one run of a policy gave: the validated new window, or a PL finding.

    On an error (``code`` PL001 or PL002) ``window`` is the window given,
    unchanged, ``spill`` and ``claimed_preserved`` are empty, and ``message``
    is one line: the exception type and its message, or what was wrong.
    """

    window: tuple[Item, ...]
    spill: tuple[str, ...] = ()
    claimed_preserved: tuple[str, ...] | None = None
    spilled: tuple[Item, ...] = ()
    """The ``before`` versions of the ``spill`` ids: what to write to the store first."""
    pass_no: int = 1
    code: str | None = None
    message: str | None = None
    items: tuple[str, ...] = ()
    """Ids the error names (a duplicate id, a spill id not in the window...)."""

    @property
    def ok(self) -> bool:
        return self.code is None

    def finding(self, line: int | None = None) -> Finding | None:
        """The PL001/PL002 finding, or None when the policy ran cleanly."""
        if self.code is None:
            return None
        return Finding(self.code, self.pass_no, self.items, self.message or "", line)

    def output_key(self) -> str:
        """The output as canonical text: two runs gave the same output iff these are equal
        (:meth:`Outcome.key` of the same output)."""
        return Outcome(
            self.window, self.spill, self.claimed_preserved, self.code, self.message
        ).key()


class _Bad(Exception):
    """What a policy returned is not a valid result."""

    def __init__(self, message: str, items: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.items = tuple(items)


def _as_items(
    window: Window | Sequence[Item | Mapping[str, Any]], func: str = "run_policy"
) -> tuple[Item, ...]:
    return items_argument(window, func=func, arg="window")


def _id_list(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"'{what}' must be a list of item ids, not {type(value).__name__}")
    seen: set[str] = set()
    for v in value:
        if v in seen:
            raise _Bad(f"'{what}' lists {v!r} twice", [v])
        seen.add(v)
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Given:
    """The window a policy is given, as it crosses to the policy: the items' JSON texts
    (each call parses a fresh copy) and the kind of each id."""

    raws: tuple[str, ...]
    kinds: Mapping[str, str]

    @classmethod
    def of(cls, before: Sequence[Item]) -> Given:
        return cls(tuple(it.raw for it in before), {it.id: it.kind for it in before})

    def fresh(self) -> list[dict[str, Any]]:
        """The policy's own copy: fresh objects, parsed in one go."""
        copy: list[dict[str, Any]] = json.loads("[" + ",".join(self.raws) + "]")
        return copy


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running a policy gave, as plain data: the validated output, or a PL code and
    its message (the exception's type and text, or what was wrong). It is what a policy's
    process sends back (:mod:`verifier.policies.isolated`)."""

    window: tuple[Item, ...] = ()
    spill: tuple[str, ...] = ()
    claimed_preserved: tuple[str, ...] | None = None
    code: str | None = None
    message: str | None = None
    items: tuple[str, ...] = ()

    def key(self) -> str:
        """The output as canonical text: two runs gave the same output iff these are equal."""
        return json.dumps(
            {
                "window": [it.raw for it in self.window],
                "spill": list(self.spill),
                "claimed_preserved": self.claimed_preserved,
                "code": self.code,
                "message": self.message,
            },
            ensure_ascii=False,
        )

    def result(self, before: Sequence[Item], pass_no: int) -> PolicyResult:
        """The :class:`PolicyResult` of this outcome on the window ``before``."""
        if self.code is not None:
            return PolicyResult(
                tuple(before),
                pass_no=pass_no,
                code=self.code,
                message=self.message,
                items=self.items,
            )
        by_id = {it.id: it for it in before}
        # a stub named in spill is written too: the stub the policy leaves for it then
        # resolves through it (the store follows stubs of stubs)
        spilled = tuple(by_id[s] for s in self.spill if s in by_id)
        return PolicyResult(self.window, self.spill, self.claimed_preserved, spilled, pass_no)


def _normalize(
    returned: Any,
    given: Given,
    known: Callable[[str], bool] | None,
) -> tuple[tuple[Item, ...], tuple[str, ...], tuple[str, ...] | None]:
    spill: tuple[str, ...] = ()
    claimed: tuple[str, ...] | None = None
    if isinstance(returned, dict):
        unknown = sorted(str(k) for k in returned if k not in _RESULT_KEYS)
        if unknown:
            raise _Bad(
                f"the result has the key {unknown[0]!r}; a result takes window, spill and"
                " claimed_preserved"
            )
        if "window" not in returned:
            raise _Bad("the result has no 'window'")
        raw_window = returned["window"]
        spill = _id_list(returned.get("spill", []), "spill")
        if "claimed_preserved" in returned:
            claimed = _id_list(returned["claimed_preserved"], "claimed_preserved")
    else:
        raw_window = returned
    if not isinstance(raw_window, list):  # a tuple is something else (docs/policies.md)
        raise _Bad(
            f"returned {type(raw_window).__name__}, not a list of item dicts or a dict"
            " with 'window'"
        )
    items: list[Item] = []
    seen: set[str] = set()
    for n, obj in enumerate(raw_window):
        if not isinstance(obj, dict):
            raise _Bad(f"window[{n}] is a {type(obj).__name__}, not an item dict")
        try:
            # plain JSON only: no NaN, no sets, no objects a trace cannot hold
            it = item_from_plain(obj)
        except InputError as exc:
            iid = obj.get("id")
            ids = [iid] if isinstance(iid, str) else []
            what = f"item {iid!r}" if isinstance(iid, str) else f"window[{n}]"
            fix = f"; {exc.fix}" if exc.fix else ""
            raise _Bad(f"{what} is invalid: {exc.message}{fix}", ids) from None
        except (TypeError, ValueError, RecursionError) as exc:
            raise _Bad(f"window[{n}] is not plain JSON: {one_line(exc)}") from None
        if it.id in seen:
            raise _Bad(f"the new window holds id {it.id!r} twice", [it.id])
        seen.add(it.id)
        items.append(it)
    for sid in spill:
        if sid not in given.kinds:
            raise _Bad(f"'spill' names {sid!r}, which was not in the window given", [sid])
    defined = set(given.kinds) | seen

    def is_known(i: str) -> bool:
        return i in defined or (known is not None and known(i))

    for cid in claimed or ():
        if not is_known(cid):
            raise _Bad(f"'claimed_preserved' names {cid!r}, which is in neither window", [cid])
    if known is not None:
        for it in items:
            for rel, ref in it.citations:
                if not is_known(ref):
                    raise _Bad(
                        f"item {it.id!r} cites {rel} {ref!r}, which no event defines and the"
                        " store does not hold",
                        [it.id, ref],
                    )
    return tuple(items), spill, claimed


StoreLike = Store | Mapping[str, Mapping[str, Any]]
"""What a caller may give a policy as the store: a store, or refs -> item dicts."""


def _call(
    policy: Policy,
    window: list[dict[str, Any]],
    budget: int,
    pass_no: int,
    ages: Any,
    store: StoreLike | None,
) -> Any:
    kwargs: dict[str, Any] = {}
    if policy.takes_pass_no:
        kwargs["pass_no"] = pass_no
    if policy.takes_ages:
        kwargs["ages"] = dict(ages or {})
    if policy.takes_store:
        kwargs["store"] = StoreView(store)
    return policy.function(window, budget, **kwargs)


def run_policy(
    policy: Policy | Callable[..., Any] | str,
    window: Window | Sequence[Item | Mapping[str, Any]],
    budget: int,
    *,
    pass_no: int = 1,
    ages: Mapping[str, int] | None = None,
    store: StoreLike | None = None,
    known: Callable[[str], bool] | None = None,
    check_determinism: bool = False,
) -> PolicyResult:
    """Run a policy once on ``window`` and validate what it returns.

    The policy gets a deep copy of the window as plain dicts (each item exactly
    as it was written) and ``budget``; policies whose signature accepts the
    keyword arguments ``pass_no``, ``ages`` and ``store`` (or ``**kwargs``) get
    them too: ``store`` as a read-only :class:`StoreView` of the store given
    (empty when none is).
    The return is normalised: a list of item dicts, or a dict with ``window``,
    ``spill`` and ``claimed_preserved``. An exception, a wrong return type, an
    invalid item, a duplicate id, a ``spill`` id that was not in the window, or
    a ``claimed_preserved`` id in neither window gives a PL001 result. With
    ``known`` (does the trace or store define this id?), an item citing an id
    defined nowhere is PL001 too. With ``check_determinism``, see
    :func:`run_twice`.

    ``policy`` is a callable, a loaded :class:`Policy`, or a string as
    :func:`load_policy` takes it. It runs in this process; ``ctxproof fuzz`` runs
    it in a process of its own (:mod:`verifier.policies.isolated`, docs/policies.md).

    Raises ``TypeError`` or :class:`~verifier.errors.InputError` only for bad
    arguments (docs/api.md, "Errors"): a policy that is not callable (or a name that
    does not load), a window that is not a list of valid items with unique ids, a
    budget that is not an int >= 0.
    """
    want_bool(check_determinism, func="run_policy", arg="check_determinism")
    if check_determinism:
        return run_twice(
            policy, window, budget, pass_no=pass_no, ages=ages, store=store, known=known
        )
    pol, before = _prepare(policy, window, budget, "run_policy", pass_no, ages, known, store)
    given = Given.of(before)
    run = _raw_run(pol, given, budget, pass_no, ages, store)
    return outcome_of(pol, given, run, known).result(before, pass_no)


def _prepare(
    policy: Policy | Callable[..., Any] | str,
    window: Window | Sequence[Item | Mapping[str, Any]],
    budget: int,
    func: str,
    pass_no: object,
    ages: object,
    known: object,
    store: object = None,
) -> tuple[Policy, tuple[Item, ...]]:
    """The arguments of :func:`run_policy` and :func:`run_twice`, checked at the door."""
    pol = policy_argument(policy, func=func)
    want_int(budget, func=func, arg="budget", minimum=0)
    want_int(pass_no, func=func, arg="pass_no", minimum=1)
    if ages is not None and not isinstance(ages, Mapping):
        raise wrong_type(func, "ages", ages, "a dict of item id -> age (an int) or None")
    want_callable(known, func=func, arg="known", what="a function of an id")
    if store is not None and not isinstance(store, Store | Mapping):
        expected = "a Store, a dict of ref -> item dict, or None"
        raise wrong_type(func, "store", store, expected, "use MemoryStore()")
    return pol, _as_items(window, func)


def policy_argument(policy: object, *, func: str) -> Policy:
    """A policy given to the API function ``func``: a :class:`Policy`, a callable, or a
    name :func:`load_policy` loads.

    Raises:
        TypeError: neither.
        InputError: a name that does not load, or a function that cannot be called as
            ``policy(window, budget)``.
    """
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, str):
        return load_policy(policy)
    if not callable(policy):
        raise wrong_type(
            func,
            "policy",
            policy,
            "a function policy(window, budget) or a name such as 'file.py:function'",
        )
    return as_policy(policy)


def _raw_run(
    pol: Policy,
    given: Given,
    budget: int,
    pass_no: int,
    ages: Any,
    store: StoreLike | None,
    contained: bool = False,
) -> tuple[bool, Any]:
    """Call the policy on its own copy of the window: (True, what it returned), or
    (False, the exception's one-line message). ``contained``: in a policy's own process,
    where even a KeyboardInterrupt the policy raises is only its error."""
    window = given.fresh()
    caught: tuple[type[BaseException], ...] = (
        (BaseException,) if contained else (Exception, SystemExit)
    )
    try:
        return True, _call(pol, window, budget, pass_no, ages, store)
    except caught as exc:
        return False, one_line(exc)


def outcome_of(
    pol: Policy,
    given: Given,
    run: tuple[bool, Any],
    known: Callable[[str], bool] | None = None,
) -> Outcome:
    """Validate what one run of the policy gave (see :func:`run_policy`)."""

    def error(message: str, items: Sequence[str] = ()) -> Outcome:
        return Outcome(code="PL001", message=message, items=tuple(items))

    ok, returned = run
    if not ok:
        return error(f"policy {pol.name!r} raised {returned}")
    try:
        items, spill, claimed = _normalize(returned, given, known)
    except _Bad as bad:
        return error(f"policy {pol.name!r}: {bad}", bad.items)
    except Exception as exc:  # a result object whose methods raise
        return error(f"policy {pol.name!r}: its result could not be read: {one_line(exc)}")
    return Outcome(items, spill, claimed)


def _same(a: tuple[bool, Any], b: tuple[bool, Any]) -> bool:
    """Did two runs return equal things? (Structural equality; False when it cannot tell.)"""
    try:
        return bool(a == b)
    except Exception:
        return False


def run_twice(
    policy: Policy | Callable[..., Any] | str,
    window: Window | Sequence[Item | Mapping[str, Any]],
    budget: int,
    *,
    pass_no: int = 1,
    ages: Mapping[str, int] | None = None,
    store: StoreLike | None = None,
    known: Callable[[str], bool] | None = None,
) -> PolicyResult:
    """Run a policy twice on equal copies of the same input.

    Returns the first run's result when both agree (a PL001 of the first run
    included); a PL002 policy-nondeterministic result when the outputs differ.
    """
    pol, before = _prepare(policy, window, budget, "run_twice", pass_no, ages, known, store)
    outcome = outcome_twice(pol, Given.of(before), budget, pass_no, ages, known, store=store)
    return outcome.result(before, pass_no)


def outcome_twice(
    pol: Policy,
    given: Given,
    budget: int,
    pass_no: int,
    ages: Mapping[str, int] | None,
    known: Callable[[str], bool] | None = None,
    between: Callable[[], None] | None = None,
    contained: bool = False,
    *,
    store: StoreLike | None = None,
) -> Outcome:
    """:func:`run_twice` as an :class:`Outcome`; ``between`` is called after the first
    call returns (a policy's process reports it: each call has its own time limit)."""
    raw_first = _raw_run(pol, given, budget, pass_no, _copy(ages), store, contained)
    if between is not None:
        between()
    raw_second = _raw_run(pol, given, budget, pass_no, _copy(ages), store, contained)
    first = outcome_of(pol, given, raw_first, known)
    if _same(raw_first, raw_second):
        return first  # equal returns: one validation serves both
    second = outcome_of(pol, given, raw_second, known)
    if first.key() == second.key():
        return first
    return nondeterministic(pol, first, second)


def nondeterministic(pol: Policy, first: Outcome, second: Outcome) -> Outcome:
    """The PL002 finding of two different outcomes of one input: what differs, and the
    ids of the items that differ (as ``fuzz`` and ``fuzz --replay`` both say it)."""
    return Outcome(
        code="PL002",
        message=f"policy {pol.name!r} gave two different outputs for the same input: "
        + _difference(first, second),
        items=_differing_ids(first, second),
    )


def _copy(ages: Mapping[str, int] | None) -> dict[str, int] | None:
    return None if ages is None else dict(ages)


def _describe(res: Outcome) -> str:
    if res.code is not None:
        return f"an error ({res.message})"
    return f"{len(res.window)} item(s)"


def _difference(a: Outcome, b: Outcome) -> str:
    if a.code is not None or b.code is not None:
        return f"first {_describe(a)}, then {_describe(b)}"
    ids_a, ids_b = [it.id for it in a.window], [it.id for it in b.window]
    if ids_a != ids_b:
        return f"windows with ids {ids_a[:8]} and {ids_b[:8]}"
    for x, y in zip(a.window, b.window, strict=True):
        if x.raw != y.raw:
            return f"item {x.id!r} differs"
    if a.spill != b.spill:
        return f"spill {list(a.spill)} and {list(b.spill)}"
    return f"claimed_preserved {a.claimed_preserved} and {b.claimed_preserved}"


def _differing_ids(a: Outcome, b: Outcome) -> tuple[str, ...]:
    if a.code is not None or b.code is not None:
        return ()
    by_b = {it.id: it for it in b.window}
    ids = [it.id for it in a.window if it.id not in by_b or by_b[it.id].raw != it.raw]
    ids += [i for i in by_b if i not in {it.id for it in a.window}]
    return tuple(dict.fromkeys(ids))
