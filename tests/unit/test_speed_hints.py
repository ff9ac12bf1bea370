"""A one-line hint when --ray or --jobs is likely slower than a plain run (issue 24, friction
5: --ray on 46 traces took 44 s against 5 s plain, and said nothing). The thresholds are the
crossovers benchmarks/crossover.py measured (docs/distributed.md)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from verifier import batch
from verifier.cli import common, main
from verifier.cli.common import (
    AUDIT_JOBS_MIN_BYTES,
    AUDIT_RAY_MIN_BYTES,
    FUZZ_JOBS_MIN_SESSIONS,
    FUZZ_RAY_MIN_SESSIONS,
    audit_speed_hint,
    fuzz_speed_hint,
)
from verifier.fuzz import CHUNK

ROOT = Path(__file__).resolve().parents[2]
KIB = 1024


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_repeated_constants_are_the_ones_the_code_uses() -> None:
    assert common.PARALLEL_MIN_BYTES == batch.PARALLEL_MIN_BYTES
    assert common.FUZZ_CHUNK == CHUNK


def test_ray_starting_a_cluster_for_a_small_batch_gets_a_hint() -> None:
    small = audit_speed_hint(1202 * KIB, 46, 1, True)
    assert small is not None
    assert small.startswith("--ray starts a local Ray cluster, about 12 s here")
    assert "46 trace(s), 1.2 MiB, are likely audited faster without it" in small
    assert audit_speed_hint(AUDIT_RAY_MIN_BYTES, 600, 1, True) is None  # big enough
    assert audit_speed_hint(1202 * KIB, 46, 1, False) is None  # a cluster is running: no start
    assert audit_speed_hint(1202 * KIB, 46, 1, None) is None  # no --ray, no --jobs


def test_fuzz_on_ray_or_jobs_for_few_sessions_gets_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    ray = fuzz_speed_hint(100, 1, True)
    assert ray is not None and "100 session(s) are likely faster without it" in ray
    assert fuzz_speed_hint(FUZZ_RAY_MIN_SESSIONS, 1, True) is None
    jobs = fuzz_speed_hint(100, 2, None)
    assert jobs is not None and "likely faster with --jobs 1" in jobs
    assert fuzz_speed_hint(25, 2, None) is None  # one chunk: runs in this process anyway
    assert fuzz_speed_hint(FUZZ_JOBS_MIN_SESSIONS, 2, None) is None
    cores = fuzz_speed_hint(1000, 8, None)
    assert cores is not None and "more than this machine's 2 core(s)" in cores


def test_audit_jobs_between_the_in_process_bound_and_the_crossover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert audit_speed_hint(100 * KIB, 4, 2, None) is None  # runs in this process anyway
    mid = audit_speed_hint(512 * KIB, 20, 2, None)
    assert mid is not None and "likely audited faster with --jobs 1" in mid
    assert audit_speed_hint(AUDIT_JOBS_MIN_BYTES, 60, 2, None) is None


def test_the_command_prints_the_hint_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    trace = (ROOT / "tests" / "corpus" / "cf001_fires.jsonl").read_bytes()
    names = []
    for i in range(40):  # about 300 KiB: above the in-process bound, below the crossover
        path = tmp_path / f"t{i}.jsonl"
        path.write_bytes(trace + b"\n" * (8 * KIB))
        names.append(str(path))
    out, err = io.StringIO(), _Terminal()
    code = main(["audit", *names, "--jobs", "2", "--format", "json"], stdout=out, stderr=err)
    assert code == 1
    hints = [line for line in err.getvalue().splitlines() if "hint:" in line]
    assert len(hints) == 1 and hints[0].startswith("ctxproof: hint: --jobs 2 starts 2 worker")
    plain_err = io.StringIO()
    plain_out = io.StringIO()
    main(["audit", *names, "--jobs", "2", "--format", "json"], stdout=plain_out, stderr=plain_err)
    assert plain_err.getvalue() == ""  # not a terminal: stderr holds errors only
    assert plain_out.getvalue() == out.getvalue()
