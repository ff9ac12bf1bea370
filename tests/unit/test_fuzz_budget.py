"""Over-budget rewrites are counted and shown; --require-fit makes each one PL004 (issue 24,
friction 2: a policy that keeps everything, or grows the window, passed as "safe")."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.cli import main
from verifier.fuzz import (
    fuzz,
    keep_everything,
    run_session,
    scorecard_text,
    session_plans,
)
from verifier.io import parse_trace_text
from verifier.policies import item_tokens
from verifier.policies.loading import as_policy
from verifier.pressure import summarize_pressure

Obj = dict[str, Any]

pytest_plugins = ["pytester"]


def grow(window: list[Obj], budget: int) -> list[Obj]:
    """Adds a 1,000-token item at every rewrite."""
    return [*window, {"id": f"big{len(window)}", "kind": "prose", "tokens": 1000}]


def newest_that_fit(window: list[Obj], budget: int) -> list[Obj]:
    """Drops the oldest items until the window fits (unsafe, but always within budget)."""
    kept: list[Obj] = []
    used = 0
    for item in reversed(window):
        if used + item_tokens(item) > budget:
            break
        kept.append(item)
        used += item_tokens(item)
    return list(reversed(kept))


def _text(report: Any) -> str:
    return "\n".join(scorecard_text(report, summarize_pressure(report.pressures)))


def test_keeping_everything_is_counted_over_budget_and_warned(tmp_path: Path) -> None:
    report = fuzz(keep_everything, sessions=4, passes=3, out_dir=tmp_path)
    assert report.rewrites > 0 and report.findings_by_rule == {}
    assert report.over_budget == report.rewrites  # every rewrite left it over budget
    assert report.saves_nothing and report.exit_code == 0
    assert report.to_json()["over_budget"] == report.rewrites
    text = _text(report)
    assert "warning: the policy saves nothing" in text
    assert f"over budget: {report.rewrites} of {report.rewrites} rewrite(s)" in text
    assert "--require-fit makes each PL004" in text


def test_a_policy_that_grows_the_window_is_warned_about(tmp_path: Path) -> None:
    report = fuzz(grow, sessions=4, passes=3, out_dir=tmp_path)
    assert report.tokens_after > report.tokens_before
    assert report.saves_nothing and "saves nothing" in _text(report)


def test_a_policy_that_fits_is_neither_counted_nor_warned(tmp_path: Path) -> None:
    report = fuzz(newest_that_fit, sessions=2, passes=3, out_dir=tmp_path, require_fit=True)
    assert report.rewrites > 0 and report.over_budget == 0
    assert "PL004" not in report.findings_by_rule
    assert not report.saves_nothing
    text = _text(report)
    assert "saves nothing" not in text and "over budget" not in text


def test_require_fit_makes_each_over_budget_rewrite_pl004(tmp_path: Path) -> None:
    report = fuzz(keep_everything, sessions=4, passes=3, out_dir=tmp_path, require_fit=True)
    assert report.findings_by_rule == {"PL004": report.over_budget}
    assert report.exit_code == 1
    (cex,) = report.counterexamples
    assert cex.code == "PL004" and cex.path.endswith("cex-PL004.jsonl")
    lines = Path(cex.path).read_text("utf-8").splitlines()
    last = json.loads(lines[-1])
    assert last["event"] == "rewrite"  # the trace ends with the rewrite that did not fit
    trace = parse_trace_text("\n".join(lines), cex.path)  # and it is a valid trace
    assert trace.events[-1].line == len(lines)
    assert sum(1 for ev in lines if '"event": "rewrite"' in ev) == cex.pass_


@settings(max_examples=15, suppress_health_check=list(HealthCheck), deadline=None)
@given(session_plans(passes=4), st.sampled_from([keep_everything, grow, newest_that_fit]))
def test_pl004_is_exactly_the_over_budget_rewrites(plan: Any, policy: Any) -> None:
    """Law: with require_fit a session has one PL004 per over-budget rewrite, each at its
    rewrite, and is otherwise the same session (the policy did not fail: it goes on);
    without, none and the count. The play that seeks PL004 ends with the first."""
    loaded = as_policy(policy)
    counted = run_session(loaded, plan, passes=4)
    strict = run_session(loaded, plan, passes=4, require_fit=True)
    assert not any(f.code == "PL004" for f in counted.findings)
    pl004 = [f for f in strict.findings if f.code == "PL004"]
    assert len(pl004) == strict.over_budget == counted.over_budget
    assert strict.trace == counted.trace
    for f in pl004:
        assert f.line is not None and strict.trace[f.line - 1]["event"] == "rewrite"
    if pl004:
        sought = run_session(loaded, plan, passes=4, require_fit=True, stop_on="PL004")
        assert sought.trace[-1]["event"] == "rewrite"
        assert len(sought.trace) == pl004[0].line


def test_the_command_counts_and_requires_fit(tmp_path: Path) -> None:
    policy = tmp_path / "pol.py"
    policy.write_text("def keep(window, budget):\n    return window\n")
    args = ["fuzz", f"{policy}:keep", "--sessions", "3", "--passes", "2", "--out",
            str(tmp_path / "out"), "--format", "json"]
    out = io.StringIO()
    assert main(args, stdout=out, stderr=io.StringIO()) == 0
    counted = json.loads(out.getvalue())
    assert counted["over_budget"] == counted["rewrites"] > 0
    out = io.StringIO()
    assert main([*args, "--require-fit"], stdout=out, stderr=io.StringIO()) == 1
    strict = json.loads(out.getvalue())
    assert strict["findings_by_rule"] == {"PL004": strict["over_budget"]}


def test_assert_policy_safe_takes_require_fit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def keep_everything(window, budget):
            return window

        def test_counted_only(ctxproof):
            report = ctxproof.assert_policy_safe(keep_everything, sessions=3, passes=2)
            assert report.over_budget == report.rewrites > 0

        def test_required(ctxproof):
            ctxproof.assert_policy_safe(keep_everything, sessions=3, passes=2, require_fit=True)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*policy keep_everything is not safe*",
            "*PL004 over-budget: * finding(s); shrunk session: *cex-PL004.jsonl*",
            "*rewrite(s) left the window over its budget*",
        ]
    )
    assert "--replay" not in result.stdout.str()  # a PL004 session ends after the rewrite


def test_pl004_holds_with_the_policy_in_its_own_process(tmp_path: Path) -> None:
    """The harness counts the tokens of the window a policy returned: in its own process
    (by name, or forked) the policy is over budget where it is in this one, and a PL004
    session is not one ``--replay`` can call the policy on again (it ends after the
    rewrite)."""
    policy = tmp_path / "pol.py"
    policy.write_text("def keep(window, budget):\n    return window\n")
    targets: list[tuple[Any, float | None]] = [
        (f"{policy}:keep", 10.0),
        (keep_everything, 10.0),
        (f"{policy}:keep", None),
    ]
    reports = [
        fuzz(
            target,
            sessions=4,
            passes=3,
            out_dir=tmp_path / f"out{k}",
            require_fit=True,
            policy_timeout=timeout,
        )
        for k, (target, timeout) in enumerate(targets)
    ]
    apart, forked, here = reports
    assert here.findings_by_rule == {"PL004": here.over_budget} and here.over_budget > 0
    for other in (apart, forked):
        assert other.findings_by_rule == here.findings_by_rule
        assert other.over_budget == here.over_budget and other.rewrites == here.rewrites
    assert apart.texts == here.texts
    assert "--replay" not in _text(apart)
