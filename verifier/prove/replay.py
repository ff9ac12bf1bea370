"""From a solver model to a trace the ordinary audit replays.

A model fixes every slot: kind, type, modality, citations, tokens, score,
and when it is appended (BMC) or where it is as the pass starts (induction).
:class:`Scenario` is that assignment as plain values; :func:`replay_scenario` turns it
into item dicts, runs the spec's own interpreter (``SpecPolicy`` through
``run_policy``, given the store the trace has filled so far, through which
``cited`` and ``result`` read stubs) on them pass by pass, builds the trace (header with the
budget; appends; a ``spill`` event with the items each pass spilled; the
rewrite with the policy's window and ``claimed_preserved``), audits it in
count witness mode, and returns the finding the proof predicted.

The replay checks the model against the interpreter twice: every pass's
window must be the one the encoding predicted (which ids stay, which became
stubs, their modalities), and the audit must report the finding. Either
failing is an :class:`~verifier.errors.InternalError`: the encoding disagrees
with the interpreter, and the message says where.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.audit import audit_trace
from verifier.errors import InternalError
from verifier.findings import Finding
from verifier.io import parse_trace_text, ref_of
from verifier.policies import AgeTracker, run_policy
from verifier.policies.loading import Policy
from verifier.policies.spec import Spec, SpecPolicy, summary_id
from verifier.rules.context import MODE_COUNT

__all__ = [
    "ConcreteSlot",
    "Replayed",
    "Scenario",
    "ScenarioPass",
    "build_trace",
    "item_objects",
    "replay_scenario",
    "run_scenario",
    "slot_id",
]

_PREFIX = {"commitment": "c", "claim": "cl", "observation": "o", "prose": "p"}


def slot_id(index: int, kind: str) -> str:
    """The id a counterexample gives slot ``index`` (``c1``, ``cl2``, ``o3``, ``p4``)."""
    return f"{_PREFIX[kind]}{index + 1}"


@dataclass(frozen=True, slots=True)
class ConcreteSlot:
    """One slot of a model, as plain values."""

    index: int
    kind: str
    ctype: str
    load_bearing: bool
    modality: str
    """As appended (induction: as the pass starts)."""
    tokens: int
    score: int
    links: Mapping[str, tuple[int, ...]]
    """Field -> the slots cited (rationale, witnesses, derived_from, call)."""
    appended: int | None = None
    """BMC: the pass before which it is appended."""
    place: str | None = None
    """Induction: win, stub or store."""
    age: int = 0


@dataclass(frozen=True, slots=True)
class Scenario:
    """A counterexample as concrete values: what to append, and the passes to run."""

    induction: bool
    budget: int
    slots: tuple[ConcreteSlot, ...]
    passes: int
    summaries: Mapping[int, int] = field(default_factory=dict)
    """Summary slot index -> the pass whose summary it is."""
    formulas: Mapping[int, str] = field(default_factory=dict)
    """Slot -> the formula the counterexample gives it (WR001, WR002)."""
    expected: tuple[Mapping[str, tuple[str, str | None]], ...] = ()
    """Per pass: id -> where it is after the pass (win, stub or out) and its modality
    (prose: None); an id not listed is out."""


@dataclass(frozen=True, slots=True)
class Replayed:
    """A replayed counterexample: the trace written and the finding the audit reported."""

    path: str
    finding: Finding
    text: str


def _ids(scenario: Scenario) -> dict[int, str]:
    ids = {s.index: slot_id(s.index, s.kind) for s in scenario.slots}
    for index, pass_no in scenario.summaries.items():
        ids[index] = summary_id(pass_no)
    return ids


def _item(s: ConcreteSlot, ids: Mapping[int, str], formula: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"id": ids[s.index], "kind": s.kind}
    if s.kind == "commitment":
        obj["type"] = s.ctype
    if formula is not None:
        obj["formula"] = formula
    if s.kind == "observation":
        obj["shows"] = ids[s.index]  # each observation shows an atom of its own
    if s.kind != "prose" and s.modality != "unverified":
        obj["modality"] = s.modality
    if s.kind == "commitment" and not s.load_bearing:
        obj["load_bearing"] = False
    if s.kind == "claim" and s.load_bearing:
        obj["load_bearing"] = True
    for rel in ("rationale", "witnesses", "derived_from"):
        if s.links.get(rel):
            obj[rel] = [ids[j] for j in s.links[rel]]
    if s.links.get("call"):
        obj["call"] = ids[s.links["call"][0]]
    obj["tokens"] = s.tokens
    if s.score:
        obj["score"] = s.score
    return obj


def _stub(s: ConcreteSlot, item: dict[str, Any], ids: Mapping[int, str]) -> dict[str, Any]:
    obj: dict[str, Any] = {"id": ids[s.index], "kind": "stub", "ref": ref_of(item)}
    obj["tokens"] = s.tokens
    if s.score:
        obj["score"] = s.score
    return obj


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False)


def _disagree(what: str) -> InternalError:
    return InternalError(
        f"the proof's encoding disagrees with the spec interpreter: {what}; this is a bug in"
        " ctxproof prove, not in the spec"
    )


def _compare(
    pass_no: int,
    expected: Mapping[str, tuple[str, str | None]],
    window: Sequence[dict[str, Any]],
) -> None:
    actual: dict[str, tuple[str, str | None]] = {}
    for obj in window:
        if obj["kind"] == "stub":
            actual[obj["id"]] = ("stub", None)
        else:
            modality = obj.get("modality", "unverified") if obj["kind"] != "prose" else None
            actual[obj["id"]] = ("win", modality)
    for iid in sorted(set(expected) | set(actual)):
        want = expected.get(iid, ("out", None))
        got = actual.get(iid, ("out", None))
        if got != want:
            raise _disagree(
                f"after pass {pass_no} the encoding predicts {iid!r} {_show(want)}, the"
                f" interpreter gives {_show(got)}"
            )


def _show(state: tuple[str, str | None]) -> str:
    where, modality = state
    if where == "out":
        return "out of the window"
    if where == "stub":
        return "as a stub"
    return "in the window" + (f" ({modality})" if modality else "")


def item_objects(
    scenario: Scenario,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int]]:
    """Induction: the items the store holds, the window as the pass starts, and the ages."""
    ids = _ids(scenario)
    items = {s.index: _item(s, ids, scenario.formulas.get(s.index)) for s in scenario.slots}
    stored = [items[s.index] for s in scenario.slots if s.place in ("stub", "store")]
    window: list[dict[str, Any]] = []
    for s in scenario.slots:
        if s.place == "win":
            window.append(items[s.index])
        elif s.place == "stub":
            window.append(_stub(s, items[s.index], ids))
    ages = {ids[s.index]: s.age for s in scenario.slots if s.place in ("win", "stub")}
    return stored, window, ages


@dataclass(frozen=True, slots=True)
class ScenarioPass:
    """One pass of a spec run on a scenario: what it started from and what it left."""

    pass_no: int
    before: tuple[dict[str, Any], ...]
    """The window as the pass starts."""
    ages: Mapping[str, int]
    store: Mapping[str, dict[str, Any]]
    """Ref -> item: what the trace has spilled as the pass starts."""
    after: tuple[dict[str, Any], ...]


def run_scenario(spec: Spec, scenario: Scenario) -> tuple[str, tuple[ScenarioPass, ...]]:
    """Run the interpreter on the scenario: the trace text and each pass it made.

    Each pass's window is compared with the one the scenario expects (when it
    expects one); a spec other than the one the scenario was found for is run
    with ``expected=()``.
    """
    ids = _ids(scenario)
    items = {
        s.index: _item(s, ids, scenario.formulas.get(s.index)) for s in scenario.slots
    }
    policy = Policy(spec.name, SpecPolicy(spec), True, True, spec, True)
    lines = [_line({"event": "header", "format": "ctxproof-trace/1", "budget": scenario.budget})]
    window: list[dict[str, Any]] = []
    ages = AgeTracker()
    given_ages: dict[str, int] | None = None
    store: dict[str, dict[str, Any]] = {}  # ref -> item: what the trace spilled so far
    runs: list[ScenarioPass] = []
    offset = 0  # rewrites before the first pass of the spec: they give the items their ages
    if scenario.induction:
        stored, window, given_ages = item_objects(scenario)
        if stored:
            lines.append(_line({"event": "spill", "items": stored}))
            store.update((ref_of(obj), obj) for obj in stored)
        offset = _aged_appends(window, given_ages, lines)
    for step in range(1, scenario.passes + 1):
        pass_no = offset + step
        if not scenario.induction:
            new = [items[s.index] for s in scenario.slots if s.appended == pass_no]
            if new:
                lines.append(_line({"event": "append", "items": new}))
                window.extend(new)
                ages.appended(obj["id"] for obj in new)
            given_ages = ages.ages()
        before = (tuple(window), dict(given_ages or {}), dict(store))
        res = run_policy(
            policy, window, scenario.budget, pass_no=pass_no, ages=given_ages, store=store
        )
        if not res.ok:
            raise _disagree(f"the interpreter refused pass {pass_no}: {res.message}")
        if res.spilled:
            spilled = [it.as_json() for it in res.spilled]
            lines.append(_line({"event": "spill", "items": spilled}))
            store.update((ref_of(obj), obj) for obj in spilled)
        window = [it.as_json() for it in res.window]
        event: dict[str, Any] = {"event": "rewrite", "policy": spec.name, "window": window}
        if res.claimed_preserved is not None:
            event["claimed_preserved"] = list(res.claimed_preserved)
        lines.append(_line(event))
        runs.append(ScenarioPass(pass_no, *before, tuple(window)))
        if step <= len(scenario.expected):
            # the encoding names the summary of its pass `step`: the trace's pass is later
            named = {summary_id(pass_no): summary_id(step)}
            shown = [{**obj, "id": named.get(obj["id"], obj["id"])} for obj in window]
            _compare(step, scenario.expected[step - 1], shown)
        ages.rewritten()
    later = [
        items[s.index]
        for s in scenario.slots
        if s.appended is not None and s.appended > offset + scenario.passes
    ]
    if later:
        # calls of results the trace holds, appended after its last pass: a trace names
        # only ids it gives, so they close it
        lines.append(_line({"event": "append", "items": later}))
    return "\n".join(lines) + "\n", tuple(runs)


MAX_SETUP = 1_000
"""The most rewrites a trace gives to set its items' ages (an age past it, as a spec's
threshold of millions asks, is left to the interpreter alone)."""

SETUP_POLICY = "setup: ages"
"""The policy name of the rewrites an induction counterexample's trace opens with: they
keep the window as it is, so that each item has, at the spec's pass, the age the
counterexample gives it (the rewrites since it was appended)."""


def _aged_appends(
    window: list[dict[str, Any]], ages: Mapping[str, int], lines: list[str]
) -> int:
    """Append the window so that each item has its age when the spec's pass starts; return
    the rewrites that takes. The oldest items come first, a rewrite that keeps the window
    between two ages. Where the window's order is not oldest first, no trace of appends
    gives both that order and those ages (an item appended goes last): the window is
    appended at once (so too when an age is past :data:`MAX_SETUP`), and the spec runs on
    the ages the state gave."""
    order = [ages.get(str(obj["id"]), 0) for obj in window]
    top = max(order, default=0)
    unordered = any(a < b for a, b in itertools.pairwise(order))
    if top == 0 or top > MAX_SETUP or unordered:
        if window:
            lines.append(_line({"event": "append", "items": window}))
        return 0
    by_age: dict[int, list[dict[str, Any]]] = {}
    for obj, age in zip(window, order, strict=True):
        by_age.setdefault(age, []).append(obj)
    for age in range(top, -1, -1):
        if age in by_age:
            lines.append(_line({"event": "append", "items": by_age[age]}))
        if age:  # a rewrite that keeps the window: a diff that changes nothing
            keep: dict[str, list[Any]] = {"remove": [], "put": []}
            lines.append(_line({"event": "rewrite", "policy": SETUP_POLICY, "diff": keep}))
    return top


def build_trace(spec: Spec, scenario: Scenario) -> tuple[str, int]:
    """Run the interpreter on the scenario: the trace text and how many passes it holds
    (an induction trace: the rewrites that give the items their ages, and the spec's)."""
    text, runs = run_scenario(spec, scenario)
    return text, runs[-1].pass_no if runs else scenario.passes


def replay_scenario(
    spec: Spec, scenario: Scenario, code: str, pass_no: int, out_dir: str | Path
) -> Replayed:
    """Build the counterexample trace for ``OUT/cex-CODE.jsonl`` and audit it.

    The trace is not written here: :func:`verifier.prove.prove` writes every
    counterexample of a proof as one set (:func:`~verifier.fsutil.write_set`).

    Raises :class:`InternalError` when the interpreter does not do what the
    encoding predicted, or the audit does not report ``code`` at ``pass_no``.
    """
    text, passes = build_trace(spec, scenario)
    pass_no += passes - scenario.passes  # an induction trace's own rewrites come first
    shown = str(Path(out_dir) / f"cex-{code}.jsonl")
    trace = parse_trace_text(text, shown)
    report = audit_trace(trace, mode=MODE_COUNT)
    for f in report.findings:
        if f.code == code and f.pass_ == pass_no:
            return Replayed(shown, f, text)
    found = ", ".join(sorted({f"{f.code}@{f.pass_}" for f in report.findings})) or "nothing"
    raise _disagree(
        f"the model of {code} at pass {pass_no} replays without it ({shown} audits with"
        f" {found})"
    )
