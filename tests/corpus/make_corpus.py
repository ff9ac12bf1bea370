#!/usr/bin/env python3
"""Regenerate the known-verdict corpus of ctxproof traces.

Writes, next to this file, one ``*.jsonl`` trace (format ``ctxproof-trace/1``)
per scenario, the bad-input traces ``bad_*.jsonl``, and ``EXPECTED.json``; and
the bundled scenario traces under ``models/scenarios/``.

Run:  python3 tests/corpus/make_corpus.py

EXPECTED.json maps a file name (corpus files by bare name, scenarios as
``models/scenarios/<file>``) to::

    {"exit": int,                      # exit code with default options
     "witness_mode": "support"|"count",
     "must_fire": [[CODE, pass, line, [ids...]], ...],
     "must_not_fire": [CODE, ...],
     "verdicts": [verdict per rewrite, in pass order],
     "why": "..."}

Bad-input files only carry ``{"exit": 2, "why": ...}``.

``must_fire`` lists every finding expected (compare as a multiset);
``must_not_fire`` lists every other rule code; a rewrite with any CF/WR/TP
finding is ``refuse``; exit 1 whenever any finding is expected, else 3 when
a rewrite (or an append's entailment) is undecided, else 0.

Conventions: lines are 1-based JSONL lines; the pass of a finding at a
rewrite is that rewrite's number (from 1), at an append it is the number of
rewrites before it.  Item id lists are written in the order the
specification gives them (item concerned first: CP001 ``[used, user]``,
CF004 ``[commitment, rationale]``, CP003 ``[appended, contradicted...]`` or
``[appended, evicted failed observations...]``, WR001 ``[item, witnesses
that left...]``, TP001 ``[result, call]``, TP002 ``[call, results...]``,
CP004 ``[appended in append order, others in window order]``); the ids of
other codes are sorted.  Where the specification leaves the order of the
trailing ids open, the traces are built so that window order and sorted
order agree.

Stub ``ref`` values are ``sha256:`` + hex sha256 of the spilled item's
canonical JSON (sort_keys, separators ``,`` ``:``, ensure_ascii=False, UTF-8),
computed here from exactly the object written in the spill event.  Observation
``digest`` values are the sha256 of the UTF-8 ``content``.

The script also runs a structural self-check on every non-bad trace (header
first, allowed fields per kind, commitments typed, ids unique, appends of new
ids only, references defined somewhere, digests and stub refs consistent,
formulas parse, ``score`` in 0..100, ``call`` and ``covers`` naming
defined ids) so a typo cannot turn a rule case into a bad-input case.  The
small truth-table helpers ``sat``/``assert_core`` check, next to the cases
that depend on them, that the formulas behind a CP003/CP004/undecided
expectation really are (minimally) unsatisfiable.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCEN_DIR = ROOT / "models" / "scenarios"

ALL_CODES = [
    "CF001", "CF002", "CF003", "CF004", "CF005", "CF006", "CF007",
    "WR001", "WR002", "WR003", "WR004", "WR005", "WR006", "WR007", "WR008",
    "CP001", "CP002", "CP003", "CP004",
    "TP001", "TP002",
]

# codes whose items the specification orders (item concerned first)
ORDERED = {"CP001", "CF004", "CF007", "CP003", "CP004", "WR001", "TP001", "TP002"}

# ----------------------------------------------------------------- helpers


def canonical(item: dict) -> bytes:
    return json.dumps(item, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def ref_of(item: dict) -> str:
    return "sha256:" + hashlib.sha256(canonical(item)).hexdigest()


def digest_of(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def header(background=(), **extra):
    ev = {"event": "header", "format": "ctxproof-trace/1",
          "background": list(background)}
    ev.update(extra)
    return ev


def append(*items):
    return {"event": "append", "items": [copy.deepcopy(i) for i in items]}


def spill(*items):
    return {"event": "spill", "items": [copy.deepcopy(i) for i in items]}


def rewrite(policy, window=None, diff=None, claimed_preserved=None,
            pressure=None):
    ev = {"event": "rewrite", "policy": policy}
    if window is not None:
        ev["window"] = [copy.deepcopy(i) for i in window]
    if diff is not None:
        ev["diff"] = copy.deepcopy(diff)
    if claimed_preserved is not None:
        ev["claimed_preserved"] = list(claimed_preserved)
    if pressure is not None:
        ev["pressure"] = pressure
    return ev


def commitment(id, type, formula=None, **kw):
    it = {"id": id, "kind": "commitment", "type": type}
    if formula is not None:
        it["formula"] = formula
    it.update(kw)
    return it


def claim(id, formula=None, **kw):
    it = {"id": id, "kind": "claim"}
    if formula is not None:
        it["formula"] = formula
    it.update(kw)
    return it


def obs(id, content=None, with_digest=True, **kw):
    it = {"id": id, "kind": "observation"}
    it.update(kw)
    if content is not None:
        it["content"] = content
        if with_digest:
            it["digest"] = digest_of(content)
    return it


def prose(id, text, **kw):
    it = {"id": id, "kind": "prose", "text": text}
    it.update(kw)
    return it


def stub(item: dict):
    """Stub for `item`, which must be exactly the object spilled."""
    return {"id": item["id"], "kind": "stub", "ref": ref_of(item)}


def changed(item: dict, **kw):
    """A copy of `item` with fields replaced (value None removes a field)."""
    it = copy.deepcopy(item)
    for k, v in kw.items():
        if v is None:
            it.pop(k, None)
        else:
            it[k] = v
    return it


# ----------------------------------------------------------- registry

CORPUS: dict[str, tuple[list, dict]] = {}
SCENARIOS: dict[str, tuple[list, dict]] = {}
BAD: dict[str, tuple[bytes, str]] = {}
# (trace, "core" | "sat", background, formulas): checked by main()
SEMANTIC: list[tuple[str, str, tuple, tuple]] = []
# traces that leave a stub the store cannot resolve on purpose (WR006 and the third
# reading); every other stub in the corpus resolves
UNRESOLVABLE = {"wr006_fires.jsonl"}


def core(name, bg, *formulas):
    """Record that background + formulas is a minimal unsatisfiable core."""
    SEMANTIC.append((name, "core", tuple(bg), formulas))


def consistent(name, bg, *formulas):
    """Record that background + formulas is satisfiable."""
    SEMANTIC.append((name, "sat", tuple(bg), formulas))


def case(name, events, *, fires=(), verdicts=(), why, mode="support",
         not_fire=None, exit=None, target=CORPUS, repairs=None,
         undecided_appends=()):
    """Register a trace.  `fires` holds (CODE, line, [ids]); pass is derived.

    `undecided_appends` holds the lines of the appends whose questions the
    solver could not settle (vacuous premises); every other append is decided.
    `repairs`, when given, holds (line, verdict, [actions...]) for every
    rewrite that gets a repair (each refused or undecided one): the verdict
    of the repaired rewrite and what the repair did, in order.
    """
    rewrite_lines = [n for n, ev in enumerate(events, 1)
                     if ev["event"] == "rewrite"]
    assert len(rewrite_lines) == len(verdicts), (name, "verdict count")
    must = []
    for code, line, ids in fires:
        assert code in ALL_CODES, (name, code)
        ev = events[line - 1]
        assert ev["event"] in ("rewrite", "append"), (name, line, ev["event"])
        if code.startswith(("CF", "WR", "TP")) and code not in ("WR005",):
            # CF/WR/TP findings other than WR005 belong to rewrites
            assert ev["event"] == "rewrite", (name, code, line)
        if code.startswith("CP") and code != "CP002":
            # CP002 is asked at a rewrite too (a cycle it makes); the others at appends
            assert ev["event"] == "append", (name, code, line)
        p = sum(1 for r in rewrite_lines if r <= line)
        ids = list(ids) if code in ORDERED else sorted(ids)
        assert len(ids) == len(set(ids)), (name, code, ids)
        must.append([code, p, line, ids])
    fired = {m[0] for m in must}
    if not_fire is None:
        not_fire = [c for c in ALL_CODES if c not in fired]
    assert not (set(not_fire) & fired), name
    if exit is None:
        if must or any(v == "refuse" for v in verdicts):
            exit = 1
        elif "undecided" in verdicts:
            exit = 3
        else:
            exit = 0
    assert exit in (0, 1, 3), (name, exit)
    assert (exit == 1) == bool(must), (name, exit)
    for n, v in zip(rewrite_lines, verdicts, strict=True):
        assert v in ("accept", "accept-demoted", "refuse", "undecided"), v
        # CP findings at a rewrite (CP002) are reported, never refused
        has_rw_finding = any(m[2] == n and not m[0].startswith("CP")
                             for m in must)
        assert (v == "refuse") == has_rw_finding, (name, n, v)
    exp = {
        "exit": exit, "witness_mode": mode, "must_fire": must,
        "must_not_fire": not_fire, "verdicts": list(verdicts), "why": why,
        "undecided_appends": list(undecided_appends),
    }
    for line in undecided_appends:
        assert events[line - 1]["event"] == "append", (name, line)
    if repairs is not None:
        repaired = {n for n, v in zip(rewrite_lines, verdicts, strict=True)
                    if v in ("refuse", "undecided")}
        assert {r[0] for r in repairs} == repaired, (name, "repairs")
        exp["repairs"] = [
            [sum(1 for r in rewrite_lines if r <= line), verdict, list(actions)]
            for line, verdict, actions in repairs]
    target[name] = (events, exp)


def bad(name, text, why):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    BAD[name] = (data, why)


def jl(*events) -> str:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)


# ================================================================ CF001

BG_DB = ["db.postgres -> !db.mysql"]

c_pg = commitment("c1", "decision", "db.postgres",
                  text="database choice: Postgres 14")
p_schema = prose("p1", "draft notes on the users/orders schema, turn 41-54")

case("cf001_fires.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    rewrite("prune-v1", [p_schema]),
], fires=[("CF001", 3, ["c1"])], verdicts=["refuse"],
    why="§4 CF001: commitment c1 is in after neither by id nor by a covers "
        "merge, and the store has no record of it.")

case("cf001_diff_fires.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    rewrite("prune-v1", diff={"remove": ["c1"], "put": []}),
], fires=[("CF001", 3, ["c1"])], verdicts=["refuse"],
    why="§5 a rewrite may give a diff instead of a window; the diff removes "
        "commitment c1, which has no store record (§4 CF001).")

case("cf001_quiet.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    spill(c_pg),
    rewrite("prune-v1", [p_schema]),
], verdicts=["accept"],
    why="§4 fine print: CF001's record is a store entry with that id; c1 was "
        "spilled before the rewrite dropped it.")

case("cf001_stub_quiet.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    spill(c_pg),
    rewrite("spill-then-stub", [stub(c_pg), p_schema]),
], verdicts=["accept"],
    why="§4 CF001: c1 is still in after by id, as a stub whose ref resolves "
        "in the store (§2 stub).")

o_lock = obs("o1", "psql:migrations/0007_orders.sql:3: ERROR:  could not "
             "obtain lock on relation \"schema_migrations\"\nmake: *** "
             "[Makefile:41: migrate] Error 1\n",
             source="make migrate", exit_code=1, at="2026-11-12T10:02:44Z",
             modality="failed", shows="migrate.lock_error",
             text="make migrate failed")
k_lock = claim("k1", "migrate.lock_error", modality="failed",
               witnesses=["o1"], derived_from=["o1"], load_bearing=False,
               text="make migrate fails with a lock error on "
                    "schema_migrations")

case("cf001_negclaim_fires.jsonl", [
    header(),
    append(o_lock),
    append(k_lock),
    rewrite("summarize-v2", [o_lock]),
], fires=[("CF001", 4, ["k1"])], verdicts=["refuse"],
    why="§2/§4 CF001: a negative-result claim (modality failed) is bound "
        "whatever its load_bearing field says; it was dropped with no store "
        "record.")

case("cf001_failed_witness_fires.jsonl", [
    header(),
    append(o_lock),
    append(changed(k_lock, modality=None, load_bearing=None)),
    rewrite("summarize-v2", [o_lock]),
], fires=[("CF001", 4, ["k1"])], verdicts=["refuse"],
    why="§2 an item is negative-result when any of its witnesses is a failed "
        "observation; unverified claim k1 cites failed o1, so it is bound "
        "(§4 CF001) and was dropped with no record.")

o_ok = obs("o1", "Operations to perform:\n  Apply all migrations\nNo "
           "migrations to apply.\n", source="make migrate", exit_code=0,
           at="2026-11-12T10:05:10Z", modality="verified", shows="migrate.ok",
           text="make migrate succeeded")
k_ok = claim("k1", "migrate.ok", modality="verified", witnesses=["o1"],
             derived_from=["o1"], text="migrations are up to date")

case("cf001_claim_quiet.jsonl", [
    header(),
    append(o_ok),
    append(k_ok),
    rewrite("summarize-v2", [o_ok]),
], verdicts=["accept"],
    why="§4 CF001 binds only commitments and claims that are load-bearing or "
        "negative-result; k1 is a verified claim with load_bearing defaulting "
        "to false, so dropping it is allowed.")

# ================================================================ CF002

c_or = commitment("c1", "decision", "db.postgres | db.sqlite",
                  text="use Postgres or SQLite")
n_pg = claim("n1", "db.postgres", text="staging already runs Postgres")

case("cf002_fires.jsonl", [
    header(),
    append(c_or, n_pg),
    rewrite("summarize-v2", [changed(c_or, formula="db.postgres",
                                     text="use Postgres"), n_pg]),
], fires=[("CF002", 3, ["c1"])], verdicts=["refuse"],
    why="§4 CF002: db.postgres is not entailed by db.postgres | db.sqlite; "
        "claim n1 keeps CF005 quiet since before's content entails it.")

case("cf002_quiet.jsonl", [
    header(),
    append(c_or, n_pg),
    rewrite("summarize-v2", [changed(c_or, formula="db.sqlite | db.postgres"),
                             n_pg]),
], verdicts=["accept"],
    why="§4 CF002/CF003: the new formula is equivalent to the old one, so "
        "neither stronger nor strictly weaker.")

# ================================================================ CF003

c_pg14 = commitment("c1", "decision", "db.postgres & pg.v14",
                    text="database: Postgres 14")
c_pg14_weak = changed(c_pg14, formula="db.postgres", text="database: Postgres")

case("cf003_fires.jsonl", [
    header(),
    append(c_pg14),
    rewrite("summarize-v2", [c_pg14_weak]),
], fires=[("CF003", 3, ["c1"])], verdicts=["refuse"],
    why="§4 CF003: same id, strictly weaker formula, and the original is not "
        "in the store.")

case("cf003_quiet.jsonl", [
    header(),
    append(c_pg14),
    spill(c_pg14),
    rewrite("summarize-v2", [c_pg14_weak]),
], verdicts=["accept"],
    why="§4 CF003 + fine print: the exact before item c1 was spilled before "
        "it was weakened.")

case("cf003_wrong_version_fires.jsonl", [
    header(),
    append(c_pg14),
    spill(changed(c_pg14, formula="db.postgres & pg.v15",
                  text="database: Postgres 15 (draft)")),
    rewrite("summarize-v2", [c_pg14_weak]),
], fires=[("CF003", 4, ["c1"])], verdicts=["refuse"],
    why="§4 fine print: CF003's original is the exact before item; the store "
        "holds a different version of c1 (another formula). Trace changed "
        "by the second reading: the stored copy used to differ only in "
        "text, but 'A rewrite that changes only an item's text, score or "
        "tokens changes nothing the rules read', so it now differs in a "
        "field the rules read (see cf003_text_only_store_quiet).")

case("cf003_text_only_store_quiet.jsonl", [
    header(),
    append(c_pg14),
    spill(changed(c_pg14, text="database: Postgres 14 (draft)", score=40)),
    rewrite("summarize-v2", [c_pg14_weak]),
], verdicts=["accept"],
    why="Fine print, second reading: 'A rewrite that changes only an item's "
        "text, score or tokens changes nothing the rules read.' The store "
        "holds c1 with other text and a score only, which is the same "
        "version as far as any rule reads, so CF003's original is in the "
        "store and the weakening is recorded.")

# ================================================================ CF004

r_locks = prose("r1", "migration tooling (sqitch) takes advisory locks; of "
                "our options only Postgres provides them")
c_pg_r = commitment("c1", "decision", "db.postgres", rationale=["r1"],
                    text="database choice: Postgres 14")
p_fill = prose("p1", "turn 42: discussed naming of the orders table")

case("cf004_fires.jsonl", [
    header(),
    append(r_locks, c_pg_r, p_fill),
    rewrite("summarize-v2", [c_pg_r]),
], fires=[("CF004", 3, ["c1", "r1"])], verdicts=["refuse"],
    why="§4 CF004: kept commitment c1 cites rationale r1, which is neither in "
        "after (item or stub) nor in the store.")

case("cf004_quiet.jsonl", [
    header(),
    append(r_locks, c_pg_r, p_fill),
    spill(r_locks),
    rewrite("summarize-v2", [c_pg_r]),
], verdicts=["accept"],
    why="§4 CF004: the rationale r1 is in the store, so it is not orphaned.")

case("cf004_stub_quiet.jsonl", [
    header(),
    append(r_locks, c_pg_r, p_fill),
    spill(r_locks),
    rewrite("summarize-v2", [stub(r_locks), c_pg_r]),
], verdicts=["accept"],
    why="§4 CF004: the rationale r1 is in after as a resolving stub.")

case("cf004_once_fires.jsonl", [
    header(),
    append(r_locks, c_pg_r, p_fill),
    rewrite("summarize-v2", [c_pg_r, p_fill]),
    rewrite("summarize-v2", [c_pg_r]),
], fires=[("CF004", 3, ["c1", "r1"])], verdicts=["refuse", "accept"],
    why="§4 fine print: CF004 is reported at the rewrite where the rationale "
        "is orphaned, not again at pass 2 where c1 is unchanged.")

# WR005 beside CP001 at an append: only a named *witness* is not reported again
o_green = obs("o1", "12 passed", source="pytest", shows="tests.green", modality="verified")
k_green = claim("k1", "tests.green", modality="verified", witnesses=["o1"],
                text="the suite is green")
o_lint = obs("o3", "lint clean", source="ruff", shows="lint.clean", modality="verified")

case("wr005_beside_cp001_rationale_fires.jsonl", [
    header(),
    append(o_green, k_green, o_lint),
    rewrite("summarize-v2", diff={"remove": ["o1", "k1"], "put": []}),
    append(commitment("c1", "decision", "tests.green", modality="verified",
                      rationale=["k1"], witnesses=["o3"])),
], fires=[("CP001", 4, ["k1", "c1"]), ("WR005", 4, ["c1"])],
    verdicts=["accept"],
    why="§4 second reading: 'At an append, a witness that CP001 already names "
        "is not reported again under WR005.' CP001 names k1, which c1 cites as "
        "rationale, not as a witness; c1's one witness o3 (lint.clean) does not "
        "entail tests.green: WR005 for c1 all the same.")

case("cp001_same_append_witness_fires.jsonl", [
    header(),
    append(claim("k0", "cache.warm", modality="verified"),
           claim("k2", "cache.warm", modality="verified", witnesses=["k0"])),
], fires=[("WR005", 2, ["k0"]), ("CP001", 2, ["k0", "k2"])],
    verdicts=[],
    why="§4 second reading: CP001's uses include items of the same append, and "
        "'a witness that CP001 already names is not reported again under "
        "WR005'. k2 cites k0 of the same append as its witness; CP001 names it "
        "[k0, k2], so k2 is no WR005 (k0 itself, verified with no witness, is).")

case("cf004_citation_removed_quiet.jsonl", [
    header(),
    append(r_locks, c_pg_r, p_fill),
    rewrite("summarize-v2", [changed(c_pg_r, rationale=None), p_fill]),
], verdicts=["accept"],
    why="§4 CF004: 'a commitment kept in after cites a rationale item that is "
        "neither in after nor in the store'. The rewrite drops prose r1 and "
        "c1's citation of it together: c1 in after cites no rationale, so "
        "nothing is orphaned (the twin of cf004_fires, where c1 still cites "
        "r1).")

# ================================================================ CF005

case("cf005_fires.jsonl", [
    header(BG_DB),
    append(c_pg),
    rewrite("summarize-v2", [c_pg, claim("n1", "db.replicas3",
                                          text="three read replicas")]),
], fires=[("CF005", 3, ["n1"])], verdicts=["refuse"],
    why="§4 CF005: new claim n1 (db.replicas3) is not entailed by before's "
        "content + store + background.")

case("cf005_quiet.jsonl", [
    header(BG_DB),
    append(c_pg),
    rewrite("summarize-v2", [c_pg, claim("n1", "!db.mysql",
                                          text="not MySQL")]),
], verdicts=["accept"],
    why="§4 CF005: !db.mysql is entailed by c1 (db.postgres) under the "
        "background db.postgres -> !db.mysql.")

# ================================================================ CF006

o_backfill = commitment("c2", "obligation", "task.backfill_users",
                        text="backfill users.created_at before the release")

case("cf006_fires.jsonl", [
    header(BG_DB),
    append(c_pg, o_backfill),
    spill(o_backfill),
    rewrite("summarize-v2", [c_pg], claimed_preserved=["c1", "c2"]),
], fires=[("CF006", 4, ["c2"])], verdicts=["refuse"],
    why="§4 CF006: the rewriter claims c2 preserved but c2 is missing from "
        "after (its store record keeps CF001 quiet).")

case("cf006_quiet.jsonl", [
    header(BG_DB),
    append(c_pg, o_backfill),
    spill(o_backfill),
    rewrite("summarize-v2", [c_pg], claimed_preserved=["c1"]),
], verdicts=["accept"],
    why="§4 CF006: claimed_preserved names only c1, which is kept unchanged.")

case("cf006_altered_fires.jsonl", [
    header(),
    append(c_pg14),
    spill(c_pg14),
    rewrite("summarize-v2", [c_pg14_weak], claimed_preserved=["c1"]),
], fires=[("CF006", 4, ["c1"])], verdicts=["refuse"],
    why="§4 CF006: c1 is claimed preserved but was altered (weakened); the "
        "spill keeps CF003 quiet, not CF006.")

# ================================================================ CF007

c_a = commitment("c1", "decision", "db.postgres", text="use Postgres")
c_b = commitment("c2", "decision", "pg.v14", text="pin Postgres 14")

case("cf007_fires.jsonl", [
    header(),
    append(c_a, c_b),
    spill(c_a, c_b),
    rewrite("merge-v1", [commitment("m1", "decision", "db.postgres",
                                    covers=["c1", "c2"],
                                    text="database: Postgres")]),
], fires=[("CF007", 4, ["m1", "c2"])], verdicts=["refuse"],
    why="§4 CF007: merge m1 does not entail covered c2 (pg.v14); c1/c2 are "
        "in the store so CF001 stays quiet. Fine print, second reading: 'A "
        "finding's items list first the item it concerns, then the others it "
        "names': the merge, then the covered c2 its message names.")

n_crypto = claim("n1", "pg.ext_pgcrypto", text="pgcrypto extension installed")

case("cf007_more_fires.jsonl", [
    header(),
    append(c_a, c_b, n_crypto),
    spill(c_a, c_b),
    rewrite("merge-v1", [
        commitment("m1", "decision", "db.postgres & pg.v14 & pg.ext_pgcrypto",
                   covers=["c1", "c2"],
                   text="database: Postgres 14 with pgcrypto"),
        n_crypto]),
], fires=[("CF007", 4, ["m1", "c1", "c2"])], verdicts=["refuse"],
    why="§4 CF007: m1 asserts more than the conjunction of c1 and c2; claim "
        "n1 makes it entailed by before, so CF005 stays quiet. Its items: the "
        "merge, then the covered items its message names.")

case("cf007_quiet.jsonl", [
    header(),
    append(c_a, c_b),
    rewrite("merge-v1", [commitment("m1", "decision", "db.postgres & pg.v14",
                                    covers=["c1", "c2"],
                                    text="database: Postgres 14")]),
], verdicts=["accept"],
    why="§4 CF001/CF007: m1 is equivalent to c1 & c2, a valid covers merge, "
        "so the covered commitments are not dropped.")

m_pg = commitment("m1", "decision", "db.postgres & pg.v14", covers=["c1", "c2"],
                  text="database: Postgres 14")

case("cf007_merge_stubbed_quiet.jsonl", [
    header(),
    append(c_a, c_b),
    rewrite("merge-v1", [m_pg]),
    spill(m_pg),
    rewrite("spill-old", [stub(m_pg)]),
], verdicts=["accept", "accept"],
    why="§4 fine print: 'Checks of state (CF005, CF007, WR005–WR007) run on new "
        "or changed items only.' The merge m1 is spilled and a stub left in its "
        "place: the window holds the very version it held, now behind its stub, "
        "though the items it covers are gone from the window and the store. "
        "Nothing changed that CF007 reads; keeping m1 is accepted alike.")

# ================================================================ WR001

o_health = obs("o1", "{\"status\":\"ok\",\"db\":\"ok\",\"queue\":\"ok\"}\n",
               source="curl -fsS https://staging.example.com/healthz",
               exit_code=0, at="2026-11-12T09:14:03Z", modality="verified",
               shows="staging.healthy", text="healthz on staging")
o_health2 = obs("o2", "NAME READY STATUS RESTARTS\napi-7d9f 1/1 Running 0\n",
                source="kubectl -n staging get pods", exit_code=0,
                at="2026-11-12T09:14:09Z", modality="verified",
                shows="staging.healthy", text="pods on staging")
i_health = commitment("i1", "invariant", "staging.healthy",
                      modality="verified", witnesses=["o1"],
                      text="staging stays healthy until the deploy")
i_health2 = changed(i_health, witnesses=["o1", "o2"])

case("wr001_fires.jsonl", [
    header(),
    append(o_health),
    append(i_health),
    rewrite("summarize-v2", [i_health]),
], fires=[("WR001", 4, ["i1", "o1"])], verdicts=["refuse"],
    why="§4 WR001: load-bearing commitment i1 was supported by o1; after the "
        "rewrite it has no surviving witness. Items changed by the second "
        "reading: 'WR001 [item, witnesses that left...]' names o1 too.")

case("wr001_stub_quiet.jsonl", [
    header(),
    append(o_health),
    append(i_health),
    spill(o_health),
    rewrite("summarize-v2", [stub(o_health), i_health]),
], mode="count", verdicts=["accept"],
    why="§4 surviving witnesses include stubs in after that the store "
        "resolves; o1's stub has the correct ref, so even mode count is "
        "satisfied.")

case("wr001_count_fires.jsonl", [
    header(),
    append(o_health, o_health2),
    append(i_health2),
    rewrite("summarize-v2", [o_health, i_health2]),
], mode="count", fires=[("WR001", 4, ["i1", "o2"])], verdicts=["refuse"],
    why="§4 WR001 mode count: witness o2 of load-bearing i1 left the "
        "surviving set, even though o1 alone still supports i1. Items "
        "changed by the second reading: 'WR001 [item, witnesses that "
        "left...]' names o2 (the one that left), not o1.")

case("wr001_support_quiet.jsonl", [
    header(),
    append(o_health, o_health2),
    append(i_health2),
    rewrite("summarize-v2", [o_health, i_health2]),
], mode="support", verdicts=["accept"],
    why="§4 WR001 mode support (default): surviving witness o1 still supports "
        "i1 (staging.healthy), so the lost redundant o2 is not a finding.")

o_fixa = obs("o1", "FAILED tests/test_migrations.py::test_concurrent_migrate "
             "- TimeoutError: lock wait exceeded (lock_timeout=30s)\n"
             "1 failed, 141 passed in 9.02s\n",
             source="LOCK_TIMEOUT=30s make test", exit_code=1,
             at="2026-11-12T11:20:31Z", modality="failed",
             shows="!fix_a.works",
             text="make test with lock timeout raised to 30s")
r_fixa = commitment("r1", "rejection", "!fix_a.works", modality="failed",
                    witnesses=["o1"],
                    text="fix A (raise lock_timeout) does not fix the "
                         "flaky migration test")

case("wr001_spilled_no_stub_fires.jsonl", [
    header(),
    append(o_fixa),
    append(r_fixa),
    spill(o_fixa),
    rewrite("summarize-v2", [r_fixa]),
], fires=[("WR001", 5, ["r1", "o1"])], verdicts=["refuse"],
    why="§4 surviving witnesses: the pointer must stay in the window beside "
        "the item; o1 is in the store (WR008 quiet) but no stub is left, so "
        "negative-result r1 lost its witness. Items changed by the second "
        "reading: 'WR001 [item, witnesses that left...]' gives [r1, o1] "
        "(item first, not sorted).")

case("wr001_negative_stub_quiet.jsonl", [
    header(),
    append(o_fixa),
    append(r_fixa),
    spill(o_fixa),
    rewrite("summarize-v2", [stub(o_fixa), r_fixa]),
], mode="count", verdicts=["accept"],
    why="§4 WR001/WR008: the failed witness o1 was spilled and left as a "
        "resolving stub beside r1.")

o_fixa_k = claim("k1", "!fix_a.works", modality="failed", witnesses=["o1"],
                 load_bearing=False,
                 text="raising lock_timeout did not fix the flaky test")

case("wr001_negative_lb_false_fires.jsonl", [
    header(),
    append(o_fixa),
    append(o_fixa_k),
    spill(o_fixa),
    rewrite("summarize-v2", [o_fixa_k]),
], fires=[("WR001", 5, ["k1", "o1"])], verdicts=["refuse"],
    why="§2 negative results are load-bearing whatever their load_bearing "
        "field says, so failed k1 losing its witness is WR001, not WR002. "
        "Items changed by the second reading: 'WR001 [item, witnesses that "
        "left...]'.")

p_note = prose("p1", "turn 18: deploy window agreed for 14:00 UTC")
case("wr001_once_fires.jsonl", [
    header(),
    append(o_health, p_note),
    append(i_health),
    rewrite("summarize-v2", [p_note, i_health]),
    rewrite("summarize-v2", [i_health]),
], fires=[("WR001", 4, ["i1", "o1"])], verdicts=["refuse", "accept"],
    why="§4 'each defect is reported once, at the event that introduces it': "
        "i1 lost its witness at pass 1 and is unchanged at pass 2. Items "
        "changed by the second reading: 'WR001 [item, witnesses that "
        "left...]'.")

# ================================================================ WR002

o_lint = obs("o1", "All checks passed!\n", source="ruff check .", exit_code=0,
             at="2026-11-12T09:30:00Z", modality="verified",
             shows="lint.clean", text="ruff output")
k_lint = claim("k1", "lint.clean", modality="verified", witnesses=["o1"],
               text="lint is clean")

case("wr002_fires.jsonl", [
    header(),
    append(o_lint, k_lint),
    rewrite("summarize-v2", [k_lint]),
], fires=[("WR002", 3, ["k1"])], verdicts=["refuse"],
    why="§4 WR002: non-load-bearing claim k1 lost its only witness but still "
        "says verified.")

case("wr002_quiet.jsonl", [
    header(),
    append(o_lint, k_lint),
    rewrite("summarize-v2", [changed(k_lint, modality="unwitnessed",
                                     witnesses=None)]),
], verdicts=["accept-demoted"],
    why="§4 WR002 / verdicts: k1 is tagged unwitnessed, an explicit permitted "
        "demotion (accept-demoted, exit 0).")

# ================================================================ WR003

o_tests = obs("o1", "........................................ [100%]\n"
              "142 passed in 8.31s\n", source="pytest -q", exit_code=0,
              at="2026-11-12T09:40:12Z", modality="verified",
              shows="tests.passed", text="pytest run")
k_tests_cited = claim("k1", "tests.passed", witnesses=["o1"],
                      text="the test suite passes")
k_tests_bare = claim("k1", "tests.passed", text="the test suite passes")

case("wr003_fires.jsonl", [
    header(),
    append(o_tests),
    append(k_tests_cited),
    rewrite("summarize-v2", [o_tests, changed(k_tests_cited,
                                              modality="verified")]),
], fires=[("WR003", 4, ["k1"])], verdicts=["refuse"],
    why="§4 fine print WR003: a rise needs a supporting surviving witness not "
        "cited by the earlier version; o1 was already cited by the unverified "
        "k1.")

case("wr003_quiet.jsonl", [
    header(),
    append(o_tests),
    append(k_tests_bare),
    rewrite("summarize-v2", [o_tests, changed(k_tests_bare,
                                              modality="verified",
                                              witnesses=["o1"])]),
], verdicts=["accept"],
    why="§4 fine print WR003: k1 rises with a newly cited surviving witness "
        "o1 that supports it.")

case("wr003_nowitness_fires.jsonl", [
    header(),
    append(k_tests_bare),
    rewrite("summarize-v2", [changed(k_tests_bare, modality="verified")]),
], fires=[("WR003", 3, ["k1"]), ("WR005", 3, ["k1"])], verdicts=["refuse"],
    why="§4 WR003: unverified k1 became verified with no witness at all; "
        "WR005 also fires (a verified claim that cites no witness, changed "
        "item).")

# ================================================================ WR004

o_mt = obs("o1", "FAILED tests/test_orders.py::test_refund_rounding - "
           "AssertionError: 10.01 != 10.00\n1 failed, 141 passed in 8.77s\n"
           "make: *** [Makefile:23: test] Error 1\n",
           source="make test", exit_code=1, at="2026-11-12T10:41:07Z",
           modality="failed", shows="make_test.exit1",
           text="make test output")
k_mt = claim("k1", "make_test.exit1", modality="failed", witnesses=["o1"],
             derived_from=["o1"], text="exit code 1 for make test")

case("wr004_fires.jsonl", [
    header(),
    append(o_mt, k_mt),
    rewrite("summarize-v2", [o_mt, changed(k_mt, modality="unverified")]),
], fires=[("WR004", 3, ["k1"])], verdicts=["refuse"],
    why="§4 fine print: WR004 fires when a failed item's modality changes.")

case("wr004_soften_fires.jsonl", [
    header(),
    append(o_mt, k_mt),
    spill(k_mt),
    rewrite("summarize-v2", [o_mt, changed(
        k_mt, formula="make_test.exit1 | make_test.flaky",
        text="make test failed or was flaky")]),
], fires=[("WR004", 4, ["k1"])], verdicts=["refuse"],
    why="§4 fine print: WR004 fires when a failed item's new formula does not "
        "entail the old one; the spill keeps CF003 quiet but not WR004.")

case("wr004_quiet.jsonl", [
    header(),
    append(o_mt, k_mt),
    rewrite("summarize-v2", [o_mt, changed(
        k_mt, text="test run encountered issues")]),
], verdicts=["accept"],
    why="§2 text is never interpreted: k1 keeps modality failed and formula "
        "make_test.exit1, only its text was rephrased.")

# ================================================================ WR005

o_pipcheck = obs("o1", "No broken requirements found.\n", source="pip check",
                 exit_code=0, at="2026-11-12T09:41:00Z", modality="verified",
                 shows="deps.consistent", text="pip check")

case("wr005_fires.jsonl", [
    header(),
    append(o_pipcheck),
    append(claim("k1", "tests.passed", modality="verified", witnesses=["o1"],
                 text="the test suite passes")),
], fires=[("WR005", 3, ["k1"])], verdicts=[],
    why="§4 appends are checked: k1's cited witness o1 shows deps.consistent, "
        "which does not entail tests.passed (WR005).")

case("wr005_tautology_fires.jsonl", [
    header(),
    append(o_tests),
    append(claim("k1", "tests.passed | !tests.passed", modality="verified",
                 witnesses=["o1"], text="tests either pass or not")),
], fires=[("WR005", 3, ["k1"])], verdicts=[],
    why="§4 WR005: k1 is valid under the background, so no witness could ever "
        "have refuted it.")

case("wr005_nowitness_fires.jsonl", [
    header(),
    append(claim("k1", "tests.passed", modality="verified",
                 text="the test suite passes")),
], fires=[("WR005", 2, ["k1"])], verdicts=[],
    why="§4 WR005: a verified claim that cites no witness at all.")

case("wr005_quiet.jsonl", [
    header(),
    append(o_tests),
    append(claim("k1", "tests.passed", modality="verified", witnesses=["o1"],
                 text="the test suite passes")),
], verdicts=[],
    why="§4 witness support: shows(o1) = tests.passed entails k1 and the "
        "background does not.")

case("wr005_background_quiet.jsonl", [
    header(["make_test.exit0 -> tests.passed"]),
    append(obs("o1", "142 passed in 8.31s\n", source="make test", exit_code=0,
               at="2026-11-12T09:40:12Z", modality="verified",
               shows="make_test.exit0", text="make test output")),
    append(claim("k1", "tests.passed", modality="verified", witnesses=["o1"],
                 text="the test suite passes")),
], verdicts=[],
    why="§4 witness support: background ∧ shows(o1) entails tests.passed "
        "while the background alone does not.")

# ================================================================ WR006

o_status = obs("o1", "On branch main\nnothing to commit, working tree clean\n",
               source="git status", exit_code=0, at="2026-11-12T09:00:00Z",
               text="git status")
o_status_other = changed(o_status, content="On branch main\n",
                         digest=digest_of("On branch main\n"))

case("wr006_fires.jsonl", [
    header(),
    append(o_status),
    spill(o_status),
    rewrite("spill-then-stub", [stub(o_status_other)]),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse"],
    why="§4 WR006: the stub's ref is the hash of a different item version, "
        "which is not in the store.")

case("wr006_quiet.jsonl", [
    header(),
    append(o_status),
    spill(o_status),
    rewrite("spill-then-stub", [stub(o_status)]),
], verdicts=["accept"],
    why="§2/§4 WR006: the stub's ref is the sha256 of the spilled item's "
        "canonical JSON, which the store resolves.")

# ================================================================ WR007

p_work = prose("p1", "working on: refund rounding bug in orders service")
o_forged = obs("o9", "142 passed in 8.31s\n", source="make test", exit_code=0,
               at="2026-11-12T12:00:00Z", text="make test output")

case("wr007_fires.jsonl", [
    header(),
    append(p_work),
    rewrite("summarize-v2", [p_work, o_forged]),
], fires=[("WR007", 3, ["o9"])], verdicts=["refuse"],
    why="§4 WR007: the rewrite put observation o9 in the window and no "
        "append ever created it.")

case("wr007_spilled_only_fires.jsonl", [
    header(),
    append(p_work),
    spill(o_forged),
    rewrite("summarize-v2", [p_work, o_forged]),
], fires=[("WR007", 4, ["o9"])], verdicts=["refuse"],
    why="§4 WR007: a store entry does not legitimise an observation unless an "
        "append created it first.")

case("wr007_quiet.jsonl", [
    header(),
    append(o_tests),
    spill(o_tests),
    rewrite("spill-then-stub", [stub(o_tests)]),
    rewrite("rehydrate", [o_tests]),
], verdicts=["accept", "accept"],
    why="§4 WR007: o1 restored from its stub at pass 2 was created by an "
        "append (line 2), so it is not forged.")

# ================================================================ WR008

o_pg_fail = obs("o1", "Error: pg_config executable not found.\n"
                "error: subprocess-exited-with-error\n",
                source="pip install psycopg2==2.8.6", exit_code=1,
                at="2026-11-12T08:12:40Z", modality="failed",
                text="pip install psycopg2 from source")

case("wr008_fires.jsonl", [
    header(),
    append(o_pg_fail, p_work),
    rewrite("relevance-topk", [p_work]),
], fires=[("WR008", 3, ["o1"])], verdicts=["refuse"],
    why="§4 WR008: failed observation o1 left the window with no store "
        "record.")

case("wr008_quiet.jsonl", [
    header(),
    append(o_pg_fail, p_work),
    spill(o_pg_fail),
    rewrite("relevance-topk", [stub(o_pg_fail), p_work]),
], verdicts=["accept"],
    why="§4 WR008: o1 was spilled and is stubbed, so the negative evidence "
        "has a store record.")

case("wr008_diff_quiet.jsonl", [
    header(),
    append(o_pg_fail, p_work),
    spill(o_pg_fail),
    rewrite("relevance-topk", diff={"remove": [], "put": [stub(o_pg_fail)]}),
], verdicts=["accept"],
    why="§5 diff put replaces o1 by its stub in place; §4 WR008 is quiet "
        "because o1 is in the store.")

rej_psycopg = commitment("r2", "rejection", "!psycopg2.source_build", rationale=["o1"],
                         text="no source build of psycopg2: pg_config is missing")

case("wr008_related_cf004_fires.jsonl", [
    header(),
    append(o_pg_fail, p_work),
    append(rej_psycopg),
    rewrite("relevance-topk", [rej_psycopg, p_work]),
], fires=[("WR008", 4, ["o1"]), ("CF004", 4, ["r2", "o1"])], verdicts=["refuse"],
    why="§4 WR008: failed observation o1 left with no store record; the kept "
        "rejection r2 cites it as rationale (CF004 on r2, which follows from the "
        "same eviction: text output names it on r2).")

case("wr008_spilled_no_stub_quiet.jsonl", [
    header(),
    append(o_pg_fail, p_work),
    spill(o_pg_fail),
    rewrite("relevance-topk", [p_work]),
], verdicts=["accept"],
    why="§4 WR008 fires only with no store record; o1 was spilled (no item "
        "cites it, so no witness rule applies).")

# ================================================================ CP001

k_tests_v = claim("k1", "tests.passed", modality="verified", witnesses=["o1"],
                  derived_from=["o1"], text="the test suite passes")
d_skip = commitment("c1", "decision", "ci.skip_rerun", rationale=["k1"],
                    text="skip re-running the suite before merge")

case("cp001_fires.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("relevance-topk", [p_work]),
    append(d_skip),
], fires=[("CP001", 4, ["k1", "c1"])], verdicts=["accept"],
    why="§4 CP001: c1 uses verified k1, whose only primitive o1 was dropped "
        "at pass 1 with no store record; the path may run through k1's last "
        "version.")

case("cp001_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    spill(o_tests),
    rewrite("relevance-topk", [p_work]),
    append(d_skip),
], verdicts=["accept"],
    why="§4 fine print CP001: a primitive counts as retained in the store; o1 "
        "was spilled before the rewrite dropped it.")

case("cp001_unverified_quiet.jsonl", [
    header(),
    append(o_tests, changed(k_tests_v, modality=None), p_work),
    rewrite("relevance-topk", [p_work]),
    append(d_skip),
], verdicts=["accept"],
    why="§4 CP001 concerns used items that say verified/failed; k1 is a plain "
        "(unverified) assertion.")

# ================================================================ CP002

case("cp002_fires.jsonl", [
    header(),
    append(claim("a1", "cache.stale", derived_from=["a2"],
                 text="the cache is stale because reads are inconsistent"),
           claim("a2", "reads.inconsistent", derived_from=["a1"],
                 text="reads are inconsistent because the cache is stale")),
], fires=[("CP002", 2, ["a1", "a2"])], verdicts=[],
    why="§4 CP002: a1 and a2 justify each other with no primitive under the "
        "cycle.")

o_reads = obs("o1", "GET /orders/42 -> total=10.00\nGET /orders/42 -> "
              "total=10.01\n", source="scripts/read_twice.sh 42", exit_code=0,
              at="2026-11-12T13:03:00Z", text="two reads of order 42")

case("cp002_quiet.jsonl", [
    header(),
    append(o_reads,
           claim("a1", "cache.stale", derived_from=["a2", "o1"],
                 text="the cache is stale because reads are inconsistent"),
           claim("a2", "reads.inconsistent", derived_from=["a1"],
                 text="reads are inconsistent because the cache is stale")),
], verdicts=[],
    why="§4 CP002 fires for a cycle with no primitive under it; here "
        "observation o1 is under the cycle.")

# ================================================================ CP003

d_pg = commitment("d1", "decision", "db.postgres",
                  text="database choice: Postgres 14")
a_mysql = commitment("a1", "decision", "db.mysql",
                     text="target MySQL compatibility for reporting")

case("cp003_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
], fires=[("CP003", 3, ["a1", "d1"])], verdicts=[],
    why="§4 CP003: background ∧ d1 ∧ a1 is unsatisfiable (db.postgres -> "
        "!db.mysql). Items changed by the second reading: 'CP003 "
        "[appended, contradicted commitments...]' names d1 too; CP004 stays "
        "quiet because CP003 already names the inconsistency (§8).")

case("cp003_quiet.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(commitment("a1", "decision", "pg.ext_pgcrypto",
                      text="enable pgcrypto for token hashing")),
], verdicts=[],
    why="§4 CP003: background ∧ d1 ∧ a1 is satisfiable.")

rej_mysql = commitment("rj1", "rejection", "!db.mysql",
                       text="MySQL rejected: no advisory locks for sqitch")

case("cp003_store_fires.jsonl", [
    header(),
    append(rej_mysql, p_note),
    spill(rej_mysql),
    rewrite("summarize-v2", [p_note]),
    append(a_mysql),
], fires=[("CP003", 5, ["a1", "rj1"])], verdicts=["accept"],
    why="§4 fine print CP003: knowledge includes every commitment version in "
        "the store; rejection rj1 was spilled and still contradicts a1. "
        "Items changed by the second reading: 'CP003 [appended, contradicted "
        "commitments...]' names the stored rj1.")

case("cp003_dropped_quiet.jsonl", [
    header(),
    append(rej_mysql, p_note),
    rewrite("summarize-v2", [p_note]),
    append(a_mysql),
], fires=[("CF001", 3, ["rj1"])], verdicts=["refuse"],
    why="§4 CP003 needs a commitment kept in the window or the store; rj1 was "
        "dropped without a record (CF001 at the rewrite instead).")

case("cp003_once_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
    append(commitment("a2", "rejection", "!db.mysql",
                      text="MySQL rejected again after review")),
], fires=[("CP003", 3, ["a1", "d1"])], verdicts=[],
    why="§4 fine print CP003: a1, already reported as a re-adoption, is not "
        "knowledge, so a2 (consistent with d1) is not reported; nor is it "
        "CP004, since 'Items excluded by a finding are, by id, no premise "
        "of ... CP004's content'. Items changed by the second reading: "
        "'CP003 [appended, contradicted commitments...]'.")

o_mig_fail = obs("o1", "psql: error: connection to server at \"db.staging\" "
                 "(10.0.3.7), port 5432 failed: FATAL:  role \"app\" does "
                 "not exist\nmake: *** [Makefile:41: migrate] Error 2\n",
                 source="make migrate", exit_code=2,
                 at="2026-11-12T10:02:44Z", modality="failed",
                 text="make migrate against staging")
o_mig_again = obs("o2", "psql: error: connection to server at \"db.staging\" "
                  "(10.0.3.7), port 5432 failed: FATAL:  role \"app\" does "
                  "not exist\nmake: *** [Makefile:41: migrate] Error 2\n",
                  source="make migrate", exit_code=2,
                  at="2026-11-12T10:31:10Z", modality="failed",
                  text="make migrate against staging, again")

case("cp003_rerun_fires.jsonl", [
    header(),
    append(o_mig_fail, p_work),
    spill(o_mig_fail),
    rewrite("relevance-topk", [p_work]),
    append(o_mig_again),
], fires=[("CP003", 5, ["o2", "o1"])], verdicts=["accept"],
    why="§4 CP003: the append re-runs source 'make migrate' whose failed "
        "observation o1 a rewrite evicted without leaving a stub (spilled, "
        "so WR008 is quiet). Items changed by the second reading: 'CP003 "
        "... (a re-run: [appended, evicted failed observations...])' gives "
        "[o2, o1].")

case("cp003_rerun_quiet.jsonl", [
    header(),
    append(o_mig_fail, p_work),
    spill(o_mig_fail),
    rewrite("relevance-topk", [stub(o_mig_fail), p_work]),
    append(o_mig_again),
], verdicts=["accept"],
    why="§4 CP003: o1 was evicted but left a stub, so re-running its source "
        "is not a re-adoption.")

# ====================================================== second reading
# The cases below test "Fine print, second reading" (SPEC §4) and the rules
# of SPEC §8; each `why` quotes the sentence it tests.

SR = "Fine print, second reading: "

# ------------------------------------------------------------ items order

m_sqs = prose("m1", "turn 12 meeting: the team already runs SQS in "
              "production; no new broker to operate")
q_sqs = commitment("q1", "decision", "queue.sqs", rationale=["m1"],
                   text="job queue: SQS")

case("cf004_order_fires.jsonl", [
    header(),
    append(m_sqs, q_sqs, p_fill),
    rewrite("summarize-v2", [q_sqs, p_fill]),
], fires=[("CF004", 3, ["q1", "m1"])], verdicts=["refuse"],
    why=SR + "'A finding's items list first the item it concerns, then the "
        "others it names: ... CF004 [commitment, rationale]'. Commitment q1 "
        "comes first although its rationale m1 sorts before it.")

o_migrated = obs("o2", "0007_orders ... applied\n0008_refunds ... "
                 "applied\n", source="make migrate-status", exit_code=0,
                 at="2026-11-12T09:14:20Z", modality="verified",
                 shows="db.migrated", text="migration status on staging")
i_both = commitment("i1", "invariant", "staging.healthy & db.migrated",
                    modality="verified", witnesses=["o1", "o2"],
                    text="staging stays healthy and migrated until the "
                         "deploy")

case("wr001_left_only_fires.jsonl", [
    header(),
    append(o_health, o_migrated),
    append(i_both),
    rewrite("summarize-v2", [o_health, i_both]),
], fires=[("WR001", 4, ["i1", "o2"])], verdicts=["refuse"],
    why=SR + "'WR001 [item, witnesses that left...]': o1 stays and o2 "
        "left, so the items are [i1, o2]; o1 alone does not support "
        "staging.healthy & db.migrated.")

# ------------------------------------------------------------------ CP001

case("cp001_same_append_fires.jsonl", [
    header(),
    append(o_tests, p_work),
    rewrite("relevance-topk", [p_work]),
    append(k_tests_v, d_skip),
], fires=[("CP001", 4, ["o1", "k1"]), ("CP001", 4, ["k1", "c1"])],
    verdicts=["accept"],
    why=SR + "'CP001's uses include items of the same append: the append's "
        "own items are in the graph when its uses are checked.' c1 uses "
        "k1, appended with it; k1's only primitive o1 was dropped at pass 1 "
        "with no record, so k1's use of o1 and c1's use of k1 are both "
        "reported. No WR005 for k1: 'At an append, a witness that CP001 "
        "already names is not reported again under WR005.'")

case("cp001_same_append_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, d_skip),
], verdicts=[],
    why=SR + "'CP001's uses include items of the same append: the append's "
        "own items are in the graph when its uses are checked.' c1 uses k1 "
        "and k1 cites o1, all three in one append: the path to a retained "
        "primitive exists.")

case("cp001_once_fires.jsonl", [
    header(),
    append(o_tests, p_work),
    rewrite("relevance-topk", [p_work]),
    append(k_tests_v),
], fires=[("CP001", 4, ["o1", "k1"])], verdicts=["accept"],
    why=SR + "'A use is reported once per (used, user) pair, however many "
        "fields cite it.' k1 cites the dropped o1 as witness and as "
        "derived_from: one CP001 [o1, k1]. And 'At an append, a witness "
        "that CP001 already names is not reported again under WR005.'")

# ------------------------------------------------------------------ WR005

case("wr005_store_quiet.jsonl", [
    header(),
    append(o_tests, p_work),
    spill(o_tests),
    rewrite("relevance-topk", [p_work]),
    append(k_tests_v),
], verdicts=["accept"],
    why=SR + "'WR005 reads the witnesses an item cites that are retained at "
        "that event: an observation in the window, a stub there that the "
        "store resolves, or a store entry.' o1 is held only in the store: "
        "it supports k1 (no WR005) and is a retained primitive (no CP001, "
        "the quiet twin of cp001_once_fires).")

d_digest = claim("d1", "tests.passed", modality="verified", witnesses=["o1"],
                 derived_from=["o1"], load_bearing=True,
                 text="digest: pytest passed (142 tests)")

case("wr005_digest_fires.jsonl", [
    header(),
    append(o_tests, p_work),
    rewrite("summarize-v2", [p_work, d_digest]),
], fires=[("WR005", 3, ["d1"])], verdicts=["refuse"],
    why=SR + "'A cited witness retained nowhere does not count (a digest "
        "put in by a rewrite whose evidence is gone fires WR005).' The "
        "rewrite drops o1 with no record and puts in digest d1 citing it. "
        "d1 is new, so WR001 (items checkable before) does not concern "
        "it; CF005 is quiet since before's content entails tests.passed.")

case("wr005_digest_quiet.jsonl", [
    header(),
    append(o_tests, p_work),
    spill(o_tests),
    rewrite("summarize-v2", [stub(o_tests), p_work, d_digest]),
], verdicts=["accept"],
    why=SR + "'WR005 reads the witnesses an item cites that are retained at "
        "that event: ... a stub there that the store resolves'. The digest's "
        "evidence o1 was spilled and stubbed beside it.")

case("wr005_cp001_named_quiet.jsonl", [
    header(),
    append(o_health, p_note),
    rewrite("summarize-v2", [p_note]),
    append(i_health),
], fires=[("CP001", 4, ["o1", "i1"])], verdicts=["accept"],
    why=SR + "'At an append, a witness that CP001 already names is not "
        "reported again under WR005.' Invariant i1 cites health check o1, "
        "which a rewrite dropped with no record: CP001 [o1, i1] ('CP001 "
        "[used, user]'), and no WR005 for the same lost witness.")

k_uses_k = claim("k2", "tests.passed", modality="verified", witnesses=["k1"],
                 text="the suite passes, as k1 says")

case("wr005_cp001_named_claim_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("relevance-topk", [k_tests_v, p_work]),
    append(k_uses_k),
], fires=[("WR002", 3, ["k1"]), ("CP001", 4, ["k1", "k2"])], verdicts=["refuse"],
    why=SR + "'At an append, a witness that CP001 already names is not "
        "reported again under WR005.' The rewrite drops o1 with no record "
        "and k1 still says verified (WR002). k2 cites the claim k1 as its "
        "witness: CP001 [k1, k2] names it, so k2's lost support is not "
        "reported again under WR005, whatever the kind of the witness.")

case("wr005_unwitnessed_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("summarize-v2", [changed(k_tests_v, modality="unwitnessed"),
                             p_work]),
], verdicts=["accept-demoted"],
    why=SR + "'An item tagged unwitnessed is exempt from WR005's first two "
        "conditions.' k1 is demoted and still cites o1, which the rewrite "
        "dropped (retained nowhere): exempt from WR005, and tagged, so "
        "WR002 is quiet.")

case("wr005_unverified_fires.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("summarize-v2", [changed(k_tests_v, modality="unverified"),
                             p_work]),
], fires=[("WR005", 3, ["k1"])], verdicts=["refuse"],
    why=SR + "'An item tagged unwitnessed is exempt from WR005's first two "
        "conditions' -- only unwitnessed: k1, demoted to unverified, still "
        "cites o1, which is retained nowhere ('A cited witness retained "
        "nowhere does not count'), so its cited witnesses do not entail it. "
        "It no longer says verified, so WR002 is quiet.")

# ------------------------------------------------------- retention by version

case("retention_stub_backed_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    spill(k_tests_v),
    rewrite("spill-then-stub", [o_tests, stub(k_tests_v), p_work]),
    append(d_skip),
], verdicts=["accept"],
    why=SR + "'Retention is by version: a stub keeps the spilled version's "
        "own citations (a claim spilled and stubbed whose witness stays "
        "retained is still backed)'. c1 uses k1, now a stub; the spilled "
        "k1 cites o1, still in the window: no CP001.")

o_tests_later = obs("o1", "141 passed, 1 skipped in 8.02s\n",
                    source="pytest -q", exit_code=0,
                    at="2026-11-12T15:20:45Z", modality="verified",
                    shows="tests.passed", text="pytest run after the merge")

case("retention_reused_id_fires.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("relevance-topk", [p_work]),
    append(o_tests_later),
    append(d_skip),
], fires=[("CP001", 5, ["k1", "c1"])], verdicts=["accept"],
    why=SR + "'an observation re-appended under a reused id ... does not "
        "retain the path of items that cited the earlier version.' k1 "
        "cited the first o1, dropped at pass 1 with no record; a new run "
        "appended as o1 does not back k1, so c1's use of k1 is CP001.")

o_make_pass = obs("o2", "142 passed in 8.40s\n", source="make test",
                  exit_code=0, at="2026-11-12T09:52:00Z",
                  modality="verified", shows="tests.passed",
                  text="make test output")

case("retention_later_version_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    append(o_make_pass),
    rewrite("summarize-v2", [p_work, o_make_pass,
                             changed(k_tests_v, witnesses=["o2"],
                                     derived_from=["o2"])]),
    rewrite("summarize-v2", [p_work, o_make_pass]),
    append(d_skip),
], verdicts=["accept", "accept"],
    why=SR + "'a claim or commitment is backed through its later versions' "
        "(and §4: 'the path may run through dropped items' last "
        "versions'). k1 was re-based on o2 at pass 1 (o1 dropped), then "
        "dropped at pass 2; c1's use of k1 follows k1's last version to "
        "o2, still in the window: no CP001.")

# ------------------------------------------------ text-only edits, restores

case("textonly_quiet.jsonl", [
    header(BG_DB),
    append(o_mt, k_mt, changed(c_pg, score=70)),
    rewrite("summarize-v2", [
        changed(o_mt, text="make test: 1 failure (refund rounding)",
                score=35, tokens=40),
        changed(k_mt, text="tests are red", score=90),
        changed(c_pg, text="DB: Postgres", score=10, tokens=6),
    ], claimed_preserved=["o1", "k1", "c1"]),
], verdicts=["accept"],
    why=SR + "'A rewrite that changes only an item's text, score or tokens "
        "changes nothing the rules read.' Failed observation o1 gets new "
        "text, score and tokens (not a forged primitive, WR007; not "
        "evicted, WR008), failed claim k1 new text and score (not "
        "laundered, WR004), commitment c1 new text, score and tokens (no "
        "CF002/CF003), and claiming all three preserved is true (no CF006).")

case("textonly_read_field_fires.jsonl", [
    header(),
    append(o_tests, p_work),
    rewrite("summarize-v2", [changed(o_tests, at="2026-11-12T12:00:00Z",
                                     text="pytest run (latest)"), p_work]),
], fires=[("WR007", 3, ["o1"])], verdicts=["refuse"],
    why=SR + "'A rewrite that changes only an item's text, score or tokens "
        "changes nothing the rules read' -- at is not among them: o1 with "
        "a new at is a version no append created (§4 WR007).")

n_replicas = claim("n1", "db.replicas3", text="three read replicas")
n_replicas_v2 = changed(n_replicas, formula="db.replicas3 | db.replicas2",
                        text="two or three read replicas")

case("restore_claim_quiet.jsonl", [
    header(BG_DB),
    append(d_pg, n_replicas),
    rewrite("summarize-v2", [d_pg, n_replicas_v2]),
    rewrite("rehydrate", [d_pg, n_replicas]),
    rewrite("summarize-v2", [d_pg]),
    rewrite("rehydrate", [d_pg, n_replicas]),
], verdicts=["accept", "accept", "accept", "accept"],
    why=SR + "'A rewrite that puts an item back unchanged restores that "
        "version, which is not new (CF005, WR007 are not asked of it ...); "
        "a version a window held earlier is restored whether the item was "
        "absent or held another version'. n1 (db.replicas3) comes back at "
        "pass 2 over its weaker version and at pass 4 after being absent; "
        "neither time do before's premises entail it, and neither time is "
        "CF005 asked.")

case("restore_new_version_fires.jsonl", [
    header(BG_DB),
    append(d_pg, n_replicas),
    rewrite("summarize-v2", [d_pg]),
    rewrite("rehydrate", [d_pg, changed(
        n_replicas, formula="db.replicas3 & db.replicas_sync",
        text="three synchronous read replicas")]),
], fires=[("CF005", 4, ["n1"])], verdicts=["accept", "refuse"],
    why=SR + "'a version a window held earlier is restored' -- only such a "
        "version: n1 comes back in a version the window never held, which "
        "is new, and d1 does not entail it (§4 CF005).")

k_tests_lb = changed(k_tests_v, load_bearing=True)

case("restore_wr005_fires.jsonl", [
    header(),
    append(o_tests, p_work),
    append(k_tests_lb),
    spill(k_tests_lb),
    rewrite("relevance-topk", [p_work]),
    rewrite("rehydrate", [p_work, k_tests_lb]),
], fires=[("WR005", 6, ["k1"])], verdicts=["accept", "refuse"],
    why=SR + "'A rewrite that puts an item back unchanged restores that "
        "version, which is not new (CF005, WR007 are not asked of it; CF007 "
        "and WR005 still are: they read the evidence retained now)'. k1 "
        "was spilled (CF001 quiet) and its witness o1 dropped with no "
        "record at pass 1; restored unchanged at pass 2, k1 cites o1, "
        "retained nowhere: WR005.")

case("restore_wr005_quiet.jsonl", [
    header(),
    append(o_tests, p_work),
    append(k_tests_lb),
    spill(o_tests, k_tests_lb),
    rewrite("relevance-topk", [p_work]),
    rewrite("rehydrate", [p_work, k_tests_lb]),
], verdicts=["accept", "accept"],
    why=SR + "'CF007 and WR005 still are [asked]: they read the evidence "
        "retained now'. The restored k1 cites o1, which is retained in the "
        "store ('or a store entry'), so it is supported.")

case("restore_forged_once_fires.jsonl", [
    header(),
    append(p_work),
    rewrite("summarize-v2", [p_work, o_forged]),
    rewrite("summarize-v2", [p_work]),
    rewrite("rehydrate", [p_work, o_forged]),
], fires=[("WR007", 3, ["o9"])], verdicts=["refuse", "accept", "accept"],
    why=SR + "'A rewrite that puts an item back unchanged restores that "
        "version, which is not new (CF005, WR007 are not asked of it ...)' "
        "and §4 'Each defect is reported once, at the event that introduces "
        "it': forged o9 is reported when first put in; put back unchanged "
        "at pass 3 it is a restored version.")

# ------------------------------------------------------------ supersession

o_mt_fail = obs("o1", "FAILED tests/test_orders.py::test_refund_rounding - "
                "AssertionError: 10.01 != 10.00\n1 failed, 141 passed in "
                "8.77s\n", source="make test", exit_code=1,
                at="2026-11-12T10:41:07Z", modality="failed",
                shows="!tests.passed", text="make test before the fix")
o_mt_pass = obs("o2", "142 passed in 8.52s\n", source="make test",
                exit_code=0, at="2026-11-12T11:03:40Z", modality="verified",
                shows="tests.passed", text="make test after the rounding fix")

case("cp004_supersede_quiet.jsonl", [
    header(),
    append(o_mt_fail, p_work),
    append(o_mt_pass),
], verdicts=[],
    why=SR + "'A later appended observation supersedes every earlier "
        "observation with the same source, wherever it is (a test that "
        "failed, then passed after a fix): ... is no part of content from "
        "then on, so the two never contradict.' o2 (make test passed) "
        "follows o1 (make test failed): no CP004.")
core("cp004_supersede_quiet.jsonl", [], "!tests.passed", "tests.passed")

case("supersede_wr008_fires.jsonl", [
    header(),
    append(o_mt_fail, p_work),
    append(o_mt_pass),
    rewrite("relevance-topk", [o_mt_pass, p_work]),
], fires=[("WR008", 4, ["o1"])], verdicts=["refuse"],
    why=SR + "'the earlier one stays a witness of what it showed then "
        "(WR008, CP003 re-runs, support of items citing it, why)': the "
        "superseded failure o1 is still negative evidence; evicting it "
        "with no store record is WR008.")

o_fixa_run = obs("o1", "FAILED tests/test_migrations.py::"
                 "test_concurrent_migrate - TimeoutError: lock wait exceeded "
                 "(lock_timeout=30s)\n1 failed, 141 passed in 9.02s\n",
                 source="make test", exit_code=1, at="2026-11-12T11:20:31Z",
                 modality="failed", shows="!fix_a.works",
                 text="make test with fix A (lock_timeout=30s)")
o_fixb_run = obs("o2", "142 passed in 9.40s\n", source="make test",
                 exit_code=0, at="2026-11-12T11:48:02Z", modality="verified",
                 shows="fix_b.works",
                 text="make test with fix B (retry on lock)")
r_fixa_late = commitment("r1", "rejection", "!fix_a.works",
                         modality="failed", witnesses=["o1"],
                         text="fix A (raise lock_timeout) does not fix the "
                              "flaky migration test")

case("supersede_witness_quiet.jsonl", [
    header(),
    append(o_fixa_run),
    append(o_fixb_run),
    append(r_fixa_late),
], verdicts=[],
    why=SR + "'the earlier one stays a witness of what it showed then "
        "(... support of items citing it ...)': r1, appended after o2 "
        "superseded o1, cites o1, which still supports !fix_a.works: no "
        "WR005 (and no CP001: o1 is in the window).")

# ------------------------------------------------------------------ CP003

rep_mysql = commitment("a1", "decision", "reporting.replica -> db.mysql",
                       text="any reporting replica must be MySQL (the BI "
                            "tool speaks MySQL)")
rep_on = commitment("a2", "decision", "reporting.replica",
                    text="add a reporting replica for the nightly BI export")
n_rep_restated = claim("n1", "reporting.replica -> db.mysql",
                       text="reporting replicas are MySQL")

case("cp003_joint_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(rep_mysql, rep_on),
    rewrite("summarize-v2", [d_pg, rep_mysql, rep_on, n_rep_restated]),
], fires=[("CP003", 3, ["a2", "a1", "d1"]), ("CF005", 4, ["n1"])],
    verdicts=["refuse"],
    why=SR + "'CP003's \"new\" is everything the append asserts, in order: "
        "when the append contradicts the knowledge only jointly, the "
        "finding names the appended items and commitments of a minimal "
        "unsatisfiable core.' a1 and a2 each agree with d1; a2 completes "
        "the contradiction, so it comes first ('CP003's items: the appended "
        "item, then ... if none a minimal core's'), then the core's other "
        "members a1, d1. 'CP003 excludes every appended item it names': at "
        "pass 1 the premises are d1 and the background only, so n1 "
        "(restating a1 as a claim) is not entailed: CF005, not a vacuous "
        "accept and not undecided.")
core("cp003_joint_fires.jsonl", BG_DB, "db.postgres",
     "reporting.replica -> db.mysql", "reporting.replica")

k_pg_claim = claim("k1", "db.postgres",
                   text="staging runs Postgres 14 (from the deploy notes)")

case("cp003_joint_claim_quiet.jsonl", [
    header(BG_DB),
    append(k_pg_claim),
    append(rep_mysql, rep_on),
], fires=[("CP004", 3, ["a1", "a2", "k1"])], verdicts=[],
    why="§4 fine print: CP003's knowledge is the window's commitments; here "
        "db.postgres is only a claim, so the joint contradiction is no "
        "re-adoption (CP003 quiet) but §8 CP004 ('it contradicts a claim "
        "or an observation'). " + SR + "'CP004's items: the core's "
        "appended items in append order, then its other items in window "
        "order' gives [a1, a2, k1].")
core("cp003_joint_claim_quiet.jsonl", BG_DB, "db.postgres",
     "reporting.replica -> db.mysql", "reporting.replica")

case("cp003_two_commitments_fires.jsonl", [
    header(BG_DB),
    append(d_pg, rej_mysql),
    append(a_mysql),
], fires=[("CP003", 3, ["a1", "d1", "rj1"])], verdicts=[],
    why=SR + "'CP003's items: the appended item, then every commitment it "
        "contradicts on its own': a1 (db.mysql) contradicts d1 under the "
        "background and rj1 (!db.mysql) directly; both are named (in "
        "window order, which is also sorted order).")

o_mig3 = obs("o3", "psql: error: connection to server at \"db.staging\" "
             "(10.0.3.7), port 5432 failed: FATAL:  role \"app\" does "
             "not exist\nmake: *** [Makefile:41: migrate] Error 2\n",
             source="make migrate", exit_code=2, at="2026-11-12T11:05:02Z",
             modality="failed", text="make migrate against staging, third "
                                     "try")

case("cp003_rerun_two_fires.jsonl", [
    header(),
    append(o_mig_fail, p_work),
    append(o_mig_again),
    spill(o_mig_fail, o_mig_again),
    rewrite("relevance-topk", [p_work]),
    append(o_mig3),
], fires=[("CP003", 6, ["o3", "o1", "o2"])], verdicts=["accept"],
    why=SR + "'(a re-run: [appended, evicted failed observations...])' and "
        "'the earlier one stays a witness of what it showed then (WR008, "
        "CP003 re-runs, ...)': o2 superseded o1 while o1 was still in the "
        "window (no re-run then); both were evicted without stubs, and o3 "
        "re-runs make migrate: CP003 names both evicted failures.")

case("cp003_same_id_quiet.jsonl", [
    header(),
    append(o_mig_fail, p_work),
    spill(o_mig_fail),
    rewrite("relevance-topk", [p_work]),
    append(changed(o_mig_again, id="o1")),
], verdicts=["accept"],
    why=SR + "'An appended observation with the id of an evicted failed "
        "observation is no re-run, whatever it shows.' Same as "
        "cp003_rerun_fires, except that the new result reuses the id o1 "
        "of the evicted failure.")

o_mig_fail_s = changed(o_mig_fail, shows="!migrate.ok")
o_mig_again_s = changed(o_mig_again, shows="!migrate.ok")
k_migrated = claim("k1", "migrate.ok",
                   text="migrations are applied on staging")

case("cp003_rerun_premise_fires.jsonl", [
    header(),
    append(o_mig_fail_s, p_work),
    spill(o_mig_fail_s),
    rewrite("relevance-topk", [p_work]),
    append(o_mig_again_s),
    append(k_migrated),
], fires=[("CP003", 5, ["o2", "o1"]), ("CP004", 6, ["k1", "o2"])],
    verdicts=["accept"],
    why=SR + "'CP003 excludes every appended item it names (a re-run it "
        "reports stays a premise).' The re-run o2 (!migrate.ok) stays in "
        "the content, so the later claim k1 (migrate.ok) contradicts it: "
        "CP004 [k1, o2].")

# ------------------------------------------------------------------ CP004

x_both = commitment("x1", "decision", "db.postgres & db.mysql",
                    text="run both Postgres and MySQL as the primary "
                         "database")

case("cp004_self_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(x_both),
    append(a_mysql),
], fires=[("CP004", 3, ["x1"]), ("CP003", 4, ["a1", "d1"])], verdicts=[],
    why=SR + "'An appended item that is unsatisfiable with the background "
        "alone contradicts no commitment: it is CP004, reported once, and "
        "never knowledge.' x1 is unsatisfiable under db.postgres -> "
        "!db.mysql (a p & !p): CP004 [x1], not CP003 although it clashes "
        "with d1. Being no knowledge, it does not make the knowledge "
        "unsatisfiable, so the later re-adoption a1 is still CP003.")
core("cp004_self_fires.jsonl", BG_DB, "db.postgres & db.mysql")

k_warm = claim("k1", "cache.warm", text="the cache was warmed at deploy")
p_cache = prose("p1", "turn 60: investigating slow first requests after "
                "the deploy")
o_dbsize = obs("o1", "(integer) 0\n", source="redis-cli DBSIZE",
               exit_code=0, at="2026-11-12T14:02:10Z", modality="verified",
               shows="!cache.warm", text="redis DBSIZE after the deploy")

case("cp004_claim_fires.jsonl", [
    header(),
    append(k_warm, p_cache),
    append(o_dbsize),
], fires=[("CP004", 3, ["o1", "k1"])], verdicts=[],
    why="§8 CP004: the append makes background ∧ window content "
        "unsatisfiable and CP003 does not name it ('it contradicts a "
        "claim'). " + SR + "'CP004's items: the core's appended items in "
        "append order, then its other items in window order' gives "
        "[o1, k1].")
core("cp004_claim_fires.jsonl", [], "cache.warm", "!cache.warm")

case("cf005_after_inconsistency_fires.jsonl", [
    header(),
    append(k_warm, p_cache),
    append(o_dbsize),
    rewrite("summarize-v2", [k_warm, o_dbsize,
                             claim("n1", "cache.ttl_1h",
                                   text="cache entries live one hour")]),
], fires=[("CP004", 3, ["o1", "k1"]), ("CF005", 4, ["n1"])],
    verdicts=["refuse"],
    why=SR + "'Items excluded by a finding are, by id, no premise of any "
        "later entailment (CF005, ...)' and 'CP004 excludes the claims of "
        "its core when it has any'. k1 is stale; the rewrite's premises are "
        "o1 alone (satisfiable), which do not entail n1: CF005, neither a "
        "vacuous accept nor undecided. k1 is kept unchanged, so CF005 is "
        "not asked of it.")

o_isready = obs("o1", "db:5432 - accepting connections\n",
                source="pg_isready -h db", exit_code=0,
                at="2026-11-12T14:00:01Z", modality="verified",
                shows="db.accepting", text="pg_isready")
o_psql_refused = obs("o2", "psql: error: connection to server at \"db\" "
                     "(10.0.3.7), port 5432 failed: Connection refused\n",
                     source="psql -h db -c 'select 1'", exit_code=2,
                     at="2026-11-12T14:00:03Z", modality="failed",
                     shows="!db.accepting", text="psql smoke query")
n_accepting = claim("n1", "db.accepting",
                    text="the database accepts connections")

case("cp004_observation_fires.jsonl", [
    header(),
    append(o_isready),
    append(o_psql_refused),
    rewrite("summarize-v2", [o_isready, o_psql_refused, n_accepting]),
], fires=[("CP004", 3, ["o2", "o1"])], verdicts=["accept"],
    why="§8 CP004: o2 contradicts the appended observation o1 of another "
        "source (no supersession, no commitment involved). " + SR + "'CP004 "
        "excludes the claims of its core when it has any ..., else the "
        "appended items it names': the core {o2, o1} holds no claim, so o2 "
        "is excluded; at pass 1 the premises are o1, which entails n1: "
        "accept (undecided if o2 stayed a premise; CF005 if o1 were "
        "excluded instead).")

k_red = claim("k1", "!tests.passed", modality="failed", witnesses=["o1"],
              derived_from=["o1"], text="make test fails (refund rounding)")
n_green = claim("n1", "tests.passed", text="the suite is green again")

case("cp004_stale_claim_fires.jsonl", [
    header(),
    append(o_mt_fail, k_red, p_work),
    append(o_mt_pass),
    rewrite("summarize-v2", [o_mt_fail, k_red, o_mt_pass, p_work, n_green]),
], fires=[("CP004", 3, ["o2", "k1"])], verdicts=["accept"],
    why=SR + "'CP004 excludes the claims of its core when it has any (a "
        "claim that a primitive contradicts is stale: a passing run after a "
        "failing one makes the claim derived from the failure stale)'. o2 "
        "supersedes o1, so the core is {o2, k1}: k1 is excluded and o2 "
        "stays, so at pass 1 n1 (tests.passed) is entailed: accept.")

o_info = obs("o1", "# Keyspace\ndb0:keys=18234,expires=18234\n",
             source="redis-cli INFO keyspace", exit_code=0,
             at="2026-11-12T13:58:00Z", modality="verified",
             shows="cache.warm", text="redis keyspace before the deploy")
k_warm_from = claim("k1", "cache.warm", derived_from=["o1"],
                    text="the cache is warm")
o_dbsize2 = changed(o_dbsize, id="o2")

case("cp004_still_unsat_fires.jsonl", [
    header(),
    append(o_info, k_warm_from, p_cache),
    append(o_dbsize2),
    rewrite("summarize-v2", [o_info, k_warm_from, o_dbsize2, p_cache,
                             claim("n1", "cache.warm",
                                   text="the cache was warm before the "
                                        "deploy")]),
], fires=[("CP004", 3, ["o2", "k1"])], verdicts=["accept"],
    why=SR + "'A minimal unsatisfiable core is found by deletion in a fixed "
        "order: the append's earlier items, then window items in window "
        "order': o1 is deleted first, leaving the core {o2, k1}. 'CP004 "
        "excludes the claims of its core ...; and when the content is still "
        "unsatisfiable, the appended items it names as well': without k1, "
        "o1 and o2 still clash, so o2 is excluded too; at pass 1 the "
        "premises are o1 alone, which entails n1: accept.")
core("cp004_still_unsat_fires.jsonl", [], "cache.warm", "!cache.warm")

# ------------------------------------------------------------- exclusions

case("cf005_after_readoption_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
    rewrite("summarize-v2", [d_pg, a_mysql, n_replicas]),
], fires=[("CP003", 3, ["a1", "d1"]), ("CF005", 4, ["n1"])],
    verdicts=["refuse"],
    why=SR + "'Items excluded by a finding are, by id, no premise of any "
        "later entailment (CF005, ...)'; §8 'An item reported by CP003 or "
        "CP004 is not a premise of later checks.' CP003 excludes a1, so the "
        "rewrite's premises are d1 and the background (satisfiable), which "
        "do not entail n1 (db.replicas3): CF005, neither a vacuous accept "
        "nor undecided. a1 is kept unchanged, so CF005 is not asked of it.")
core("cf005_after_readoption_fires.jsonl", BG_DB, "db.postgres", "db.mysql")

case("exclusion_cf002_quiet.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
    rewrite("summarize-v2", [d_pg, changed(
        a_mysql, formula="db.postgres",
        text="reporting reads the Postgres primary")]),
], fires=[("CP003", 3, ["a1", "d1"])], verdicts=["accept"],
    why=SR + "'CF002/CF003 are not asked of them, nor CF005 unless their "
        "formula changes'. a1 was excluded by CP003; its new formula "
        "db.postgres does not follow from db.mysql (CF002 on any other "
        "kept commitment), but CF002 is not asked; CF005 is asked (the "
        "formula changed) and d1 entails it.")

case("exclusion_reparse_quiet.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
    rewrite("summarize-v2", [d_pg, changed(a_mysql, formula="(db.mysql)")]),
], fires=[("CP003", 3, ["a1", "d1"])], verdicts=["accept"],
    why=SR + "'... nor CF005 unless their formula changes (differs as "
        "parsed, not up to equivalence).' (db.mysql) parses as db.mysql, "
        "so CF005 is not asked of the excluded a1, although d1 and the "
        "background (a1 excluded) would not entail it.")

case("exclusion_reformat_fires.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql),
    rewrite("summarize-v2", [d_pg, changed(a_mysql,
                                           formula="db.mysql | db.mysql")]),
], fires=[("CP003", 3, ["a1", "d1"]), ("CF005", 4, ["a1"])],
    verdicts=["refuse"],
    why=SR + "'... nor CF005 unless their formula changes (differs as "
        "parsed, not up to equivalence).' db.mysql | db.mysql is "
        "equivalent to db.mysql but parses differently, so CF005 is asked "
        "of a1; its premises exclude a1 itself, and d1 with the background "
        "entails !db.mysql: CF005. CF002/CF003 are not asked.")

# ------------------------------------------------------------------ CF007

k_p95 = claim("k1", "api.p95_under_200ms", load_bearing=True,
              text="digest: p95 latency under 200 ms in the load test")
k_err = claim("k2", "api.errors_under_0_1pct", load_bearing=True,
              text="digest: error rate under 0.1% in the load test")

case("cf007_claims_quiet.jsonl", [
    header(),
    append(k_p95, k_err),
    rewrite("merge-v1", [claim(
        "k3", "api.p95_under_200ms & api.errors_under_0_1pct",
        covers=["k1", "k2"], load_bearing=True,
        text="digest of digests: the load test met its latency and error "
             "budgets")]),
], verdicts=["accept"],
    why="§2 claim covers: 'a digest of digests merges claims as a "
        "commitment merges commitments; CF007 applies alike'; " + SR +
        "'covers names items of the covering item's own kind'. Claim k3 "
        "is equivalent to k1 & k2, so the load-bearing claims are covered "
        "(no CF001) by a valid merge (no CF007).")

case("cf007_kind_fires.jsonl", [
    header(),
    append(k_p95, p_fill),
    rewrite("merge-v1", [commitment("m1", "invariant", "api.p95_under_200ms",
                                    covers=["k1"],
                                    text="keep p95 latency under 200 ms"),
                         p_fill]),
], fires=[("CF007", 3, ["m1", "k1"]), ("CF001", 3, ["k1"])], verdicts=["refuse"],
    why=SR + "'covers names items of the covering item's own kind; a merge "
        "that covers an item of another kind is CF007 and covers nothing "
        "(for CF001).' Commitment m1 covers claim k1: CF007 for m1, and "
        "load-bearing k1 is dropped with no record: CF001. m1 is entailed "
        "by k1, so CF005 is quiet.")

# ------------------------------------------------------------ TP001/TP002

call_pytest = prose("call1", "assistant tool call: bash `pytest -q`")
o_result = changed(o_tests, call="call1")
ph_result = prose("ph1", "[pytest -q output elided: 142 passed]",
                  call="call1")

case("tp001_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [o_result, p_work]),
], fires=[("TP001", 3, ["o1", "call1"])], verdicts=["refuse"],
    why="§8 TP001: after the rewrite, result o1 (an observation with call) "
        "is in the window while call1 is in neither item nor stub form; "
        + SR + "items '[result, call]'.")

case("tp001_stub_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    spill(o_result),
    rewrite("spill-then-stub", [stub(o_result), p_work]),
], fires=[("TP001", 4, ["o1", "call1"])], verdicts=["refuse"],
    why="§8 TP001: 'a result ... is in the window (item or stub) while the "
        "item named by its call is in neither': o1 is kept as a stub, its "
        "call call1 was dropped.")

case("tp001_placeholder_quiet.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("elide-results", [call_pytest, ph_result, p_work]),
], verdicts=["accept"],
    why="§2 'A prose item may carry call too: a placeholder left where a "
        "result was'. Placeholder ph1 answers call1 and is kept with it: "
        "no TP001, and call1 still has a result: no TP002.")

case("tp001_placeholder_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("elide-results", [call_pytest, ph_result, p_work]),
    rewrite("prune-v1", [ph_result, p_work]),
], fires=[("TP001", 4, ["ph1", "call1"])], verdicts=["accept", "refuse"],
    why="§8 TP001: 'a result (an observation with call, or a prose "
        "placeholder with call)'; pass 2 drops call1 and keeps its "
        "placeholder ph1.")

case("tp001_call_stub_quiet.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    spill(call_pytest),
    rewrite("spill-then-stub", [stub(call_pytest), o_result, p_work]),
], verdicts=["accept"],
    why="§8 TP001 needs the call 'in neither' item nor stub form; call1 is "
        "kept as a resolving stub beside its result o1.")

case("tp001_append_orphan_quiet.jsonl", [
    header(),
    append(call_pytest, p_work),
    rewrite("prune-v1", [p_work]),
    append(o_result),
    rewrite("prune-v1", [o_result]),
], verdicts=["accept", "accept"],
    why=SR + "'TP001/TP002 charge a rewrite only with pairs that it "
        "orphaned (not an orphan an append made)'. call1 is dropped at "
        "pass 1 before any result exists; result o1 arrives by append with "
        "call1 already gone, and pass 2 keeps it: no TP001 at either pass.")

case("tp002_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [call_pytest, p_work]),
], fires=[("TP002", 3, ["call1", "o1"])], verdicts=["refuse"],
    why="§8 TP002: call1 is kept while its only result o1 was dropped; "
        + SR + "items '[call, results...]'.")

case("tp002_pair_dropped_quiet.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [p_work]),
], verdicts=["accept"],
    why="§8 TP001/TP002: the call and its result are dropped together, so "
        "neither is orphaned.")

# --------------------------------------------- unsatisfiable premises

k_staging_mysql = claim("k1", "db.mysql",
                        text="staging DB looked like MySQL (port 3306 open)")
k_staging_pg = claim("k2", "db.postgres",
                     text="staging runs Postgres 14 (from the deploy notes)")

case("undecided_restored_unsat.jsonl", [
    header(BG_DB),
    append(k_staging_mysql, p_work),
    rewrite("summarize-v2", [p_work]),
    append(k_staging_pg),
    rewrite("rehydrate", [p_work, k_staging_pg, k_staging_mysql]),
    rewrite("summarize-v2", [p_work, k_staging_pg, k_staging_mysql,
                             n_replicas]),
], verdicts=["accept", "accept", "undecided"],
    why="§8 'When the premises of an entailment are unsatisfiable all the "
        "same, every entailment is vacuous: the rewrite is undecided (exit "
        "3 unless refused for another reason) ...; never accept.' k1 "
        "(db.mysql) and k2 (db.postgres) never meet at an append (k1 is "
        "dropped before k2 comes: no CP004); pass 2 restores k1's earlier "
        "version, which is not new, so nothing is asked of it (" + SR +
        "'A rewrite that puts an item back unchanged restores that "
        "version'); pass 3 asks whether n1 follows from premises that are "
        "unsatisfiable: undecided, and with nothing found the exit is 3.")
core("undecided_restored_unsat.jsonl", BG_DB, "db.mysql", "db.postgres")

case("undecided_refused_unsat.jsonl", [
    header(BG_DB),
    append(d_pg, p_work),
    rewrite("summarize-v2", [d_pg, p_work, a_mysql]),
    rewrite("summarize-v2", [d_pg, a_mysql, n_replicas]),
], fires=[("CF005", 3, ["a1"])], verdicts=["refuse", "undecided"],
    why="§8 'An item reported by CP003 or CP004 is not a premise of later "
        "checks. When the premises of an entailment are unsatisfiable all "
        "the same, every entailment is vacuous: the rewrite is undecided'. "
        "Pass 1 puts in commitment a1 contradicting d1 (CF005, refused), "
        "but no CP003/CP004 excludes it, so at pass 2 the premises d1 ∧ a1 "
        "are unsatisfiable and n1 cannot be decided: undecided, never "
        "accept (exit 1 for the finding at pass 1).")

o_flaky_pass = changed(o_mt_pass, text="make test again, nothing changed")
k_flaky = claim("k1", "tests.flaky", modality="verified",
                witnesses=["o1", "o2"], derived_from=["o1", "o2"],
                text="the suite is flaky: make test failed, then passed "
                     "with no change")

case("undecided_append_vacuous.jsonl", [
    header(),
    append(o_mt_fail),
    append(o_flaky_pass),
    append(k_flaky),
], verdicts=[], exit=3, undecided_appends=[4],
    why=SR + "'Vacuous entailments at an append make the trace undecided "
        "(exit 3 when nothing is found).' o2 supersedes o1 (same source), "
        "so the content stays consistent (no CP004), but k1 cites both, "
        "and both stay witnesses of what they showed: their shows "
        "(!tests.passed, tests.passed) are jointly unsatisfiable, so "
        "WR005's support check of k1 is vacuous.")
core("undecided_append_vacuous.jsonl", [], "!tests.passed", "tests.passed")

case("undecided_append_quiet.jsonl", [
    header(),
    append(o_mt_fail),
    append(o_flaky_pass),
    append(claim("k1", "tests.passed", modality="verified", witnesses=["o2"],
                 derived_from=["o2"], text="the suite passes now")),
], verdicts=[],
    why=SR + "'Vacuous entailments at an append make the trace undecided' "
        "-- here none is vacuous: k1 cites only the later run o2, whose "
        "shows entail it, and the superseded failure o1 is no part of the "
        "content (no CP004): exit 0.")


# ======================================================= third reading
# The cases below test "Fine print, third reading" (SPEC §4), the verdict
# accept-demoted, and behaviours that a mutation run found unpinned (each
# with a trace that shows it and one that must not).

TR = "Fine print, third reading: "


def bad_stub(item: dict, name: str):
    """A stub for `item` whose ref the store cannot resolve (a version of the
    item that was never spilled); registers `name` as leaving one on purpose."""
    UNRESOLVABLE.add(name)
    return {"id": item["id"], "kind": "stub",
            "ref": ref_of(changed(item, text=item.get("text", "") +
                                  " (never spilled)"))}


def stub_naming(item: dict, other: dict, name: str):
    """A stub with item's id whose ref names the stored item `other`."""
    UNRESOLVABLE.add(name)
    return {"id": item["id"], "kind": "stub", "ref": ref_of(other)}


