"""The ctxproof-policy/1 spec language: parsing, errors, every action (docs/spec-language.md)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from verifier import MemoryStore, item_from_json, ref_of, run_policy, stub_for
from verifier.errors import InputError
from verifier.policies import item_tokens, load_policy
from verifier.policies.spec import (
    Comparison,
    Rule,
    Spec,
    SpecPolicy,
    When,
    load_spec,
    parse_spec,
    spec_to_toml,
)
from verifier.window import canonical_json

Obj = dict[str, Any]
HEAD = 'format = "ctxproof-policy/1"\n'


def run(text: str, window: list[Obj], budget: int, **kw: Any) -> dict[str, Any]:
    return SpecPolicy(parse_spec(HEAD + text))(window, budget, **kw)


def ids(out: dict[str, Any]) -> list[str]:
    return [it["id"] for it in out["window"]]


# -- parsing ------------------------------------------------------------------------------


def test_a_minimal_spec_takes_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "tidy.toml"
    path.write_text(HEAD, "utf-8")
    spec = load_spec(path)
    assert spec == Spec("tidy", (), ("position",), "fits", 8, False, str(path))


def test_every_key_is_read() -> None:
    text = HEAD + (
        'name = "all-keys"\n'
        'order = ["-score", "age", "-tokens", "position"]\n'
        'stop = "all"\n'
        "stub_tokens = 3\n"
        "demote_orphans = true\n"
        "[[rule]]\n"
        'when = { kind = ["prose", "stub"], type = ["rejection"], modality = ["failed"] }\n'
        'do = "evict"\n'
        "[[rule]]\n"
        "when = { load_bearing = true, negative = false, cited = true, result = false,"
        " stub = false }\n"
        'do = "spill"\n'
        "[[rule]]\n"
        "when = { age = { ge = 2 }, score = { lt = 50, gt = 10 }, tokens = { le = 8 },"
        " pressure = { eq = 1.5 } }\n"
        'do = "summarize"\n'
        "[[rule]]\n"
        'do = "soften"\n'
        "[[rule]]\n"
        'do = "demote"\n'
        "[[rule]]\n"
        'do = "keep"\n'
    )
    spec = parse_spec(text, "k.toml")
    assert spec == Spec(
        "all-keys",
        (
            Rule("evict", When(kind=("prose", "stub"), type=("rejection",), modality=("failed",))),
            Rule(
                "spill",
                When(load_bearing=True, negative=False, cited=True, result=False, stub=False),
            ),
            Rule(
                "summarize",
                When(
                    age=(Comparison("ge", 2),),
                    score=(Comparison("lt", 50), Comparison("gt", 10)),
                    tokens=(Comparison("le", 8),),
                    pressure=(Comparison("eq", 1.5),),
                ),
            ),
            Rule("soften"),
            Rule("demote"),
            Rule("keep"),
        ),
        ("-score", "age", "-tokens", "position"),
        "all",
        3,
        True,
        "k.toml",
    )


def test_rules_may_be_written_as_sub_tables() -> None:
    spec = parse_spec(HEAD + '[[rule]]\ndo = "evict"\n[rule.when]\nkind = ["prose"]\n')
    assert spec.rules == (Rule("evict", When(kind=("prose",))),)


BAD: list[tuple[str, str]] = [
    ('name = "x"\n', r"format: missing"),
    ('format = "ctxproof-policy/2"\n', r"format: 'ctxproof-policy/2' is not 'ctxproof-policy/1'"),
    (HEAD + 'colour = "red"\n', r"colour: unknown key"),
    (HEAD + "name = 3\n", r"name: expected a non-empty string"),
    (HEAD + 'name = ""\n', r"name: expected a non-empty string"),
    (HEAD + 'order = "score"\n', r"order: expected a list of keys"),
    (HEAD + 'order = ["position", "size"]\n', r"order\[1\]: unknown order key 'size'"),
    (HEAD + 'order = ["--age"]\n', r"order\[0\]: unknown order key '--age'"),
    (HEAD + 'order = ["score", "-score"]\n', r"order\[1\]: 'score' is listed twice"),
    (HEAD + 'stop = "never"\n', r'stop: expected "fits" or "all"'),
    (HEAD + "stub_tokens = -1\n", r"stub_tokens: expected an integer >= 0"),
    (HEAD + "stub_tokens = 2.5\n", r"stub_tokens: expected an integer >= 0"),
    (HEAD + "stub_tokens = true\n", r"stub_tokens: expected an integer >= 0"),
    (HEAD + 'demote_orphans = "yes"\n', r"demote_orphans: expected true or false"),
    (HEAD + "rule = 3\n", r"rule: expected an array of tables"),
    (HEAD + "rule = [3]\n", r"rule\[0\]: expected a table"),
    (HEAD + '[[rule]]\ndo = "keep"\nthen = "evict"\n', r"rule\[0\]\.then: unknown key"),
    (HEAD + "[[rule]]\nwhen = { stub = true }\n", r"rule\[0\]\.do: missing"),
    (
        HEAD + '[[rule]]\ndo = "keep"\n[[rule]]\ndo = "drop"\n',
        r"rule\[1\]\.do: unknown action 'drop'",
    ),
    (HEAD + "[[rule]]\ndo = 1\n", r"rule\[0\]\.do: unknown action 1"),
    (HEAD + '[[rule]]\nwhen = "prose"\ndo = "evict"\n', r"rule\[0\]\.when: expected a table"),
    (HEAD + '[[rule]]\nwhen = { colour = 1 }\ndo = "evict"\n', r"rule\[0\]\.when\.colour: unknown"),
    (
        HEAD + '[[rule]]\nwhen = { kind = "prose" }\ndo = "evict"\n',
        r"when\.kind: expected a list of kind names",
    ),
    (
        HEAD + '[[rule]]\nwhen = { kind = ["prose", "note"] }\ndo = "evict"\n',
        r"rule\[0\]\.when\.kind\[1\]: unknown kind 'note'",
    ),
    (HEAD + '[[rule]]\nwhen = { type = ["choice"] }\ndo = "evict"\n', r"type\[0\]: unknown type"),
    (
        HEAD + '[[rule]]\nwhen = { modality = ["refuted"] }\ndo = "evict"\n',
        r"rule\[0\]\.when\.modality\[0\]: unknown modality 'refuted'",
    ),
    (HEAD + '[[rule]]\nwhen = { kind = [] }\ndo = "evict"\n', r"when\.kind: an empty list"),
    (HEAD + '[[rule]]\nwhen = { cited = "yes" }\ndo = "evict"\n', r"when\.cited: expected true"),
    (HEAD + '[[rule]]\nwhen = { stub = 1 }\ndo = "evict"\n', r"when\.stub: expected true or false"),
    (
        HEAD + '[[rule]]\nwhen = { result = "call" }\ndo = "evict"\n',
        r"rule\[0\]\.when\.result: expected true or false, not 'call'",
    ),
    (
        HEAD + '[[rule]]\nwhen = { results = true }\ndo = "evict"\n',
        r"rule\[0\]\.when\.results: unknown condition; use kind, type, modality, load_bearing,"
        r" negative, cited, result, stub, age",
    ),
    (
        HEAD + '[[rule]]\ndo = "keep"\n' * 2 + '[[rule]]\nwhen = { age = 2 }\ndo = "spill"\n',
        r"rule\[2\]\.when\.age: expected a table like \{ge = 2\}",
    ),
    (HEAD + '[[rule]]\nwhen = { age = {} }\ndo = "spill"\n', r"when\.age: expected a table like"),
    (
        HEAD + '[[rule]]\nwhen = { age = { gte = 2 } }\ndo = "spill"\n',
        r"rule\[0\]\.when\.age\.gte: unknown comparison",
    ),
    (
        HEAD + '[[rule]]\nwhen = { score = { lt = "50" } }\ndo = "spill"\n',
        r"rule\[0\]\.when\.score\.lt: expected a finite number",
    ),
    (
        HEAD + '[[rule]]\nwhen = { tokens = { lt = inf } }\ndo = "spill"\n',
        r"tokens\.lt: expected a",
    ),
    (HEAD + '[[rule]]\nwhen = { pressure = { ge = true } }\ndo = "spill"\n', r"ge: expected a"),
    (HEAD + "order = [\n", r"not valid TOML"),
    (HEAD + "order = " + "[" * 2000 + "]" * 2000 + "\n", r"nests deeper than 64 levels"),
    (HEAD + "x = " + "{a=" * 1000 + "1" + "}" * 1000 + "\n", r"nests deeper than 64 levels"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_each_error_names_the_key_path_and_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, "utf-8")
    with pytest.raises(InputError, match=message) as err:
        load_spec(path)
    assert err.value.file == str(path)
    assert str(path) in err.value.render()
    assert err.value.fix, err.value.render()  # and says what to write instead
    with pytest.raises(InputError, match=message):
        load_policy(str(path))  # the CLI's POLICY argument reads specs the same way


def test_a_spec_nested_too_deep_is_bad_input_at_its_line() -> None:
    """Past the TOML reader's depth the error is the spec's, at the line where it nests too
    deep (brackets in strings and comments are no nesting)."""
    text = HEAD + '# [[[[[[\nk = "[[[[[[[[["\n\norder = ' + "[" * 900 + "]" * 900 + "\n"
    with pytest.raises(InputError, match="nests deeper") as err:
        parse_spec(text, "s.toml")
    assert err.value.line == text.count("\n")


def test_a_spec_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + '[[rule]]\ndo = "keep"\n').encode())
    assert load_spec(path).rules[0].do == "keep"


def test_a_spec_named_with_a_function_says_a_spec_takes_none(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(HEAD + '[[rule]]\ndo = "keep"\n', "utf-8")
    with pytest.raises(InputError, match="takes no ':policy'") as err:
        load_policy(f"{path}:policy")
    assert err.value.file == str(path) and err.value.fix == f"give the spec alone: {path}"


def test_errors_point_at_the_line_of_the_key() -> None:
    text = HEAD + (
        '[[rule]]\ndo = "keep"\n\n[[rule]]\n# age is a comparison\nwhen = { kind = ["claim"],'
        ' age = 2 }\ndo = "spill"\n'
    )
    with pytest.raises(InputError) as err:
        parse_spec(text, "s.toml")
    assert err.value.line == 7
    with pytest.raises(InputError) as err:
        parse_spec(HEAD + "\n\nstop = 1\n", "s.toml")
    assert err.value.line == 4
    with pytest.raises(InputError) as err:
        parse_spec(HEAD + "order = [\n", "s.toml")
    assert err.value.line == 2  # the end of the document
    with pytest.raises(InputError) as err:
        parse_spec(HEAD + "\nname = 'x\n", "s.toml")
    assert err.value.line == 3
    with pytest.raises(InputError, match="write each rule as") as err:
        parse_spec(HEAD + '\n[rule]\ndo = "keep"\n', "s.toml")
    assert err.value.line == 3  # a table where an array of tables belongs: its header


def test_a_missing_or_undecodable_spec_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_spec(tmp_path / "nowhere.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(HEAD.encode() + b'name = "caf\xe9"\n')
    with pytest.raises(InputError, match="invalid UTF-8") as err:
        load_spec(bad)
    assert err.value.line == HEAD.count("\n") + 1 and err.value.fix


# -- the actions --------------------------------------------------------------------------

C1: Obj = {"id": "c1", "kind": "commitment", "type": "decision", "tokens": 10, "score": 50}
P1: Obj = {"id": "p1", "kind": "prose", "text": "notes", "tokens": 10, "score": 10}
O1: Obj = {
    "id": "o1",
    "kind": "observation",
    "modality": "failed",
    "source": "make test",
    "exit_code": 1,
    "shows": "tests.fail",
    "tokens": 21,
    "score": 5,
}
K1: Obj = {
    "id": "k1",
    "kind": "claim",
    "formula": "tests.fail",
    "modality": "verified",
    "witnesses": ["o1"],
    "tokens": 10,
    "score": 40,
}
P2: Obj = {"id": "p2", "kind": "prose", "tokens": 7, "score": 90}
S1: Obj = {"id": "s1", "kind": "stub", "ref": "sha256:" + "0" * 64, "tokens": 4}
WINDOW = [C1, P1, O1, K1, P2, S1]  # 62 tokens


def test_keep_keeps_and_claims_everything_it_kept() -> None:
    out = run('[[rule]]\ndo = "keep"\n', WINDOW, 10)
    assert out == {
        "window": WINDOW,
        "spill": [],
        "claimed_preserved": ["c1", "p1", "o1", "k1", "p2", "s1"],
    }


def test_unmatched_items_are_kept() -> None:
    out = run('[[rule]]\nwhen = { kind = ["prose"] }\ndo = "evict"\n', WINDOW, 0)
    assert out["window"] == [C1, O1, K1, S1]


def test_evict_removes_oldest_first_until_it_fits() -> None:
    out = run('[[rule]]\ndo = "evict"\n', WINDOW, 41)
    # 62 -> 52 (c1) -> 42 (p1) -> 21 (o1): fits, k1 and later are not visited
    assert out == {"window": [K1, P2, S1], "spill": [], "claimed_preserved": ["k1", "p2", "s1"]}


def test_spill_leaves_a_stub_of_stub_tokens_and_names_the_id() -> None:
    out = run('stub_tokens = 3\n[[rule]]\ndo = "spill"\n', WINDOW, 45)
    # c1: 62 -> 55, p1: 55 -> 48, o1: 48 -> 30: fits
    stub = {"id": "c1", "kind": "stub", "ref": ref_of(C1), "tokens": 3}
    assert out["window"] == [
        stub,
        {"id": "p1", "kind": "stub", "ref": ref_of(P1), "tokens": 3},
        {"id": "o1", "kind": "stub", "ref": ref_of(O1), "tokens": 3},
        K1,
        P2,
        S1,
    ]
    assert out["spill"] == ["c1", "p1", "o1"]
    assert out["claimed_preserved"] == ["k1", "p2", "s1"]


def test_spill_of_a_stub_changes_nothing() -> None:
    out = run('stop = "all"\n[[rule]]\nwhen = { stub = true }\ndo = "spill"\n', WINDOW, 0)
    assert out == {"window": WINDOW, "spill": [], "claimed_preserved": [it["id"] for it in WINDOW]}


def test_summarize_puts_one_summary_at_the_place_of_the_first() -> None:
    text = 'order = ["-score"]\n[[rule]]\nwhen = { kind = ["prose"] }\ndo = "summarize"\n'
    out = run(text, WINDOW, 50, pass_no=3)
    # visited p2 (score 90) first, then c1 (kept), k1 (kept), p1: 62 -> 57 -> 50
    summary = {"id": "summary@3", "kind": "prose", "text": "summary of: p1, p2", "tokens": 5}
    assert out["window"] == [C1, summary, O1, K1, S1]
    assert out["spill"] == []
    assert out["claimed_preserved"] == ["c1", "o1", "k1", "s1"]


def test_summary_tokens_count_at_once() -> None:
    # p1 (10) then p2 (7): after p1 the total is 62 - 10 + 3 = 55; after p2 it is 55 - 7 + 2 = 50
    text = '[[rule]]\nwhen = { kind = ["prose"] }\ndo = "summarize"\n'
    assert len(run(text, WINDOW, 55)["window"]) == 6  # p1 folded, then fits: p2 kept
    out = run(text, WINDOW, 54)
    assert ids(out) == ["c1", "summary@1", "o1", "k1", "s1"]
    assert out["window"][1]["tokens"] == math.ceil(17 / 4)


def test_soften_turns_failed_into_unverified_and_halves_tokens() -> None:
    out = run('stop = "all"\n[[rule]]\ndo = "soften"\n', WINDOW, 0)
    assert out["window"] == [
        {**C1, "tokens": 5},
        P1,  # prose has no modality: unchanged
        {**O1, "modality": "unverified", "tokens": 11},  # 21 -> ceil(10.5)
        {**K1, "tokens": 5},  # verified stays verified
        P2,
        S1,
    ]
    assert out["claimed_preserved"] == ["p1", "p2", "s1"]


def test_soften_writes_the_halved_estimate_when_tokens_are_absent() -> None:
    obs = {"id": "o9", "kind": "observation", "modality": "failed", "content": "x" * 100}
    estimate = len(canonical_json(obs)) // 4
    out = run('[[rule]]\ndo = "soften"\n', [obs], 0)
    assert out["window"] == [{**obs, "modality": "unverified", "tokens": math.ceil(estimate / 2)}]


def test_demote_tags_unwitnessed_and_leaves_prose_and_stubs() -> None:
    already = {"id": "k2", "kind": "claim", "modality": "unwitnessed"}
    untokened = {"id": "k3", "kind": "claim", "modality": "verified"}
    out = run('stop = "all"\n[[rule]]\ndo = "demote"\n', [untokened], 0)
    # the count it had is written: the new text is longer, the count is not
    assert out["window"] == [
        {**untokened, "modality": "unwitnessed", "tokens": item_tokens(untokened)}
    ]
    out = run('stop = "all"\n[[rule]]\ndo = "demote"\n', [*WINDOW, already], 0)
    assert out["window"] == [
        {**C1, "modality": "unwitnessed"},
        P1,
        {**O1, "modality": "unwitnessed"},
        {**K1, "modality": "unwitnessed"},
        P2,
        S1,
        already,
    ]
    assert out["claimed_preserved"] == ["p1", "p2", "s1", "k2"]


def test_stop_all_visits_items_even_when_the_window_fits() -> None:
    assert ids(run('[[rule]]\nwhen = { kind = ["prose"] }\ndo = "evict"\n', WINDOW, 100)) == [
        "c1",
        "p1",
        "o1",
        "k1",
        "p2",
        "s1",
    ]  # fits already: nothing visited
    out = run('stop = "all"\n[[rule]]\nwhen = { kind = ["prose"] }\ndo = "evict"\n', WINDOW, 100)
    assert ids(out) == ["c1", "o1", "k1", "s1"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ('["position"]', ["c1", "p1", "o1"]),
        ('["-position"]', ["s1", "p2", "k1", "o1"]),
        ('["score"]', ["s1", "o1"]),  # s1 has no score: 0
        ('["-score"]', ["p2", "c1", "k1"]),
        ('["tokens"]', ["s1", "p2", "c1", "p1"]),  # ties (c1, p1, k1: 10) by position
        ('["-tokens"]', ["o1", "c1"]),
        ('["-age", "-position"]', ["k1", "o1"]),  # ages below: k1 3, o1 3, the others 0
        ('["age", "-tokens"]', ["c1", "p1", "p2"]),  # age 0 first (s1 has none: 0), largest first
    ],
)
def test_order_keys_give_the_visiting_order(order: str, expected: list[str]) -> None:
    ages = {"c1": 0, "p1": 0, "o1": 3, "k1": 3, "p2": 0}
    out = run(f'order = {order}\n[[rule]]\ndo = "evict"\n', WINDOW, 40, ages=ages)
    evicted = {i for i in ids({"window": WINDOW}) if i not in ids(out)}
    assert evicted == set(expected)
    assert sum(it["tokens"] for it in out["window"]) <= 40


def test_score_absent_reads_as_zero() -> None:
    unscored = {"id": "u", "kind": "prose", "tokens": 10}
    out = run('order = ["score"]\n[[rule]]\ndo = "evict"\n', [C1, unscored, P1], 25)
    assert ids(out) == ["c1", "p1"]


def test_demote_orphans_demotes_claims_whose_witnesses_all_left() -> None:
    o2 = {"id": "o2", "kind": "observation", "modality": "verified", "shows": "b", "tokens": 9}
    k2 = {
        "id": "k2",
        "kind": "claim",
        "formula": "b",
        "modality": "verified",
        "witnesses": ["o1", "o2"],
    }
    k3 = {"id": "k3", "kind": "claim", "formula": "b", "modality": "failed", "witnesses": ["o1"]}
    text = (
        'demote_orphans = true\nstop = "all"\n'
        '[[rule]]\nwhen = { kind = ["observation"] }\ndo = "{}"\n'
    )
    out = run(text.replace("{}", "evict"), [O1, o2, K1, k2, k3], 0)
    assert out["window"] == [
        {**K1, "modality": "unwitnessed"},
        {**k2, "modality": "unwitnessed", "tokens": item_tokens(k2)},  # the count it had
        # a failed claim too: the spec launders it (WR004), as its words say
        {**k3, "modality": "unwitnessed", "tokens": item_tokens(k3)},
    ]
    assert out["claimed_preserved"] == []
    # a witness kept as a stub is still in the window: no demotion
    out = run(text.replace("{}", "spill"), [O1, o2, K1, k2], 0)
    assert out["window"][2:] == [K1, k2]
    # without demote_orphans, nothing is demoted
    out = run(text.replace("demote_orphans = true\n", "").replace("{}", "evict"), [O1, K1], 0)
    assert out["window"] == [K1]


# -- the conditions ----------------------------------------------------------------------

R1: Obj = {"id": "r1", "kind": "commitment", "type": "rejection", "rationale": ["p1"], "tokens": 5}
CALL: Obj = {"id": "t1", "kind": "prose", "tokens": 5}
RES: Obj = {"id": "t1:r", "kind": "observation", "call": "t1", "tokens": 5}
K2: Obj = {"id": "k2", "kind": "claim", "load_bearing": True, "derived_from": ["c1"], "tokens": 5}
K3: Obj = {"id": "k3", "kind": "claim", "witnesses": ["o1"], "tokens": 5}
COND_WINDOW = [C1, P1, O1, K1, P2, S1, R1, CALL, RES, K2, K3]


@pytest.mark.parametrize(
    ("when", "evicted"),
    [
        ('kind = ["prose", "stub"]', ["p1", "p2", "s1", "t1"]),
        ('type = ["rejection", "decision"]', ["c1", "r1"]),
        ('modality = ["unverified"]', ["c1", "r1", "t1:r", "k2", "k3"]),  # the default; not prose
        ('modality = ["failed", "verified"]', ["o1", "k1"]),
        ("load_bearing = true", ["c1", "r1", "k2"]),
        ("load_bearing = false", ["p1", "o1", "k1", "p2", "s1", "t1", "t1:r", "k3"]),
        ("negative = true", ["o1", "k1", "r1", "k3"]),  # failed, rejection, failed witness
        ("cited = true", ["c1", "p1", "o1", "t1"]),  # derived_from, rationale, witnesses, call
        ("cited = false", ["k1", "p2", "s1", "r1", "t1:r", "k2", "k3"]),
        ("result = true", ["t1:r"]),  # an observation with call
        ("result = false", ["c1", "p1", "o1", "k1", "p2", "s1", "r1", "t1", "k2", "k3"]),
        ("stub = true", ["s1"]),
        ("age = { ge = 2 }", ["o1", "k1"]),
        ("age = { gt = 0, lt = 3 }", ["o1"]),
        ("score = { le = 10 }", ["p1", "o1", "s1", "r1", "t1", "t1:r", "k2", "k3"]),
        ("score = { eq = 50 }", ["c1"]),
        ("tokens = { gt = 9 }", ["c1", "p1", "o1", "k1"]),
        ("pressure = { gt = 1.5 }", []),  # 87 tokens / 60
        ("pressure = { gt = 1.3 }", [i["id"] for i in COND_WINDOW]),
        ('kind = ["claim"], negative = false', ["k2"]),
    ],
)
def test_each_condition(when: str, evicted: list[str]) -> None:
    ages = {"o1": 2, "k1": 5}
    text = f'stop = "all"\n[[rule]]\nwhen = {{ {when} }}\ndo = "evict"\n'
    out = run(text, COND_WINDOW, 60, ages=ages)
    assert [i["id"] for i in COND_WINDOW if i["id"] not in ids(out)] == evicted


# -- stubs, placeholders and the store: what `cited`, `result` and `negative` read --------

DECISION: Obj = {
    "id": "d1", "kind": "commitment", "type": "decision", "rationale": ["why"], "tokens": 9
}
WHY: Obj = {"id": "why", "kind": "prose", "tokens": 9}
ASK: Obj = {"id": "ask", "kind": "prose", "tokens": 9}  # an assistant's tool call
PLACEHOLDER: Obj = {"id": "ph", "kind": "prose", "call": "ask", "tokens": 9}
FREE: Obj = {"id": "free", "kind": "prose", "tokens": 9}
STORED = {ref_of(it): it for it in (DECISION, PLACEHOLDER)}
STUBBED = [
    {**stub_for(DECISION), "tokens": 8},
    WHY,
    ASK,
    {**stub_for(PLACEHOLDER), "tokens": 8},
    FREE,
]
EVICT_UNCITED_PROSE = (
    'stop = "all"\n[[rule]]\nwhen = { kind = ["prose"], cited = false }\ndo = "evict"\n'
)


def evicted(text: str, window: list[Obj], **kw: Any) -> list[str]:
    kept = ids(run(text, window, 0, **kw))
    return [it["id"] for it in window if it["id"] not in kept]


def test_cited_reads_a_resolving_stub_as_the_item_it_stands_for() -> None:
    # the stub of a decision cites its rationale; the stub of a placeholder cites its call
    assert evicted(EVICT_UNCITED_PROSE, STUBBED, store=STORED) == ["free"]
    # the placeholder itself is prose nobody cites: evicted when it stands as itself
    assert evicted(EVICT_UNCITED_PROSE, [DECISION, WHY, ASK, PLACEHOLDER, FREE]) == [
        "ph",
        "free",
    ]


def test_an_unresolvable_stub_cites_nothing() -> None:
    everything_but = ["why", "ask", "free"]
    assert evicted(EVICT_UNCITED_PROSE, STUBBED) == everything_but  # no store given
    assert evicted(EVICT_UNCITED_PROSE, STUBBED, store={}) == everything_but
    # a ref whose entry is another item (its own id elsewhere), or bytes under a wrong ref
    other = {**DECISION, "id": "d2"}
    swapped = [{"id": "d1", "kind": "stub", "ref": ref_of(other)}, WHY]
    assert evicted(EVICT_UNCITED_PROSE, swapped, store={ref_of(other): other}) == ["why"]
    wrong = {"id": "d1", "kind": "stub", "ref": ref_of(DECISION)}
    changed = {**DECISION, "rationale": ["why", "free"]}
    assert evicted(EVICT_UNCITED_PROSE, [wrong, WHY], store={wrong["ref"]: changed}) == ["why"]
    # an entry that is no item at all
    assert evicted(EVICT_UNCITED_PROSE, [wrong, WHY], store={wrong["ref"]: {"id": 3}}) == ["why"]
    # the right entry: resolved
    assert evicted(EVICT_UNCITED_PROSE, [wrong, WHY], store={wrong["ref"]: DECISION}) == []


def test_a_stub_of_a_stub_reads_through_to_the_item() -> None:
    """A stub spilled again (``stub_for(stub)``) stands for what the inner stub stands for,
    as the checks follow stubs through the store: the call its result answers is cited,
    and the result is a result (a spec guarded by cited/result keeps the pair)."""
    inner = {**stub_for(PLACEHOLDER), "tokens": 8}
    outer = {**stub_for(inner), "tokens": 8}
    window = [ASK, outer, FREE]
    store = {ref_of(PLACEHOLDER): PLACEHOLDER, ref_of(inner): inner}
    assert evicted(EVICT_UNCITED_PROSE, window, store=store) == ["free"]
    result = 'stop = "all"\n[[rule]]\nwhen = { result = true }\ndo = "evict"\n'
    assert evicted(result, window, store=store) == ["ph"]
    # the chain broken (the inner stub not stored): nothing it could stand for
    broken = {ref_of(PLACEHOLDER): PLACEHOLDER}
    assert evicted(EVICT_UNCITED_PROSE, window, store=broken) == ["ask", "free"]
    assert evicted(result, window, store=broken) == []


def test_result_holds_for_observations_and_placeholders_with_call() -> None:
    text = 'stop = "all"\n[[rule]]\nwhen = { result = true }\ndo = "evict"\n'
    plain = {"id": "o2", "kind": "observation", "tokens": 3}
    window = [ASK, PLACEHOLDER, RES, CALL, plain, FREE]
    assert evicted(text, window) == ["ph", "t1:r"]
    # behind a stub: a result when the item it stands for is, where the store resolves it
    stubs = [stub_for(it) for it in window]
    stored = {ref_of(it): it for it in window}
    assert evicted(text, stubs, store=stored) == ["ph", "t1:r"]
    assert evicted(text, stubs) == []  # unresolvable: no result
    safe = 'stop = "all"\n[[rule]]\nwhen = { kind = ["prose"], cited = false, result = false }\n'
    assert evicted(safe + 'do = "evict"\n', window) == ["free"]


def test_other_conditions_read_a_stub_as_itself() -> None:
    failed = {"id": "o9", "kind": "observation", "modality": "failed", "tokens": 5}
    stubs = [stub_for(DECISION), stub_for(failed)]
    stored = {ref_of(DECISION): DECISION, ref_of(failed): failed}
    for when, hit in [
        ('kind = ["stub"]', ["d1", "o9"]),
        ('kind = ["commitment", "observation"]', []),
        ('modality = ["failed", "unverified"]', []),
        ('type = ["decision"]', []),
        ("load_bearing = true", []),
        ("negative = true", []),
        ("negative = false", ["d1", "o9"]),
        ("stub = true", ["d1", "o9"]),
    ]:
        text = f'stop = "all"\n[[rule]]\nwhen = {{ {when} }}\ndo = "evict"\n'
        assert evicted(text, stubs, store=stored) == hit, when


def test_a_witness_standing_as_a_stub_is_no_failed_observation() -> None:
    failed = {"id": "o9", "kind": "observation", "modality": "failed", "tokens": 5}
    claim = {"id": "k9", "kind": "claim", "witnesses": ["o9"], "tokens": 5}
    text = 'stop = "all"\n[[rule]]\nwhen = { kind = ["claim"], negative = true }\ndo = "evict"\n'
    assert evicted(text, [failed, claim]) == ["k9"]
    stored = {ref_of(failed): failed}
    assert evicted(text, [stub_for(failed), claim], store=stored) == []


def test_every_condition_reads_the_window_as_the_pass_starts() -> None:
    # the decision is spilled first, then its rationale is visited: still cited, as the
    # pass started (and its stub would cite it too); the placeholder evicted first still
    # cites its call
    text = (
        'stop = "all"\n[[rule]]\nwhen = { kind = ["commitment"] }\ndo = "spill"\n'
        '[[rule]]\nwhen = { result = true }\ndo = "evict"\n'
        '[[rule]]\nwhen = { cited = false }\ndo = "evict"\n'
    )
    out = run(text, [DECISION, PLACEHOLDER, WHY, ASK, FREE], 0)
    assert ids(out) == ["d1", "why", "ask"] and out["spill"] == ["d1"]
    # a claim whose failed witness is evicted first is still negative when visited
    failed = {"id": "o9", "kind": "observation", "modality": "failed", "tokens": 5}
    claim = {"id": "k9", "kind": "claim", "witnesses": ["o9"], "tokens": 5}
    text = (
        'stop = "all"\n[[rule]]\nwhen = { kind = ["observation"] }\ndo = "evict"\n'
        '[[rule]]\nwhen = { negative = true }\ndo = "spill"\n'
    )
    assert run(text, [failed, claim], 0)["spill"] == ["k9"]
    # only stop reads the running total: pressure is 27/18 for every item, however many
    # were evicted before it; "fits" stops once the total is 18
    pressure = '[[rule]]\nwhen = { pressure = { gt = 1 } }\ndo = "evict"\n'
    assert ids(run('stop = "all"\n' + pressure, [FREE, WHY, ASK], 18)) == []
    assert ids(run(pressure, [FREE, WHY, ASK], 18)) == ["why", "ask"]


def test_run_policy_gives_a_spec_the_store() -> None:
    policy = load_policy(str(Path(__file__).parents[2] / "models" / "specs" / "spill_first.toml"))
    assert policy.takes_store
    spec = SpecPolicy(parse_spec(HEAD + EVICT_UNCITED_PROSE))
    res = run_policy(spec, STUBBED, 0, store=STORED)
    assert res.ok and [it.id for it in res.window] == ["d1", "why", "ask", "ph"]
    store = MemoryStore()
    store.spill([item_from_json(DECISION), item_from_json(PLACEHOLDER)])
    res = run_policy(spec, STUBBED, 0, store=store)
    assert [it.id for it in res.window] == ["d1", "why", "ask", "ph"]
    assert [it.id for it in run_policy(spec, STUBBED, 0).window] == ["d1", "ph"]


def test_readings_name_the_rule_and_what_the_conditions_read() -> None:
    spec = parse_spec(
        HEAD + '[[rule]]\nwhen = { stub = true }\ndo = "keep"\n'
        '[[rule]]\nwhen = { kind = ["prose"], cited = false, result = false }\ndo = "evict"\n'
        '[[rule]]\nwhen = { kind = ["commitment"] }\ndo = "spill"\n'
    )
    failed = {"id": "o9", "kind": "observation", "modality": "failed", "tokens": 5}
    window = [*STUBBED, failed]
    got = {r.id: r for r in SpecPolicy(spec).readings(window, 0, store=STORED)}
    assert [(i, r.rule, r.action) for i, r in got.items()] == [
        ("d1", 0, "keep"),  # a stub, read as itself by `stub`
        ("why", None, "keep"),  # cited by the decision behind the stub
        ("ask", None, "keep"),  # cited as the call of the placeholder behind its stub
        ("ph", 0, "keep"),
        ("free", 1, "evict"),
        ("o9", None, "keep"),
    ]
    assert got["why"].cited and not got["free"].cited
    assert got["ph"].result and got["ph"].stub and not got["ask"].result
    assert got["d1"].stub and not got["d1"].load_bearing  # the stub is itself: not bound
    assert got["o9"].negative and not got["free"].negative
    # without the store no stub resolves: the rationale is no longer cited
    assert SpecPolicy(spec).readings(window, 0)[1].rule == 1


def test_spec_to_toml_writes_every_bundled_spec_back() -> None:
    for path in sorted((Path(__file__).parents[2] / "models" / "specs").glob("*.toml")):
        spec = load_spec(path)
        text = spec_to_toml(spec, comments=[f"from {path.name}"])
        assert text.startswith(f"# from {path.name}\n")
        assert parse_spec(text, str(path)) == spec


def test_a_rule_without_when_matches_every_item_and_the_first_match_wins() -> None:
    text = '[[rule]]\nwhen = { kind = ["prose"] }\ndo = "keep"\n[[rule]]\ndo = "evict"\n'
    assert ids(run(text, WINDOW, 0)) == ["p1", "p2"]


def test_a_window_with_a_repeated_id_is_refused() -> None:
    with pytest.raises(ValueError, match="holds id 'c1' twice"):
        run('[[rule]]\ndo = "keep"\n', [C1, C1], 0)


def test_the_input_window_is_not_changed() -> None:
    window = [dict(it) for it in WINDOW]
    run('stop = "all"\n[[rule]]\ndo = "soften"\n', window, 0)
    assert window == WINDOW


def test_a_summary_id_already_in_the_window_is_a_policy_error() -> None:
    taken = {"id": "summary@2", "kind": "prose", "tokens": 1}
    policy = SpecPolicy(
        parse_spec(HEAD + '[[rule]]\nwhen = { tokens = { gt = 5 } }\ndo = "summarize"\n')
    )
    res = run_policy(policy, [P1, taken], 0, pass_no=2)
    assert res.code == "PL001"
    assert "summary@2" in (res.message or "")
    # when that item is summarized itself, there is no clash
    res = run_policy(
        SpecPolicy(parse_spec(HEAD + '[[rule]]\ndo = "summarize"\n')), [P1, taken], 0, pass_no=2
    )
    assert res.ok and [it.id for it in res.window] == ["summary@2"]


def test_run_policy_gives_a_spec_the_pass_and_the_ages() -> None:
    policy = load_policy(
        str(Path(__file__).parents[2] / "models" / "specs" / "naive_summarizer.toml")
    )
    res = run_policy(policy, [P1, P2], 0, pass_no=7)
    assert [it.id for it in res.window] == ["summary@7"]
    aged = SpecPolicy(parse_spec(HEAD + '[[rule]]\nwhen = { age = { ge = 4 } }\ndo = "evict"\n'))
    res = run_policy(aged, [P1, P2], 0, ages={"p2": 4})
    assert [it.id for it in res.window] == ["p1"]


# -- the documentation --------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "spec-language.md"


def test_every_spec_in_the_documentation_parses() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert len(blocks) >= 5
    names = [parse_spec(block, "spec-language.md").name for block in blocks]
    assert "spill-first" in names and "paraphraser" in names


def test_the_documented_action_examples() -> None:
    c1 = {"id": "c1", "kind": "commitment", "type": "decision", "tokens": 10}
    p1 = {"id": "p1", "kind": "prose", "tokens": 10}
    o1 = {
        "id": "o1",
        "kind": "observation",
        "modality": "failed",
        "source": "make test",
        "exit_code": 1,
        "tokens": 21,
    }
    window = [c1, p1, o1]

    def act(action: str, **kw: Any) -> dict[str, Any]:
        return run(f'stop = "all"\n[[rule]]\ndo = "{action}"\n', window, 0, **kw)

    spilled = act("spill")
    assert spilled["window"] == [
        {"id": i["id"], "kind": "stub", "ref": ref_of(i), "tokens": 8} for i in window
    ]
    assert spilled["spill"] == ["c1", "p1", "o1"]
    assert act("summarize", pass_no=3)["window"] == [
        {"id": "summary@3", "kind": "prose", "text": "summary of: c1, p1, o1", "tokens": 11}
    ]
    assert act("soften")["window"] == [
        {**c1, "tokens": 5},
        p1,
        {**o1, "modality": "unverified", "tokens": 11},
    ]
    assert act("demote")["window"] == [
        {**c1, "modality": "unwitnessed"},
        p1,
        {**o1, "modality": "unwitnessed"},
    ]
    assert act("keep")["window"] == act("evict", pass_no=1)["window"] + window
