"""The fast tier runs a share of each property test's examples (tests/conftest.py).

``make test`` sets ``CTXPROOF_EXAMPLES=0.25`` and the long tier runs the same
tests with all their examples: the share must reach the tests that ask for a
count with ``@settings``, and leave the count alone without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parent.parent / "conftest.py"

COUNTING = """
from pathlib import Path

from hypothesis import given, settings, strategies as st

CALLS = Path(__file__).with_name("calls.txt")


@settings(max_examples=100, database=None)
@given(st.integers())
def test_counts(n):
    with CALLS.open("a") as f:
        f.write("x")


@settings(max_examples=20, database=None)
@given(st.integers())
def test_some(n):
    with CALLS.with_name("some.txt").open("a") as f:
        f.write("x")


@settings(max_examples=4, database=None)
@given(st.integers())
def test_few(n):
    with CALLS.with_name("few.txt").open("a") as f:
        f.write("x")
"""


def _calls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, share: str | None
) -> tuple[int, int, int]:
    """How many examples each of the three counting tests ran."""
    pytester.makeconftest(CONFTEST.read_text("utf-8"))
    pytester.makepyfile(test_counting=COUNTING)
    if share is not None:
        monkeypatch.setenv("CTXPROOF_EXAMPLES", share)
    else:
        monkeypatch.delenv("CTXPROOF_EXAMPLES", raising=False)
    pytester.runpytest_inprocess("-q").assert_outcomes(passed=3)
    many, some, few = (
        (pytester.path / name).read_text().count("x")
        for name in ("calls.txt", "some.txt", "few.txt")
    )
    return many, some, few


def test_a_share_runs_that_share_of_the_examples(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 100 -> 25; 20 -> 10, the floor; 4 stays 4 (a test never runs more than it asked for)
    assert _calls(pytester, monkeypatch, "0.25") == (25, 10, 4)


def test_without_a_share_every_example_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _calls(pytester, monkeypatch, None) == (100, 20, 4)


def test_a_bad_share_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST.read_text("utf-8"))
    pytester.makepyfile(test_counting=COUNTING)
    monkeypatch.setenv("CTXPROOF_EXAMPLES", "lots")
    result = pytester.runpytest_inprocess("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "CTXPROOF_EXAMPLES must be a number" in result.stderr.str()
