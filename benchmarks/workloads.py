"""Seeded workloads for the benchmarks: windows, rewrites of them, and traces.

Everything here is deterministic for a given seed. The item mix: about 50%
commitments (most with the default atom formula), 15% claims whose formulas
join 2-3 nearby commitment atoms, 10% observations with ``shows`` (a tenth of
them failed), 10% claims citing one or two observations as witnesses, 15% prose.
An *acceptable* change keeps a rewrite acceptable: prose edited or pruned,
commitments re-worded, weakened to ``c | other`` (the original spilled first) or
spilled and left as stubs, claims rewritten into equivalent formulas or
re-worded, observations spilled and left as stubs.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

SEED = 20240611
BACKGROUND = [
    "db.postgres -> !db.mysql",
    "deploy.k8s -> !deploy.bare_metal",
    "ci.green -> build.ok",
]
CHANGE_FRACTION = 0.10
CHANGES_PER_PASS = 5

_WORD_TEXT = (
    "the migration schema keeps orders refunds users table column index query cache "
    "worker queue retry timeout deploy build test suite fixture parser config token "
    "budget summary agreed decided rejected because reporting export nightly latency "
    "endpoint handler request response payload client server lock advisory json "
    "metadata snake_case field type check lint release branch review patch "
)
_WORDS = tuple(_WORD_TEXT.split())


def canonical(obj: Obj) -> str:
    """Canonical JSON as docs/formats.md defines it (sorted keys, no spaces, UTF-8 as is)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def ref_of(obj: Obj) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()


def stub_of(obj: Obj) -> Obj:
    return {"id": obj["id"], "kind": "stub", "ref": ref_of(obj)}


def _equivalents(template: str, a: str, b: str, c: str) -> list[str]:
    """Logically equivalent renderings of one claim formula over atoms a, b, c."""
    forms = {
        "and2": [f"{a} & {b}", f"{b} & {a}", f"!(!{a} | !{b})"],
        "or2": [f"{a} | {b}", f"{b} | {a}", f"!{a} -> {b}"],
        "imp2": [f"{a} -> {b}", f"!{b} -> !{a}", f"!{a} | {b}"],
        "imp3": [f"({a} & {b}) -> {c}", f"{a} -> ({b} -> {c})", f"!{a} | !{b} | {c}"],
        "dist3": [f"{a} & ({b} | {c})", f"({a} & {b}) | ({a} & {c})", f"({b} | {c}) & {a}"],
        "or3": [f"{a} | {b} | {c}", f"{c} | ({b} | {a})", f"!{a} -> ({b} | {c})"],
    }
    return forms[template]


_TEMPLATES = ("and2", "or2", "imp2", "imp3", "dist3", "or3")


