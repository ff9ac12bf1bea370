"""Pinned outputs of ``ctxproof prove`` for the unsafe reference specs, and for the specs of
``tests/golden/specs/`` (each shows one reading of a ``when`` key: docs/spec-language.md): the
counterexample lines and the traces written (z3 runs with a fixed seed, so a model is the same
from run to run; the seconds of a proof are masked).

Regenerate after an intended change with ``CTXPROOF_UPDATE_GOLDEN=1 pytest tests/golden``
and review the diff.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "outputs" / "prove"
UNSAFE = ("keep_recent", "naive_summarizer", "paraphraser", "pressure_pruner",
          "relevance_eviction", "tool_output_clearer")


def _prove(
    spec: Path, mode: str, tmp_path: Path, folder: str, *more: str
) -> tuple[int, str, list[Path]]:
    specs = tmp_path / folder
    specs.mkdir(parents=True)
    shutil.copy(spec, specs)
    argv = ["prove", f"{folder}/{spec.name}"] + (["--induction"] if mode == "induction" else [])
    argv += more
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        code = main(argv, stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    traces = sorted((tmp_path / "ctxproof-prove").glob("cex-*.jsonl"))
    # z3's statistics (memory, and counts that vary with z3's version) are masked too
    stdout = re.sub(r"; z3: [^\n]*$", "; z3: S", out.getvalue(), flags=re.M)
    stdout = re.sub(r"; \d+\.\d+ s\); z3: S$", "; T s); z3: S", stdout, flags=re.M)
    stdout = re.sub(r"; \d+\.\d+ s\)$", "; T s)", stdout, flags=re.M)
    stdout = re.sub(r"; \d+\.\d+ s$", "; T s", stdout, flags=re.M)
    shown = f"exit {code}\n--- stdout\n{_tokens(stdout)}--- stderr\n{err.getvalue()}"
    for trace in traces:
        shown += f"--- {trace.name}\n{trace.read_text('utf-8')}"
    for suggested in sorted((tmp_path / "ctxproof-prove").glob("suggested-*.toml")):
        shown += f"--- {suggested.name}\n{_tokens(suggested.read_text('utf-8'))}"
    return code, shown, traces


def _tokens(text: str) -> str:
    """Token counts masked: they measure the fuzzer's sessions, pinned by its own tests."""
    return re.sub(r"(original|suggested|this spec) [\d,]+ -> [\d,]+", r"\1 N -> N", text)


def _pinned(name: str, mode: str, shown: str) -> str:
    pinned = GOLDEN / f"{name}.{mode}.out"
    if os.environ.get("CTXPROOF_UPDATE_GOLDEN"):
        pinned.parent.mkdir(parents=True, exist_ok=True)
        pinned.write_text(shown, "utf-8")
    assert pinned.exists(), f"no pinned output for {name}; run with CTXPROOF_UPDATE_GOLDEN=1"
    return pinned.read_text("utf-8")


@pytest.mark.parametrize("mode", ["bmc", "induction"])
@pytest.mark.parametrize("name", UNSAFE)
def test_prove_output_is_pinned(name: str, mode: str, tmp_path: Path) -> None:
    spec = ROOT / "models" / "specs" / f"{name}.toml"
    code, shown, traces = _prove(spec, mode, tmp_path, "models/specs")
    assert code == 1 and traces
    assert shown == _pinned(name, mode, shown)


WHEN_SPECS = Path(__file__).resolve().parent / "specs"
WHEN_REFUTED = {
    # spec: (refuted from the empty window, refuted by induction)
    "evict_uncited_prose": ({"TP002"}, {"TP002"}),
    "evict_free_prose": (set(), set()),
    "evict_plain_claims": (set(), {"CF001"}),
}


@pytest.mark.parametrize("mode", ["bmc", "induction"])
@pytest.mark.parametrize("name", sorted(WHEN_REFUTED))
def test_prove_output_of_when_keys_is_pinned(name: str, mode: str, tmp_path: Path) -> None:
    code, shown, traces = _prove(WHEN_SPECS / f"{name}.toml", mode, tmp_path, "specs")
    refuted = WHEN_REFUTED[name][mode == "induction"]
    assert {t.stem.removeprefix("cex-") for t in traces} == refuted
    assert code == (1 if refuted else 0)
    assert shown == _pinned(name, mode, shown)


def test_every_when_spec_is_pinned() -> None:
    assert sorted(p.stem for p in WHEN_SPECS.glob("*.toml")) == sorted(WHEN_REFUTED)


SUGGESTED = ("paraphraser", "tool_output_clearer")


@pytest.mark.parametrize("name", SUGGESTED)
def test_prove_suggest_output_is_pinned(name: str, tmp_path: Path) -> None:
    spec = ROOT / "models" / "specs" / f"{name}.toml"
    code, shown, traces = _prove(spec, "bmc", tmp_path, "models/specs", "--suggest")
    assert code == 1 and traces and "--- suggested-1.toml\n" in shown
    assert shown == _pinned(name, "suggest", shown)