# ----------------------------------------------- unresolvable stubs: pairing

n = "tp002_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("spill-then-stub", [call_pytest, bad_stub(o_result, n), p_work]),
], fires=[("WR006", 3, ["o1"])], verdicts=["refuse"],
    repairs=[(3, "accept", ["revert 'o1'"])],
    why=TR + "'A stub the store cannot resolve is still an entry with that "
        "id in the window: the pairing holds through it (TP001/TP002) ... The "
        "stub itself is WR006's, and nothing else is charged for the stub'. "
        "The result o1 stands as a stub whose ref was never spilled: WR006, "
        "and call1 is not orphaned (no TP002). The repair reverts the stub.")

n = "tp002_stub_names_other_quiet.jsonl"
case(n, [
    header(),
    append(call_pytest, o_result, p_work),
    spill(p_work),
    rewrite("spill-then-stub", [call_pytest, stub_naming(o_result, p_work, n),
                                p_work]),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse"],
    why=TR + "the same sentence for a stub whose ref names another stored "
        "item (p1, not o1): unresolvable, WR006, and the pairing of call1 "
        "with its result o1 still holds (no TP002).")

n = "tp001_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("spill-then-stub", [bad_stub(o_result, n), p_work]),
], fires=[("WR006", 3, ["o1"])], verdicts=["refuse"],
    repairs=[(3, "accept", ["revert 'o1'",
                            "restore call 'call1' of result 'o1'"])],
    why=TR + "'The stub itself is WR006's, and nothing else is charged for "
        "the stub': the result o1 stands as a stub that does not resolve "
        "while the rewrite dropped its call call1. What the stub stands for "
        "cannot be read, so it is charged with WR006 alone, not TP001. The "
        "repair reverts the stub; the result it puts back gets its call "
        "back.")

