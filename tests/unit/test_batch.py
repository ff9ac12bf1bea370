"""Batch runs (issue points 3 and 11): audit --keep-going, the closing summary, audit
--repair DIR and the repairs audit_trace carries."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema

import verifier
from verifier.audit import audit_trace
from verifier.cli import main
from verifier.io import trace_from_dicts

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "models" / "scenarios"
SCHEMA = json.loads(
    (Path(verifier.__file__).parent / "schema" / "report.schema.json").read_text("utf-8")
)
GOOD = str(SCENARIOS / "exit_code_laundered.jsonl")
GOOD2 = str(SCENARIOS / "tests_passed_loses_run.jsonl")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*argv: str, tty: bool = False) -> tuple[int, str, str]:
    out = io.StringIO()
    err: io.StringIO = _Tty() if tty else io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _bad_files(tmp_path: Path) -> tuple[str, str]:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", "utf-8")
    window = tmp_path / "w.json"
    window.write_text('{"format": "ctxproof-window/1", "items": []}', "utf-8")
    return str(bad), str(window)


def test_one_bad_file_no_longer_sinks_the_batch(tmp_path: Path) -> None:
    bad, window = _bad_files(tmp_path)
    # without --keep-going: nothing but the error, as before
    code, out, err = run("audit", GOOD, bad, GOOD2, "--format", "json")
    assert (code, out) == (2, "") and bad in err
    code, out, err = run("audit", GOOD, bad, window, GOOD2, "--format", "json", "--keep-going")
    assert code == 2
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["trace"] for o in objs] == [GOOD, bad, window, GOOD2]
    for o in objs:
        jsonschema.validate(o, SCHEMA)
    assert objs[0]["exit"] == 1 and objs[3]["exit"] == 1
    assert objs[1]["exit"] == 2 and objs[1]["error"]["line"] == 1
    assert "malformed JSON" in objs[1]["error"]["message"]
    assert "did you mean `check`?" in objs[2]["error"]["text"]
    assert err == ""  # JSON carries the errors; stderr is not a terminal


def test_keep_going_in_text_prints_a_line_per_bad_file(tmp_path: Path) -> None:
    bad, _ = _bad_files(tmp_path)
    missing = str(tmp_path / "missing.jsonl")
    code, out, err = run("audit", GOOD, bad, missing, GOOD2, "--keep-going")
    assert code == 2
    assert GOOD in out and GOOD2 in out
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"ctxproof: {bad}:1: malformed JSON")
    assert lines[1].startswith(f"ctxproof: {missing}: cannot read")
    assert "Traceback" not in err


def test_summary_is_the_last_json_object(tmp_path: Path) -> None:
    bad, _ = _bad_files(tmp_path)
    code, out, _ = run("audit", GOOD, bad, GOOD2, "--format", "json", "--keep-going", "--summary")
    assert code == 2
    last = json.loads(out.splitlines()[-1])
    jsonschema.validate(last, SCHEMA)
    s = last["summary"]
    assert (s["traces"], s["bad_files"], s["rewrites"]) == (3, 1, 3)
    assert s["verdicts"] == {"accept": 1, "refuse": 2}
    assert s["findings_by_rule"] == {"CF003": 1, "CP001": 1, "WR001": 1, "WR004": 1}
    assert s["findings"] == 4 and s["exit"] == 2
    assert s["policies"]["summarize-v2"]["rewrites"] == 3
    assert s["policies"]["(at appends)"]["findings_by_rule"] == {"CP001": 1}


def test_summary_line_on_a_terminal_and_with_summary_in_text() -> None:
    code, out, err = run("audit", GOOD, GOOD2, tty=True)
    assert code == 1
    want = "summary: 2 trace(s); 3 rewrite(s) (accept 1, refuse 2); 4 finding(s)"
    assert want in err and "summary" not in out
    _, _, plain_err = run("audit", GOOD, GOOD2)
    assert "summary" not in plain_err
    _, out, _ = run("audit", GOOD, GOOD2, "--summary")
    assert out.splitlines()[-1].startswith(want) and out.splitlines()[-1].endswith("exit 1")


def test_audit_repair_writes_each_refused_rewrites_window(tmp_path: Path) -> None:
    trace = SCENARIOS / "postgres_rejection_lost.jsonl"
    folder = tmp_path / "repairs"
    code, out, _ = run("audit", str(trace), "--repair", str(folder), "--format", "json")
    assert code == 1
    result = json.loads(out)
    jsonschema.validate(result, SCHEMA)
    assert result["rewrites"][0]["verdict"] == "refuse"
    assert result["rewrites"][0]["repair"]["verdict"] in ("accept", "accept-demoted")
    assert sorted(p.name for p in folder.iterdir()) == [
        "postgres_rejection_lost.pass-1.json",
        "postgres_rejection_lost.pass-1.spill.jsonl",
    ]
    window = json.loads((folder / "postgres_rejection_lost.pass-1.json").read_text("utf-8"))
    assert window["format"] == "ctxproof-window/1"
    spill = json.loads((folder / "postgres_rejection_lost.pass-1.spill.jsonl").read_text("utf-8"))
    assert {it["id"] for it in spill["items"]} == set(result["rewrites"][0]["repair"]["spill"])
    # the repaired trace: the spill before the rewrite, the repaired window in its place
    events = [json.loads(line) for line in trace.read_text("utf-8").splitlines()]
    at = next(i for i, e in enumerate(events) if e["event"] == "rewrite")
    events[at] = {**events[at], "window": window["items"]}
    events.insert(at, spill)
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text("\n".join(json.dumps(e) for e in events) + "\n", "utf-8")
    code, out, _ = run("audit", str(fixed), "--format", "json")
    again = json.loads(out)
    assert again["rewrites"][0]["verdict"] in ("accept", "accept-demoted")
    assert not [f for f in again["findings"] if f["pass"] == 1 and f["line"] == at + 2]


def test_audit_repair_into_a_file_is_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", "utf-8")
    code, out, err = run("audit", GOOD, "--repair", str(blocker / "sub"))
    assert (code, out) == (2, "") and str(blocker) in err and "Traceback" not in err


def test_audit_trace_results_carry_the_repairs() -> None:
    text = (SCENARIOS / "postgres_rejection_lost.jsonl").read_text("utf-8")
    events = [json.loads(x) for x in text.splitlines()]
    report = audit_trace(trace_from_dicts(events))
    refused = [r for r in report.rewrites if r.verdict == "refuse"]
    assert refused and all(r.repair is not None for r in refused)
    repair = refused[0].repair
    assert repair is not None and "rej1" in {it.id for it in repair.spill}
    assert all(it.kind == "stub" for it in repair.window if it.id == "rej1")
    assert audit_trace(trace_from_dicts(events), repair=False).rewrites[0].repair is None
