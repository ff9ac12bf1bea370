"""Peak memory of one import, in a process of its own.

Usage: ``python -m benchmarks.peak_import FILE`` imports FILE as a Claude Code
session (``import_history``, the trace validated as ``ctxproof import`` does)
and prints one JSON object: the resident set's peak after the imports
(``imports_mib``) and at the end (``peak_mib``), the file's size in MiB and the
number of rewrites. pytest-benchmark times but does not measure memory.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.peak import _mib


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from verifier.importers import import_history

    imports = _mib()
    path = Path(args[0])
    text = import_history("claude-code", [path])
    rewrites = sum(1 for line in text.splitlines() if line.startswith('{"event":"rewrite"'))
    del text
    out = {
        "imports_mib": round(imports, 1),
        "peak_mib": round(_mib(), 1),
        "file_mib": round(path.stat().st_size / 2**20, 1),
        "rewrites": rewrites,
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
