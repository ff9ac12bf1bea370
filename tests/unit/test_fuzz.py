"""ctxproof fuzz: each unsafe model is caught with its rule, safe ones are not, output is stable."""

from __future__ import annotations

import io
import json
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from verifier.audit import audit_trace
from verifier.cli import main
from verifier.fuzz import (
    BACKGROUND,
    FuzzReport,
    Plan,
    Step,
    Turn,
    fuzz,
    run_session,
    scorecard_text,
    session_plans,
    session_shapes,
    write_outputs,
)
from verifier.io import parse_trace_text
from verifier.policies import Policy, load_policy, pressure_of
from verifier.strategies import sessions_of, windows_under_pressure

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models" / "policies"


def model(name: str) -> Policy:
    return load_policy(f"{MODELS / name}.py:{name}")


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def quick(policy: Policy, out: Path, **kw: Any) -> FuzzReport:
    options: dict[str, Any] = {"sessions": 15, "passes": 6, "shrink_calls": 40, **kw}
    return fuzz(policy, out_dir=out, **options)


CHARACTERISTIC = {
    "naive_summarizer": "CF001",
    "keep_recent": "CF001",
    "relevance_eviction": "WR008",
    "digest_of_digests": "CF007",
    "paraphraser": "WR004",
    "pressure_pruner": "CF001",
    "tool_output_clearer": "WR008",
}


FAST_MODELS = ("paraphraser",)
"""The model fuzzed in the fast tier (it catches its rule in a few seconds); the others are
fuzzed in the long tier (make test-slow), and each model's defect is shown rewrite by
rewrite in test_policy_models.py."""


@pytest.mark.parametrize(
    "name",
    [
        n if n in FAST_MODELS else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(CHARACTERISTIC)
    ],
)
def test_an_unsafe_model_is_caught_and_its_counterexample_replays(
    name: str, tmp_path: Path
) -> None:
    report = quick(model(name), tmp_path)
    code = CHARACTERISTIC[name]
    assert code in report.findings_by_rule, report.findings_by_rule
    assert report.exit_code == 1
    by_code = {c.code: c for c in report.counterexamples}
    assert set(by_code) == set(report.findings_by_rule)
    for cex in report.counterexamples:
        replay = audit_trace(parse_trace_text(Path(cex.path).read_bytes(), cex.path))
        found = {(f.code, f.pass_, f.items) for f in replay.findings}
        assert (cex.code, cex.pass_, cex.items) in found


def test_counterexamples_of_count_mode_say_how_audit_replays_them(tmp_path: Path) -> None:
    """audit's default witness mode is support: the scorecard names the mode the
    counterexamples were found in, and audit in it finds each one again."""
    report = quick(model("keep_recent"), tmp_path, sessions=4, passes=3, mode="count")
    assert report.counterexamples
    text = "\n".join(scorecard_text(report, []))
    for cex in report.counterexamples:
        assert f"    audit: ctxproof audit {cex.path} --witness-mode count" in text
        trace = parse_trace_text(Path(cex.path).read_bytes(), cex.path)
        found = {(f.code, f.pass_, f.items) for f in audit_trace(trace, mode="count").findings}
        assert (cex.code, cex.pass_, cex.items) in found
    plain = replace(report, mode="support")
    assert "    audit: " not in "\n".join(scorecard_text(plain, []))