# ------------------------------------- unresolvable stubs: CP001, WR005, WR001

n = "cp001_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(o_tests, p_work),
    spill(o_tests),
    rewrite("spill-then-stub", [bad_stub(o_tests, n), p_work]),
    append(k_tests_v),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse"],
    why=TR + "'a primitive whose id the store holds is retained whatever the "
        "stub's ref (CP001, WR005)'. o1 was spilled, then left as a stub "
        "whose ref the store does not hold: WR006 only. The later claim k1 "
        "cites o1, which the store holds: no CP001, no WR005.")

n = "cp001_unresolvable_stub_fires.jsonl"
case(n, [
    header(),
    append(o_tests, p_work),
    rewrite("spill-then-stub", [bad_stub(o_tests, n), p_work]),
    append(k_tests_v),
], fires=[("WR006", 3, ["o1"]), ("CP001", 4, ["o1", "k1"])],
    verdicts=["refuse"],
    why=TR + "the twin of cp001_unresolvable_stub_quiet with o1 never "
        "spilled: the store holds no o1, so the stub keeps nothing and k1's "
        "use of o1 is CP001 (and, CP001 naming it, no WR005).")

n = "cp001_stub_names_other_quiet.jsonl"
case(n, [
    header(),
    append(o_tests, p_work),
    spill(o_tests, p_work),
    rewrite("spill-then-stub", [stub_naming(o_tests, p_work, n), p_work]),
    append(k_tests_v),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse"],
    why=TR + "'a primitive whose id the store holds is retained whatever the "
        "stub's ref': the stub o1 names the stored p1, but the store holds o1 "
        "under its own id, so k1's use of o1 is no CP001.")

k_digest_o1 = claim("d1", "tests.passed", modality="verified",
                    witnesses=["o1"], derived_from=["o1"],
                    text="digest: pytest passed (142 tests)")

n = "wr005_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(o_tests, p_work),
    spill(o_tests),
    rewrite("summarize-v2", [bad_stub(o_tests, n), p_work, k_digest_o1]),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse"],
    why=TR + "'a primitive whose id the store holds is retained whatever the "
        "stub's ref (CP001, WR005)': the new digest d1 cites o1, behind a "
        "stub that does not resolve but held in the store: no WR005.")