class ItemFactory:
    """Produces realistic items; remembers enough to rewrite them acceptably later."""

    def __init__(self, rng: random.Random, *, locality: int = 40) -> None:
        self.rng = rng
        self.locality = locality
        self.serial = 0
        self.atoms: list[str] = []  # ids of commitments whose formula is their default atom
        self.claims: list[str] = []  # ids of claims with a formula
        self.observations: list[Obj] = []  # recent observations (objects)
        self.witnessed: list[str] = []  # ids of verified claims citing witnesses
        self.equivalents: dict[str, list[str]] = {}  # claim id -> equivalent formulas

    def _id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial:06d}"

    def text(self, lo: int = 8, hi: int = 28) -> str:
        n = self.rng.randint(lo, hi)
        return " ".join(self.rng.choice(_WORDS) for _ in range(n))

    def _recent(self, pool: Sequence[str], k: int) -> list[str]:
        window = list(pool[-self.locality :])
        return self.rng.sample(window, min(k, len(window)))

    def commitment(self) -> Obj:
        iid = self._id("c")
        ctype = self.rng.choices(
            ["decision", "obligation", "invariant", "rejection"], weights=[60, 20, 15, 5]
        )[0]
        obj: Obj = {"id": iid, "kind": "commitment", "type": ctype}
        obj["text"] = f"turn {self.serial}: {ctype}: {self.text()}"
        if ctype == "rejection":
            obj["formula"] = f"!alt.{iid}"
        elif ctype == "invariant" and self.observations and self.rng.random() < 0.4:
            obs = self.rng.choice(self.observations[-self.locality :])
            if obs.get("modality") == "verified":
                obj["formula"] = obs["shows"]
                obj["witnesses"] = [obs["id"]]
                obj["modality"] = "verified"
        if self.claims and self.rng.random() < 0.3:
            obj["rationale"] = self._recent(self.claims, 1)
        if "formula" not in obj and ctype in ("decision", "obligation"):
            self.atoms.append(iid)
        return obj

    def claim(self) -> Obj:
        if len(self.atoms) < 3:
            return self.commitment()
        iid = self._id("k")
        template = self.rng.choice(_TEMPLATES)
        a, b, c = self._recent(self.atoms, 3)
        forms = _equivalents(template, a, b, c)
        used = [a, b] if template.endswith("2") else [a, b, c]
        self.equivalents[iid] = forms
        self.claims.append(iid)
        return {
            "id": iid,
            "kind": "claim",
            "formula": forms[0],
            "derived_from": used,
            "text": f"digest: {self.text()}",
        }

    def observation(self) -> Obj:
        iid = self._id("o")
        failed = self.rng.random() < 0.1
        content = f"$ pytest tests/test_{iid}.py\n{self.text(20, 60)}\n"
        obj: Obj = {
            "id": iid,
            "kind": "observation",
            "source": f"pytest tests/test_{iid}.py",
            "content": content,
            "at": self.serial,
        }
        if failed:
            obj.update(shows=f"!build.{iid}.ok", modality="failed", exit_code=1)
        else:
            obj.update(shows=f"test.{iid}.pass", modality="verified", exit_code=0)
        self.observations.append(obj)
        return obj

    def witnessed_claim(self) -> Obj:
        if not self.observations:
            return self.observation()
        iid = self._id("w")
        recent = self.observations[-self.locality :]
        k = 2 if len(recent) >= 2 and self.rng.random() < 0.4 else 1
        cited = self.rng.sample(recent, k)
        shows = [o["shows"] for o in cited]
        failed = any(o["modality"] == "failed" for o in cited)
        obj: Obj = {
            "id": iid,
            "kind": "claim",
            "formula": " & ".join(shows),
            "witnesses": [o["id"] for o in cited],
            "modality": "failed" if failed else "verified",
            "text": f"result: {self.text()}",
        }
        if k == 2:
            self.equivalents[iid] = [" & ".join(shows), f"{shows[1]} & {shows[0]}"]
        if not failed:
            self.witnessed.append(iid)
        return obj

    def prose(self) -> Obj:
        return {"id": self._id("p"), "kind": "prose", "text": self.text(20, 70)}

    def any_item(self) -> Obj:
        kind = self.rng.choices(
            ["commitment", "claim", "observation", "witnessed", "prose"],
            weights=[50, 15, 10, 10, 15],
        )[0]
        make: dict[str, Callable[[], Obj]] = {
            "commitment": self.commitment,
            "claim": self.claim,
            "observation": self.observation,
            "witnessed": self.witnessed_claim,
            "prose": self.prose,
        }
        return make[kind]()


@dataclass
class Change:
    """What one acceptable change does to the window."""

    kind: str
    put: Obj | None  # the new version (None: the item is removed)
    spill: list[Obj] = field(default_factory=list)


