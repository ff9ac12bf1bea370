"""Witness laws: support agrees with brute force; adding a witness back never adds a finding."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.audit import audit_trace
from verifier.check import check_rewrite
from verifier.formula import atoms, evaluate
from verifier.io import item_from_json, parse_trace_text
from verifier.parser import parse_formula
from verifier.rules.context import History, RewriteContext, WindowView
from verifier.solver import Session
from verifier.store import MemoryStore, SqliteStore
from verifier.strategies import background_texts, formula_texts, ref_of, rewrite_of, windows

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _brute_supports(shows: list[str], goal: str, background: list[str]) -> bool | None:
    """Support by truth tables; None when the witnesses contradict each other (vacuous)."""
    fs = [parse_formula(t) for t in shows]
    g = parse_formula(goal)
    bg = [parse_formula(b) for b in background]
    names = sorted(set().union(atoms(g), *(atoms(f) for f in fs + bg)))
    entailed, valid, consistent = True, True, False
    for values in itertools.product([False, True], repeat=len(names)):
        env = dict(zip(names, values, strict=True))
        if not all(evaluate(b, env) for b in bg):
            continue
        if all(evaluate(f, env) for f in fs):
            consistent = True
        if not evaluate(g, env):
            valid = False
            if all(evaluate(f, env) for f in fs):
                entailed = False
    if valid:
        return False
    if not consistent:
        return None
    return entailed


@SETTINGS
@given(
    st.lists(formula_texts(max_depth=2), max_size=3),
    formula_texts(max_depth=2),
    st.lists(background_texts(max_depth=1), max_size=1),
)
def test_witness_support_agrees_with_truth_tables(
    shows: list[str], goal: str, background: list[str]
) -> None:
    observations = [
        item_from_json({"id": f"o{i}", "kind": "observation", "shows": s})
        for i, s in enumerate(shows)
    ]
    claim = item_from_json(
        {"id": "c", "kind": "claim", "formula": goal, "witnesses": [o.id for o in observations]}
    )
    store = MemoryStore()
    view = WindowView([*observations, claim], store)
    ctx = RewriteContext(
        Session([parse_formula(b) for b in background]), store, view, view, 1, None,
        history=History(),
    )
    got = ctx.supports(view.surviving_witnesses(claim), claim, "test")
    assert got == _brute_supports(shows, goal, background)


def _findings(
    before: list[Any], after: list[Any], store: MemoryStore
) -> set[tuple[str, tuple[str, ...]]]:
    result = check_rewrite(
        [item_from_json(x) for x in before],
        [item_from_json(x) for x in after],
        store=store,
        with_repair=False,
    )
    return {(f.code, f.items) for f in result.findings}


@SETTINGS
@given(st.data())
def test_adding_a_witness_back_never_adds_a_finding(data: st.DataObject) -> None:
    before = data.draw(windows(min_size=2, max_size=8))
    spill, after = data.draw(rewrite_of(before))
    store = MemoryStore()
    store.spill([item_from_json(x) for x in spill])
    after_ids = {x["id"] for x in after}
    dropped = [x for x in before if x["kind"] == "observation" and x["id"] not in after_ids]
    if not dropped:
        return
    back = data.draw(st.sampled_from(dropped))
    fewer = _findings(before, after, store)
    more = _findings(before, [*after, back], store)
    assert more <= fewer, more - fewer


def test_tampered_store_bytes_are_wr006_not_a_crash(tmp_path: Path) -> None:
    obs = {"id": "o1", "kind": "observation", "shows": "t.ok", "modality": "verified"}
    db = tmp_path / "s.sqlite"
    store = SqliteStore(db)
    store.spill([item_from_json(obs)])
    store.close()
    raw = sqlite3.connect(db)
    raw.execute("DROP TRIGGER entries_no_update")
    raw.execute(
        "UPDATE entries SET body = ? WHERE id = 'o1'",
        (json.dumps({**obs, "shows": "t.forged"}).encode(),),
    )
    raw.commit()
    raw.close()
    lines = [
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [{"id": "p", "kind": "prose"}]},
        {
            "event": "rewrite",
            "window": [
                {"id": "p", "kind": "prose"},
                {"id": "o1", "kind": "stub", "ref": ref_of(obs)},
            ],
        },
    ]
    text = "\n".join(json.dumps(x) for x in lines)
    report = audit_trace(
        parse_trace_text(text, known_ids=lambda i: i == "o1"), store=SqliteStore(db, readonly=True)
    )
    assert [(f.code, f.items) for f in report.findings if f.code == "WR006"] == [("WR006", ("o1",))]
    assert "do not hash" in next(f.message for f in report.findings if f.code == "WR006")