n = "wr005_unresolvable_stub_fires.jsonl"
case(n, [
    header(),
    append(o_tests, p_work),
    rewrite("summarize-v2", [bad_stub(o_tests, n), p_work, k_digest_o1]),
], fires=[("WR006", 3, ["o1"]), ("WR005", 3, ["d1"])], verdicts=["refuse"],
    why=TR + "the twin of wr005_unresolvable_stub_quiet with o1 never "
        "spilled: retained nowhere, it does not count, and d1 is WR005.")

n = "wr001_unresolvable_stub_fires.jsonl"
case(n, [
    header(),
    append(o_health),
    append(i_health),
    spill(o_health),
    rewrite("summarize-v2", [bad_stub(o_health, n), i_health]),
], fires=[("WR006", 5, ["o1"]), ("WR001", 5, ["i1", "o1"])],
    verdicts=["refuse"],
    why=TR + "'a witness that survives only behind it is no surviving witness "
        "(WR001 charges the item that lost it)'. The stub of o1 does not "
        "resolve (the store holds o1, but surviving witnesses are pointers "
        "left beside the item that the store resolves): load-bearing i1 "
        "lost its support. The twin is wr001_stub_quiet (a resolving stub).")

# ------------------------------------- unresolvable stubs: nothing else charged

n = "cf006_unresolvable_stub_quiet.jsonl"
case(n, [
    header(BG_DB),
    append(c_pg, p_schema),
    rewrite("spill-then-stub", [bad_stub(c_pg, n), p_schema],
            claimed_preserved=["c1"]),
], fires=[("WR006", 3, ["c1"])], verdicts=["refuse"],
    why=TR + "'The stub itself is WR006's, and nothing else is charged for "
        "the stub': commitment c1 stands as an unresolvable stub and is "
        "claimed preserved: WR006, and no CF001 (c1 is in the window by id) "
        "nor CF006.")