def test_a_finding_played_again_without_it_keeps_its_session_unshrunk(tmp_path: Path) -> None:
    """A policy that drops the oldest item for its first 40 calls (each rewrite calls it
    twice, alike) and keeps everything after: playing a session again does not show what
    it showed, and its counterexample is the session as explored, which audit replays."""
    calls = [0]

    def tires(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        calls[0] += 1
        return window[1:] if calls[0] <= 40 else window

    report = fuzz(tires, sessions=6, passes=3, out_dir=tmp_path, card=False, policy_timeout=None)
    assert report.unshrunk and "PL002" not in report.findings_by_rule
    assert {c.code for c in report.counterexamples} == set(report.findings_by_rule)
    for cex in report.counterexamples:
        trace = parse_trace_text(Path(cex.path).read_bytes(), cex.path)
        found = {(f.code, f.pass_, f.items) for f in audit_trace(trace).findings}
        assert (cex.code, cex.pass_, cex.items) in found
    text = "\n".join(scorecard_text(report, []))
    assert f"  unshrunk: {tmp_path / 'cex-'}" in text and "    not shrunk: " in text


def test_relevance_eviction_makes_the_agent_run_a_failure_again(tmp_path: Path) -> None:
    report = quick(model("relevance_eviction"), tmp_path, sessions=3)
    cex = next(c for c in report.counterexamples if c.code == "CP003")
    text = Path(cex.path).read_text("utf-8")
    # the re-run appends the same source whose failed result a rewrite evicted
    assert len(cex.items) >= 2 and cex.items[1] in text


@pytest.mark.slow  # the rewrite-level threshold: test_policy_models.py, in the fast tier
def test_the_pressure_pruner_fails_under_load(tmp_path: Path) -> None:
    report = quick(model("pressure_pruner"), tmp_path, sessions=25)
    low = [n for p, n in report.pressures if p < 1.5]
    high = [n for p, n in report.pressures if p >= 2.0]
    assert low and high
    assert sum(high) / len(high) > 2 * (sum(low) / len(low))


@pytest.mark.parametrize("name", ["spill_first", "summarize_with_spill"])
def test_a_safe_model_survives(name: str, tmp_path: Path) -> None:
    report = fuzz(model(name), sessions=50, passes=15, out_dir=tmp_path)
    assert report.findings_by_rule == {}
    assert report.rewrites > 300  # the sessions did put it under pressure
    assert report.tokens_after < report.tokens_before
    assert report.exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["spill_first", "summarize_with_spill"])
