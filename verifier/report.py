"""Audit reports written to a folder."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["write_report"]


def write_report(folder: str | Path, results: Sequence[dict[str, Any]]) -> Path:
    """Write one JSON report per trace and an index; return the index path."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    index = out / "report.json"
    tmp = index.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"traces": list(results)}, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, index)
    return index
