"""Options of the benchmarks, and what the saved JSON records of the machine.

The benchmarks run with pytest-benchmark (``make bench``); ``make test`` does
not collect this folder. Every comparison is between two benchmarks of one
group measured in the same run: the one whose ``extra_info["role"]`` is
``"floor"`` and the others of its group. ``benchmarks/report.py`` turns the
saved JSON into ``RESULTS.md``.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import time
from collections.abc import Iterator
from importlib import metadata
from typing import Any

import pytest

LOAD_AT_START: list[float] = []
SPEED_AT_START: list[float] = []
"""The reference loop's time (:func:`reference_ms`) and the host's steal (:func:`steal_seconds`)
when the run started."""


def reference_ms() -> float:
    """How fast this machine runs Python now: the best of five runs of a fixed loop (a
    million additions), in milliseconds. The machine is a virtual one whose speed changes
    with what else its host runs; two runs' absolute times compare only next to this."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for k in range(1_000_000):
            total += k
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def steal_seconds() -> float | None:
    """CPU time the host gave other machines while this one had work (``steal`` in
    ``/proc/stat``), in seconds since boot; None where the system does not say."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxproof benchmarks")
    group.addoption(
        "--bench-large",
        action="store_true",
        help="check windows of 100k and 300k items too (slow)",
    )
    group.addoption(
        "--bench-late-pass",
        type=int,
        default=3000,
        help="the late pass whose cost the audit benchmark compares with pass 100",
    )
    group.addoption(
        "--bench-all-models",
        action="store_true",
        help="fuzz throughput of every policy model (default: three of them)",
    )
    group.addoption(
        "--bench-prove-large",
        action="store_true",
        help="prove BMC N = 24, K = 8 and induction N = 128 too (the safe specs)",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    LOAD_AT_START[:] = list(os.getloadavg())
    steal = steal_seconds()
    SPEED_AT_START[:] = [reference_ms(), -1.0 if steal is None else steal]


@pytest.fixture(autouse=True, scope="module")
def _module_leaves_nothing(request: pytest.FixtureRequest) -> Iterator[None]:
    """Once a module's benchmarks are done, its cached workloads are emptied and the
    collector run, so the next module is not measured on the heap this one built (a
    50k-entry store, an audit 3,000 passes long)."""
    yield
    name = request.module.__name__
    for value in list(vars(request.module).values()):
        clear = getattr(value, "cache_clear", None)
        if clear is not None and getattr(value, "__module__", None) == name:
            clear()
    gc.collect()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "window_size" in metafunc.fixturenames:
        sizes = [1_000, 10_000]
        if metafunc.config.getoption("--bench-large"):
            sizes += [100_000, 300_000]
        metafunc.parametrize("window_size", sizes, ids=[f"{n // 1000}k" for n in sizes])


def pytest_benchmark_update_commit_info(config: pytest.Config, commit_info: dict[str, Any]) -> None:
    """Dirty means the code measured differs from the commit: the results a run writes
    (benchmarks/results/, RESULTS.md) do not count."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
             ":!benchmarks/results", ":!benchmarks/RESULTS.md"],
            capture_output=True, text=True, check=True, cwd=config.rootpath,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return
    commit_info["dirty"] = bool(out.strip())


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def pytest_benchmark_update_machine_info(
    config: pytest.Config, machine_info: dict[str, Any]
) -> None:
    """What the report shows of the machine: cores, versions, load."""
    import z3

    machine_info.pop("node", None)  # the host name says nothing about speed
    machine_info["nproc"] = os.cpu_count()
    machine_info["cores_usable"] = len(os.sched_getaffinity(0))
    machine_info["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    machine_info["z3"] = z3.get_version_string()
    machine_info["packages"] = {
        name: _version(name)
        for name in ("z3-solver", "networkx", "lark", "pytest-benchmark", "ctxproof")
    }
    machine_info["args"] = list(config.invocation_params.args)
    machine_info["loadavg_start"] = LOAD_AT_START
    machine_info["loadavg_end"] = list(os.getloadavg())
    if SPEED_AT_START:
        machine_info["reference_ms_start"] = round(SPEED_AT_START[0], 1)
        machine_info["reference_ms_end"] = round(reference_ms(), 1)
        steal = steal_seconds()
        if steal is not None and SPEED_AT_START[1] >= 0:
            machine_info["steal_seconds"] = round(steal - SPEED_AT_START[1], 1)