def acceptable_change(f: ItemFactory, obj: Obj, tag: str) -> Change | None:
    """An acceptable change of one item, or None when this item is left alone."""
    rng = f.rng
    kind = obj["kind"]
    iid = obj["id"]
    if kind == "prose":
        if rng.random() < 0.3:
            return Change("prose-removed", None)
        new = dict(obj, text=f"{obj['text']} [{tag}: condensed]")
        return Change("prose-edited", new)
    if kind == "commitment":
        plain = "formula" not in obj and obj["type"] in ("decision", "obligation")
        roll = rng.random()
        if plain and roll < 0.5 and len(f.atoms) > 1:
            other = rng.choice(f.atoms)
            while other == iid:
                other = rng.choice(f.atoms)
            new = dict(obj, formula=f"{iid} | {other}", text=f"{obj['text']} (relaxed)")
            return Change("commitment-weakened", new, [obj])
        if roll < 0.8:
            return Change("commitment-text-edited", dict(obj, text=f"{obj['text']} [{tag}]"))
        return Change("commitment-stubbed", stub_of(obj), [obj])
    if kind == "claim":
        forms = f.equivalents.get(iid)
        if forms and rng.random() < 0.7:
            current = obj.get("formula")
            choices = [x for x in forms if x != current]
            return Change("claim-equivalent", dict(obj, formula=rng.choice(choices)))
        return Change("claim-text-edited", dict(obj, text=f"{obj['text']} [{tag}]"))
    if kind == "observation":
        return Change("observation-stubbed", stub_of(obj), [obj])
    return None


def build_windows(n: int, seed: int) -> tuple[Obj, Obj, list[Obj], dict[str, int]]:
    """The before window, the after window, the spilled originals, and a change census."""
    rng = random.Random(seed * 1_000_003 + n)
    f = ItemFactory(rng)
    items = [f.any_item() for _ in range(n)]
    n_changes = round(n * CHANGE_FRACTION)
    chosen = set(rng.sample(range(n), n_changes))
    after: list[Obj] = []
    spill: list[Obj] = []
    census: dict[str, int] = {}
    removed = 0
    for i, obj in enumerate(items):
        if i not in chosen:
            after.append(obj)
            continue
        ch = acceptable_change(f, obj, "rewrite")
        if ch is None:
            after.append(obj)
            continue
        census[ch.kind] = census.get(ch.kind, 0) + 1
        spill.extend(ch.spill)
        if ch.put is not None:
            after.append(ch.put)
        else:
            removed += 1
            if removed % 5 == 0:  # a summary stands in for every few pruned prose items
                after.append({"id": f"s{i:06d}", "kind": "prose", "text": f.text(30, 80)})
                census["summary-added"] = census.get("summary-added", 0) + 1
    before_w = {"format": "ctxproof-window/1", "background": BACKGROUND, "items": items}
    after_w = {"format": "ctxproof-window/1", "background": BACKGROUND, "items": after}
    return before_w, after_w, spill, census


def window_text(window: Obj) -> str:
    """A window file as people write them: one item per line."""
    lines = ",\n".join("  " + json.dumps(it, ensure_ascii=False) for it in window["items"])
    head = json.dumps({"format": window["format"], "background": window["background"]})
    return head[:-1] + ', "items": [\n' + lines + "\n]}\n"


def opening_events(f: ItemFactory, n_items: int) -> tuple[list[Obj], dict[str, Obj]]:
    """The header and the appends (100 items each) that fill the first window."""
    lines: list[Obj] = [
        {"event": "header", "format": "ctxproof-trace/1", "background": BACKGROUND, "budget": 0}
    ]
    current: dict[str, Obj] = {}  # in window order, oldest first
    chunk: list[Obj] = []
    for _ in range(n_items):
        obj = f.any_item()
        chunk.append(obj)
        current[obj["id"]] = obj
        if len(chunk) == 100:
            lines.append({"event": "append", "items": chunk})
            chunk = []
    if chunk:
        lines.append({"event": "append", "items": chunk})
    return lines, current


def append_event(f: ItemFactory, rng: random.Random, current: dict[str, Obj]) -> Obj:
    """The append after a pass: prose, an observation, a claim it witnesses, a commitment."""
    new = [f.prose(), f.observation()]
    new.append(f.witnessed_claim())
    c = f.commitment()
    if f.witnessed and rng.random() < 0.5:
        c["rationale"] = [f.witnessed[-1]]
    new.append(c)
    for obj in new:
        current[obj["id"]] = obj
    return {"event": "append", "items": new}


