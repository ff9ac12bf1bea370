"""Shared test configuration: the hypothesis profiles.

The ``ci`` profile is loaded by default: it derandomizes generation and keeps no
example database, so two runs of the suite see the same examples. Select
``dev`` with ``HYPOTHESIS_PROFILE=dev`` for random generation, with failing
examples saved in ``.hypothesis/`` and replayed first on the next run.

Each property test sets its own ``max_examples`` (100-200) and ``deadline=None``.
``CTXPROOF_EXAMPLES`` (a share, 1 by default) scales every count: ``make test`` runs
a quarter of each (at least 10), and the long tier (``make test-slow``) runs the
same tests again with all of theirs.
"""

from __future__ import annotations

import gc
import importlib.util
import math
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import is_hypothesis_test, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

EXAMPLES_AT_LEAST = 10
"""The fewest examples a scaled property test runs (fewer if it asks for fewer)."""


def examples_share() -> float:
    """``CTXPROOF_EXAMPLES``: the share of each property test's ``max_examples`` to run."""
    text = os.environ.get("CTXPROOF_EXAMPLES", "1")
    try:
        share = float(text)
    except ValueError:
        raise pytest.UsageError(f"CTXPROOF_EXAMPLES must be a number, not {text!r}") from None
    if not 0 < share <= 1:
        raise pytest.UsageError(f"CTXPROOF_EXAMPLES must be in (0, 1], not {text!r}")
    return share


def scaled(count: int, share: float) -> int:
    """A property test's example count under ``share`` (at least :data:`EXAMPLES_AT_LEAST`,
    never more than it asked for)."""
    return min(count, max(EXAMPLES_AT_LEAST, math.ceil(count * share)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Scale the hypothesis tests' example counts by :func:`examples_share`: the settings a
    test was given (``@settings``) are replaced on its function, once per function."""
    share = examples_share()
    if share == 1:
        return
    done: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        if test is None or id(test) in done or not is_hypothesis_test(test):
            continue
        done.add(id(test))
        given = getattr(test, "_hypothesis_internal_use_settings", None)
        if not isinstance(given, settings):  # where this hypothesis keeps a test's settings
            raise pytest.UsageError(
                f"{item.nodeid}: cannot scale its examples (CTXPROOF_EXAMPLES) under this"
                " version of hypothesis; run without CTXPROOF_EXAMPLES"
            )
        test._hypothesis_internal_use_settings = settings(
            given, max_examples=scaled(given.max_examples, share)
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``ray`` needs the ray extra: skipped without it, except under
    ``CTXPROOF_REQUIRE_RAY=1`` (``make test-ray``, so CI), where that is a failure: the
    Ray tests never pass by skipping where they are meant to run."""
    if item.get_closest_marker("ray") is None or importlib.util.find_spec("ray") is not None:
        return
    reason = "Ray is not installed here (pip install 'ctxproof[ray]'; make test-ray does)"
    if os.environ.get("CTXPROOF_REQUIRE_RAY"):
        pytest.fail(f"{reason}, and CTXPROOF_REQUIRE_RAY is set", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def make_readonly() -> Iterator[Callable[[Path], None]]:
    """Make a folder read-only for the rest of the test.

    Permissions do not stop root, so as root the folder becomes a read-only bind
    mount of itself (unmounted at the end); otherwise its mode becomes 0555.
    """
    mounted: list[Path] = []
    chmodded: list[Path] = []

    def make(folder: Path) -> None:
        if os.geteuid() != 0:
            folder.chmod(0o555)
            chmodded.append(folder)
        else:
            first = subprocess.run(
                ["mount", "--bind", str(folder), str(folder)], capture_output=True, check=False
            )
            if first.returncode != 0:
                pytest.skip(f"root without mount rights: {first.stderr.decode().strip()}")
            mounted.append(folder)
            subprocess.run(
                ["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True, check=True
            )
        assert not os.access(folder, os.W_OK)

    yield make
    gc.collect()  # a store left open by a failed assertion would keep the mount busy
    for folder in reversed(mounted):
        done = subprocess.run(["umount", str(folder)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
    for folder in chmodded:
        folder.chmod(0o755)
