"""Pinned outputs of ``ctxproof prove`` for the unsafe reference specs: the counterexample lines
and the traces written (z3 runs with a fixed seed, so a model is the same from run to run).

Regenerate after an intended change with ``CTXPROOF_UPDATE_GOLDEN=1 pytest tests/golden``
and review the diff.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "outputs" / "prove"
UNSAFE = ("keep_recent", "naive_summarizer", "paraphraser", "pressure_pruner",
          "relevance_eviction", "tool_output_clearer")


@pytest.mark.parametrize("mode", ["bmc", "induction"])
@pytest.mark.parametrize("name", UNSAFE)
def test_prove_output_is_pinned(name: str, mode: str, tmp_path: Path) -> None:
    specs = tmp_path / "models" / "specs"
    specs.mkdir(parents=True)
    shutil.copy(ROOT / "models" / "specs" / f"{name}.toml", specs)
    argv = ["prove", f"models/specs/{name}.toml"] + (["--induction"] if mode == "induction" else [])
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        code = main(argv, stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    traces = sorted((tmp_path / "ctxproof-prove").glob("cex-*.jsonl"))
    shown = f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
    for trace in traces:
        shown += f"--- {trace.name}\n{trace.read_text('utf-8')}"
    pinned = GOLDEN / f"{name}.{mode}.out"
    if os.environ.get("CTXPROOF_UPDATE_GOLDEN"):
        pinned.parent.mkdir(parents=True, exist_ok=True)
        pinned.write_text(shown, "utf-8")
    assert pinned.exists(), f"no pinned output for {name}; run with CTXPROOF_UPDATE_GOLDEN=1"
    assert code == 1 and traces
    assert shown == pinned.read_text("utf-8")
