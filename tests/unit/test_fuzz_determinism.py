"""Same seed, same sessions: whatever else is loaded or installed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from hypothesis import given, seed

import verifier.fuzz as fz


def _plans() -> list[fz.Plan]:
    out: list[fz.Plan] = []

    @fz._settings(25)
    @seed(fz.chunk_seed(0, 0))
    @given(fz.session_plans(10))
    def collect(plan: fz.Plan) -> None:
        out.append(plan)

    with fz._own_draws_only():
        collect()
    return out


def test_sessions_do_not_depend_on_the_constants_of_loaded_modules(tmp_path: Path) -> None:
    before = _plans()
    # a local module full of integers a strategy could have drawn from
    (tmp_path / "lots_of_constants.py").write_text(
        "VALUES = [" + ", ".join(str(n) for n in range(0, 4000, 7)) + "]\n", "utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module("lots_of_constants")
        after = _plans()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("lots_of_constants", None)
    assert before == after
