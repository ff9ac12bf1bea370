"""The pytest plugin: a ctxproof fixture whose failures list findings and shrunk traces."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]


def test_loading_the_plugin_loads_no_solver() -> None:
    code = "import sys, verifier.pytest_plugin; print('z3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_fixture_passes_a_safe_rewrite_and_fails_an_unsafe_policy(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        D1 = {"id": "d1", "kind": "commitment", "type": "decision"}

        def drop_everything(window, budget):
            return []

        def keep_everything(window, budget):
            return window

        def test_rewrite_kept(ctxproof):
            ctxproof.assert_rewrite_safe([D1], [D1])

        def test_rewrite_dropped(ctxproof):
            ctxproof.assert_rewrite_safe([D1], [])

        def test_policy_unsafe(ctxproof):
            ctxproof.assert_policy_safe(drop_everything, sessions=5, passes=3)

        def test_policy_safe(ctxproof):
            report = ctxproof.assert_policy_safe(keep_everything, sessions=5, passes=3)
            assert report.rewrites > 0
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*the rewrite is refuse:*",
            "*CF001 commitment-dropped [[]d1[]]*",
            "*policy drop_everything is not safe*",
            "*CF001 commitment-dropped: * finding(s); shrunk session: *cex-CF001.jsonl*",
        ]
    )


def test_a_policy_whose_checks_are_left_undecided_is_not_shown_safe(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A solver budget too small to decide fails the test (the solver's unknown is never a
    pass), saying how many checks were left undecided."""
    monkeypatch.setenv("CTXPROOF_RLIMIT", "1")
    pytester.makepyfile(
        """
        def fabricate(window, budget):
            if any(i["id"] == "fab" for i in window):
                return window
            return window + [{"id": "fab", "kind": "claim", "formula": "deploy.done"}]

        def test_policy(ctxproof):
            ctxproof.assert_policy_safe(fabricate, sessions=3, passes=2, seed=1)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*policy fabricate is not shown safe*", "*check(s) left undecided*"]
    )
