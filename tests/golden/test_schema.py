"""Every JSON result of check and audit validates against the published JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from test_golden import CASES, ROOT, _path, run_cli

import verifier

SCHEMA = json.loads(
    (Path(verifier.__file__).parent / "schema" / "report.schema.json").read_text("utf-8")
)


def test_the_schema_is_itself_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("case", [c for c in CASES if "bad_" not in c])
def test_audit_json_validates(case: str) -> None:
    code, out, _ = run_cli("audit", str(_path(case).relative_to(ROOT)), "--format", "json")
    assert code in (0, 1, 3)
    for line in out.splitlines():
        jsonschema.validate(json.loads(line), SCHEMA)


def test_check_json_with_repair_validates(tmp_path: Path) -> None:
    before = {"format": "ctxproof-window/1", "items": [
        {"id": "c1", "kind": "commitment", "type": "decision"},
        {"id": "c2", "kind": "commitment", "type": "rejection", "formula": "!x"},
    ]}
    after = {"format": "ctxproof-window/1", "items": [before["items"][0]]}
    (tmp_path / "b.json").write_text(json.dumps(before))
    (tmp_path / "a.json").write_text(json.dumps(after))
    code, out, _ = run_cli("check", str(tmp_path / "b.json"), str(tmp_path / "a.json"),
                           "--format", "json")
    assert code == 1
    result = json.loads(out)
    jsonschema.validate(result, SCHEMA)
    assert result["repair"]["verdict"] == "accept"
    assert result["repair"]["spill"] == ["c2"]