def _cites_as_witness(obj: Obj) -> list[str]:
    w = obj.get("witnesses")
    return list(w) if isinstance(w, list) else []


def _evict(current: dict[str, Obj], k: int, keep: set[str]) -> list[str]:
    """The oldest ids to take out of the window: at least k of them, none from keep.

    An observation (or its stub) leaves together with every item that cites it
    as a witness, so no item in the window loses a witness it relies on.
    """
    citers: dict[str, list[str]] = {}
    for iid, obj in current.items():
        for wid in _cites_as_witness(obj):
            citers.setdefault(wid, []).append(iid)
    out: list[str] = []
    chosen: set[str] = set()
    for iid in current:
        if len(out) >= k:
            break
        if iid in chosen or iid in keep:
            continue
        group = [iid, *citers.get(iid, ())]
        if any(g in keep for g in group):
            continue
        for g in group:
            if g not in chosen:
                chosen.add(g)
                out.append(g)
    return out


def build_steady_trace(
    n_items: int, passes: int, seed: int, *, changes: int = CHANGES_PER_PASS
) -> str:
    """A JSONL trace whose window is held near n_items while the store grows.

    Appends build the window; then every pass spills what it is about to weaken
    or stub, rewrites ``changes`` items with :func:`acceptable_change`
    (weakenings, re-wordings, equivalent claims, prose edits and prunes,
    commitments and observations spilled and stubbed), and evicts the oldest
    items to make room for the 4 new items appended after it (prose, an
    observation, a claim it witnesses, a commitment). Evicted prose is dropped,
    evicted stubs are dropped (their originals are in the store), any other
    evicted item is spilled in its current version first.
    """
    rng = random.Random(seed)
    f = ItemFactory(rng)
    lines, current = opening_events(f, n_items)
    for p in range(1, passes + 1):
        ids = [i for i, o in current.items() if o["kind"] != "stub"]
        targets = rng.sample(ids, min(changes, len(ids)))
        evicted = _evict(current, len(current) + 4 - n_items, set(targets))
        put: list[Obj] = []
        remove: list[str] = []
        spill: list[Obj] = []
        for iid in targets:
            ch = acceptable_change(f, current[iid], f"pass {p}")
            if ch is None:
                continue
            spill.extend(ch.spill)
            if ch.put is None:
                remove.append(iid)
                del current[iid]
            else:
                put.append(ch.put)
                current[iid] = ch.put
        for iid in evicted:
            obj = current.pop(iid)
            if obj["kind"] not in ("prose", "stub"):
                spill.append(obj)
            remove.append(iid)
        gone = set(evicted)
        f.observations = [o for o in f.observations if o["id"] not in gone]
        f.witnessed = [w for w in f.witnessed if w not in gone]
        if spill:
            lines.append({"event": "spill", "items": spill})
        lines.append(
            {
                "event": "rewrite",
                "policy": "bench-steady",
                "diff": {"remove": remove, "put": put},
                "pressure": 0.9,
            }
        )
        lines.append(append_event(f, rng, current))
    return "".join(json.dumps(ev, ensure_ascii=False) + "\n" for ev in lines)


def identity_diff(before_text: str, after_text: str) -> tuple[list[str], list[str], list[str]]:
    """The floor of a rewrite check: what changed, and nothing more.

    ``json.loads`` of both window texts, the sha256 of each item's canonical
    JSON by id, then the removed, added and changed ids. No verifier code.
    """
    hashes: list[dict[str, str]] = []
    for text in (before_text, after_text):
        window = json.loads(text)
        hashes.append(
            {
                it["id"]: hashlib.sha256(canonical(it).encode("utf-8")).hexdigest()
                for it in window["items"]
            }
        )
    old, new = hashes
    removed = [i for i in old if i not in new]
    added = [i for i in new if i not in old]
    changed = [i for i in new if i in old and old[i] != new[i]]
    return removed, added, changed


