"""ctxproof fuzz: each unsafe model is caught with its rule, safe ones are not, output is stable."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from verifier.audit import audit_trace
from verifier.cli import main
from verifier.fuzz import FuzzReport, Plan, fuzz, run_session, session_plans
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


@pytest.mark.parametrize("name", sorted(CHARACTERISTIC))
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


def test_relevance_eviction_makes_the_agent_run_a_failure_again(tmp_path: Path) -> None:
    report = quick(model("relevance_eviction"), tmp_path, sessions=25)
    cex = next(c for c in report.counterexamples if c.code == "CP003")
    text = Path(cex.path).read_text("utf-8")
    # the re-run appends the same source whose failed result a rewrite evicted
    assert len(cex.items) >= 2 and cex.items[1] in text


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
        "tokens_before", "tokens_after", "seconds", "by_pressure",
    }  # fmt: skip
    assert (tmp_path / "pressure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "WR004 negative-laundered" in out and "tokens" in out


def _write_policy(tmp_path: Path, body: str) -> str:
    path = tmp_path / "pol.py"
    path.write_text(body, "utf-8")
    return f"{path}:policy"


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