n = "cf004_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(r_locks, c_pg_r, p_fill),
    rewrite("spill-then-stub", [bad_stub(r_locks, n), c_pg_r]),
], fires=[("WR006", 3, ["r1"])], verdicts=["refuse"],
    why=TR + "'nothing else is charged for the stub': the rationale r1 of "
        "c1 stands as an unresolvable stub, an entry with its id in the "
        "window: WR006, no CF004.")

n = "wr008_unresolvable_stub_quiet.jsonl"
case(n, [
    header(),
    append(o_pg_fail, p_work),
    rewrite("relevance-topk", [bad_stub(o_pg_fail, n), p_work]),
    append(changed(o_pg_fail, id="o2", at="2026-11-12T08:30:02Z",
                   text="pip install psycopg2 from source, again")),
], fires=[("WR006", 3, ["o1"])], verdicts=["refuse"],
    why=TR + "'nothing else is charged for the stub': the failed o1 stands "
        "as an unresolvable stub; it did not leave the window (no WR008), "
        "and a stub was left, so the later run of the same source is no "
        "re-run of an evicted failure (no CP003).")

# ------------------------------------------------- CF004 on new commitments

r_locks_c = commitment("r1", "invariant", "migrations.advisory_locks",
                       text="migrations must take advisory locks (sqitch)")
