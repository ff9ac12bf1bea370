"""The reference pages in docs/ say what the program does (issue point 12): every rule
has a section with an example that fires and one that stays quiet, each example prints
what the page shows, and the code cites these pages, never a document users do not have."""

from __future__ import annotations

import doctest
import io
import os
import re
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.findings import RULES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RULES_PAGE = (DOCS / "rules.md").read_text("utf-8")
SESSION = re.compile(r"```\n\$ ctxproof (audit [^\n]*)\n(.*?)\$ echo \$\?\n(\d+)\n```", re.S)


def _sessions() -> list[tuple[str, str, int]]:
    return [(cmd, out, int(code)) for cmd, out, code in SESSION.findall(RULES_PAGE)]


def test_every_rule_has_a_section_with_a_fire_and_a_quiet_example() -> None:
    sections = re.split(r"^### ", RULES_PAGE, flags=re.M)[1:]
    by_code = {s.split()[0]: s for s in sections}
    assert list(by_code) == list(RULES)
    for code, body in by_code.items():
        assert body.startswith(f"{code} {RULES[code]}\n"), code
        assert "Fires" in body or "# fires" in body, code
        assert "Quiet" in body or "# quiet" in body, code
        assert "What to do:" in body, code


@pytest.mark.parametrize("session", _sessions(), ids=lambda s: s[0])
def test_each_example_prints_what_the_page_shows(session: tuple[str, str, int]) -> None:
    cmd, shown, code = session
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        got = main(cmd.split(), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    assert (got, out.getvalue()) == (code, shown)


def test_the_page_has_both_kinds_of_example_for_every_trace_rule() -> None:
    sessions = _sessions()
    trace_rules = [c for c in RULES if not c.startswith("PL")]
    assert len(sessions) == 2 * len(trace_rules)
    fired = {c for _, out, code in sessions if code == 1 for c in trace_rules if c in out}
    assert fired == set(trace_rules)
    assert sum(1 for _, out, code in sessions if code == 0 and out == "") == len(trace_rules)


def test_the_policy_examples_run() -> None:
    result = doctest.testfile(str(DOCS / "rules.md"), module_relative=False, verbose=False)
    assert result.attempted >= 10 and result.failed == 0


def test_the_code_cites_docs_pages_that_exist() -> None:
    cited: set[str] = set()
    for path in (ROOT / "verifier").rglob("*.py"):
        text = path.read_text("utf-8")
        assert not re.search(r"SPEC\s*§", text), path
        cited |= set(re.findall(r"docs/[a-z-]+\.md", text))
    assert {"docs/rules.md", "docs/formats.md", "docs/api.md"} <= cited
    for page in cited:
        assert (ROOT / page).is_file(), page


def test_the_api_examples_run() -> None:
    result = doctest.testfile(str(DOCS / "api.md"), module_relative=False, verbose=False)
    assert result.attempted >= 15 and result.failed == 0


def test_the_formats_page_documents_every_finding_field() -> None:
    import json

    import verifier

    page = (DOCS / "formats.md").read_text("utf-8")
    schema = json.loads(
        (Path(verifier.__file__).parent / "schema" / "report.schema.json").read_text("utf-8")
    )
    for field in schema["$defs"]["result"]["properties"]["findings"]["items"]["properties"]:
        assert f"`{field}`" in page, field


def test_the_rules_page_gives_the_cause_order_the_code_uses() -> None:
    from verifier.findings import CAUSE_ORDER

    shown = re.search(r"causal first: ([A-Z0-9, \n]+)\.", RULES_PAGE)
    assert shown is not None
    codes = [c.strip() for c in shown.group(1).replace("\n", " ").split(",")]
    assert codes == [c for c in CAUSE_ORDER if not c.startswith("PL")]
