"""Peak memory of one ``check``, in a process of its own.

Usage: ``python -m benchmarks.peak BEFORE AFTER [SPILLED] [--repair]`` prints
one JSON object: the resident set's peak after the imports (``imports_mib``)
and at the end (``peak_mib``), both from ``getrusage``, and the verdict. The
window files are read, parsed and checked as ``ctxproof check`` does, against a
store holding the items of SPILLED (a JSON list of item objects), if given.
pytest-benchmark times but does not measure memory; the check benchmarks run
this once per size, outside the timed rounds.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path


def _mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def peak_of(
    before: Path, after: Path, spilled: Path | None = None, *, repair: bool = False
) -> dict[str, object]:
    """Run this module on two window files in a child process; its report."""
    cmd = [sys.executable, "-m", "benchmarks.peak", str(before), str(after)]
    if spilled is not None:
        cmd.append(str(spilled))
    if repair:
        cmd.append("--repair")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    report: dict[str, object] = json.loads(out.stdout)
    return report


def main(argv: list[str]) -> int:
    from verifier.check import check_rewrite
    from verifier.io import item_from_json, parse_window_text
    from verifier.store import MemoryStore

    imports = _mib()
    files = [a for a in argv if not a.startswith("--")]
    store = MemoryStore()
    if len(files) > 2:
        store.spill([item_from_json(o) for o in json.loads(Path(files[2]).read_text("utf-8"))])
    before = parse_window_text(Path(files[0]).read_bytes(), files[0])
    after = parse_window_text(Path(files[1]).read_bytes(), files[1])
    result = check_rewrite(before, after, store=store, with_repair="--repair" in argv)
    report: dict[str, object] = {
        "imports_mib": round(imports, 1),
        "peak_mib": round(_mib(), 1),
        "verdict": result.verdict,
        "findings": len(result.findings),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