c_pg_rc = changed(c_pg_r, rationale=["r1"])

case("cf004_new_commitment_fires.jsonl", [
    header(),
    append(r_locks, n_pg, p_fill),
    rewrite("summarize-v2", [n_pg, p_fill, c_pg_r]),
], fires=[("CF004", 3, ["c1", "r1"])], verdicts=["refuse"],
    why=TR + "'CF004 concerns every commitment in after, a new one included: "
        "a rewrite that adds a commitment citing a rationale it dropped is "
        "CF004'. c1 is new (entailed by n1, so no CF005) and cites r1, which "
        "the same rewrite dropped with no record.")

case("cf004_new_commitment_cf001_fires.jsonl", [
    header(),
    append(r_locks_c, n_pg, p_fill),
    rewrite("summarize-v2", [n_pg, p_fill, c_pg_rc]),
], fires=[("CF001", 3, ["r1"]), ("CF004", 3, ["c1", "r1"])],
    verdicts=["refuse"],
    why=TR + "'... is CF004 (with CF001 when the rationale was itself a "
        "commitment)': the dropped rationale r1 is a commitment.")

case("cf004_new_commitment_quiet.jsonl", [
    header(),
    append(r_locks, n_pg, p_fill),
    spill(r_locks),
    rewrite("summarize-v2", [n_pg, p_fill, c_pg_r]),
], verdicts=["accept"],
    why=TR + "the twin of cf004_new_commitment_fires with r1 spilled first: "
        "the new commitment's rationale is in the store.")

c_pg_plain = changed(c_pg_r, rationale=None)

case("cf004_new_citation_fires.jsonl", [
    header(),
    append(r_locks, c_pg_plain, p_fill),
    rewrite("summarize-v2", [c_pg_plain, p_fill]),
    rewrite("summarize-v2", [c_pg_r, p_fill]),
], fires=[("CF004", 4, ["c1", "r1"])], verdicts=["accept", "refuse"],
    why=TR + "'CF004 concerns every commitment in after'; §7 'a reference to "
        "an item that existed and was dropped is a finding'. Prose r1 is "
        "dropped at pass 1, when nothing cites it; at pass 2 c1 is changed "
        "to cite it: CF004 at pass 2, where c1's citation is orphaned (the "
        "twin of cf004_once_fires, where c1 cited r1 all along).")

# ----------------------------------------------------------------- verdicts

case("verdict_verified_to_unverified_quiet.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("summarize-v2", [o_tests, changed(k_tests_v, modality="unverified"),
                             p_work]),
], verdicts=["accept"],
    why=TR + "'Lowering verified to unverified with the support still "
        "retained is no demotion: alone, it is accept.'")

case("verdict_unverified_to_unwitnessed_demoted.jsonl", [
    header(),
    append(o_tests, changed(k_tests_v, modality=None), p_work),
    rewrite("summarize-v2", [o_tests, changed(k_tests_v,
                                              modality="unwitnessed"), p_work]),
], verdicts=["accept-demoted"],
    why=TR + "'The verdict is accept-demoted when nothing is found and the "
        "rewrite demoted at least one item (changed its modality to "
        "unwitnessed, from any modality).' k1 goes from unverified to "
        "unwitnessed.")

case("verdict_support_kept_demoted.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("summarize-v2", [o_tests, changed(k_tests_v,
                                              modality="unwitnessed"), p_work]),
], verdicts=["accept-demoted"],
    why=TR + "'changed its modality to unwitnessed, from any modality': k1 "
        "is verified and its witness o1 stays; tagging it unwitnessed is "
        "still a demotion.")

# ----------------------------------------- exclusions inside one append

o_port = obs("o2", "db:5432 - no response\n", source="pg_isready -h db -t 2",
             exit_code=2, at="2026-11-12T14:00:05Z", modality="failed",
             shows="!db.accepting & db.port_open",
             text="pg_isready with a short timeout")
k_port_closed = claim("k1", "!db.port_open",
                      text="port 5432 is closed on db (from the firewall "
                           "notes)")

case("exclusion_same_append_quiet.jsonl", [
    header(),
    append(o_isready),
    append(o_port, k_port_closed),
], fires=[("CP004", 3, ["o2", "o1"])], verdicts=[],
    why=TR + "'At an append, exclusions apply from the next event, and to "
        "the consistency checks of the same append's later items.' o2 "
        "contradicts o1 (db.accepting): CP004 excludes o2. k1 contradicts "
        "only o2 (db.port_open), excluded already: no second CP004.")

case("exclusion_same_append_fires.jsonl", [
    header(),
    append(o_isready),
    append(changed(o_port, shows="db.port_open"), k_port_closed),
], fires=[("CP004", 3, ["o2", "k1"])], verdicts=[],
    why=TR + "the twin of exclusion_same_append_quiet: o2 shows only "
        "db.port_open, consistent with o1, so it stays a premise and k1 "
        "contradicts it: CP004 [o2, k1] ('the core's appended items in "
        "append order').")

a_not_mysql = commitment("a2", "rejection", "!db.mysql",
                         text="MySQL rejected after all: no advisory locks")

case("exclusion_same_append_cp003_quiet.jsonl", [
    header(BG_DB),
    append(d_pg),
    append(a_mysql, a_not_mysql),
], fires=[("CP003", 3, ["a1", "d1"])], verdicts=[],
    why=TR + "'At an append, exclusions apply ... to the consistency checks "
        "of the same append's later items.' CP003 excludes a1; a2 "
        "(!db.mysql) contradicts only a1: nothing more (cp003_once_fires "
        "has the same items in two appends).")

case("supersede_same_append_quiet.jsonl", [
    header(),
    append(p_work),
    append(o_mt_fail, o_mt_pass),
], verdicts=[],
    why=SR + "'A later appended observation supersedes every earlier "
        "observation with the same source' -- inside one append too: o1 "
        "(make test failed) and o2 (make test passed) come together, and "
        "the later run supersedes the earlier: no CP004.")
core("supersede_same_append_quiet.jsonl", [], "!tests.passed", "tests.passed")

case("supersede_same_append_fires.jsonl", [
    header(),
    append(p_work),
    append(o_mt_fail, changed(o_mt_pass, source="make test-ci")),
], fires=[("CP004", 3, ["o1", "o2"])], verdicts=[],
    why=SR + "the twin of supersede_same_append_quiet with o2 from another "
        "source (make test-ci): no supersession, and o2 contradicts o1 in "
        "the same append: CP004 names both appended items.")

# -------------------------------------------- exclusions and count mode

o_env_a = obs("o1", "FEATURE_REFUNDS_V2=0\n", source="printenv FEATURE_REFUNDS_V2",
              exit_code=0, at="2026-11-12T15:00:00Z", modality="verified",
              shows="!refunds_v2.on", text="the flag in the CI environment")
o_env_b = obs("o2", "refunds_v2: on\nrounding: bankers\n",
              source="curl -fsS https://staging.example.com/flags",
              exit_code=0, at="2026-11-12T15:00:04Z", modality="verified",
              shows="refunds_v2.on & rounding.bankers",
              text="flags endpoint on staging")
o_env_c = obs("o3", "rounding=bankers\n", source="grep rounding config/app.ini",
              exit_code=0, at="2026-11-12T15:00:09Z", modality="verified",
              shows="rounding.bankers", text="rounding in the app config")
k_bankers = claim("k1", "rounding.bankers", modality="verified",
                  witnesses=["o2"], text="refunds round half to even")

for mode in ("count", "support"):
    case(f"exclusion_wr005_{mode}_fires.jsonl", [
        header(),
        append(o_env_a, o_env_c, p_work),
        append(o_env_b),
        rewrite("summarize-v2", [o_env_a, o_env_b, o_env_c, p_work,
                                 k_bankers]),
    ], mode=mode, fires=[("CP004", 3, ["o2", "o1"]), ("WR005", 4, ["k1"])],
        verdicts=["refuse"],
        why=TR + "(and the second reading's exclusions) excluded items are "
            "no premise of WR005, in either witness mode: CP004 excludes o2, "
            "so the new claim k1, which cites only o2, has no retained "
            "witness that entails it: WR005. CF005 is quiet: o3 "
            "(rounding.bankers) is in the window before.")

case("exclusion_wr005_count_quiet.jsonl", [
    header(),
    append(o_env_a, o_env_c, p_work),
    append(o_env_b),
    rewrite("summarize-v2", [o_env_a, o_env_b, o_env_c, p_work,
                             changed(k_bankers, witnesses=["o3"])]),
], mode="count", fires=[("CP004", 3, ["o2", "o1"])], verdicts=["accept"],
    why=TR + "the twin of exclusion_wr005_count_fires: k1 cites o3, which "
        "no finding excluded.")

# -------------------------------------------------- reported once: WR005, WR006

o_flake = obs("o2", "tests/test_orders.py::test_refund_rounding PASSED\n",
              source="pytest -q tests/test_orders.py", exit_code=0,
              at="2026-11-12T09:43:00Z", modality="verified",
              shows="orders.tests_passed", text="orders tests alone")
k_tests_pip = claim("k1", "tests.passed", modality="verified",
                    witnesses=["o1"], text="the test suite passes")

case("wr005_once_derived_from_quiet.jsonl", [
    header(),
    append(o_pipcheck),
    append(k_tests_pip),
    rewrite("summarize-v2", [o_pipcheck, changed(k_tests_pip,
                                                 derived_from=["o1"])]),
], fires=[("WR005", 3, ["k1"])], verdicts=["accept"],
    why="§4 'Each defect is reported once, at the event that introduces it'. "
        "k1's witness o1 (deps.consistent) does not entail tests.passed: "
        "WR005 at the append. The rewrite changes only derived_from; what "
        "k1 claims and cites is unchanged: not reported again.")

case("wr005_once_witnesses_fires.jsonl", [
    header(),
    append(o_pipcheck, o_flake),
    append(k_tests_pip),
    rewrite("summarize-v2", [o_pipcheck, o_flake,
                             changed(k_tests_pip, witnesses=["o1", "o2"])]),
], fires=[("WR005", 3, ["k1"]), ("WR005", 4, ["k1"])],
    verdicts=["refuse"],
    why="§4 WR005 runs on new or changed items: the twin of "
        "wr005_once_derived_from_quiet where the rewrite changes k1's "
        "witnesses, which still do not entail tests.passed: a new defect, "
        "reported at the rewrite.")

n = "wr006_once_text_quiet.jsonl"
case(n, [
    header(),
    append(o_status),
    spill(o_status),
    rewrite("spill-then-stub", [bad_stub(o_status, n)]),
    rewrite("spill-then-stub", [changed(bad_stub(o_status, n),
                                        text="git status (spilled)")]),
], fires=[("WR006", 4, ["o1"])], verdicts=["refuse", "accept"],
    why=SR + "'A rewrite that changes only an item's text, score or tokens "
        "changes nothing the rules read' and §4 'reported once': the "
        "unresolvable stub gets a text at pass 2, and is not reported "
        "again.")

n = "wr006_once_ref_fires.jsonl"
case(n, [
    header(),
    append(o_status),
    spill(o_status),
    rewrite("spill-then-stub", [bad_stub(o_status, n)]),
    rewrite("spill-then-stub", [stub(o_status_other)]),
], fires=[("WR006", 4, ["o1"]), ("WR006", 5, ["o1"])],
    verdicts=["refuse", "refuse"],
    why="§4 WR006: the twin of wr006_once_text_quiet where pass 2 changes "
        "the stub's ref, to another that the store does not hold: a new "
        "stub, reported again.")

# ----------------------------------------------------------------- restores

case("restore_call_without_result_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [p_work]),
    rewrite("rehydrate", [call_pytest, p_work]),
], fires=[("TP002", 4, ["call1", "o1"])], verdicts=["accept", "refuse"],
    repairs=[(4, "accept", ["remove orphaned call 'call1'"])],
    why=SR + "'A rewrite that puts an item back unchanged restores that "
        "version' -- the call, not its pairing: call1 and its result o1 are "
        "dropped together at pass 1 (no finding); pass 2 puts back call1 "
        "alone: TP002 [call1, o1], o1 named from the session's history. The "
        "window before had no result to restore: the repair removes the "
        "orphaned call.")

case("restore_call_with_result_quiet.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [p_work]),
    rewrite("rehydrate", [call_pytest, o_result, p_work]),
], verdicts=["accept", "accept"],
    why=SR + "the twin of restore_call_without_result_fires: both halves "
        "of the pair come back (o1 restored, not forged: WR007 quiet).")

case("restore_failure_rerun_quiet.jsonl", [
    header(),
    append(o_mig_fail, p_work),
    spill(o_mig_fail),
    rewrite("relevance-topk", [p_work]),
    rewrite("rehydrate", [o_mig_fail, p_work]),
    append(o_mig_again),
], verdicts=["accept", "accept"],
    why="§4 CP003 re-runs concern a failed observation a rewrite evicted "
        "without leaving a stub; the twin of cp003_rerun_fires where pass 2 "
        "puts o1 back: the failure is in sight again, and running make "
        "migrate again (o2) is no re-run of an evicted failure.")

# ------------------------------------------------------------------ CP002

c_locks_a = commitment("c1", "decision", "jobs.advisory_lock_queue",
                       rationale=["c2"],
                       text="the job queue uses advisory locks because we "
                            "chose Postgres")
c_locks_b = commitment("c2", "decision", "db.postgres", rationale=["c1"],
                       text="we chose Postgres because the job queue uses "
                            "advisory locks")

case("cp002_rationale_fires.jsonl", [
    header(),
    append(c_locks_a, c_locks_b),
], fires=[("CP002", 2, ["c1", "c2"])], verdicts=[],
    why="§4 CP002: the justification graph has rationale edges too; c1 and "
        "c2 cite each other as rationale with no primitive under them.")

case("cp002_rationale_quiet.jsonl", [
    header(),
    append(o_isready, c_locks_a, changed(c_locks_b, rationale=["c1", "o1"])),
], verdicts=[],
    why="§4 CP002: the twin of cp002_rationale_fires with observation o1 "
        "under the cycle (c2's rationale cites it).")

a_stale = claim("a1", "cache.stale",
                text="the cache is stale because reads are inconsistent")
a_incons = claim("a2", "reads.inconsistent",
                 text="reads are inconsistent because the cache is stale")

case("cp002_rewrite_fires.jsonl", [
    header(),
    append(a_stale, a_incons),
    rewrite("summarize-v2", [changed(a_stale, derived_from=["a2"]),
                             changed(a_incons, derived_from=["a1"])]),
], fires=[("CP002", 3, ["a1", "a2"])], verdicts=["accept"],
    why="§4 CP002 is asked of what a rewrite changes too: the rewrite makes "
        "a1 and a2 derive from each other. A CP finding is reported, not "
        "refused: the rewrite is accepted, and the trace exits 1.")