def test_a_safe_model_survives_500_sessions_of_30_passes(name: str, tmp_path: Path) -> None:
    code, out, err = run(
        "fuzz", f"{MODELS / name}.py:{name}", "--sessions", "500", "--passes", "30",
        "--jobs", "2", "--out", str(tmp_path), "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["findings_by_rule"] == {}


def test_a_spec_is_fuzzed_like_a_python_policy(tmp_path: Path) -> None:
    spec = ROOT / "models" / "specs" / "spill_first.toml"
    code, out, err = run("fuzz", str(spec), "--sessions", "10", "--out", str(tmp_path))
    assert code == 0, err
    assert "no findings" in out


def test_same_seed_same_output_and_jobs_agree(tmp_path: Path) -> None:
    outs = []
    for i, jobs in enumerate(("1", "1", "2")):
        code, out, err = run(
            "fuzz", f"{MODELS / 'keep_recent'}.py:keep_recent", "--sessions", "20",
            "--passes", "4", "--seed", "7", "--jobs", jobs, "--out", str(tmp_path / str(i)),
            "--format", "json",
        )  # fmt: skip
        assert code == 1, err
        result = json.loads(out)
        result.pop("seconds")
        for cex in result["counterexamples"]:
            cex["trace"] = Path(cex.pop("path")).read_text("utf-8")
        outs.append(result)
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["sessions"] == 20


def test_the_scorecard_and_the_plot_are_written(tmp_path: Path) -> None:
    code, out, err = run(
        "fuzz", f"{MODELS / 'paraphraser'}.py:paraphraser", "--sessions", "10",
        "--passes", "4", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 1, err
    card = json.loads((tmp_path / "scorecard.json").read_text("utf-8"))
    assert set(card) >= {
        "policy", "sessions", "rewrites", "seed", "findings_by_rule", "counterexamples",
        "tokens_before", "tokens_after", "seconds", "by_pressure", "shapes",
    }  # fmt: skip
    shapes = card["shapes"]
    assert shapes["system_prompts"] == 10  # one a session
    assert shapes["calls"] >= shapes["call_groups"] > 0
    assert shapes["calls_per_group"] == round(shapes["calls"] / shapes["call_groups"], 3)
    assert 0 <= shapes["results_out_of_order"] <= shapes["results"]
    assert "calls per turn" in out and "results out of order" in out
    assert (tmp_path / "pressure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "WR004 negative-laundered" in out and "tokens" in out


def _write_policy(tmp_path: Path, body: str, name: str = "pol.py") -> str:
    path = tmp_path / name
    path.write_text(body, "utf-8")
    return f"{path}:policy"


def _fuzz_card(arg: str, out: Path, *options: str) -> tuple[int, str, str, dict[str, Any]]:
    """``ctxproof fuzz ARG OPTIONS --out OUT``: its exit code, stdout, stderr and scorecard."""
    code, text, err = run("fuzz", arg, *options, "--out", str(out))
    return code, text, err, json.loads((out / "scorecard.json").read_text("utf-8"))


def test_a_policy_that_raises_is_pl001_with_a_shrunk_session(tmp_path: Path) -> None:
    arg = _write_policy(
        tmp_path,
        "def policy(window, budget):\n"
        "    if any(it.get('kind') == 'commitment' for it in window):\n"
        "        raise RuntimeError('cannot summarize commitments')\n"
        "    return window[len(window) // 2:]\n",
    )
    report = quick(load_policy(arg), tmp_path / "out")
    assert "PL001" in report.findings_by_rule
    cex = next(c for c in report.counterexamples if c.code == "PL001")
    lines = Path(cex.path).read_text("utf-8").splitlines()
    assert len(lines) <= 8
    # the trace ends where the policy failed: its pass is the rewrite the trace lacks
    assert cex.pass_ == sum('"event": "rewrite"' in line for line in lines) + 1
    assert '"commitment"' in lines[-1]


@pytest.mark.parametrize(
    "new",
    [
        {"kind": "commitment", "type": "decision", "rationale": ["ghost"]},
        {"kind": "claim", "witnesses": ["ghost"]},
        {"kind": "claim", "derived_from": ["ghost"]},
        {"kind": "claim", "covers": ["ghost"]},
        {"kind": "prose", "call": "ghost"},
    ],
)
def test_a_policy_citing_an_id_defined_nowhere_is_pl001(
    tmp_path: Path, new: dict[str, Any]
) -> None:
    """Its output would be bad input in a trace: the run reports it (exit 1, counterexample
    written), and never stops on it (exit 2, nothing written)."""
    arg = _write_policy(
        tmp_path,
        "def policy(window, budget):\n"
        f"    return window[len(window) // 2:] + [{{'id': 'p-new', **{new!r}}}]\n",
    )
    out_dir = str(tmp_path / "o")
    code, out, err = run("fuzz", arg, "--sessions", "3", "--passes", "2", "--out", out_dir)
    assert code == 1, err
    card = json.loads((tmp_path / "o" / "scorecard.json").read_text("utf-8"))
    assert set(card["findings_by_rule"]) == {"PL001"}
    cex = card["counterexamples"][0]
    assert cex["items"] == ["p-new", "ghost"] and "which no event defines" in cex["message"]
    # the counterexample is a valid trace: it ends before the rewrite that cited it
    assert run("audit", cex["path"])[0] == 0
    assert "PL001 policy-error" in out


def test_claiming_an_id_dropped_earlier_is_cf006_and_one_defined_nowhere_is_pl001(
    tmp_path: Path,
) -> None:
    """An id the session defined and an earlier rewrite dropped is known to the trace:
    claiming it preserved is CF006, as ``audit`` of the same rewrite says; an id no event
    defines would be bad input in a trace, so claiming it is the policy's PL001."""
    seen = _write_policy(
        tmp_path,
        "def policy(window, budget, *, ages):\n"
        "    kept = window[len(window) // 2:]\n"
        "    gone = sorted(set(ages) - {i['id'] for i in window})\n"
        "    return {'window': kept, 'claimed_preserved': [i['id'] for i in kept] + gone}\n",
        name="seen.py",
    )
    code, _out, err, card = _fuzz_card(seen, tmp_path / "a", "--sessions", "4", "--passes", "3")
    assert code == 1 and "CF006" in card["findings_by_rule"], err
    assert "PL001" not in card["findings_by_rule"]
    cex = next(c for c in card["counterexamples"] if c["code"] == "CF006")
    replayed = json.loads(run("audit", cex["path"], "--format", "json")[1])
    assert next(f["items"] for f in replayed["findings"] if f["code"] == "CF006") == cex["items"]
    ghost = _write_policy(
        tmp_path,
        "def policy(window, budget):\n"
        "    return {'window': window[1:], 'claimed_preserved': ['ghost']}\n",
        name="ghost.py",
    )
    code, _out, err, card = _fuzz_card(ghost, tmp_path / "b", "--sessions", "2", "--passes", "2")
    assert code == 1 and set(card["findings_by_rule"]) == {"PL001"}, err
    assert card["counterexamples"][0]["items"] == ["ghost"]


def test_checks_left_undecided_are_exit_3_never_a_clean_run(tmp_path: Path) -> None:
    """A solver budget too small to decide: the fabricating policy is never called safe
    (exit 0, "no findings"); the run says how many checks were left undecided and exits 3,
    while with the default budget the same run finds CF005."""
    arg = _write_policy(
        tmp_path,
        "def policy(window, budget):\n"
        "    if any(i['id'] == 'fab' for i in window):\n"
        "        return window\n"
        "    return window + [{'id': 'fab', 'kind': 'claim', 'formula': 'deploy.done'}]\n",
    )
    common = ["--sessions", "3", "--passes", "2", "--seed", "1"]
    code, out, err, card = _fuzz_card(arg, tmp_path / "u", *common, "--rlimit", "1")
    assert code == 3, err
    assert card["findings_by_rule"] == {} and card["undecided"] > 0
    assert f"undecided: {card['undecided']} check(s)" in out
    assert "no findings, and not all decided" in out
    code, out, err, card = _fuzz_card(arg, tmp_path / "d", *common)
    assert code == 1 and "CF005" in card["findings_by_rule"], err
    assert card["undecided"] == 0 and "  undecided:" not in out


def test_a_random_policy_is_pl002(tmp_path: Path) -> None:
    arg = _write_policy(
        tmp_path,
        "import random\n"
        "def policy(window, budget):\n"
        "    return random.sample(window, len(window) // 2)\n",
    )
    report = quick(load_policy(arg), tmp_path / "out")
    assert "PL002" in report.findings_by_rule


def test_bad_policy_arguments_are_exit_2(tmp_path: Path) -> None:
    assert run("fuzz", str(tmp_path / "missing.py:f"))[0] == 2
    assert run("fuzz", "no_such_module_anywhere:f")[0] == 2
    arg = _write_policy(tmp_path, "def other(window, budget):\n    return window\n")
    code, _, err = run("fuzz", arg)
    assert code == 2 and "policy" in err


# -- what the simulated agent generates ----------------------------------------------------------


def _seen(plans: list[Plan]) -> dict[str, set[Any]]:
    seen: dict[str, set[Any]] = {"kind": set(), "type": set(), "modality": set(), "field": set()}
    for plan in plans:
        res = run_session(model("spill_first"), plan, passes=6)
        for ev in res.trace[1:]:
            for it in ev.get("items") or ev.get("window") or []:
                seen["kind"].add(it["kind"])
                seen["type"].add(it.get("type"))
                seen["modality"].add(it.get("modality"))
                seen["field"].update(k for k, v in it.items() if v not in (None, [], ""))
                if it.get("source") == "user":
                    seen["field"].add("user instruction")
                if it.get("exit_code"):
                    seen["field"].add("non-zero exit code")
    return seen


def test_sessions_hold_every_kind_of_item_and_link() -> None:
    plans: list[Plan] = []

    @settings(max_examples=40, database=None, derandomize=True)
    @given(session_plans(passes=6))
    def collect(plan: Plan) -> None:
        plans.append(plan)

    collect()
    seen = _seen(plans)
    assert seen["kind"] == {"commitment", "claim", "observation", "prose", "stub"}
    assert {"decision", "rejection", "invariant", "obligation"} <= seen["type"]
    assert {"verified", "failed", "unverified"} <= seen["modality"]
    assert {
        "rationale", "witnesses", "derived_from", "covers", "call", "source", "exit_code",
        "content", "score", "load_bearing", "ref", "user instruction", "non-zero exit code",
    } <= seen["field"]  # fmt: skip


def _plan(*steps: Step, budget: int = 400) -> Plan:
    return Plan(budget, (False,) * 10, (Turn(tuple(steps)),))


def _appended(plan: Plan) -> list[dict[str, Any]]:
    """The items of the opening and of the plan's first turn (the agent alone)."""
    res = run_session(load_policy("verifier.fuzz:keep_everything"), plan, passes=1)
    assert res.findings == []
    opening, turn = [ev for ev in res.trace if ev["event"] == "append"][:2]
    return [*opening["items"], *turn["items"]]


def test_a_session_opens_with_the_system_prompt_and_the_users_task() -> None:
    first, second, *_ = _appended(_plan(Step("prose")))
    assert (first["kind"], first["source"]) == ("observation", "system")
    assert (second["source"], second["shows"]) == ("user", "user.task")


def test_one_turn_issues_parallel_calls_whose_results_arrive_out_of_order() -> None:
    # three calls (a=1), results rotated by b % 3 = 1, the first to arrive deferred (flag)
    # past the next step's note
    items = _appended(_plan(Step("parallel", a=1, b=1, flag=True, size=8), Step("prose")))
    ids = [it["id"] for it in items[2:]]
    calls = ids[:3]
    assert all(i.startswith("call") for i in calls)
    results = [it for it in items if "call" in it]
    # they arrive as calls[1], calls[2], calls[0]; calls[1]'s is deferred past the note
    assert [r["id"] for r in results] == [f"{c}:result" for c in (calls[2], calls[0], calls[1])]
    assert [r["source"] for r in results] == [
        "bash: npm run build",
        "bash: pip install -r requirements.txt",
        "bash: make migrate",
    ]
    note = next(i for i in ids if i.startswith("p"))
    assert ids.index(note) == 5 and ids.index(f"{calls[1]}:result") == 6
    shapes = session_shapes([{"event": "append", "items": items}])
    assert shapes["parallel_groups"] == 1 and shapes["max_calls_per_group"] == 3
    assert shapes["results_out_of_order"] == 2  # both arrive after calls[2]'s
    assert shapes["results_apart"] == 2 and shapes["items_between"] == 0 + 3 + 4


def test_calls_one_at_a_time_are_neither_parallel_nor_out_of_order() -> None:
    items = _appended(_plan(Step("tool", a=0), Step("tool", a=1), Step("tool", a=2)))
    shapes = session_shapes([{"event": "append", "items": items}])
    assert (shapes["call_groups"], shapes["calls"], shapes["parallel_groups"]) == (3, 3, 0)
    assert shapes["results_out_of_order"] == shapes["results_apart"] == 0


def test_a_failing_command_is_fixed_and_run_again() -> None:
    items = _appended(_plan(Step("tool", a=0), Step("fix"), Step("tool", a=0)))
    runs = [it for it in items if it.get("source") == "bash: make test"]
    assert [r["modality"] for r in runs] == ["failed", "verified", "verified"]
    assert [r["exit_code"] for r in runs] == [1, 0, 0]
    assert "Exit code 1" in runs[0]["content"]
    edits = [it for it in items if str(it.get("source", "")).startswith("edit: ")]
    assert len(edits) == 1 and items.index(edits[0]) < items.index(runs[1])
    assert session_shapes([{"event": "append", "items": items}])["retries_after_fix"] == 1


def test_no_fix_while_the_agent_sees_a_claim_drawn_from_the_failure() -> None:
    # the failed-claim would be contradicted by the passing run: the agent does not fix
    items = _appended(_plan(Step("tool", a=0), Step("claim", a=1, b=1), Step("fix")))
    claim = next(it for it in items if it["kind"] == "claim")
    assert claim["formula"] == "(!tests.pass)" and claim["modality"] == "failed"
    assert not any(str(it.get("source", "")).startswith("edit: ") for it in items)
    assert [it.get("modality") for it in items if it.get("source") == "bash: make test"] == [
        "failed"
    ]


def test_a_user_constraint_is_the_reason_of_the_later_decision() -> None:
    world_says_first = Plan(400, (False,) * 6 + (True,) * 4, ())
    plan = Plan(
        world_says_first.budget,
        world_says_first.world,
        (Turn((Step("instruct", a=0, flag=True), Step("prose"), Step("decide", a=0))),),
    )
    items = _appended(plan)
    asked = next(it for it in items if str(it.get("shows", "")).startswith("user.requires."))
    assert asked["shows"] == "user.requires.db.postgres"
    decision = next(it for it in items if it.get("type") == "decision")
    assert decision["formula"] == "db.postgres"
    assert decision["rationale"] == [asked["id"]]
    assert "user.requires.db.postgres -> db.postgres" in BACKGROUND


def test_a_seen_constraint_keeps_the_agent_from_readopting_against_it() -> None:
    """The agent re-adopts a rejected option it no longer sees rejected, unless it sees the
    user's instruction about that choice."""
    forget = load_policy(f"{MODELS / 'keep_recent'}.py:keep_recent")
    steps = (Step("reject", a=0, size=4), Step("prose", size=30), Step("readopt"))
    for constrained, expected in ((False, True), (True, False)):
        first = (Step("instruct", a=0, flag=True, size=4),) if constrained else ()
        # the instruction comes after the rejection's eviction: keep_recent drops the oldest
        plan = Plan(60, (True,) * 10, (Turn(steps[:2]), Turn((*first, *steps[2:]))))
        res = run_session(forget, plan, passes=3)
        appended = [it for ev in res.trace if ev["event"] == "append" for it in ev["items"]]
        readopted = [it for it in appended if it.get("formula") == "db.mysql"]
        assert bool(readopted) is expected, appended


def _nearest_call_cutoff(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """A suffix that fits; when it starts on results, it moves back to the nearest call of
    one of them (a cut that is safe for one call at a time, and not for parallel calls)."""
    sizes = [int(it.get("tokens", 1)) for it in window]
    start, total = len(window), 0
    while start > 0 and total + sizes[start - 1] <= budget:
        start -= 1
        total += sizes[start]
    if start < len(window) and "call" in window[start]:
        answered = set()
        end = start
        while end < len(window) and "call" in window[end]:
            answered.add(window[end]["call"])
            end += 1
        start = next((i for i in range(start - 1, -1, -1) if window[i]["id"] in answered), end)
    return window[start:]


def test_a_defect_that_only_parallel_calls_show_is_found_and_shrunk(tmp_path: Path) -> None:
    from verifier.policies.loading import as_policy

    report = fuzz(
        as_policy(_nearest_call_cutoff), sessions=40, passes=6, out_dir=tmp_path,
        shrink_calls=120,
    )  # fmt: skip
    assert "TP001" in report.findings_by_rule
    cex = next(c for c in report.counterexamples if c.code == "TP001")
    lines = Path(cex.path).read_text("utf-8").splitlines()
    assert len(lines) <= 6, lines  # shrunk: the opening, a turn or two, the rewrite
    _orphan, call = cex.items
    trace = [json.loads(line) for line in lines]
    appended = [it for ev in trace if ev["event"] == "append" for it in ev["items"]]
    # the orphan's call was issued in one group with another call, before both results
    ids = [it["id"] for it in appended]
    group = ids[ids.index(call) - 1 : ids.index(call) + 2]
    assert sum(1 for i in group if i.startswith("call") and ":" not in i) >= 2, ids


@settings(max_examples=30, deadline=None)
@given(session_plans(passes=4))
def test_the_agent_alone_never_makes_a_finding(plan: Plan) -> None:
    """With a policy that keeps everything it is given (by spilling nothing and dropping
    nothing) every finding would be the agent's own: there must be none."""
    keep = load_policy("verifier.fuzz:keep_everything")
    res = run_session(keep, plan, passes=4)
    assert res.findings == [], [(f.code, f.items, f.message) for f in res.findings]


# -- the strategies users get --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(windows_under_pressure(pressure=(1.5, 2.5)))
def test_windows_under_pressure_are_under_that_pressure(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], int],
) -> None:
    window, _, budget = case
    assert 1.5 - 0.05 <= pressure_of(window, budget) <= 2.5 + 0.5  # floor of the budget


@settings(max_examples=15, deadline=None)
@given(sessions_of(f"{MODELS / 'keep_recent'}.py:keep_recent", passes=4, pressure=(2.0, 3.0)))
def test_sessions_of_a_policy_are_audited_sessions(session: Any) -> None:
    assert session.trace[0]["event"] == "header"
    for pressure, _ in session.pressures:
        assert 1.0 < pressure <= 3.0


def test_the_scorecard_says_what_shrinking_took(tmp_path: Path) -> None:
    """Shrinking is bounded by a count of sessions played per rule (the same seed gives the
    same counterexample); the scorecard gives the sessions played and the seconds, in all
    and by rule, and whether a rule's shrinking reached the bound."""
    report = quick(model("keep_recent"), tmp_path, shrink_calls=6)
    write_outputs(report, tmp_path)
    card = json.loads((tmp_path / "scorecard.json").read_text("utf-8"))
    shrinking = card["shrinking"]
    assert shrinking["limit_per_rule"] == 6
    assert set(shrinking["by_rule"]) == set(report.findings_by_rule)
    assert shrinking["plays"] == sum(s["plays"] for s in shrinking["by_rule"].values())
    assert all(0 < s["plays"] <= 6 for s in shrinking["by_rule"].values())
    assert any(s["bounded"] for s in shrinking["by_rule"].values())
    assert shrinking["seconds"] >= max(s["seconds"] for s in shrinking["by_rule"].values())
    # a bound this tight still gives counterexamples that replay
    for cex in report.counterexamples:
        replay = audit_trace(parse_trace_text(Path(cex.path).read_bytes(), cex.path))
        found = {(f.code, f.pass_, f.items) for f in replay.findings}
        assert (cex.code, cex.pass_, cex.items) in found


def _swells(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    return [{"id": f"x{i}", "kind": "prose", "tokens": 1} for i in range(1000)]


def test_shrinking_holds_no_more_memory_the_more_candidates_it_plays(tmp_path: Path) -> None:
    """Found by the long tier: every candidate that showed the rule stayed in memory until
    the search ended (hypothesis keeps each failing example's exception, which held the
    session), so a policy returning thousands of items took the harness past 256 MB."""

    def peak(calls: int) -> float:
        tracemalloc.start()
        try:
            report = fuzz(
                _swells,
                sessions=2,
                passes=1,
                out_dir=tmp_path / str(calls),
                policy_timeout=None,
                shrink_calls=calls,
            )
            assert report.shrinking["plays"] >= calls - 1
            return tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()

    peak(2)  # what a run loads once
    few, many = peak(5), peak(30)
    assert many < few + 2.5, (few, many)


def test_the_agent_sees_through_a_stub_only_to_the_item_of_its_own_id() -> None:
    """A stub stands for the stored item with its id; one whose ref names another stored
    item is unresolvable, so the agent cannot retrieve anything through it."""
    from verifier.fuzz import Plan, _Agent, keep_everything
    from verifier.io import ref_of

    stored = {"id": "o1", "kind": "observation", "source": "make test", "modality": "failed"}
    ref = ref_of(stored)
    policy = Policy("keep", keep_everything)
    agent = _Agent(Plan(100, (True,), ()), policy, 1, "support")
    agent.stored[ref] = stored
    agent.window = [{"id": "o1", "kind": "stub", "ref": ref}]
    assert agent.visible() == [stored]
    agent.window = [{"id": "p9", "kind": "stub", "ref": ref}]
    assert agent.visible() == []
    # a stub of a stub stands for the item its chain ends at (the checks follow it too)
    inner = {"id": "o1", "kind": "stub", "ref": ref}
    agent.stored[ref_of(inner)] = inner
    agent.window = [{"id": "o1", "kind": "stub", "ref": ref_of(inner)}]
    assert agent.visible() == [stored]
    # a chain that comes round stands for nothing
    looped = {"id": "o2", "kind": "stub", "ref": "sha256:" + "0" * 64}
    agent.stored = {looped["ref"]: looped}
    agent.window = [looped]
    assert agent.visible() == []


def test_text_output_gives_each_rules_finding_as_audit_reports_it(tmp_path: Path) -> None:
    """The scorecard gives, for each rule found, its first finding in the shrunk trace as
    a line of its own, ``TRACE:LINE: pass N: CODE name [ID,...]: message``: the very
    line ``audit`` prints for that trace; the JSON names the line too."""
    policy = tmp_path / "drop.py"
    policy.write_text("def compact(window, budget):\n    return []\n", "utf-8")
    args = ["fuzz", f"{policy}:compact", "--sessions", "3", "--passes", "2"]
    code, out, _ = run(*args, "--out", str(tmp_path / "o"))
    assert code == 1
    shown = [line for line in out.splitlines() if line.startswith(str(tmp_path / "o"))]
    assert shown and all(":" in line for line in shown)
    for line in shown:
        trace = line.split(":", 1)[0]
        _, audited, _ = run("audit", trace)
        assert line in audited.splitlines()
    _, js, _ = run(*args, "--out", str(tmp_path / "j"), "--format", "json")
    for cex in json.loads(js)["counterexamples"]:
        _, audited, _ = run("audit", cex["path"])
        assert f"{cex['path']}:{cex['line']}: pass {cex['pass']}: {cex['code']} " in audited
