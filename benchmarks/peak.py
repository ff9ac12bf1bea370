"""Peak memory of one ``ctxproof check``, in a process of its own.

Usage: ``python -m benchmarks.peak BEFORE AFTER [STORE]`` runs ``ctxproof check
BEFORE AFTER [--store STORE] --format json`` in this process (its output
discarded) and prints one JSON object: the resident set's peak after the
imports (``imports_mib``) and at the end (``peak_mib``), the exit code and the
number of findings. pytest-benchmark times but does not measure memory; the
check benchmarks run this once per size, outside the timed rounds.
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def _mib() -> float:
    """The resident set's peak so far: VmHWM where /proc has it (it starts afresh at
    exec, unlike ``ru_maxrss``, which keeps the forking parent's peak), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def store_file(path: Path, spilled: Sequence[dict[str, object]]) -> Path:
    """A SQLite store at path holding the given item objects."""
    from verifier.io import item_from_json
    from verifier.store import open_store

    store = open_store(path, readonly=False)
    store.spill([item_from_json(o) for o in spilled])
    store.close()
    return path


def peak_of(before: Path, after: Path, store: Path | None = None) -> dict[str, object]:
    """Run this module on two window files (and a store) in a child process; its report."""
    cmd = [sys.executable, "-m", "benchmarks.peak", str(before), str(after)]
    if store is not None:
        cmd.append(str(store))
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    report: dict[str, object] = json.loads(out.stdout)
    return report


def main(argv: list[str]) -> int:
    from verifier.cli import main as ctxproof

    imports = _mib()
    args = ["check", argv[0], argv[1], "--format", "json"]
    if len(argv) > 2:
        args += ["--store", argv[2]]
    output = io.StringIO()
    code = ctxproof(args, stdout=output, stderr=io.StringIO())
    lines = output.getvalue().splitlines()
    findings = sum(len(json.loads(line).get("findings", [])) for line in lines)
    report: dict[str, object] = {
        "imports_mib": round(imports, 1),
        "peak_mib": round(_mib(), 1),
        "exit_code": code,
        "findings": findings,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