case("cp002_rewrite_quiet.jsonl", [
    header(),
    append(o_reads, a_stale, a_incons),
    rewrite("summarize-v2", [o_reads,
                             changed(a_stale, derived_from=["a2", "o1"]),
                             changed(a_incons, derived_from=["a1"])]),
], verdicts=["accept"],
    why="§4 CP002: the twin of cp002_rewrite_fires with observation o1 "
        "under the cycle the rewrite makes.")

# ------------------------------------------------- negative(old) in WR001

o_fixa_ok = obs("o2", "lock_timeout\n-----------\n30s\n",
                source="psql -c 'show lock_timeout'", exit_code=0,
                at="2026-11-12T11:21:00Z", modality="verified",
                shows="lock_timeout.30s", text="lock_timeout after fix A")
k_fixa = claim("k1", "!fix_a.works", witnesses=["o1"],
               text="fix A did not fix the flaky test")

case("wr001_negative_before_fires.jsonl", [
    header(),
    append(o_fixa, o_fixa_ok),
    append(k_fixa),
    rewrite("summarize-v2", [o_fixa, o_fixa_ok,
                             changed(k_fixa, witnesses=["o2"])]),
], fires=[("WR001", 4, ["k1", "o1"]), ("WR005", 4, ["k1"])],
    verdicts=["refuse"],
    why="§4 fine print: 'An item is negative-result if either its before or "
        "its after version is.' k1 was negative (its witness o1 failed) and "
        "supported by o1; its new version cites only o2, which is no failed "
        "observation and does not support it: WR001 (negative-result, so "
        "load-bearing), not a quiet loss; WR005 for the changed witnesses.")

case("wr001_negative_before_quiet.jsonl", [
    header(),
    append(o_fixa, changed(o_fixa_ok, shows="lock_timeout.30s & !fix_a.works",
                           text="lock_timeout and the test after fix A")),
    append(k_fixa),
    rewrite("summarize-v2", [o_fixa, changed(
        o_fixa_ok, shows="lock_timeout.30s & !fix_a.works",
        text="lock_timeout and the test after fix A"),
        changed(k_fixa, witnesses=["o2"])]),
], verdicts=["accept"],
    why="§4 WR001: the twin of wr001_negative_before_fires where the new "
        "witness o2 supports !fix_a.works: k1 is still checkable.")

# ------------------------------------------------ CF001 through last_seen

k_lock_plain = changed(k_lock, modality=None, load_bearing=None)

case("cf001_last_seen_fires.jsonl", [
    header(),
    append(o_lock, p_work),
    append(k_lock_plain),
    rewrite("summarize-v2", [k_lock_plain, p_work]),
    rewrite("summarize-v2", [p_work]),
], fires=[("WR008", 4, ["o1"]), ("WR001", 4, ["k1", "o1"]),
          ("CF001", 5, ["k1"])], verdicts=["refuse", "refuse"],
    why="§2 an item is negative-result when any of its witnesses is a failed "
        "observation, wherever that observation now is: pass 1 evicts the "
        "failed o1 with no record (WR008; k1 loses its support, WR001). At "
        "pass 2, k1 still cites o1, known only as the session last saw it: "
        "k1 is negative-result, so bound, and dropping it is CF001.")

case("cf001_last_seen_quiet.jsonl", [
    header(),
    append(o_ok, p_work),
    append(changed(k_ok, modality=None)),
    rewrite("summarize-v2", [changed(k_ok, modality=None), p_work]),
    rewrite("summarize-v2", [p_work]),
], verdicts=["accept", "accept"],
    why="§4 CF001: the twin of cf001_last_seen_fires with a verified "
        "witness: k1 is a plain claim (unverified, not load-bearing, no "
        "failed witness), dropping it is allowed.")

# ----------------------------------------------------- CF006 through a stub

c_pg_or = changed(c_pg, formula="db.postgres | db.sqlite",
                  text="database: Postgres or SQLite")

case("cf006_stub_quiet.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    spill(c_pg),
    rewrite("spill-then-stub", [stub(c_pg), p_schema],
            claimed_preserved=["c1", "p1"]),
], verdicts=["accept"],
    why="§4 CF006 'an id that is missing or altered': c1 stands as a stub "
        "that resolves to the very version the window held: preserved.")

case("cf006_stub_altered_fires.jsonl", [
    header(BG_DB),
    append(c_pg, p_schema),
    spill(c_pg),
    spill(c_pg_or),
    rewrite("spill-then-stub", [stub(c_pg_or), p_schema],
            claimed_preserved=["c1"]),
], fires=[("CF006", 5, ["c1"])], verdicts=["refuse"],
    why="§4 CF006: the twin of cf006_stub_quiet where the stub resolves to "
        "another stored version of c1 (weaker; the original is stored, so "
        "no CF003): altered, and claimed preserved.")

# -------------------------------------- undecided: the store contradicts itself

c_store_pg = commitment("c9", "decision", "db.postgres",
                        text="reporting database: Postgres")
c_store_my = changed(c_store_pg, formula="db.mysql",
                     text="reporting database: MySQL (draft)")
c_store_v14 = changed(c_store_pg, formula="db.postgres & pg.v14",
                      text="reporting database: Postgres 14")
n_crypto_c = commitment("n2", "decision", "pg.ext_pgcrypto",
                        text="enable pgcrypto for token hashing")

case("undecided_store_contradicts_itself.jsonl", [
    header(BG_DB),
    append(p_work),
    spill(c_store_pg),
    spill(c_store_my),
    append(n_crypto_c),
    rewrite("summarize-v2", [p_work, n_crypto_c, n_pg]),
], verdicts=["undecided"], exit=3, undecided_appends=[5],
    repairs=[(6, "accept", ["remove new item 'n1' (its check was left undecided)"])],
    why="§8 'When the premises of an entailment are unsatisfiable all the "
        "same, every entailment is vacuous: ... undecided'; §4 fine print "
        "'nothing is reported while that knowledge is itself "
        "unsatisfiable'. The store holds two versions of c9 (db.postgres, "
        "db.mysql) that contradict under the background: the append's "
        "re-adoption question and the rewrite's CF005 question are vacuous. "
        "An undecided rewrite gets a repair too (unknown is never read as "
        "accept): the repaired rewrite, checked again, must be accepted, so "
        "the repair removes n1, the new item whose check was left "
        "undecided: accept.")
core("undecided_store_contradicts_itself.jsonl", BG_DB, "db.postgres",
     "db.mysql")

case("undecided_store_consistent_quiet.jsonl", [
    header(BG_DB),
    append(p_work),
    spill(c_store_pg),
    spill(c_store_v14),
    append(n_crypto_c),
    rewrite("summarize-v2", [p_work, n_crypto_c, n_pg]),
], verdicts=["accept"],
    why="§8: the twin of undecided_store_contradicts_itself with a second "
        "stored version that agrees (db.postgres & pg.v14): the store "
        "entails n1 (db.postgres): accept.")
consistent("undecided_store_consistent_quiet.jsonl", BG_DB, "db.postgres",
           "db.postgres & pg.v14")

# ------------------------------------------- CF004: a rationale re-pointed

r_mig_locks = commitment("r1", "invariant", "migrations.advisory_locks",
                         text="migrations take advisory locks (sqitch)")
r_job_locks = commitment("r2", "invariant", "jobs.advisory_lock_queue",
                         text="the job queue takes advisory locks")
c_pg_locks = commitment("c1", "decision", "db.postgres", rationale=["r1"],
                        text="database choice: Postgres (advisory locks)")
m_locks = commitment("m1", "invariant",
                     "migrations.advisory_locks & jobs.advisory_lock_queue",
                     covers=["r1", "r2"],
                     text="migrations and the job queue take advisory locks")

case("cf004_merge_repointed_quiet.jsonl", [
    header(),
    append(r_mig_locks, r_job_locks, c_pg_locks),
    rewrite("merge-v1", [m_locks, changed(c_pg_locks, rationale=["m1"])]),
], verdicts=["accept"],
    why="§4 CF004 and CF007: the rewrite merges r1 and r2 into m1, a valid "
        "merge, and re-points c1's rationale from r1 to m1, which carries "
        "it: the reason is kept (no CF004), and the covered r1, r2 are not "
        "dropped (no CF001).")

case("cf001_merge_repointed_fires.jsonl", [
    header(),
    append(r_mig_locks, r_job_locks, c_pg_locks),
    rewrite("merge-v1", [changed(m_locks, formula="jobs.advisory_lock_queue",
                                 covers=["r2"]),
                         changed(c_pg_locks, rationale=["m1"])]),
], fires=[("CF001", 3, ["r1"])],
    verdicts=["refuse"],
    why="§4 CF001 and CF004: the twin of cf004_merge_repointed_quiet where m1 "
        "covers r2 only: r1 is dropped with no record and no valid merge "
        "covers it (CF001). c1 now cites m1, which is in the window: CF004 "
        "reads the rationale the commitment in after cites, and that one is "
        "kept.")

# ------------------------------------------ WR003: a rise from unwitnessed

case("wr003_unwitnessed_fires.jsonl", [
    header(),
    append(o_tests),
    append(changed(k_tests_cited, modality="unwitnessed")),
    rewrite("summarize-v2", [o_tests, changed(k_tests_cited,
                                              modality="verified")]),
], fires=[("WR003", 4, ["k1"])], verdicts=["refuse"],
    why="§2 'Never upward: unverified and unwitnessed cannot become verified "
        "or failed without a new supporting primitive'; §4 fine print "
        "WR003. k1 was tagged unwitnessed citing o1; it rises to verified "
        "citing the same o1, no new witness: WR003.")

# ----------------------------- an appended item that stays, within its append

k_warm2 = claim("k2", "cache.warm",
                text="the cache is warm again (from the deploy log)")

case("exclusion_same_append_stays_fires.jsonl", [
    header(),
    append(k_warm, p_cache),
    append(o_dbsize, k_warm2),
], fires=[("CP004", 3, ["o1", "k1"]), ("CP004", 3, ["o1", "k2"])],
    verdicts=[],
    why=SR + "'CP004 excludes the claims of its core when it has any': o1 "
        "contradicts the claim k1, which is excluded; o1 stays a premise, "
        "for the same append's later items too (third reading), so k2, "
        "which contradicts o1, is CP004 [o1, k2] ('the core's appended "
        "items in append order').")

# ------------------------------------------------------------------ repairs

case("repair_revert_wr005_fires.jsonl", [
    header(),
    append(o_tests, k_tests_v, p_work),
    rewrite("summarize-v2", [changed(k_tests_v, modality="unverified"),
                             p_work]),
], fires=[("WR005", 3, ["k1"])], verdicts=["refuse"],
    repairs=[(3, "accept", ["revert 'k1'",
                            "keep witness 'o1' of 'k1' as a stub"])],
    why="§4 'revert to its before version whatever neither can mend': k1, "
        "lowered to unverified, still cites o1, which the rewrite dropped "
        "with no record (WR005). The repair reverts k1; checked again, the "
        "verified k1 has lost o1 (WR002), which spilling mends: o1 is "
        "spilled and kept as a stub.")

case("repair_restore_call_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [o_result, p_work]),
], fires=[("TP001", 3, ["o1", "call1"])], verdicts=["refuse"],
    repairs=[(3, "accept", ["restore call 'call1' of result 'o1'"])],
    why=SR + "'The repair restores the partner when the window before had "
        "it (item or stub), else removes the orphan.' call1 was in the "
        "window before: restored.")

case("repair_remove_orphan_fires.jsonl", [
    header(),
    append(call_pytest, o_result, p_work),
    rewrite("prune-v1", [p_work]),
    rewrite("elide-results", [ph_result, p_work]),
], fires=[("TP001", 4, ["ph1", "call1"])], verdicts=["accept", "refuse"],
    repairs=[(4, "accept", ["remove orphaned result 'ph1'"])],
    why=SR + "'... else removes the orphan': the twin of "
        "repair_restore_call_fires where the call was not in the window "
        "before (pass 1 dropped the pair): the placeholder ph1 that pass 2 "
        "puts in is removed.")

case("repair_demoted_fires.jsonl", [
    header(),
    append(o_lint, k_lint),
    spill(o_lint, k_lint),
    rewrite("spill-then-stub", [stub(k_lint)]),
    rewrite("rehydrate", [k_lint]),
], fires=[("WR002", 5, ["k1"])], verdicts=["accept", "refuse"],
    repairs=[(5, "accept-demoted", ["demote 'k1' to unwitnessed"])],
    why="§4 'demote what lost non-load-bearing support'. Pass 1 spills k1 "
        "with its witness o1 (a stub's witnesses may come from the store). "
        "Pass 2 puts k1 back without o1 beside it: k1 still says verified "
        "(WR002). The window before held no o1 to keep as a stub, so the "
        "repair tags k1 unwitnessed: the repaired rewrite is "
        "accept-demoted.")


# ======================================================== bundled scenarios

why1 = claim("why1", "migrations.need_advisory_locks",
             text="turn 40: the migration tooling (sqitch) requires advisory "
                  "locks")
d1 = commitment("d1", "decision", "db.postgres", rationale=["why1"],
                text="turn 40: database choice: Postgres 14, chosen because "
                     "the migration tooling requires advisory locks")
rej1 = commitment("rej1", "rejection", "!db.mysql", rationale=["why1"],
                  text="turn 40: MySQL rejected (no advisory locks usable by "
                       "the migration tooling)")
p41 = prose("p41", "turns 41-54: drafted users/orders/refunds tables; agreed "
            "on snake_case column names; JSON columns for order metadata")
p50 = prose("p50", "turns 50-54: sketched nightly reporting export; schema "
            "should stay SQL-compatible for the BI tool")
p_sum = prose("s55", "turn 55 summary: Database: Postgres is used for the "
              "project. Schema drafted (users, orders, refunds), SQL-"
              "compatible for reporting.")
c90 = commitment("c90", "decision", "jobs.advisory_lock_queue",
                 rationale=["d1"],
                 text="turn 90: job queue table relies on advisory locks "
                      "(we chose Postgres for its JSON support)")
a91 = commitment("a91", "decision", "db.mysql", rationale=["s55"],
                 text="turn 91: reporting schema assumes MySQL compatibility "
                      "(summary says 'SQL-compatible')")

case("postgres_rejection_lost.jsonl", [
    header(BG_DB, budget=4000),
    append(why1, d1, rej1),
    append(p41, p50),
    rewrite("summarize-v2", [d1, p_sum], claimed_preserved=["d1"],
            pressure=0.93),
    append(c90),
    append(a91),
], fires=[("CF001", 4, ["rej1"]), ("CF004", 4, ["d1", "why1"]),
          ("CP003", 6, ["a91", "d1"])],
    verdicts=["refuse"], target=SCENARIOS,
    why="§4 CF001 (rejection rej1 dropped without record) and CF004 (kept d1 "
        "cites dropped rationale why1) at turn 55; CP003 at turn 91: "
        "db.mysql contradicts kept d1 under db.postgres -> !db.mysql. "
        "CP003's items changed by the second reading: 'CP003 [appended, "
        "contradicted commitments...]' gives [a91, d1] (rej1 was dropped "
        "without a record, so it is no knowledge).")

case("postgres_spilled_first.jsonl", [
    header(BG_DB, budget=4000),
    append(why1, d1, rej1),
    append(p41, p50),
    spill(why1, rej1),
    rewrite("summarize-v2", [d1, stub(why1), stub(rej1), p_sum],
            claimed_preserved=["d1"], pressure=0.93),
    append(c90),
    append(a91),
], fires=[("CP003", 7, ["a91", "d1", "rej1"])],
    verdicts=["accept"], target=SCENARIOS,
    why="§4 route to spill: rationale and rejection are stored and stubbed, "
        "so the rewrite is accepted; CP003 still catches the MySQL "
        "re-adoption since knowledge includes the stubbed/stored rej1. "
        "Items changed by the second reading: 'CP003's items: the appended "
        "item, then every commitment it contradicts on its own': a91 "
        "contradicts d1 (under the background) and rej1 each on its own; "
        "d1 comes first in the window.")

LOG_OK = ("pytest -q --maxfail=1\n" + "." * 60 + " [ 42%]\n" + "." * 60 +
          " [ 84%]\n" + "." * 22 + " [100%]\n142 passed in 8.31s\n")
t_o1 = obs("o1", LOG_OK, source="make test", exit_code=0, at="3f2a9c1",
           modality="verified", shows="tests.passed",
           text="test log, run at commit 3f2a9c1")
t_o2 = obs("o2", "3f2a9c1\n", source="git rev-parse --short HEAD",
           exit_code=0, at="3f2a9c1", modality="verified",
           shows="head.3f2a9c1", text="HEAD at the time of the run")
t_o3 = obs("o3", "image: python:3.11\nenv:\n  DATABASE_URL: "
           "postgres://ci@db/ci\n  FEATURE_REFUNDS_V2: \"0\"\n",
           source="cat config/ci.yaml", exit_code=0, at="3f2a9c1",
           text="CI config dump")
t_d1 = claim("d1", "tests.passed", modality="verified", witnesses=["o1"],
             derived_from=["o1", "o2", "o3"], load_bearing=True,
             text="digest: make test passed (142 tests) at commit 3f2a9c1; "
                  "CI config had FEATURE_REFUNDS_V2=0")
t_c1 = commitment("c1", "decision", "ci.skip_rerun", rationale=["d1"],
                  text="FEATURE_REFUNDS_V2 is now 1 in config/ci.yaml; tests "
                       "passed, so skip re-running the suite")

case("tests_passed_loses_run.jsonl", [
    header([], budget=3000),
    append(t_o1, t_o2, t_o3),
    rewrite("summarize-v2", [t_o1, t_o2, t_d1], pressure=0.81),
    rewrite("summarize-v2", [t_d1], pressure=0.95),
    append(t_c1),
], fires=[("WR001", 4, ["d1", "o1"]), ("CP001", 5, ["d1", "c1"])],
    verdicts=["accept", "refuse"], target=SCENARIOS,
    why="§4 WR001 at pass 2: load-bearing verified digest d1 loses its only "
        "witness o1 (no store record); CP001 at the later use by c1, naming "
        "pass 2 as the rewrite that cut the last path. WR001's items changed "
        "by the second reading: 'WR001 [item, witnesses that left...]' gives "
        "[d1, o1].")

