"""Pinned CLI outputs for the corpus and the bundled scenarios.

Regenerate after an intended change with ``CTXPROOF_UPDATE_GOLDEN=1 pytest tests/golden``
and review the diff.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
SCENARIOS = ROOT / "models" / "scenarios"
GOLDEN = Path(__file__).resolve().parent / "outputs"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text("utf-8"))

CASES = sorted(p.name for p in CORPUS.glob("*.jsonl")) + sorted(
    f"models/scenarios/{p.name}" for p in SCENARIOS.glob("*.jsonl")
)


def _path(case: str) -> Path:
    return ROOT / case if case.startswith("models/") else CORPUS / case


def _mode(case: str) -> str:
    return str(EXPECTED.get(case, {}).get("witness_mode", "support"))


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        code = main(list(argv), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_cli_output_is_pinned(case: str, fmt: str) -> None:
    rel = str(_path(case).relative_to(ROOT))
    code, out, err = run_cli("audit", rel, "--witness-mode", _mode(case), "--format", fmt)
    shown = f"exit {code}\n--- stdout\n{out}--- stderr\n{err}"
    pinned = GOLDEN / fmt / (case.replace("/", "__") + ".out")
    if os.environ.get("CTXPROOF_UPDATE_GOLDEN"):
        pinned.parent.mkdir(parents=True, exist_ok=True)
        pinned.write_text(shown, "utf-8")
    assert pinned.exists(), f"no pinned output for {case}; run with CTXPROOF_UPDATE_GOLDEN=1"
    assert shown == pinned.read_text("utf-8")
    assert "Traceback" not in err


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("bad_")])
def test_bad_input_exits_2_with_one_message(case: str) -> None:
    code, out, err = run_cli("audit", str(_path(case).relative_to(ROOT)))
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert case in lines[0]


@pytest.mark.parametrize("case", sorted(p.name for p in SCENARIOS.glob("*.jsonl")))
def test_why_output_is_pinned(case: str) -> None:
    """'how do you know?' for every item a finding names, text and JSON, pinned."""
    rel = f"models/scenarios/{case}"
    code, out, _ = run_cli("audit", rel, "--format", "json")
    ids = sorted({i for f in json.loads(out)["findings"] for i in f["items"]})
    shown = []
    for item in ids:
        for fmt in ("text", "json"):
            code, out, err = run_cli("why", rel, item, "--format", fmt)
            assert code in (0, 1), err
            shown.append(f"$ ctxproof why {rel} {item} --format {fmt}\nexit {code}\n{out}")
    pinned = GOLDEN / "why" / (case + ".out")
    if os.environ.get("CTXPROOF_UPDATE_GOLDEN"):
        pinned.parent.mkdir(parents=True, exist_ok=True)
        pinned.write_text("\n".join(shown), "utf-8")
    assert "\n".join(shown) == pinned.read_text("utf-8")
