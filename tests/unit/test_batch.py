"""Batch runs (issue points 3 and 11): audit --keep-going, the closing summary, audit
--repair DIR and the repairs audit_trace carries."""

from __future__ import annotations

import io
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifier
from verifier.audit import audit_trace
from verifier.batch import audit_job, error_from_json, error_json
from verifier.cli import main
from verifier.errors import FormulaError, InputError, StoreError
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


# -- ctxproof window TRACE --pass N --------------------------------------------------------


def test_window_at_a_pass_is_what_the_next_rewrite_starts_from(tmp_path: Path) -> None:
    trace = SCENARIOS / "postgres_rejection_lost.jsonl"
    events = [json.loads(x) for x in trace.read_text("utf-8").splitlines()]
    (rewrite,) = [e for e in events if e["event"] == "rewrite"]
    before = tmp_path / "pass0.json"
    code, out, err = run("window", str(trace), "--pass", "0", "-o", str(before))
    assert code == 0 and str(before) in out and err == ""
    window = json.loads(before.read_text("utf-8"))
    assert window["format"] == "ctxproof-window/1"
    assert window["background"] == events[0]["background"]
    # checking the rewrite against it finds what the audit finds at that rewrite
    after = tmp_path / "after.json"
    after.write_text(json.dumps({**window, "items": rewrite["window"]}), "utf-8")
    code, out, _ = run("check", str(before), str(after), "--format", "json")
    audited = json.loads(run("audit", str(trace), "--format", "json")[1])
    at_rewrite = [f["code"] for f in audited["findings"] if f["line"] == 4]
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == at_rewrite


def test_window_after_a_rewrite_names_what_it_cites_but_dropped(tmp_path: Path) -> None:
    trace = SCENARIOS / "tests_passed_loses_run.jsonl"
    events = [json.loads(x) for x in trace.read_text("utf-8").splitlines()]
    rewrites = [e for e in events if e["event"] == "rewrite"]
    code, out, err = run("window", str(trace), "--pass", "1")
    assert code == 0
    assert [it["id"] for it in json.loads(out)["items"]] == [
        it["id"] for it in rewrites[0]["window"]
    ]
    assert "'o3'" in err and "dropped earlier" in err


def test_window_at_pass_0_and_to_stdout() -> None:
    trace = SCENARIOS / "postgres_rejection_lost.jsonl"
    code, out, _ = run("window", str(trace), "--pass", "0")
    assert code == 0
    ids = [it["id"] for it in json.loads(out)["items"]]
    assert ids == ["why1", "d1", "rej1", "p41", "p50"]


def test_window_past_the_last_pass_or_of_a_window_file_is_exit_2(tmp_path: Path) -> None:
    trace = str(SCENARIOS / "postgres_rejection_lost.jsonl")
    code, out, err = run("window", trace, "--pass", "5")
    assert (code, out) == (2, "") and "the trace has 1 pass(es)" in err and "0 to 1" in err
    window = tmp_path / "w.json"
    window.write_text('{"format": "ctxproof-window/1", "items": []}', "utf-8")
    code, out, err = run("window", str(window), "--pass", "0")
    assert (code, out) == (2, "") and "this is a window file" in err
    assert "Traceback" not in err


def test_window_names_stubs_for_items_the_trace_spills(tmp_path: Path) -> None:
    rej = {"id": "r1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"}
    from verifier.io import item_from_json

    ref = item_from_json(rej).ref
    events = [
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [rej]},
        {"event": "spill", "items": [rej]},
        {"event": "rewrite", "window": [{"id": "r1", "kind": "stub", "ref": ref}]},
    ]
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\n", "utf-8")
    code, out, err = run("window", str(trace), "--pass", "1")
    assert code == 0 and json.loads(out)["items"] == [{"id": "r1", "kind": "stub", "ref": ref}]
    assert "'r1'" in err and "store" in err


# -- --jobs is never slower than one process on small traces (issue point 4) ----------------


def test_a_small_batch_with_jobs_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifier import batch

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker pool was started for a small batch")

    traces = sorted(str(p) for p in SCENARIOS.glob("*.jsonl"))
    one = run("audit", *traces, "--format", "json", "--jobs", "1")
    monkeypatch.setattr(batch, "ProcessPoolExecutor", no_pool)
    assert run("audit", *traces, "--format", "json", "--jobs", "8") == one


def test_a_large_batch_goes_to_workers_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifier import batch

    started: list[int] = []
    chunks: list[int] = []
    sent: list[object] = []
    class Pool(ProcessPoolExecutor):
        def __init__(self, max_workers: int) -> None:
            started.append(max_workers)
            super().__init__(max_workers=max_workers)

        def map(self, fn, *iterables, timeout=None, chunksize=1):  # type: ignore[no-untyped-def]
            chunks.append(chunksize)
            sent.append(fn)
            return super().map(fn, *iterables, timeout=timeout, chunksize=chunksize)

    traces = sorted(str(p) for p in SCENARIOS.glob("*.jsonl")) * 3
    one = run("audit", *traces, "--format", "json", "--jobs", "1")
    monkeypatch.setattr(batch, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(batch, "PARALLEL_MIN_BYTES", 0)
    assert run("audit", *traces, "--format", "json", "--jobs", "2") == one
    assert started == [2]  # started once for the whole batch
    assert chunks == [2]  # 12 traces, 2 workers: a few chunks each, not one trace at a time
    assert sent == [batch.audit_job]  # the worker function Ray runs too (test_distributed)


# -- the batch layer: a job's outcome crosses processes as JSON ------------------------------

_TEXTS = st.text(max_size=20)


@given(
    message=_TEXTS,
    file=st.none() | _TEXTS,
    line=st.none() | st.integers(min_value=1, max_value=10**6),
    item=st.none() | _TEXTS,
    fix=st.none() | _TEXTS,
    formula=st.booleans(),
)
def test_an_input_error_crosses_as_json_and_comes_back_the_same(
    message: str, file: str | None, line: int | None, item: str | None, fix: str | None,
    formula: bool,
) -> None:
    kind = FormulaError if formula else InputError
    exc = kind(message, file=file, line=line, item=item, fix=fix)
    sent = error_json(exc)
    back = error_from_json(json.loads(json.dumps(sent)))
    assert isinstance(back, InputError) and sent["text"] == exc.render() == back.render()
    assert (back.message, back.file, back.line, back.item, back.fix) == (
        message, file, line, item, fix
    )


@given(_TEXTS)
def test_a_store_error_crosses_as_json_and_comes_back_the_same(message: str) -> None:
    sent = error_json(StoreError(message))
    back = error_from_json(json.loads(json.dumps(sent)))
    assert isinstance(back, StoreError) and str(back) == message
    assert sent["text"] == f"store error: {message}"


def test_the_worker_returns_bad_input_and_never_raises_it(tmp_path: Path) -> None:
    good = audit_job((GOOD, Path(GOOD).read_bytes(), None, "support", False, False))
    assert set(good) == {"result"} and good["result"]["trace"] == GOOD
    bad = audit_job(("bad.jsonl", b'{"event": "header"}\n', None, "support", False, False))
    assert set(bad) == {"error"} and bad["error"]["kind"] == "input"
    assert bad["error"]["text"].startswith("bad.jsonl:1: ")
    gone = audit_job((GOOD, b"", str(tmp_path / "no.sqlite"), "support", False, False))
    assert set(gone) == {"error"} and gone["error"]["kind"] == "store"
