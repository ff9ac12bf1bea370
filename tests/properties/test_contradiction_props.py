"""A contradiction never silences the checks: verdicts after it are never more lenient."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from verifier.audit import audit_trace
from verifier.io import parse_trace_text
from verifier.strategies import traces

RANK = {"accept": 0, "accept-demoted": 1, "undecided": 2, "refuse": 3}

Obj = dict[str, Any]


def _formula_of(item: Obj) -> str | None:
    if item["kind"] in ("commitment", "claim"):
        return str(item.get("formula", item["id"]))
    if item["kind"] == "observation":
        return item.get("shows")
    return None


@st.composite
def contradicted(draw: st.DrawFn) -> tuple[str, str]:
    """A generated trace, and the same trace with a contradicting item appended somewhere
    (and kept by every later rewrite)."""
    text = draw(traces(max_events=7))
    lines = [json.loads(line) for line in text.splitlines()]
    at = draw(st.integers(1, len(lines)))
    window: list[Obj] = []
    for ev in lines[1:at]:
        if ev["event"] == "append":
            window = window + ev["items"]
        elif ev["event"] == "rewrite":
            window = ev["window"]
    targets = [f for it in window if (f := _formula_of(it)) is not None]
    kind = draw(st.sampled_from(["claim", "commitment", "observation"]))
    negate_one = draw(st.booleans())
    if targets and negate_one:
        formula = f"!({draw(st.sampled_from(targets))})"
    else:
        formula = "p.z & !p.z"
    item: Obj = {"id": "x.contra", "kind": kind}
    if kind == "observation":
        item.update(shows=formula, source="contradiction", modality="verified")
    else:
        item["formula"] = formula
        if kind == "commitment":
            item["type"] = "decision"
    changed = [*lines[:at], {"event": "append", "items": [item]}]
    for ev in lines[at:]:
        if ev["event"] == "rewrite":
            ev = {**ev, "window": [*ev["window"], item]}
            if "claimed_preserved" in ev:
                ev["claimed_preserved"] = [*ev["claimed_preserved"], item["id"]]
        changed.append(ev)
    return text, "\n".join(json.dumps(ev) for ev in changed) + "\n"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contradicted())
def test_a_contradiction_never_makes_a_later_verdict_more_lenient(pair: tuple[str, str]) -> None:
    plain, with_contradiction = pair
    note(with_contradiction)
    before = audit_trace(parse_trace_text(plain, "plain"))
    after = audit_trace(parse_trace_text(with_contradiction, "contradicted"))
    assert len(before.rewrites) == len(after.rewrites)
    for was, now in zip(before.rewrites, after.rewrites, strict=True):
        assert RANK[now.verdict] >= RANK[was.verdict], (was.pass_, was.verdict, now.verdict)
    # and every refusal of the plain trace is still found, finding for finding
    refusing = {(f.code, f.pass_, f.items) for f in before.findings if f.code[:2] != "CP"}
    still = {(f.code, f.pass_, f.items) for f in after.findings}
    assert refusing <= still