bg_issues = ["make_test.exit1 -> make_test.issues"]
x_k1_laundered = changed(k_mt, modality="unverified",
                         formula="make_test.issues",
                         text="test run encountered issues")

case("exit_code_laundered.jsonl", [
    header(bg_issues, budget=4000),
    append(o_mt),
    append(k_mt),
    rewrite("summarize-v2", [o_mt, x_k1_laundered], pressure=0.88),
], fires=[("WR004", 4, ["k1"]), ("CF003", 4, ["k1"])],
    verdicts=["refuse"], target=SCENARIOS,
    why="§4 WR004: failed k1 became unverified and its formula no longer "
        "entails make_test.exit1; CF003: bound (negative-result) k1 strictly "
        "weakened with no original in the store.")

f_o1 = obs("o1", "Collecting psycopg2==2.8.6\n  Using cached psycopg2-2.8.6."
           "tar.gz (383 kB)\nError: pg_config executable not found.\n"
           "error: subprocess-exited-with-error\n",
           source="pip install psycopg2==2.8.6", exit_code=1, at="turn 12",
           modality="failed", text="attempt 1: build psycopg2 from source")
f_o2 = obs("o2", "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError)"
           " connection to server at \"localhost\" (127.0.0.1), port 5432 "
           "failed: Connection refused\n",
           source="alembic upgrade head", exit_code=1, at="turn 14",
           modality="failed", text="attempt 2: run migrations locally")
f_task = commitment("t1", "obligation", "task.migrations_applied",
                    text="apply the pending migrations on staging")
f_p = prose("p1", "user: the staging deploy is blocked on the migrations")
f_p2 = prose("p2", "focus: apply migrations on staging (psycopg2 driver)")
f_o3 = obs("o3", "Collecting psycopg2==2.8.6\n  Using cached psycopg2-2.8.6."
           "tar.gz (383 kB)\nError: pg_config executable not found.\n"
           "error: subprocess-exited-with-error\n",
           source="pip install psycopg2==2.8.6", exit_code=1, at="turn 31",
           modality="failed", text="attempt 3: build psycopg2 from source")

case("relevance_evicts_failures.jsonl", [
    header([], budget=2000),
    append(f_task, f_p),
    append(f_o1),
    append(f_o2),
    rewrite("relevance-topk", [f_task, f_p2], pressure=0.9),
    append(f_o3),
], fires=[("WR008", 5, ["o1"]), ("WR008", 5, ["o2"]),
          ("CP003", 6, ["o3", "o1"])],
    verdicts=["refuse"], target=SCENARIOS,
    why="§4 WR008: the relevance pass evicted failed o1 and o2 with no store "
        "record; CP003: the agent then re-runs 'pip install psycopg2==2.8.6', "
        "whose failed observation was evicted without a stub. CP003's items "
        "changed by the second reading: '(a re-run: [appended, evicted "
        "failed observations...])' gives [o3, o1] (o2 ran another source).")

# ============================================================== bad input

H = json.dumps(header(BG_DB)) + "\n"
C1 = {"id": "c1", "kind": "commitment", "type": "decision",
      "formula": "db.postgres"}


def ev(items, kind="append"):
    return json.dumps({"event": kind, "items": items}) + "\n"


bad("bad_malformed_json.jsonl",
    H + '{"event": "append", "items": [{"id": "c1", "kind": "commitment", '
        '"type": "decision"}\n',
    "§7 malformed JSONL: line 2 is not a complete JSON value.")
bad("bad_duplicate_keys.jsonl",
    H + '{"event": "append", "items": [{"id": "c1", "kind": "commitment", '
        '"type": "decision", "formula": "db.postgres", "formula": '
        '"db.mysql"}]}\n',
    "§7 duplicate keys ('formula' twice in one object).")
bad("bad_nan.jsonl",
    H + '{"event": "append", "items": [{"id": "c1", "kind": "commitment", '
        '"type": "decision", "formula": "db.postgres", "tokens": NaN}]}\n',
    "§7 NaN is rejected.")
bad("bad_infinity.jsonl",
    H + '{"event": "append", "items": [{"id": "o1", "kind": "observation", '
        '"source": "make test", "exit_code": Infinity}]}\n',
    "§7 Infinity is rejected.")
bad("bad_duplicate_ids.jsonl",
    H + ev([C1, dict(C1, formula="pg.v14")]),
    "§2/§7 ids are unique within a window; one append defines c1 twice.")
bad("bad_duplicate_ids_rewrite.jsonl",
    H + ev([C1]) + json.dumps({"event": "rewrite", "policy": "dup",
                               "window": [C1, C1]}) + "\n",
    "§2/§7 a rewrite's window holds id c1 twice.")
bad("bad_unknown_kind.jsonl",
    H + ev([{"id": "n1", "kind": "note", "text": "remember the locks"}]),
    "§2/§7 kind 'note' is not one of the five kinds.")
bad("bad_unknown_field.jsonl",
    H + ev([dict(C1, priority=1)]),
    "§7 unknown field 'priority' on a commitment.")
bad("bad_field_of_other_kind.jsonl",
    H + ev([{"id": "p1", "kind": "prose", "text": "Postgres is used",
             "formula": "db.postgres"}]),
    "§2 prose carries no formula: 'formula' is not a field of kind prose "
        "(unknown field, §7).")
bad("bad_commitment_without_type.jsonl",
    H + ev([{"id": "c1", "kind": "commitment", "formula": "db.postgres"}]),
    "§4 fine print: a commitment without type is bad input.")
bad("bad_commitment_unknown_type.jsonl",
    H + ev([dict(C1, type="preference")]),
    "§2 type must be decision, rejection, invariant or obligation.")
bad("bad_unknown_modality.jsonl",
    H + ev([dict(C1, modality="probably")]),
    "§2 modality must be verified, failed, unverified or unwitnessed.")
bad("bad_append_existing_id.jsonl",
    H + ev([C1]) + ev([dict(C1, text="again")]),
    "§4 fine print: an append of an id already in the window is bad input.")
bad("bad_digest_mismatch.jsonl",
    H + ev([{"id": "o1", "kind": "observation", "source": "make test",
             "exit_code": 0, "content": "142 passed\n",
             "digest": digest_of("142 passed")}]),
    "§4 fine print: a digest that does not match content is bad input.")
bad("bad_formula_syntax.jsonl",
    H + ev([dict(C1, formula="db.postgres & | db.mysql")]),
    "§3/§7 formula syntax error (operand expected after '&').")
bad("bad_formula_unbalanced.jsonl",
    H + ev([dict(C1, formula="(db.postgres | db.sqlite")]),
    "§3/§7 formula syntax error (missing ')').")
bad("bad_formula_too_deep.jsonl",
    H + ev([dict(C1, formula="(" * 100000 + "db.postgres" + ")" * 100000)]),
    "§3/§7 formula nesting past the bound is a clear error, exit 2.")
bad("bad_json_too_deep.jsonl",
    H + '{"event": "append", "items": [{"id": "p1", "kind": "prose", '
        '"text": ' + "[" * 100000 + "]" * 100000 + "}]}\n",
    "§7 over-deep input is bad input (exit 2, never a crash).")
bad("bad_dangling_reference.jsonl",
    H + ev([dict(C1, rationale=["r9"])]),
    "§7 rationale 'r9' appears nowhere in the trace or the store.")
bad("bad_dangling_witness.jsonl",
    H + ev([{"id": "k1", "kind": "claim", "formula": "tests.passed",
             "modality": "verified", "witnesses": ["o9"]}]),
    "§7 witness 'o9' appears nowhere in the trace or the store.")
bad("bad_invalid_utf8.jsonl",
    H.encode() + b'{"event": "append", "items": [{"id": "p1", "kind": '
                 b'"prose", "text": "caf\xe9 \xff"}]}\n',
    "§7 invalid UTF-8.")
bad("bad_unknown_event.jsonl",
    H + json.dumps({"event": "compact", "items": []}) + "\n",
    "§5 events are header, append, spill, rewrite; 'compact' is unknown.")
bad("bad_wrong_format.jsonl",
    json.dumps({"event": "header", "format": "ctxproof-trace/9",
                "background": []}) + "\n" + ev([C1]),
    "§5 the header's format must be ctxproof-trace/1.")
bad("bad_missing_header.jsonl",
    ev([C1]) + ev([dict(C1, id="c2", formula="pg.v14")]),
    "§5 a trace starts with its header line.")
bad("bad_empty_id.jsonl",
    H + ev([dict(C1, id="")]),
    "§2 id is a string of 1-256 chars.")
bad("bad_id_too_long.jsonl",
    H + ev([dict(C1, id="c" * 257)]),
    "§2 id is a string of 1-256 chars.")
bad("bad_id_not_string.jsonl",
    H + ev([dict(C1, id=42)]),
    "§2 id is a string.")
bad("bad_negative_tokens.jsonl",
    H + ev([dict(C1, tokens=-5)]),
    "§2 tokens is an int >= 0.")
bad("bad_background_syntax.jsonl",
    json.dumps({"event": "header", "format": "ctxproof-trace/1",
                "background": ["db.postgres -> -> !db.mysql"]}) + "\n" +
    ev([C1]),
    "§3/§7 a background formula with a syntax error.")
bad("bad_empty.jsonl", "",
    "§5/§7 an empty file has no header: bad input.")
BG_UNSAT = ["db.postgres -> !db.mysql", "db.postgres", "db.mysql"]
bad("bad_background_unsatisfiable.jsonl",
    json.dumps(header(BG_UNSAT)) + "\n" + ev([C1]),
    "§8 'A background that is unsatisfiable on its own is bad input.' "
    "db.postgres, db.mysql and db.postgres -> !db.mysql hold in no window.")
core("bad_background_unsatisfiable.jsonl", [], *BG_UNSAT)

# ================================================================ checks

ITEM_FIELDS = {
    "commitment": {"type", "formula", "rationale", "witnesses", "modality",
                   "load_bearing", "covers"},
    "claim": {"formula", "modality", "witnesses", "derived_from",
              "load_bearing", "covers"},
    "observation": {"shows", "modality", "digest", "content", "source",
                    "exit_code", "at", "call"},
    "prose": {"call"},
    "stub": {"ref"},
}
COMMON = {"id", "kind", "text", "tokens", "score"}
EVENT_FIELDS = {
    "header": {"event", "format", "background", "budget", "store"},
    "append": {"event", "items"},
    "spill": {"event", "items"},
    "rewrite": {"event", "policy", "window", "diff", "claimed_preserved",
                "pressure"},
}
TOKEN = re.compile(r"\s*(?:(<->|->|[!&|()])|([A-Za-z_][A-Za-z0-9_.:@/]*))")


def parse_formula(s: str):
    toks = []
    pos = 0
    s = s.rstrip()
    while pos < len(s):
        m = TOKEN.match(s, pos)
        assert m, f"bad token at {pos} in {s!r}"
        toks.append(m.group(1) or m.group(2))
        pos = m.end()
    toks = [{"not": "!", "and": "&", "or": "|"}.get(t, t) for t in toks]
    i = 0

    def peek():
        return toks[i] if i < len(toks) else None

    def eat(t=None):
        nonlocal i
        tok = peek()
        assert tok is not None and (t is None or tok == t), (s, t, tok)
        i += 1
        return tok

    def iff():
        left = imp()
        while peek() == "<->":
            eat()
            left = ("<->", left, imp())
        return left

    def imp():
        left = disj()
        if peek() == "->":
            eat()
            return ("->", left, imp())
        return left

    def disj():
        left = conj()
        while peek() == "|":
            eat()
            left = ("|", left, conj())
        return left

    def conj():
        left = neg()
        while peek() == "&":
            eat()
            left = ("&", left, neg())
        return left

    def neg():
        if peek() == "!":
            eat()
            return ("!", neg())
        if peek() == "(":
            eat("(")
            e = iff()
            eat(")")
            return e
        tok = eat()
        assert tok not in ("&", "|", "->", "<->", ")"), (s, tok)
        return tok

    e = iff()
    assert i == len(toks), (s, toks[i:])
    return e


def _atoms(e, out):
    if isinstance(e, str):
        if e not in ("true", "false"):
            out.add(e)
    else:
        for sub in e[1:]:
            _atoms(sub, out)
    return out


def _holds(e, env) -> bool:
    if isinstance(e, str):
        return e == "true" if e in ("true", "false") else env[e]
    if e[0] == "!":
        return not _holds(e[1], env)
    a, b = _holds(e[1], env), _holds(e[2], env)
    return {"&": a and b, "|": a or b, "->": (not a) or b,
            "<->": a == b}[e[0]]


def sat(formulas) -> bool:
    """Truth-table satisfiability of a conjunction (the cases are small)."""
    trees = [parse_formula(f) for f in formulas]
    atoms = sorted(set().union(*(_atoms(t, set()) for t in trees)))
    assert len(atoms) <= 14, atoms
    for bits in range(1 << len(atoms)):
        env = {a: bool(bits >> i & 1) for i, a in enumerate(atoms)}
        if all(_holds(t, env) for t in trees):
            return True
    return False


def check_semantics():
    for name, what, bg, formulas in SEMANTIC:
        if what == "sat":
            assert sat(list(bg) + list(formulas)), (name, formulas)
        else:
            # an unsatisfiable set, every proper subset of it satisfiable
            assert not sat(list(bg) + list(formulas)), (name, formulas)
            for i in range(len(formulas)):
                rest = list(formulas[:i]) + list(formulas[i + 1:])
                assert sat(list(bg) + rest), (name, "not minimal", formulas)


def self_check(name, events):
    assert events[0]["event"] == "header", name
    for f in events[0]["background"]:
        parse_formula(f)
    defined = set()
    for ev in events:
        for key in ("items", "window"):
            for it in ev.get(key, []):
                defined.add(it["id"])
        for it in ev.get("diff", {}).get("put", []):
            defined.add(it["id"])
    window: dict[str, dict] = {}
    store_refs = set()
    stored_ids: dict[str, str] = {}
    appended_obs = set()
    for n, ev in enumerate(events, 1):
        assert set(ev) <= EVENT_FIELDS[ev["event"]], (name, n, set(ev))
        if n > 1:
            assert ev["event"] != "header", (name, n)
        items = list(ev.get("items", [])) + list(ev.get("window", [])) + \
            list(ev.get("diff", {}).get("put", []))
        for it in items:
            k = it["kind"]
            assert set(it) <= COMMON | ITEM_FIELDS[k], (name, n, it["id"])
            assert isinstance(it["id"], str) and 1 <= len(it["id"]) <= 256
            if k == "commitment":
                assert it["type"] in ("decision", "rejection", "invariant",
                                      "obligation"), (name, n)
            if "modality" in it:
                assert it["modality"] in ("verified", "failed", "unverified",
                                          "unwitnessed"), (name, n)
            for fk in ("formula", "shows"):
                if fk in it:
                    parse_formula(it[fk])
            for rk in ("rationale", "witnesses", "derived_from", "covers"):
                for r in it.get(rk, []):
                    assert r in defined, (name, n, it["id"], rk, r)
            if "call" in it:
                assert it["call"] in defined, (name, n, it["id"], it["call"])
            if "score" in it:
                sc = it["score"]
                assert isinstance(sc, int) and not isinstance(sc, bool), \
                    (name, n, it["id"])
                assert 0 <= sc <= 100, (name, n, it["id"])
            if "tokens" in it:
                assert isinstance(it["tokens"], int) and it["tokens"] >= 0
            if "content" in it and "digest" in it:
                assert it["digest"] == digest_of(it["content"]), (name, n)
        if ev["event"] == "append":
            ids = [it["id"] for it in ev["items"]]
            assert len(ids) == len(set(ids)), (name, n)
            for it in ev["items"]:
                assert it["id"] not in window, (name, n, it["id"])
                window[it["id"]] = it
                if it["kind"] == "observation":
                    appended_obs.add(json.dumps(it, sort_keys=True))
        elif ev["event"] == "spill":
            for it in ev["items"]:
                store_refs.add(ref_of(it))
                stored_ids[ref_of(it)] = it["id"]
        elif ev["event"] == "rewrite":
            for c in ev.get("claimed_preserved", []):
                assert c in defined, (name, n, c)
            if "window" in ev:
                ids = [it["id"] for it in ev["window"]]
                assert len(ids) == len(set(ids)), (name, n)
                window = {it["id"]: it for it in ev["window"]}
            else:
                for r in ev["diff"]["remove"]:
                    assert r in window, (name, n, r)
                    del window[r]
                for it in ev["diff"]["put"]:
                    window[it["id"]] = it
            for it in window.values():
                if it["kind"] == "stub" and name not in UNRESOLVABLE:
                    assert it["ref"] in store_refs, (name, n, it["id"])
                if it["kind"] == "stub" and it["ref"] in store_refs:
                    # a stub that resolves names its own item (else it is one of
                    # the UNRESOLVABLE cases, on purpose)
                    assert stored_ids[it["ref"]] == it["id"] or \
                        name in UNRESOLVABLE, (name, n, it["id"])


def main() -> int:
    check_semantics()
    HERE.mkdir(parents=True, exist_ok=True)
    SCEN_DIR.mkdir(parents=True, exist_ok=True)
    expected: dict[str, dict] = {}
    for name, (events, exp) in CORPUS.items():
        self_check(name, events)
        (HERE / name).write_text(jl(*events), encoding="utf-8")
        expected[name] = exp
    for name, (events, exp) in SCENARIOS.items():
        self_check(name, events)
        (SCEN_DIR / name).write_text(jl(*events), encoding="utf-8")
        expected["models/scenarios/" + name] = exp
    for name, (data, why) in BAD.items():
        (HERE / name).write_bytes(data)
        expected[name] = {"exit": 2, "why": why}
    # coverage: every code fires somewhere and is quiet in a near miss
    for code in ALL_CODES:
        fire = [n for n, e in expected.items()
                if any(m[0] == code for m in e.get("must_fire", []))]
        quiet = [n for n, e in expected.items()
                 if code in e.get("must_not_fire", [])
                 and n.split("_")[0] == code.lower()]
        assert fire and quiet, (code, fire, quiet)
    (HERE / "EXPECTED.json").write_text(
        json.dumps(expected, indent=2, ensure_ascii=False, sort_keys=True)
        + "\n", encoding="utf-8")
    print(f"wrote {len(CORPUS)} rule traces, {len(SCENARIOS)} scenarios, "
          f"{len(BAD)} bad-input files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
