"""Peak memory of one ``ctxproof import``, in a process of its own.

Usage: ``python -m benchmarks.peak_import FILE [OUT]`` runs ``ctxproof import
claude-code FILE -o OUT --format json`` in this process (OUT: a temporary file,
removed afterwards, when not given) and prints one JSON object: the resident
set's peak after the imports (``imports_mib``) and at the end (``peak_mib``),
the file's size in MiB, the command's exit code, the number of rewrites in the
trace written and the trace's size in MiB. pytest-benchmark times but does not
measure memory.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.peak import _mib


def _rewrites(trace: Path) -> int:
    """Rewrite events in a trace, read line by line (the measuring must not hold it)."""
    with trace.open(encoding="utf-8") as f:
        return sum(1 for line in f if line.startswith('{"event":"rewrite"'))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from verifier.cli import main as ctxproof

    imports = _mib()
    path = Path(args[0])
    with tempfile.TemporaryDirectory(prefix="ctxproof-peak-import-") as folder:
        out = Path(args[1]) if len(args) > 1 else Path(folder) / "trace.jsonl"
        err = io.StringIO()
        code = ctxproof(
            ["import", "claude-code", str(path), "-o", str(out), "--format", "json"],
            stdout=io.StringIO(),
            stderr=err,
        )
        peak = _mib()
        if code != 0:
            sys.stderr.write(err.getvalue())
        written = out.exists()
        report = {
            "imports_mib": round(imports, 1),
            "peak_mib": round(peak, 1),
            "file_mib": round(path.stat().st_size / 2**20, 1),
            "exit_code": code,
            "rewrites": _rewrites(out) if written else None,
            "trace_mib": round(out.stat().st_size / 2**20, 1) if written else None,
        }
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
