"""`why` names the rewrite that dropped an item (issue point 8) and the smaller points of
item 13: CF004 after a rationale is re-pointed to a merge, CP002 for an item citing
itself, the store path named once in an error."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from verifier import audit_trace, trace_from_dicts
from verifier.cli import main
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
LOST = ROOT / "models" / "scenarios" / "postgres_rejection_lost.jsonl"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_why_names_the_rewrite_that_dropped_an_item() -> None:
    code, out, _ = run("why", str(LOST), "rej1")
    assert code == 1
    assert "dropped at pass 1 by 'summarize-v2', line 4; not in the store" in out
    code, out, _ = run("why", str(LOST), "rej1", "--format", "json")
    assert json.loads(out)["dropped"] == {"pass": 1, "policy": "summarize-v2", "line": 4}
    # as of pass 0 it was in the window: nothing dropped it yet
    code, out, _ = run("why", str(LOST), "rej1", "--pass", "0", "--format", "json")
    assert json.loads(out)["dropped"] is None
    # an item kept in the window is not dropped
    code, out, _ = run("why", str(LOST), "d1")
    assert "dropped" not in out


def test_why_says_nothing_of_a_drop_when_the_item_was_spilled() -> None:
    spilled = ROOT / "models" / "scenarios" / "postgres_spilled_first.jsonl"
    _, out, _ = run("why", str(spilled), "rej1", "--format", "json")
    assert json.loads(out)["dropped"] is None


def _events(*events: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"event": "header", "format": "ctxproof-trace/1"}, *events]


R1 = {"id": "r1", "kind": "claim", "formula": "locks.needed"}
R2 = {"id": "r2", "kind": "claim", "formula": "json.needed"}
C1 = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "db.postgres",
      "rationale": ["r1"]}
MERGE = {"id": "m", "kind": "claim", "formula": "locks.needed & json.needed",
         "covers": ["r1", "r2"]}


def _codes(events: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], str]]:
    report = audit_trace(trace_from_dicts(events))
    return [(f.code, f.items, f.message) for f in report.findings]


def test_cf004_is_quiet_once_the_rationale_is_re_pointed_to_a_valid_merge() -> None:
    repointed = {**C1, "rationale": ["m"]}
    assert _codes(_events({"event": "append", "items": [R1, R2, C1]},
                          {"event": "rewrite", "window": [MERGE, repointed]})) == []


def test_cf004_still_fires_for_a_citation_left_dangling_and_names_the_merge() -> None:
    found = _codes(_events({"event": "append", "items": [R1, R2, C1]},
                           {"event": "rewrite", "window": [MERGE, C1]}))
    assert [(c, i) for c, i, _ in found] == [("CF004", ("c1", "r1"))]
    assert "cite the merge 'm' that covers it instead" in found[0][2]


def test_a_rationale_re_pointed_to_an_invalid_merge_is_cf007_only() -> None:
    """c1 now cites m, which is in the window: no CF004 (it reads what the commitment in
    the window cites). The merge is invalid (CF007); r1 and r2, plain claims, may go."""
    bad_merge = {**MERGE, "formula": "locks.needed"}  # does not entail r2
    found = _codes(_events({"event": "append", "items": [R1, R2, C1]},
                           {"event": "rewrite", "window": [bad_merge, {**C1, "rationale": ["m"]}]}))
    assert [c for c, _, _ in found] == ["CF007"]


def test_cp002_for_an_item_that_cites_itself() -> None:
    k1 = {"id": "k1", "kind": "claim", "formula": "x", "derived_from": ["k1"]}
    found = _codes(_events({"event": "append", "items": [k1]}))
    assert [(c, i) for c, i, _ in found] == [("CP002", ("k1",))]
    message = found[0][2]
    assert "'k1' cites itself (derived_from)" in message
    assert "justify each other" not in message
    pair = _codes(_events({"event": "append", "items": [
        {"id": "a", "kind": "claim", "derived_from": ["b"]},
        {"id": "b", "kind": "claim", "derived_from": ["a"]}]}))
    assert "justify each other" in pair[0][2]


@pytest.fixture
def store_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("create table t(x)")
    db.commit()
    db.close()
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"event": "header", "format": "ctxproof-trace/1"}) + "\n")
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": []}))
    SqliteStore(tmp_path / "good.sqlite").close()
    return [
        (["audit", str(trace), "--store", str(garbage)], str(garbage)),
        (["audit", str(trace), "--store", str(other)], str(other)),
        (["why", str(trace), "x", "--store", str(other)], str(other)),
        (["check", str(window), str(window), "--store", str(garbage)], str(garbage)),
        (["check", str(window), str(window), "--store", str(tmp_path / "missing.sqlite")],
         str(tmp_path / "missing.sqlite")),
    ]


def test_a_store_error_names_the_store_once(store_cases: list[tuple[list[str], str]]) -> None:
    for argv, path in store_cases:
        code, out, err = run(*argv)
        assert code == 2 and out == "", argv
        assert err.count(path) == 1, err


# -- one defect, one primary finding (issue point 6) ----------------------------------------

O1 = {"id": "o1", "kind": "observation", "source": "pip install x", "exit_code": 1,
      "modality": "failed", "shows": "pip.fail"}
K1 = {"id": "k1", "kind": "claim", "formula": "pip.fail", "modality": "failed",
      "witnesses": ["o1"], "load_bearing": True}
LAUNDERED_K1 = {**K1, "formula": "pip.ok", "modality": "verified"}


def _laundering(tmp_path: Path) -> Path:
    trace = tmp_path / "laundered.jsonl"
    events = _events({"event": "append", "items": [O1, K1]},
                     {"event": "rewrite", "policy": "summarize-v1", "window": [O1, LAUNDERED_K1],
                      "claimed_preserved": ["k1"]})
    events[0]["background"] = ["pip.fail -> !pip.ok"]
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return trace


def test_laundering_one_claim_is_one_primary_finding(tmp_path: Path) -> None:
    trace = _laundering(tmp_path)
    _, out, _ = run("audit", str(trace), "--format", "json")
    findings = json.loads(out)["findings"]
    on_k1 = {f["code"]: f.get("related_to") for f in findings if f["items"][0] == "k1"}
    # the JSON keeps every finding; all but the primary point to it
    assert on_k1 == {"WR004": None, "CF002": "WR004", "CF005": "WR004", "CF006": "WR004",
                     "WR001": "WR004", "WR005": "WR004"}
    _, text, _ = run("audit", str(trace))
    lines = text.splitlines()
    assert len(lines) == 6  # one finding a line: the primary first, naming the others
    assert " WR004 negative-laundered [k1]" in lines[0]
    assert lines[0].endswith("[related: CF002, CF005, CF006, WR001, WR005]")
    assert all(line.endswith("[related to: WR004]") for line in lines[1:])
    # the primary's advice mends them all: restoring k1 leaves nothing to report
    fixed = _codes(_events({"event": "append", "items": [O1, K1]},
                           {"event": "rewrite", "window": [O1, K1], "claimed_preserved": ["k1"]}))
    assert fixed == []


def test_messages_say_claim_and_advise_nothing_that_leads_into_another_finding(
    tmp_path: Path,
) -> None:
    _, out, _ = run("audit", str(_laundering(tmp_path)), "--format", "json")
    messages = {f["code"]: f["message"] for f in json.loads(out)["findings"]}
    assert "the rewrite asserts more than the claim did" in messages["CF002"]
    assert "weaken" not in messages["CF002"]
    assert messages["CF005"].startswith("claim 'k1'")
    assert "restore its earlier version (pip.fail)" in messages["CF005"]
    assert "remove it" not in messages["CF005"]  # removing k1 would drop it (CF001)
    assert "unwitnessed" not in messages["WR005"]  # a failed claim stays failed (WR004)
    # a softened failed claim: spilling the original would not make the rewrite acceptable
    softened = _codes(_events(
        {"event": "append", "items": [O1, K1]},
        {"event": "rewrite", "window": [O1, {**K1, "formula": "pip.fail | pip.slow"}]}))
    cf003 = next(m for c, _, m in softened if c == "CF003")
    assert "spill the original" not in cf003 and "restore pip.fail" in cf003


def test_cp001_advice_for_a_failed_claim_does_not_say_unwitnessed() -> None:
    used = {**K1, "load_bearing": False}
    user = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "x.skip",
            "rationale": ["k1"]}
    found = _codes(_events({"event": "append", "items": [O1, used]},
                           {"event": "rewrite", "window": [used]},
                           {"event": "append", "items": [user]}))
    cp001 = next(m for c, _, m in found if c == "CP001")
    assert "uses claim 'k1'" in cp001 and "unwitnessed" not in cp001


def test_a_related_finding_on_another_line_of_check_is_still_printed(tmp_path: Path) -> None:
    r1 = {"id": "r1", "kind": "commitment", "type": "invariant", "formula": "locks.needed"}
    d1 = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres"}
    before, after = tmp_path / "b.json", tmp_path / "a.json"
    before.write_text(json.dumps({"format": "ctxproof-window/1",
                                  "items": [r1, {**d1, "rationale": ["r1"]}]}))
    # the new d1 still cites r1, dropped: CF004 is on d1's line, its primary CF001 elsewhere
    changed = {**d1, "formula": "db.postgres", "rationale": ["r1"], "text": "kept"}
    after.write_text(json.dumps({"format": "ctxproof-window/1", "items": [changed]}, indent=1))
    _, out, _ = run("check", str(before), str(after), "--format", "json")
    found = {f["code"]: (f["line"], f.get("related_to")) for f in json.loads(out)["findings"]}
    assert found["CF004"][1] == "CF001" and found["CF004"][0] != found["CF001"][0]
    _, text, _ = run("check", str(before), str(after))
    assert [line.split(": ")[2].split()[0] for line in text.splitlines()] == ["CF001", "CF004"]


# -- a user instruction as a primitive (issue point 8, README) ------------------------------

USER = {"id": "u1", "kind": "observation", "source": "user", "modality": "verified",
        "shows": "db.postgres", "content": "Use Postgres, not MySQL."}
DECIDED = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres",
           "modality": "verified", "witnesses": ["u1"], "rationale": ["u1"]}
USES = {"id": "c1", "kind": "commitment", "type": "obligation", "formula": "migrations.pg_only",
        "rationale": ["d1"]}


def test_a_decision_on_a_user_instruction_is_witnessed(tmp_path: Path) -> None:
    from verifier.io import stub_for

    kept = _events({"event": "append", "items": [USER]}, {"event": "append", "items": [DECIDED]},
                   {"event": "spill", "items": [USER]},
                   {"event": "rewrite", "window": [stub_for(USER), DECIDED]},
                   {"event": "append", "items": [USES]})
    assert _codes(kept) == []
    dropped = [*kept[:3], {"event": "rewrite", "policy": "summarize", "window": [DECIDED]},
               kept[-1]]
    assert [(c, i) for c, i, _ in _codes(dropped)] == [
        ("CF004", ("d1", "u1")), ("WR001", ("d1", "u1")), ("CP001", ("d1", "c1"))]
    trace = tmp_path / "user.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in dropped) + "\n")
    code, out, _ = run("why", str(trace), "d1")
    assert code == 1 and "source='user'" in out and "lost at pass 1 (policy 'summarize')" in out
