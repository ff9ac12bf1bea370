"""The HTML report a person reads (issue point 9): what was lost, once per item, with
counterexamples as truth tables, and an index linking one page per trace."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "models" / "scenarios"
REJECTION_TEXT = "turn 40: MySQL rejected (no advisory locks usable by the migration tooling)"


def _report(tmp_path: Path, *traces: Path) -> Path:
    out = tmp_path / "rep"
    code = main(
        ["audit", *map(str, traces), "--report", str(out)],
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert code == 1
    return out


def _sections(page: str) -> dict[str, str]:
    """title of each finding's section -> its HTML."""
    out = {}
    for body in re.findall(r'<section class="finding[^"]*" id="f\d+">(.*?)</section>', page, re.S):
        title = re.search(r"<h3>(.*?)</h3>", body, re.S)
        assert title is not None
        out[title.group(1)] = body
    return out


def test_a_dropped_items_text_appears_in_its_findings_section(tmp_path: Path) -> None:
    rep = _report(tmp_path, SCENARIOS / "postgres_rejection_lost.jsonl")
    (page_path,) = sorted((rep / "traces").glob("*.html"))
    sections = _sections(page_path.read_text("utf-8"))
    cf001 = sections["CF001 commitment-dropped [rej1]"]
    assert REJECTION_TEXT in cf001
    assert "dropped" in cf001 and "<code>!db.mysql</code>" in cf001


def test_a_changed_item_shows_its_formula_before_and_after(tmp_path: Path) -> None:
    rep = _report(tmp_path, SCENARIOS / "exit_code_laundered.jsonl")
    (page_path,) = sorted((rep / "traces").glob("*.html"))
    page = page_path.read_text("utf-8")
    sections = _sections(page)
    # one section for the primary (WR004), the CF003 that follows from it listed inside
    assert list(sections) == ["WR004 negative-laundered [k1]"]
    body = sections["WR004 negative-laundered [k1]"]
    assert "CF003" in body and "changed" in body
    assert "<code>make_test.exit1</code>" in body and "<code>make_test.issues</code>" in body
    # the counterexample is a truth table of the question's atoms, with what it refutes
    assert '<table class="tt">' in body and "<th>make_test.exit1</th>" in body
    assert "<td>asserted</td><td><code>make_test.exit1</code></td><td class=\"f\">false" in body
    # the why chain is shown once per item, and linked from the finding
    assert page.count('id="why-xk1"') == 1 and 'href="#why-xk1"' in body


def test_the_index_links_one_page_per_trace_with_totals(tmp_path: Path) -> None:
    traces = sorted(SCENARIOS.glob("*.jsonl"))
    rep = _report(tmp_path, *traces)
    index = (rep / "index.html").read_text("utf-8")
    pages = sorted((rep / "traces").glob("*.html"))
    assert len(pages) == len(traces)
    for p in pages:
        assert f'href="traces/{p.name}"' in index
        assert 'href="../index.html"' in p.read_text("utf-8")
    assert "By policy" in index and "summarize-v2" in index
    data = json.loads((rep / "report.json").read_text("utf-8"))
    total = sum(len(t["findings"]) for t in data["traces"])
    assert f"{len(traces)} trace(s), {total} finding(s)" in index
    # the index itself stays small: no item text, no graph
    assert "<svg" not in index and REJECTION_TEXT not in index


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_the_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    rep = _report(tmp_path, SCENARIOS / "postgres_rejection_lost.jsonl")
    (page_path,) = sorted((rep / "traces").glob("*.html"))
    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--window-size=1300,1800",
             f"--screenshot={shot}", page_path.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000


def test_a_bad_file_under_keep_going_is_a_row_of_the_index_without_a_page(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", "utf-8")
    good = SCENARIOS / "exit_code_laundered.jsonl"
    rep = tmp_path / "rep"
    code = main(
        ["audit", str(good), str(bad), "--report", str(rep), "--keep-going"],
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert code == 2
    index = (rep / "index.html").read_text("utf-8")
    assert "1 bad file(s)" in index and "malformed JSON" in index
    assert [p.name for p in (rep / "traces").glob("*.html")] == ["0001-exit_code_laundered.html"]
    traces = json.loads((rep / "report.json").read_text("utf-8"))["traces"]
    assert traces[1]["exit"] == 2 and "error" in traces[1]
