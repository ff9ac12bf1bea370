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


# -- the input formats ---------------------------------------------------------------------

SCHEMAS = Path(verifier.__file__).parent / "schema"
WINDOW_SCHEMA = json.loads((SCHEMAS / "window.schema.json").read_text("utf-8"))
TRACE_SCHEMA = json.loads((SCHEMAS / "trace.schema.json").read_text("utf-8"))


def _trace_lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_the_input_schemas_are_valid_and_share_their_item() -> None:
    jsonschema.Draft202012Validator.check_schema(WINDOW_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(TRACE_SCHEMA)
    for kind in ("commitment", "claim", "observation", "prose", "stub", "item", "items"):
        assert WINDOW_SCHEMA["$defs"][kind] == TRACE_SCHEMA["$defs"][kind], kind


def test_the_item_schema_lists_the_fields_ctxproof_reads() -> None:
    from verifier.io import _FIELDS

    for kind, fields in _FIELDS.items():
        assert set(WINDOW_SCHEMA["$defs"][kind]["properties"]) == fields, kind


@pytest.mark.parametrize("case", [c for c in CASES if "bad_" not in c])
def test_corpus_traces_validate_against_the_trace_schema(case: str) -> None:
    validator = jsonschema.Draft202012Validator(TRACE_SCHEMA)
    for event in _trace_lines(_path(case)):
        validator.validate(event)


@pytest.mark.parametrize(
    "case",
    ["bad_unknown_field.jsonl", "bad_unknown_kind.jsonl", "bad_unknown_event.jsonl",
     "bad_unknown_modality.jsonl", "bad_commitment_without_type.jsonl",
     "bad_negative_tokens.jsonl", "bad_id_not_string.jsonl", "bad_empty_id.jsonl",
     "bad_field_of_other_kind.jsonl", "bad_wrong_format.jsonl"],
)
def test_bad_shapes_fail_the_trace_schema(case: str) -> None:
    validator = jsonschema.Draft202012Validator(TRACE_SCHEMA)
    errors = [e for ev in _trace_lines(ROOT / "tests" / "corpus" / case)
              for e in validator.iter_errors(ev)]
    assert errors, case


def test_windows_validate_against_the_window_schema(tmp_path: Path) -> None:
    """Every window a trace of the corpus holds, as a window file, validates; and a window
    written by `ctxproof window` does too."""
    validator = jsonschema.Draft202012Validator(WINDOW_SCHEMA)
    for case in [c for c in CASES if "bad_" not in c]:
        events = _trace_lines(_path(case))
        header = events[0]
        assert isinstance(header, dict)
        for ev in events[1:]:
            assert isinstance(ev, dict)
            if ev["event"] == "rewrite" and "window" in ev:
                validator.validate({"format": "ctxproof-window/1",
                                    "background": header.get("background", []),
                                    "items": ev["window"]})
    bad = {"format": "ctxproof-window/1", "items": [{"id": "s", "kind": "stub"}]}
    assert list(validator.iter_errors(bad))