def store_entries(n: int, seed: int) -> list[Obj]:
    """n items as a long session leaves them in the store: commitments, claims,
    observations and witnessed claims of the usual mix (no prose, which is dropped,
    not spilled)."""
    f = ItemFactory(random.Random(seed))
    out: list[Obj] = []
    while len(out) < n:
        obj = f.any_item()
        if obj["kind"] != "prose":
            out.append(obj)
    return out


FAULT_FRACTION = 0.25


def build_faulty_windows(n: int, seed: int, mode: str) -> tuple[Obj, Obj, dict[str, int]]:
    """The before window of :func:`build_windows` and an after window in which a quarter
    of the items change in a way the check refuses, or are dropped.

    ``mode`` ``"changed"``: commitments and claims get a formula over a fresh atom
    (CF002 and CF005 on each), observations a fresh ``shows``, prose new text;
    ``"dropped"``: the items are left out (CF001 on the commitments, findings on what
    cited them). Returns (before, after, census of what was done).
    """
    if mode not in ("changed", "dropped"):
        raise ValueError(f"unknown mode {mode!r}")
    before, _, _, _ = build_windows(n, seed)
    rng = random.Random(seed * 7 + n)
    after: list[Obj] = []
    census: dict[str, int] = {}
    for obj in before["items"]:
        if rng.random() >= FAULT_FRACTION:
            after.append(obj)
            continue
        census[obj["kind"]] = census.get(obj["kind"], 0) + 1
        if mode == "dropped":
            continue
        if obj["kind"] in ("commitment", "claim"):
            obj = dict(obj, formula=f"fresh.{obj['id']}")
        elif obj["kind"] == "observation":
            obj = dict(obj, shows=f"fresh.{obj['id']}")
        else:
            obj = dict(obj, text=f"{obj['text']} (rewritten)")
        after.append(obj)
    return before, dict(before, items=after), census


# -- scale: appends whose items carry findings, long traces, windows of stubs -------------


def _trace_text(lines: Sequence[Obj]) -> str:
    return "".join(json.dumps(ev, ensure_ascii=False) + "\n" for ev in lines)


def _header(background: Sequence[str] = BACKGROUND) -> Obj:
    return {"event": "header", "format": "ctxproof-trace/1", "background": list(background)}


