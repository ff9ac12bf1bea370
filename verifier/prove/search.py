"""``ctxproof prove --suggest``: the fewest edits that make a refuted spec provable, and what
each repair costs in tokens (docs/prove.md, "Suggestions").

Three kinds of edit, each one step towards keeping more:

* an action made safer: ``evict`` -> ``spill``, ``summarize`` -> ``spill``,
  ``soften`` -> ``keep``, ``demote`` -> ``keep``;
* a guard added to a rule's ``when``: ``cited = false``, ``result = false``,
  ``negative = false``, ``load_bearing = false`` or ``stub = false``;
* a rule ``keep`` inserted first, for ``negative = true``, ``load_bearing = true``
  or ``stub = true``.

The search goes by the number of edits. It tries every single edit, then
extends each refuted candidate by one edit its counterexamples point at: for
each finding, the items the rewrite changed among those the finding names (or
that they cite, or that answer them), the rule that acted on each (made safer,
or guarded by what the item is: cited, a result, negative, load-bearing, a
stub), and a ``keep`` first for what the item is. Before a candidate is given
to z3, every counterexample found so far is run with it (the interpreter and
the audit, no solver): one that still shows a finding refutes it at once, and
is what its extensions are guided by. A candidate that survives is proved with
the original's bounds (by induction when the original was); its
counterexamples join the others.

The search stops after the first number of edits at which some candidate is
proved, or at a bound: ``max_edits``, ``max_candidates`` (candidates looked
at), ``search_timeout`` (seconds); the result says which. Each proved
candidate is then fuzzed on the same seeded sessions as the original (the
simulated agent of :mod:`verifier.fuzz`, ``sessions`` and ``seed`` as
``ctxproof fuzz`` takes them), ranked by the tokens it saves there, and
written as ``OUT/suggested-K.toml`` with its edits as comments.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verifier.audit import audit_trace
from verifier.errors import InputError, InternalError
from verifier.findings import Finding
from verifier.fsutil import write_set
from verifier.io import parse_trace_text, ref_of
from verifier.policies import spec_policy
from verifier.policies.spec import Rule, Spec, SpecPolicy, When, load_spec, spec_to_toml
from verifier.prove.proof import (
    DEFAULT_APPENDS,
    DEFAULT_ITEMS,
    DEFAULT_OUT,
    DEFAULT_PASSES,
    PROPERTIES,
    ProofResult,
    check_bounds,
    prove,
)
from verifier.prove.replay import Scenario, ScenarioPass, run_scenario
from verifier.rules.context import MODE_COUNT

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_EDITS",
    "DEFAULT_SEARCH_TIMEOUT",
    "DEFAULT_SEED",
    "DEFAULT_SESSIONS",
    "FUZZ_PASSES",
    "GUARDS",
    "KEEP_FIRST",
    "SAFER",
    "Cost",
    "Edit",
    "SuggestResult",
    "Suggestion",
    "apply_edits",
    "session_cost",
    "single_edits",
    "suggest",
]

SAFER: Mapping[str, str] = {
    "evict": "spill",
    "summarize": "spill",
    "soften": "keep",
    "demote": "keep",
}
"""Each action a suggestion may make safer, and what it becomes."""

GUARDS: tuple[str, ...] = ("cited", "result", "negative", "load_bearing", "stub")
"""The ``when`` keys a suggestion may add to a rule, each as ``key = false``."""

KEEP_FIRST: tuple[str, ...] = ("negative", "load_bearing", "stub")
"""The keys of a rule ``keep`` a suggestion may insert first, each as ``key = true``."""

DEFAULT_SESSIONS = 20
DEFAULT_SEED = 0
DEFAULT_MAX_EDITS = 3
DEFAULT_MAX_CANDIDATES = 1000
DEFAULT_SEARCH_TIMEOUT = 300.0

FUZZ_PASSES = 10
"""Rewrites per fuzz session, at most: what ``ctxproof fuzz`` plays by default."""


# -- edits --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class Edit:
    """One edit of a spec.

    ``kind`` is ``action`` (rule ``rule``'s action ``old`` becomes ``key``),
    ``guard`` (``key = false`` is added to rule ``rule``'s ``when``) or ``keep``
    (a rule ``keep`` for ``key = true`` is inserted first; ``rule`` is 0).
    Rules are counted from 1, in the spec the edits are made to.
    """

    kind: str
    rule: int
    key: str
    old: str = ""

    def text(self) -> str:
        """The edit as the output shows it (``rule 2: evict -> spill``)."""
        if self.kind == "action":
            return f"rule {self.rule}: {self.old} -> {self.key}"
        if self.kind == "guard":
            return f"rule {self.rule}: when += {self.key} = false"
        return f"new first rule: keep when {self.key} = true"


def single_edits(spec: Spec) -> list[Edit]:
    """Every edit that can be made to ``spec``, in a fixed order.

    A guard is added only to a rule that does something (not ``keep``) and does
    not read that key yet; a ``keep`` rule is inserted once per key.
    """
    out: list[Edit] = []
    for i, rule in enumerate(spec.rules, 1):
        if rule.do in SAFER:
            out.append(Edit("action", i, SAFER[rule.do], rule.do))
    for i, rule in enumerate(spec.rules, 1):
        if rule.do == "keep":
            continue
        out.extend(Edit("guard", i, key) for key in GUARDS if getattr(rule.when, key) is None)
    out.extend(Edit("keep", 0, key) for key in KEEP_FIRST)
    return out


def _fits(edits: Iterable[Edit], new: Edit, spec: Spec) -> bool:
    """Can ``new`` join ``edits``? Not twice, and no guard on a rule whose action becomes
    ``keep`` (a guard on a rule that keeps can only let items reach a later rule)."""
    chosen = set(edits)
    if new in chosen:
        return False
    kept = {e.rule for e in (*chosen, new) if e.kind == "action" and e.key == "keep"}
    kept |= {i for i, r in enumerate(spec.rules, 1) if r.do == "keep"}
    return not any(e.kind == "guard" and e.rule in kept for e in (*chosen, new))


def _with(when: When, key: str, value: bool) -> When:
    """``when`` with the boolean condition ``key`` set to ``value``."""
    if key == "cited":
        return replace(when, cited=value)
    if key == "result":
        return replace(when, result=value)
    if key == "negative":
        return replace(when, negative=value)
    if key == "load_bearing":
        return replace(when, load_bearing=value)
    if key == "stub":
        return replace(when, stub=value)
    raise ValueError(f"no boolean condition {key!r}")


def apply_edits(spec: Spec, edits: Iterable[Edit]) -> Spec:
    """``spec`` with the edits made (the inserted ``keep`` rules first, in the order of
    :data:`KEEP_FIRST`); ``source`` is cleared."""
    rules = list(spec.rules)
    chosen = set(edits)
    for e in sorted(chosen):
        if e.kind == "action":
            rules[e.rule - 1] = replace(rules[e.rule - 1], do=e.key)
        elif e.kind == "guard":
            rule = rules[e.rule - 1]
            rules[e.rule - 1] = replace(rule, when=_with(rule.when, e.key, False))
    first = [
        Rule("keep", _with(When(), key, True))
        for key in KEEP_FIRST
        if Edit("keep", 0, key) in chosen
    ]
    return replace(spec, rules=(*first, *rules), source=None)


# -- running a counterexample with another spec --------------------------------------------


def _run(spec: Spec, scenario: Scenario) -> tuple[tuple[ScenarioPass, ...], list[Finding]] | None:
    """The spec run on the scenario's appends, and the findings of the eight rules its
    trace audits with (count mode); None when the run says nothing (the appends cite a
    summary this spec does not make, or the interpreter refuses a pass)."""
    try:
        text, runs = run_scenario(spec, replace(scenario, expected=()))
    except InternalError:
        return None  # the interpreter refused a pass: not a trace
    try:
        report = audit_trace(parse_trace_text(text, "<candidate>"), mode=MODE_COUNT)
    except InputError:
        return None  # an append cites an id this spec never made
    return runs, [f for f in report.findings if f.code in PROPERTIES]


def _is_own_stub(after: Mapping[str, Any] | None, before: Mapping[str, Any]) -> bool:
    return (
        after is not None
        and after.get("kind") == "stub"
        and before.get("kind") != "stub"
        and after.get("ref") == ref_of(dict(before))
    )


def _touched(run: ScenarioPass, finding: Finding) -> list[str]:
    """The items of the finding's rewrite that the spec changed (removed, folded, or
    changed in place; spilled behind its own stub is no change here), among those the
    finding names, cites or that answer them; all changed ones when none of those is."""
    before = {str(o["id"]): o for o in run.before}
    after = {str(o["id"]): o for o in run.after}
    changed = [
        i for i, o in before.items() if after.get(i) != o and not _is_own_stub(after.get(i), o)
    ]
    named = set(finding.items)
    near = set(named)
    for i in named:
        o = before.get(i)
        if o is None:
            continue
        for rel in ("rationale", "witnesses", "derived_from"):
            near.update(str(x) for x in o.get(rel, ()))
        if o.get("call") is not None:
            near.add(str(o["call"]))
    near.update(i for i, o in before.items() if o.get("call") in named)
    return [i for i in changed if i in near] or changed


def _pointed(
    spec: Spec, base: Spec, edits: Sequence[Edit], scenario: Scenario
) -> Counter[Edit] | None:
    """The edits of ``base`` the counterexample points at, counted over its findings, for
    the candidate ``spec`` (``base`` with ``edits``); None when it shows no finding."""
    ran = _run(spec, scenario)
    if ran is None:
        return None
    runs, findings = ran
    if not findings:
        return None
    inserted = sum(1 for e in edits if e.kind == "keep")
    policy = SpecPolicy(spec)
    out: Counter[Edit] = Counter()
    by_pass = {run.pass_no: run for run in runs}  # an induction trace's passes start later
    for f in findings:
        run = by_pass.get(f.pass_)
        if run is None:
            continue
        touched = set(_touched(run, f))
        pointed: set[Edit] = set()
        for r in policy.readings(run.before, scenario.budget, ages=run.ages, store=run.store):
            if r.id not in touched or r.rule is None or r.rule < inserted:
                continue
            number = r.rule - inserted + 1  # the rule of base, from 1
            rule = base.rules[number - 1]
            if rule.do in SAFER:
                pointed.add(Edit("action", number, SAFER[rule.do], rule.do))
            facts = {
                "cited": r.cited,
                "result": r.result,
                "negative": r.negative,
                "load_bearing": r.load_bearing,
                "stub": r.stub,
            }
            for key in GUARDS:
                if facts[key] and getattr(rule.when, key) is None and rule.do != "keep":
                    pointed.add(Edit("guard", number, key))
            for key in KEEP_FIRST:
                if facts[key]:
                    pointed.add(Edit("keep", 0, key))
        out.update(e for e in pointed if _fits(edits, e, base))
    return out


# -- what a spec costs -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cost:
    """What a spec did on the fuzz sessions: tokens before and after its rewrites, summed
    over all rewrites (as ``ctxproof fuzz`` reports them), and what the audit found."""

    tokens_before: int
    tokens_after: int
    rewrites: int
    findings_by_rule: Mapping[str, int] = field(default_factory=dict)

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "rewrites": self.rewrites,
            "findings_by_rule": dict(sorted(self.findings_by_rule.items())),
        }


def session_cost(spec: Spec, sessions: int = DEFAULT_SESSIONS, seed: int = DEFAULT_SEED) -> Cost:
    """Play ``ctxproof fuzz``'s seeded sessions (its chunks, its seeds, its default passes)
    against ``spec``, without shrinking: the same seed gives every spec the same session
    plans, so tokens compare across specs."""
    from verifier.fuzz import CHUNK, explore_chunk

    policy = spec_policy(spec)
    before = after = rewrites = 0
    found: Counter[str] = Counter()
    for j in range(max(1, math.ceil(sessions / CHUNK))):
        size = min(CHUNK, sessions - j * CHUNK)
        if size <= 0:
            break
        chunk = explore_chunk(policy, j, size, seed, FUZZ_PASSES, "support")
        before += chunk.tokens_before
        after += chunk.tokens_after
        rewrites += chunk.rewrites
        found.update(chunk.counts)
    return Cost(before, after, rewrites, dict(sorted(found.items())))


# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A proved repair: the edits, the spec they make, its proof, and its cost."""

    edits: tuple[Edit, ...]
    spec: Spec
    proof: ProofResult
    cost: Cost
    path: str | None = None
    """Where it was written (``OUT/suggested-K.toml``), if it was."""

    @property
    def tokens_before(self) -> int:
        return self.cost.tokens_before

    @property
    def tokens_after(self) -> int:
        return self.cost.tokens_after

    def proved(self) -> dict[str, Any]:
        """The proof's bounds."""
        p = self.proof
        return {
            "items": p.items,
            "passes": p.passes,
            "appends": None if p.induction else p.appends,
            "induction": p.induction,
            "seconds": round(p.seconds, 3),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "edits": [e.text() for e in self.edits],
            "proved": self.proved(),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "rewrites": self.cost.rewrites,
            "findings_by_rule": dict(sorted(self.cost.findings_by_rule.items())),
        }


@dataclass(frozen=True, slots=True)
class SuggestResult:
    """The outcome of :func:`suggest`: the original's proof and cost, and the suggestions,
    best first (most tokens saved on the sessions).

    ``edits`` is the number of edits searched last; ``complete`` says whether every
    candidate with that many edits was looked at; ``reason`` says why the search
    stopped where it did when that was not at a proved candidate, or why there was no
    search (the original was proved or undecided).
    """

    original: ProofResult
    cost: Cost
    suggestions: tuple[Suggestion, ...]
    sessions: int
    seed: int
    edits: int = 0
    candidates: int = 0
    """Candidates looked at."""
    proofs: int = 0
    """Candidates given to z3 (the others were refuted by a known counterexample)."""
    undecided: int = 0
    complete: bool = True
    reason: str | None = None
    seconds: float = 0.0

    def to_json(self, spec: str) -> dict[str, Any]:
        return {
            **self.original.to_json(spec),
            "original": self.cost.to_json(),
            "suggestions": [s.to_json() for s in self.suggestions],
            "search": {
                "sessions": self.sessions,
                "seed": self.seed,
                "edits": self.edits,
                "candidates": self.candidates,
                "proofs": self.proofs,
                "undecided": self.undecided,
                "complete": self.complete,
                "reason": self.reason,
                "seconds": round(self.seconds, 3),
            },
        }


# -- the search --------------------------------------------------------------------------


@dataclass
class _Tried:
    edits: tuple[Edit, ...]
    spec: Spec
    witnesses: list[Scenario]


@dataclass
class _Search:
    spec: Spec
    bounds: dict[str, Any]
    max_edits: int
    max_candidates: int
    deadline: float
    timeout: float | None
    progress: Callable[[str], None] | None
    pool: list[Scenario] = field(default_factory=list)
    proved: list[tuple[tuple[Edit, ...], Spec, ProofResult]] = field(default_factory=list)
    candidates: int = 0
    proofs: int = 0
    undecided: int = 0
    level: int = 0
    complete: bool = True
    reason: str | None = None

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def refuted(self, spec: Spec) -> Scenario | None:
        """A known counterexample that the spec still shows a finding on."""
        for k, sc in enumerate(self.pool):
            ran = _run(spec, sc)
            if ran is not None and ran[1]:
                self.pool.insert(0, self.pool.pop(k))  # what refuted one may refute the next
                return sc
        return None

    def pointed(self, tried: _Tried) -> Counter[Edit]:
        out: Counter[Edit] = Counter()
        for sc in tried.witnesses:
            found = _pointed(tried.spec, self.spec, tried.edits, sc)
            if found:
                out.update(found)
        return out

    def stop(self, reason: str) -> None:
        self.complete = False
        self.reason = reason

    def untried(self, frontier: Sequence[tuple[Edit, ...]], k: int) -> str:
        edits = "1 edit" if self.level == 1 else f"{self.level} edits"
        return f"{len(frontier) - k} of the {len(frontier)} candidates with {edits} not looked at"

    def level_of(self, frontier: Sequence[tuple[Edit, ...]]) -> list[_Tried]:
        """Look at every candidate of one number of edits; the refuted ones."""
        refuted: list[_Tried] = []
        for k, edits in enumerate(frontier):
            if self.candidates >= self.max_candidates:
                self.stop(
                    f"stopped at {self.max_candidates} candidates (--max-candidates):"
                    f" {self.untried(frontier, k)}"
                )
                break
            left = self.deadline - time.perf_counter()
            if left <= 0:
                self.stop(
                    f"stopped at the search's time limit (--search-timeout):"
                    f" {self.untried(frontier, k)}"
                )
                break
            self.candidates += 1
            spec = apply_edits(self.spec, edits)
            shown = "; ".join(e.text() for e in edits)
            witness = self.refuted(spec)
            if witness is not None:
                self.say(f"candidate {self.candidates} ({shown}): refuted by a known trace")
                refuted.append(_Tried(edits, spec, [witness]))
                continue
            self.proofs += 1
            limit = left if self.timeout is None else min(self.timeout, left)
            with tempfile.TemporaryDirectory(prefix="ctxproof-suggest-") as tmp:
                res = prove(spec, **self.bounds, timeout=limit, out_dir=tmp)
            self.say(f"candidate {self.candidates} ({shown}): {res.result}")
            if res.result == "proved":
                self.proved.append((edits, spec, res))
            elif res.result == "counterexample":
                found = [c.scenario for c in res.counterexamples if c.scenario is not None]
                self.pool.extend(found)
                refuted.append(_Tried(edits, spec, found))
            else:
                self.undecided += 1
        return refuted

    def run(self, original: ProofResult) -> None:
        self.pool = [c.scenario for c in original.counterexamples if c.scenario is not None]
        root = _Tried((), self.spec, list(self.pool))
        score = self.pointed(root)
        singles = single_edits(self.spec)
        frontier: list[tuple[Edit, ...]] = [
            (e,) for _, e in sorted(enumerate(singles), key=lambda p: (-score[p[1]], p[0]))
        ]
        self.level = 1
        while True:
            refuted = self.level_of(frontier)
            if self.proved or not self.complete:
                return
            if self.level >= self.max_edits:
                self.reason = (
                    f"no candidate of up to {self.max_edits} edit(s) was proved (--max-edits)"
                )
                return
            frontier = self.extend(refuted)
            if not frontier:
                self.reason = (
                    f"no candidate of up to {self.level} edit(s) was proved, and their"
                    " counterexamples point at no further edit"
                )
                return
            self.level += 1

    def extend(self, refuted: Sequence[_Tried]) -> list[tuple[Edit, ...]]:
        """The next number of edits: each refuted candidate with one edit more, that its
        counterexamples point at; most pointed at first."""
        seen: dict[tuple[Edit, ...], tuple[int, int]] = {}
        order = 0
        for tried in refuted:
            for e, n in sorted(self.pointed(tried).items(), key=lambda p: (-p[1], p[0])):
                if not _fits(tried.edits, e, self.spec):
                    continue
                key = tuple(sorted((*tried.edits, e)))
                if key not in seen:
                    seen[key] = (-n, order)
                    order += 1
                else:
                    seen[key] = (min(seen[key][0], -n), seen[key][1])
        return sorted(seen, key=lambda k: seen[k])


def _bounds_text(p: ProofResult) -> str:
    if p.induction:
        return f"by induction at N={p.items}"
    return f"at N={p.items}, K={p.passes}, A={p.appends}"


def _edits(n: int) -> str:
    return f"{n} edit" if n == 1 else f"{n} edits"


def _file_text(
    s: Suggestion, rank: int, of: int, original: Spec, sessions: int, seed: int, cost: Cost
) -> str:
    source = original.source or original.name
    head = [
        f"Suggested by ctxproof prove --suggest for {source}",
        f"(suggestion {rank} of {of}): {_edits(len(s.edits))} of spec {original.name!r}",
        *(f"  {e.text()}" for e in s.edits),
        f"proved {_bounds_text(s.proof)}: within these bounds it never causes",
        f"  {', '.join(PROPERTIES)}",
        f"cost on {sessions} fuzz sessions (seed {seed}), tokens before -> after its rewrites:",
        f"  original {cost.tokens_before:,} -> {cost.tokens_after:,};"
        f" this spec {s.tokens_before:,} -> {s.tokens_after:,}",
    ]
    inserted = sorted(
        (e for e in s.edits if e.kind == "keep"), key=lambda e: KEEP_FIRST.index(e.key)
    )
    notes: dict[int, list[str]] = {k: [f"edit: {e.text()}"] for k, e in enumerate(inserted)}
    for e in s.edits:
        if e.kind != "keep":
            notes.setdefault(len(inserted) + e.rule - 1, []).append(f"edit: {e.text()}")
    return spec_to_toml(s.spec, comments=head, rule_comments=notes)


def _write(
    suggestions: Sequence[Suggestion],
    original: Spec,
    out_dir: Path,
    sessions: int,
    seed: int,
    cost: Cost,
) -> list[Suggestion]:
    """Write the suggestions as one set (:func:`~verifier.fsutil.write_set`): every file
    is staged before any is put in place, and those an earlier run left beyond this
    run's number are removed (a folder that is not there is made only for one)."""
    files = {
        f"suggested-{k}.toml": _file_text(s, k, len(suggestions), original, sessions, seed, cost)
        for k, s in enumerate(suggestions, 1)
    }
    if files or out_dir.is_dir():
        write_set(out_dir, files, stale={"": _is_suggestion}, what="prove output folder")
    return [
        replace(s, path=str(out_dir / f"suggested-{k}.toml")) for k, s in enumerate(suggestions, 1)
    ]


def _is_suggestion(name: str) -> bool:
    number = name.removeprefix("suggested-").removesuffix(".toml")
    return name.startswith("suggested-") and name.endswith(".toml") and number.isdigit()


def suggest(
    spec: Spec | str | Path,
    *,
    items: int = DEFAULT_ITEMS,
    passes: int = DEFAULT_PASSES,
    appends: int = DEFAULT_APPENDS,
    induction: bool = False,
    timeout: float | None = None,
    out_dir: str | Path = DEFAULT_OUT,
    sessions: int = DEFAULT_SESSIONS,
    seed: int = DEFAULT_SEED,
    max_edits: int = DEFAULT_MAX_EDITS,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    search_timeout: float = DEFAULT_SEARCH_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> SuggestResult:
    """Prove ``spec``; when it is refuted, search for the fewest edits that make it proved.

    The proof of ``spec`` is :func:`~verifier.prove.prove`'s with the same
    arguments (its counterexamples go to ``out_dir``), and so is each
    candidate's (``timeout`` applies to each proof). Every proved candidate
    with the fewest edits is fuzzed on ``sessions`` seeded sessions (``seed``)
    like the original, ranked by the tokens it saves there, and written as
    ``out_dir/suggested-K.toml`` (K = 1 is the best). The search is bounded by
    ``max_edits``, ``max_candidates`` and ``search_timeout`` seconds; the
    result says when a bound stopped it (docs/prove.md, "Suggestions").
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    check_bounds(items, passes, appends, timeout)
    for name, value in (
        ("sessions", sessions),
        ("max-edits", max_edits),
        ("max-candidates", max_candidates),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                f"--{name} must be a positive integer, not {value!r}",
                fix=f"give --{name} N with N >= 1",
            )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"--seed must be an integer >= 0, not {seed!r}", fix="give --seed S >= 0")
    if not search_timeout > 0:
        raise InputError(
            f"--search-timeout must be a positive number of seconds, not {search_timeout!r}",
            fix="give --search-timeout S with S > 0",
        )
    started = time.perf_counter()
    bounds: dict[str, Any] = {
        "items": items,
        "passes": passes,
        "appends": appends,
        "induction": induction,
    }
    original = prove(spec, **bounds, timeout=timeout, out_dir=out_dir)
    cost = session_cost(spec, sessions, seed)

    def result(**more: Any) -> SuggestResult:
        seconds = time.perf_counter() - started
        return SuggestResult(original, cost, sessions=sessions, seed=seed, seconds=seconds, **more)

    if original.result != "counterexample":
        _write([], spec, Path(out_dir), sessions, seed, cost)  # an earlier run's go
        if original.result == "proved":
            return result(suggestions=(), reason="the spec is proved: nothing to repair")
        return result(
            suggestions=(), reason="the spec is undecided: a search needs a counterexample"
        )
    search = _Search(
        spec,
        bounds,
        max_edits,
        max_candidates,
        started + search_timeout,
        timeout,
        progress,
    )
    search.run(original)
    found = [
        Suggestion(edits, cand, proof, session_cost(cand, sessions, seed))
        for edits, cand, proof in search.proved
    ]
    ranked = [
        s
        for _, s in sorted(
            enumerate(found), key=lambda p: (-p[1].cost.saved, p[1].tokens_after, p[0])
        )
    ]
    named = [
        replace(s, spec=replace(s.spec, name=f"{spec.name}-suggested-{k}"))
        for k, s in enumerate(ranked, 1)
    ]
    written = _write(named, spec, Path(out_dir), sessions, seed, cost)
    return result(
        suggestions=tuple(written),
        edits=search.level,
        candidates=search.candidates,
        proofs=search.proofs,
        undecided=search.undecided,
        complete=search.complete,
        reason=search.reason,
    )
