"""Start-up and small commands as users run them: whole processes, timed from outside.

Each round starts a new process (``subprocess.run``) and waits for it: the
interpreter's start, the imports, reading the files and the work, nothing kept
from one round to the next. Compiled bytecode is written and used as an
installed package has it (``PYTHONDONTWRITEBYTECODE`` is dropped from the
environment, and one run before the clock compiles it).

- start-up: ``ctxproof --version`` (the console script) against a bare
  interpreter (``python -c pass``) of the same environment;
- check: ``ctxproof check`` of the windows of the check benchmark at 1k, 10k and
  100k items (10% changed, the originals in a SQLite store) against the floor
  process: the same interpreter running :func:`benchmarks.workloads.identity_diff`
  on the two files (``json`` parse, canonical-JSON sha256 of each item, diff by
  id). The three sizes tell what a check costs once, whatever its size (the
  start-up and the imports, which the floor has fewer of), from what it costs an
  item;
- fuzz: ``ctxproof fuzz --sessions 50`` of the README's two policies (the
  walkthrough's), as a user runs it: the start-up, the policy's own process,
  exploring, shrinking each rule found (the dropping policy: eight), the
  counterexamples, the scorecard and its plot. The safe policy is the floor;
  rewrites per second are the run's rewrites over the whole command's median.

The version, the check and the unsafe fuzz also run their group's floor command
beside each of their rounds (:mod:`benchmarks.paired`): their ratio to the floor
is the median of the per-round ratios too, which this host's changes of speed do
not move.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.paired import FloorEachRound, timed
from benchmarks.peak import store_file
from benchmarks.workloads import SEED, build_windows, window_text

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
START_ROUNDS = 20
CHECK_ROUNDS = {1_000: 15, 10_000: 9, 100_000: 5}
"""Rounds of the whole-process check, by the number of items of its windows."""

FLOOR = (
    "import sys\n"
    "from benchmarks.workloads import identity_diff\n"
    "before = open(sys.argv[1], encoding='utf-8').read()\n"
    "after = open(sys.argv[2], encoding='utf-8').read()\n"
    "identity_diff(before, after)\n"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)  # the floor script imports benchmarks.workloads
    return env


def _console_script() -> str:
    script = BIN / "ctxproof"
    return str(script) if script.exists() else "ctxproof"


_BUILT: dict[int, tuple[str, str, str]] = {}


def _windows(tmp_path_factory: Any, items: int) -> tuple[str, str, str]:
    """The before and after window files and the store of the check benchmark's windows
    of this many items (written once, for the floor and the check)."""
    if items not in _BUILT:
        _BUILT[items] = _write_windows(tmp_path_factory.mktemp(f"startup{items}"), items)
    return _BUILT[items]


def _write_windows(where: Path, items: int) -> tuple[str, str, str]:
    before, after, spill, _ = build_windows(items, SEED)
    (where / "before.json").write_text(window_text(before), "utf-8")
    (where / "after.json").write_text(window_text(after), "utf-8")
    store = store_file(where / "store.sqlite", spill)
    return str(where / "before.json"), str(where / "after.json"), str(store)


def _bench(
    benchmark: Any,
    group: str,
    role: str,
    argv: list[str],
    rounds: int,
    shown: str,
    exit_code: int = 0,
    floor: list[str] | None = None,
) -> None:
    """Time ``argv`` as a whole process; with ``floor`` (the group's floor command), that
    command runs, timed, beside each round (:class:`benchmarks.paired.FloorEachRound`)."""
    env = _env()
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    benchmark.group = group
    benchmark.extra_info.update(role=role, command=shown, exit=warm.returncode)

    def run(command: list[str]) -> int:
        done = subprocess.run(command, env=env, capture_output=True, check=False, cwd=ROOT)
        return done.returncode

    def own() -> tuple[tuple[list[str]], dict[str, Any]]:
        return (argv,), {}

    floor_codes: set[int] = set()
    beside: Callable[[], float] | None = None
    if floor is not None:
        floor_command = floor

        def floor_round() -> float:
            return timed(lambda: floor_codes.add(run(floor_command)))

        beside = floor_round
    pair = FloorEachRound(benchmark, beside, own)
    code = benchmark.pedantic(
        run, setup=pair.setup, teardown=pair.teardown, rounds=rounds, iterations=1
    )
    assert code == warm.returncode == exit_code, warm.stderr
    if floor is not None:
        assert floor_codes == {0}, floor_codes


START = "start-up: a bare interpreter vs `ctxproof --version` (whole processes)"


def test_bare_interpreter(benchmark: Any) -> None:
    argv = [sys.executable, "-c", "pass"]
    _bench(benchmark, START, "floor", argv, START_ROUNDS, "python -c pass")


def test_version(benchmark: Any) -> None:
    argv = [_console_script(), "--version"]
    floor = [sys.executable, "-c", "pass"]
    _bench(benchmark, START, "version", argv, START_ROUNDS, "ctxproof --version", floor=floor)


def _check_group(items: int) -> str:
    return f"check of {items:,} items, 10% changed: the floor process vs `ctxproof check`"


@pytest.mark.parametrize("items", sorted(CHECK_ROUNDS))
def test_floor_process(benchmark: Any, tmp_path_factory: Any, items: int) -> None:
    before, after, _ = _windows(tmp_path_factory, items)
    argv = [sys.executable, "-c", FLOOR, before, after]
    shown = "python -c 'identity_diff(before, after)' before.json after.json"
    _bench(benchmark, _check_group(items), "floor", argv, CHECK_ROUNDS[items], shown)


@pytest.mark.parametrize("items", sorted(CHECK_ROUNDS))
def test_check_process(benchmark: Any, tmp_path_factory: Any, items: int) -> None:
    before, after, store = _windows(tmp_path_factory, items)
    argv = [_console_script(), "check", before, after, "--store", store, "--format", "json"]
    shown = "ctxproof check before.json after.json --store store.sqlite --format json"
    floor = [sys.executable, "-c", FLOOR, before, after]
    _bench(benchmark, _check_group(items), "check", argv, CHECK_ROUNDS[items], shown, floor=floor)
    out = subprocess.run(argv, env=_env(), capture_output=True, text=True, check=True)
    verdicts = [r["verdict"] for r in json.loads(out.stdout)["rewrites"]]
    benchmark.extra_info["verdicts"] = verdicts
    assert verdicts == ["accept"]


FUZZ = "fuzz, the whole command, 50 sessions: the README's safe policy vs its unsafe one"
FUZZ_ROUNDS = 5
FUZZ_SESSIONS = 50
README_POLICIES = ROOT / "benchmarks" / "readme_policies.py"


def _fuzz_argv(name: str, out: Path) -> list[str]:
    policy = f"{README_POLICIES}:{name}"
    return [_console_script(), "fuzz", policy, "--sessions", str(FUZZ_SESSIONS), "--out", str(out)]


def _bench_fuzz(
    benchmark: Any,
    tmp_path: Path,
    name: str,
    role: str,
    exit_code: int,
    floor: str | None = None,
) -> None:
    out = tmp_path / "out"
    argv = _fuzz_argv(name, out)
    shown = f"ctxproof fuzz benchmarks/readme_policies.py:{name} --sessions {FUZZ_SESSIONS}"
    floor_argv = None if floor is None else _fuzz_argv(floor, tmp_path / "floor")
    _bench(benchmark, FUZZ, role, argv, FUZZ_ROUNDS, shown, exit_code, floor_argv)
    card = json.loads((out / "scorecard.json").read_text("utf-8"))
    assert (out / "pressure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    benchmark.extra_info.update(
        rewrites=card["rewrites"],
        sessions=card["sessions"],
        rules=len(card["findings_by_rule"]),
        shrink_seconds=card["shrinking"]["seconds"],
    )


def test_fuzz_process_safe(benchmark: Any, tmp_path: Path) -> None:
    _bench_fuzz(benchmark, tmp_path, "newest_first_spilling", "floor", 0)


def test_fuzz_process_unsafe(benchmark: Any, tmp_path: Path) -> None:
    _bench_fuzz(benchmark, tmp_path, "newest_first", "unsafe", 1, floor="newest_first_spilling")