def findings_append_trace(n: int) -> str:
    """An append of n items with findings on two thirds of them, after an append of the
    claims it contradicts.

    The first append holds n/3 claims ``e.I``. The second, of n items, repeats a
    group of three: an observation showing ``t.I``; a verified claim ``!t.I`` citing
    it (its witness does not support it, WR005, and it contradicts the observation,
    CP004); a commitment ``!e.I`` (it contradicts the earlier claim: CP004, the claim
    is stale).
    """
    groups = max(1, n // 3)
    claims = [{"id": f"e{i}", "kind": "claim", "formula": f"e.{i}"} for i in range(groups)]
    items: list[Obj] = []
    for i in range(groups):
        items.append(
            {
                "id": f"o{i}",
                "kind": "observation",
                "shows": f"t.{i}",
                "modality": "verified",
                "source": f"run {i}",
                "exit_code": 0,
            }
        )
        items.append(
            {
                "id": f"k{i}",
                "kind": "claim",
                "formula": f"!t.{i}",
                "modality": "verified",
                "witnesses": [f"o{i}"],
            }
        )
        items.append(
            {"id": f"c{i}", "kind": "commitment", "type": "decision", "formula": f"!e.{i}"}
        )
    return _trace_text(
        [_header(), {"event": "append", "items": claims}, {"event": "append", "items": items}]
    )


def commitments_append_trace(n: int, *, contradicting: bool) -> str:
    """One append of n mutually consistent commitments, spilled and left as stubs.

    ``contradicting``: after a claim ``x``, each commitment is ``!x & a.I`` (every one
    contradicts the claim, none another); else each is ``a.I -> b.I``.
    """
    lines: list[Obj] = [_header()]
    if contradicting:
        lines.append({"event": "append", "items": [{"id": "x", "kind": "claim", "formula": "x"}]})
        formulas = [f"!x & a.{i}" for i in range(n)]
    else:
        formulas = [f"a.{i} -> b.{i}" for i in range(n)]
    items = [
        {"id": f"c{i}", "kind": "commitment", "type": "decision", "formula": f}
        for i, f in enumerate(formulas)
    ]
    lines.append({"event": "append", "items": items})
    lines.append({"event": "spill", "items": items})
    lines.append(
        {
            "event": "rewrite",
            "policy": "spill-all",
            "diff": {"remove": [], "put": [stub_of(it) for it in items]},
        }
    )
    return _trace_text(lines)


def stub_window_trace(n: int, appends: int) -> str:
    """A window of n stubs (n commitments appended, spilled and stubbed), then ``appends``
    appends of one claim each over fresh atoms."""
    items = [
        {"id": f"c{i}", "kind": "commitment", "type": "decision", "formula": f"a.{i} -> b.{i}"}
        for i in range(n)
    ]
    lines: list[Obj] = [
        _header(),
        {"event": "append", "items": items},
        {"event": "spill", "items": items},
        {
            "event": "rewrite",
            "policy": "spill-all",
            "diff": {"remove": [], "put": [stub_of(it) for it in items]},
        },
    ]
    for j in range(appends):
        claim = {"id": f"q{j}", "kind": "claim", "formula": f"f.{j} | g.{j}"}
        lines.append({"event": "append", "items": [claim]})
    return _trace_text(lines)


def long_trace(n_items: int, seed: int, *, finding_fraction: float = 0.0) -> str:
    """A trace of appends of 100 items (:class:`ItemFactory`'s mix) holding n_items in all,
    with a rewrite after every tenth append that stubs five items (spilled first).

    ``finding_fraction``: that fraction of the items carry a finding: a witnessed
    claim says the negation of what its witnesses show (WR005, CP004), a commitment
    or derived claim negates an earlier commitment's atom (CP003). The same seed
    gives the same items, findings or not: the clean trace is the floor of the other.
    """
    rng = random.Random(seed)
    f = ItemFactory(rng)
    faults = random.Random(seed + 1)
    lines: list[Obj] = [_header()]
    window: dict[str, Obj] = {}
    chunk: list[Obj] = []
    made = 0
    appends = 0
    while made < n_items:
        obj = f.any_item()
        made += 1
        if faults.random() < finding_fraction:
            obj = _with_finding(obj, f, faults)
        chunk.append(obj)
        window[obj["id"]] = obj
        if len(chunk) < 100 and made < n_items:
            continue
        lines.append({"event": "append", "items": chunk})
        chunk = []
        appends += 1
        if appends % 10:
            continue
        plain = [o for o in window.values() if o["kind"] in ("commitment", "observation")]
        picked = rng.sample(plain, min(5, len(plain)))
        if not picked:
            continue
        lines.append({"event": "spill", "items": picked})
        put = [stub_of(o) for o in picked]
        for o, s in zip(picked, put, strict=True):
            window[o["id"]] = s
        lines.append(
            {"event": "rewrite", "policy": "stub-some", "diff": {"remove": [], "put": put}}
        )
    return _trace_text(lines)


def _with_finding(obj: Obj, f: ItemFactory, rng: random.Random) -> Obj:
    """The item changed so that it carries a finding (kept as is when it cannot)."""
    if obj["kind"] == "claim" and obj.get("witnesses"):
        return dict(obj, formula=f"!({obj['formula']})", modality="verified")
    if obj["kind"] in ("commitment", "claim") and len(f.atoms) > 1:
        target = rng.choice(f.atoms[:-1])
        if target != obj["id"]:
            return dict(obj, formula=f"!{target}")
    return obj
