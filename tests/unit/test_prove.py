"""``ctxproof prove`` (docs/prove.md): proofs of the safe specs, counterexamples of the unsafe
ones that replay with their finding, minimality, every ``when`` key and action, the CLI."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from verifier import audit_trace, load_trace
from verifier.cli import main
from verifier.errors import InputError, InternalError
from verifier.policies.spec import Spec, SpecPolicy, load_spec, parse_spec
from verifier.prove import PROPERTIES, Encoding, ProofResult, prove
from verifier.prove import replay as replay_module
from verifier.rules.context import MODE_COUNT
from verifier.window import Rewrite

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "models" / "specs"
HEAD = 'format = "ctxproof-policy/1"\n'


def spec_of(name: str) -> Spec:
    return load_spec(SPECS / f"{name}.toml")


def refuted(result: ProofResult) -> set[str]:
    return {c.code for c in result.counterexamples}


def replays_with(path: str, code: str, pass_no: int) -> bool:
    report = audit_trace(load_trace(path), mode=MODE_COUNT)
    return any(f.code == code and f.pass_ == pass_no for f in report.findings)


def refutable(spec: Spec, code: str, *, items: int, induction: bool) -> bool:
    """Is there any counterexample of ``code`` with at most ``items`` items?"""
    enc = Encoding(spec, items=items, passes=3, appends=2, induction=induction)
    res = enc.refutable(code)
    assert res.status in ("sat", "unsat"), res
    return res.sat


# -- the reference specs ---------------------------------------------------------------------


@pytest.mark.parametrize("induction", [False, True])
def test_spill_first_is_proved(induction: bool, tmp_path: Path) -> None:
    result = prove(spec_of("spill_first"), induction=induction, out_dir=tmp_path)
    assert result.result == "proved", result
    assert result.code is None and result.path is None and result.reason is None
    assert set(result.stats["properties"]) == set(PROPERTIES)
    assert all(p["result"] == "proved" for p in result.stats["properties"].values())
    assert list(tmp_path.iterdir()) == []  # nothing to write


def test_spill_first_is_proved_by_induction_for_larger_states(tmp_path: Path) -> None:
    result = prove(spec_of("spill_first"), induction=True, items=12, out_dir=tmp_path)
    assert result.result == "proved"
    assert result.items == 12 and result.passes == 1 and result.induction


CHARACTERISTIC = {
    "keep_recent": {"CF001", "TP001"},
    "naive_summarizer": {"CF001"},
    "paraphraser": {"WR004"},
    "relevance_eviction": {"WR008"},
    "tool_output_clearer": {"WR008", "WR001"},
    "pressure_pruner": {"CF001"},
}


@pytest.mark.parametrize("induction", [False, True])
@pytest.mark.parametrize("name", sorted(CHARACTERISTIC))
def test_each_unsafe_spec_has_counterexamples_that_replay(
    name: str, induction: bool, tmp_path: Path
) -> None:
    result = prove(spec_of(name), induction=induction, out_dir=tmp_path)
    assert result.result == "counterexample"
    assert CHARACTERISTIC[name] <= refuted(result)
    first = result.counterexamples[0]
    assert (result.code, result.path) == (first.code, first.path)
    assert PROPERTIES.index(first.code) == min(PROPERTIES.index(c) for c in refuted(result))
    for cex in result.counterexamples:
        assert Path(cex.path) == tmp_path / f"cex-{cex.code}.jsonl"
        assert replays_with(cex.path, cex.code, cex.pass_)
        assert cex.finding.code == cex.code


def test_the_paraphraser_only_launders_negative_results(tmp_path: Path) -> None:
    result = prove(spec_of("paraphraser"), induction=True, out_dir=tmp_path)
    assert refuted(result) == {"WR004"}
    trace = [json.loads(x) for x in Path(result.path or "").read_text().splitlines()]
    rewrite = trace[-1]
    assert rewrite["event"] == "rewrite"
    failed = [
        it["id"]
        for ev in trace
        if ev["event"] == "append"
        for it in ev["items"]
        if it.get("modality") == "failed"
    ]
    after = {it["id"]: it for it in rewrite["window"]}
    assert failed and after[failed[0]].get("modality") == "unverified"


def test_pressure_pruner_drops_commitments_only_at_twice_the_budget(tmp_path: Path) -> None:
    result = prove(spec_of("pressure_pruner"), out_dir=tmp_path)
    cex = next(c for c in result.counterexamples if c.code == "CF001")
    events = [json.loads(x) for x in Path(cex.path).read_text().splitlines()]
    budget = events[0]["budget"]
    window: dict[str, int] = {}
    rewrites = 0
    for ev in events[1:]:
        if ev["event"] == "append":
            window.update({it["id"]: it["tokens"] for it in ev["items"]})
        elif ev["event"] == "rewrite":
            rewrites += 1
            if rewrites == cex.pass_:
                break
            window = {it["id"]: it["tokens"] for it in ev["window"]}
    total = sum(window.values())
    assert budget == 0 or total / budget >= 2.0
    # below twice the budget it spills instead: at a pressure no finite budget reaches, only
    # a budget of 0 (infinite pressure, as the interpreter computes it) still evicts
    calm = parse_spec(
        (SPECS / "pressure_pruner.toml").read_text().replace("ge = 2.0", "ge = 1e300"), "calm.toml"
    )
    for c in prove(calm, induction=True, out_dir=tmp_path / "calm").counterexamples:
        assert json.loads(Path(c.path).read_text().splitlines()[0])["budget"] == 0, c.code


@pytest.mark.parametrize("induction", [False, True])
def test_counterexamples_are_minimal(induction: bool, tmp_path: Path) -> None:
    for name in ("keep_recent", "tool_output_clearer", "naive_summarizer"):
        spec = spec_of(name)
        result = prove(spec, induction=induction, out_dir=tmp_path)
        for cex in result.counterexamples:
            assert cex.size >= 1
            if cex.size > 1:
                assert not refutable(spec, cex.code, items=cex.size - 1, induction=induction)
            trace = load_trace(cex.path)
            last = max(k for k, ev in enumerate(trace.events) if not hasattr(ev, "items"))
            appended = {
                it.id for ev in trace.events[:last] if hasattr(ev, "items") for it in ev.items
            }
            # (a call appended after the last pass, to close the trace, is in no window)
            assert len(appended) == cex.size


def test_minimal_by_optimize_agrees_with_minimal_by_iteration(tmp_path: Path) -> None:
    spec = spec_of("tool_output_clearer")
    a = prove(spec, induction=True, out_dir=tmp_path / "a")
    b = prove(spec, induction=True, out_dir=tmp_path / "b", minimize="optimize")
    assert [(c.code, c.size) for c in a.counterexamples] == [
        (c.code, c.size) for c in b.counterexamples
    ]


def test_bit_vectors_and_integers_decide_alike(tmp_path: Path) -> None:
    for name in ("spill_first", "keep_recent", "pressure_pruner", "paraphraser"):
        a = prove(spec_of(name), induction=True, out_dir=tmp_path / "int")
        b = prove(spec_of(name), induction=True, out_dir=tmp_path / "bv", arith="bv")
        assert (a.result, refuted(a)) == (b.result, refuted(b)), name


def test_bmc_lets_a_result_come_before_its_call(tmp_path: Path) -> None:
    """Every attribute is symbolic: a result may name a call that a later append gives (a
    trace may cite an id it gives later). Evicting what has aged then orphans the call the
    result came before (TP002), which a search of backward calls only calls proved."""
    aged = parse_spec(
        HEAD + 'name = "age1"\nstop = "all"\n[[rule]]\nwhen = { age = { ge = 1 } }\n'
        'do = "evict"\n',
        "age1.toml",
    )
    result = prove(aged, items=3, passes=2, out_dir=tmp_path)
    (tp002,) = [c for c in result.counterexamples if c.code == "TP002"]
    trace = load_trace(tp002.path)
    found = [(f.code, f.pass_) for f in audit_trace(trace).findings]
    assert ("TP002", tp002.pass_) in found
    appends = [ev for ev in trace.events if hasattr(ev, "items") and not isinstance(ev, Rewrite)]
    first = {it.id for it in appends[0].items}
    assert any(it.call is not None and it.call not in first for it in appends[0].items)


def test_a_bmc_counterexample_is_as_short_as_it_can_be(tmp_path: Path) -> None:
    result = prove(spec_of("keep_recent"), passes=4, out_dir=tmp_path)
    for cex in result.counterexamples:
        assert cex.pass_ == 1, cex  # keep-recent can do each of its harms at once
        rewrites = [ev for ev in load_trace(cex.path).events if type(ev).__name__ == "Rewrite"]
        assert len(rewrites) == 1


# -- hand-written specs: every `when` key and every action --------------------------------

HAND: dict[str, tuple[str, set[str], set[str]]] = {
    # name: (spec body, refuted from the empty window, refuted by induction)
    "evict_uncited_prose": (
        'stop = "all"\n[[rule]]\nwhen = { kind = ["prose"], cited = false }\ndo = "evict"',
        {"TP002"},  # a placeholder result nobody cites leaves its call alone
        # from any state too; a stub cites what its item cites: no CF004, no TP001
        {"TP002"},
    ),
    "evict_free_prose": (
        'stop = "all"\n[[rule]]\nwhen = { kind = ["prose"], cited = false, result = false }\n'
        'do = "evict"',
        set(),
        set(),
    ),
    "spill_results_evict_their_stubs": (
        'stop = "all"\n[[rule]]\nwhen = { stub = true, result = true }\ndo = "evict"\n'
        '[[rule]]\nwhen = { result = true }\ndo = "spill"',
        # a stub answers a call when its item does: the stub of a spilled result goes at
        # the next pass while its call stays (or, a result being some call's too, its own
        # result stays)
        {"TP001", "TP002", "WR001", "WR002"},
        {"TP001", "TP002", "WR001", "WR002"},
    ),
    "evict_rejections": (
        '[[rule]]\nwhen = { type = ["rejection"] }\ndo = "evict"',
        {"CF001", "CF004", "TP001"},
        {"CF001", "CF004", "TP001"},
    ),
    "evict_light_claims": (
        '[[rule]]\nwhen = { load_bearing = false, kind = ["claim"] }\ndo = "evict"',
        {"CF001", "CF004", "TP001"},  # a failed claim is bound whatever load_bearing says
        {"CF001", "CF004", "TP001"},
    ),
    "spill_what_is_not_negative": (
        '[[rule]]\nwhen = { stub = true }\ndo = "keep"\n[[rule]]\nwhen = { negative = false }\n'
        'do = "spill"',
        set(),
        set(),
    ),
    "spill_old_failures": (
        'stop = "all"\n[[rule]]\nwhen = { age = { ge = 2 }, kind = ["observation"],'
        ' modality = ["failed"] }\ndo = "spill"',
        set(),
        set(),
    ),
    "summarize_irrelevant_prose": (
        'order = ["score"]\n[[rule]]\nwhen = { score = { lt = 50 }, kind = ["prose"] }\n'
        'do = "summarize"',
        {"CF004", "TP001", "TP002"},
        {"CF004", "TP001", "TP002"},
    ),
    "soften_long_items": (
        '[[rule]]\nwhen = { tokens = { gt = 100 } }\ndo = "soften"',
        {"WR004"},
        {"WR004"},
    ),
    "demote_commitments_under_pressure": (
        '[[rule]]\nwhen = { pressure = { ge = 3.0 }, kind = ["commitment"] }\ndo = "demote"',
        {"WR004"},
        {"WR004"},
    ),
    "demote_verified": (
        'stop = "all"\n[[rule]]\nwhen = { modality = ["verified"] }\ndo = "demote"',
        set(),
        set(),
    ),
    "keep_everything": ('[[rule]]\ndo = "keep"', set(), set()),
    "no_rules": ("", set(), set()),
    "evict_observations_demote_orphans": (
        'stop = "all"\ndemote_orphans = true\n[[rule]]\nwhen = { kind = ["observation"] }\n'
        'do = "evict"',
        # demote_orphans tags a claim whose witnesses all left, a failed one too (WR004); a
        # commitment, or a claim with a witness that is no observation, still says verified
        # (WR002)
        {"CF004", "WR001", "WR002", "WR004", "WR008", "TP001", "TP002"},
        {"CF004", "WR001", "WR002", "WR004", "WR008", "TP001", "TP002"},
    ),
    "evict_stubs": (
        '[[rule]]\nwhen = { stub = true }\ndo = "evict"',
        set(),  # this spec never makes a stub
        {"TP001", "TP002", "WR001", "WR002"},  # a stub another policy left may be all there is
    ),
    "summarize_stubs_newest_first": (
        'order = ["-position"]\n[[rule]]\nwhen = { stub = true }\ndo = "summarize"',
        set(),
        {"TP001", "TP002", "WR001", "WR002"},
    ),
    "spill_then_evict_stubs": (
        'order = ["-age", "tokens"]\nstub_tokens = 2\n[[rule]]\nwhen = { stub = true }\n'
        'do = "evict"\n[[rule]]\nwhen = { tokens = { le = 2 } }\ndo = "keep"\n[[rule]]\n'
        'do = "spill"',
        # a spilled result whose stub goes later, while its call stays
        {"TP001", "TP002", "WR001", "WR002"},
        {"TP001", "TP002", "WR001", "WR002"},
    ),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_written_specs(name: str, tmp_path: Path) -> None:
    body, from_empty, by_induction = HAND[name]
    spec = parse_spec(HEAD + body, f"{name}.toml")
    bmc = prove(spec, items=4, passes=3, out_dir=tmp_path / "bmc")
    ind = prove(spec, items=4, induction=True, out_dir=tmp_path / "ind")
    assert refuted(bmc) == from_empty
    assert refuted(ind) == by_induction
    for res in (bmc, ind):
        assert res.result == ("counterexample" if refuted(res) else "proved")
        for cex in res.counterexamples:
            assert replays_with(cex.path, cex.code, cex.pass_)


def test_the_hand_written_specs_use_every_key_and_action() -> None:
    keys: set[str] = set()
    actions: set[str] = set()
    top: set[str] = set()
    for body, _, _ in HAND.values():
        spec = parse_spec(HEAD + body)
        for rule in spec.rules:
            actions.add(rule.do)
            keys.update(k for k in rule.when.__slots__ if getattr(rule.when, k) is not None)
        if spec.order != ("position",):
            top.update(o.lstrip("-") for o in spec.order)
        top.update({"stop"} if spec.stop == "all" else set())
        top.update({"demote_orphans"} if spec.demote_orphans else set())
        top.update({"stub_tokens"} if spec.stub_tokens != 8 else set())
    assert actions == {"keep", "evict", "spill", "summarize", "soften", "demote"}
    assert keys == {
        "kind", "type", "modality", "load_bearing", "negative", "cited", "result", "stub",
        "age", "score", "tokens", "pressure",
    }
    assert {"position", "age", "score", "tokens", "stop", "demote_orphans", "stub_tokens"} <= top


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "induction"),
    [
        ("tokens = { gt = 1048575 }", False),
        ("tokens = { ge = 30000000 }", True),
        ("age = { gt = 65535 }", True),
        ("age = { gt = 268435455 }", True),  # an age wider than the budget's numbers
        ("tokens = { ge = 1 }, pressure = { lt = 1e-9 }", False),  # a budget of 10**9 tokens
        ("tokens = { ge = 1 }, pressure = { lt = 1e-9 }", True),
        ("pressure = { gt = 1e7, lt = 1e300 }", True),  # tokens ten million times the budget
        # a narrow band of pressures: a budget past twice the inverse of its width
        ("pressure = { gt = 100.0, lt = 100.00001 }", False),
        ("pressure = { gt = 100.0, lt = 100.00001 }", True),
        ("pressure = { gt = 0.5, lt = 0.50000001 }", True),
    ],
)
def test_a_threshold_past_the_default_ranges_is_still_reached(
    when: str, induction: bool, tmp_path: Path
) -> None:
    """The ranges of a proof go past every token count and age the spec compares with: a
    spec that drops commitments only when they are huge, or very old, is refuted, with a
    counterexample that replays."""
    spec = parse_spec(
        'format = "ctxproof-policy/1"\nstop = "all"\n'
        f'[[rule]]\nwhen = {{ kind = ["commitment"], {when} }}\ndo = "evict"\n'
    )
    result = prove(spec, induction=induction, out_dir=tmp_path)
    assert "CF001" in {c.code for c in result.counterexamples}
    cex = next(c for c in result.counterexamples if c.code == "CF001")
    assert "CF001" in {f.code for f in audit_trace(load_trace(cex.path)).findings}


def test_the_ranges_grow_with_the_spec_only() -> None:
    from verifier.prove.proof import spec_bounds
    from verifier.prove.window import Bounds

    assert spec_bounds(spec_of("spill_first")) == Bounds()  # the defaults
    big = parse_spec(
        'format = "ctxproof-policy/1"\n[[rule]]\n'
        'when = { tokens = { gt = 5000000 }, age = { lt = 1e6 } }\ndo = "keep"\n'
    )
    bounds = spec_bounds(big)
    assert bounds.tokens >= 4 * 5_000_000 and bounds.age >= 4 * 10**6
    assert bounds.budget > 6 * bounds.tokens  # a budget above a window of such items
    tiny = parse_spec(
        'format = "ctxproof-policy/1"\n[[rule]]\nwhen = { pressure = { le = 1e-9 } }\n'
        'do = "keep"\n'
    )
    assert spec_bounds(tiny).budget >= 4 * 10**9  # one token in it: a pressure under 1e-9
    fine = parse_spec(
        'format = "ctxproof-policy/1"\nstop = "fits"\n[[rule]]\n'
        'when = { pressure = { lt = 1.0000001 } }\ndo = "evict"\n'
    )
    # over the budget (past 1) and under 1.0000001: 10,000,001 tokens in 10**7 and past
    reach = spec_bounds(fine)
    assert reach.budget >= 10**7 and reach.tokens >= 10_000_001


def test_bad_bounds_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--items"):
        prove(spec_of("spill_first"), items=0, out_dir=tmp_path)
    with pytest.raises(InputError, match="--timeout"):
        prove(spec_of("spill_first"), timeout=0, out_dir=tmp_path)


@pytest.mark.parametrize("limit", [math.inf, 1e308])
def test_a_timeout_past_what_z3_takes_is_no_limit(limit: float, tmp_path: Path) -> None:
    evict = parse_spec(HEAD + '[[rule]]\nwhen = { kind = ["commitment"] }\ndo = "evict"\n')
    result = prove(evict, items=2, passes=1, timeout=limit, out_dir=tmp_path)
    assert result.result == "counterexample" and result.code == "CF001"


def test_a_model_that_does_not_replay_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = parse_spec(HEAD + '[[rule]]\ndo = "keep"', "keep.toml")

    class KeepAll(SpecPolicy):
        def __init__(self, spec: Spec) -> None:
            super().__init__(keep)

    monkeypatch.setattr(replay_module, "SpecPolicy", KeepAll)
    with pytest.raises(InternalError, match="disagrees with the spec interpreter"):
        prove(spec_of("keep_recent"), induction=True, out_dir=tmp_path)


# -- the command line -----------------------------------------------------------------------


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_proved(tmp_path: Path) -> None:
    spec = str(SPECS / "spill_first.toml")
    code, out, err = run("prove", spec, "--out", str(tmp_path))
    assert code == 0, err
    assert out.startswith(f"{spec}: proved (6 items, 3 passes, up to 2 appended before each;")
    assert out.count("\n") == 1
    # with z3's statistics: the counts the JSON gives in full
    _, js, _ = run("prove", spec, "--out", str(tmp_path), "--format", "json")
    z3_stats = json.loads(js)["stats"]["z3"]
    assert f"; z3: checks {z3_stats['checks']}, assertions {z3_stats['assertions']}," in out
    code, out, _ = run("prove", spec, "--induction", "--items", "8", "--out", str(tmp_path))
    assert code == 0
    assert "proved (by induction: one pass from any state of up to 8 items" in out


def test_cli_counterexample_text(tmp_path: Path) -> None:
    spec = str(SPECS / "naive_summarizer.toml")
    code, out, _ = run("prove", spec, "--out", str(tmp_path))
    assert code == 1
    lines = out.splitlines()
    path = tmp_path / "cex-CF001.jsonl"
    assert lines[0] == f"{spec}: counterexample CF001 at {path}"
    assert lines[1].startswith(f"{path}:") and " CF001 commitment-dropped [" in lines[1]
    # the trace audits with the finding, from the command line too
    code, out, _ = run("audit", str(path), "--witness-mode", "count")
    assert code == 1 and " CF001 commitment-dropped " in out


def test_cli_json(tmp_path: Path) -> None:
    spec = str(SPECS / "relevance_eviction.toml")
    code, out, _ = run(
        "prove", spec, "--induction", "--items", "3", "--out", str(tmp_path), "--format", "json"
    )
    assert code == 1
    obj: dict[str, Any] = json.loads(out)
    assert list(obj) == [
        "spec", "result", "items", "passes", "induction", "code", "path", "reason", "seconds",
        "stats",
    ]
    assert obj["result"] == "counterexample" and obj["code"] == "CF001"
    assert obj["items"] == 3 and obj["passes"] == 1 and obj["induction"] is True
    assert obj["path"] == str(tmp_path / "cex-CF001.jsonl")
    assert "WR008" in {c["code"] for c in obj["stats"]["counterexamples"]}
    assert obj["stats"]["z3"]["checks"] >= len(PROPERTIES)


@pytest.mark.parametrize("tiny", ["5e-324", "1e-310"])
def test_a_tiny_pressure_threshold_is_proved_like_a_small_one(tmp_path: Path, tiny: str) -> None:
    """A subnormal threshold needs a budget past any float: the bounds are exact fractions."""
    results = []
    for value in (tiny, "1e-300"):
        spec = tmp_path / f"s{value}.toml"
        spec.write_text(
            HEAD + f'[[rule]]\nwhen = {{ pressure = {{ gt = {value} }} }}\ndo = "evict"\n'
        )
        code, out, err = run("prove", str(spec), "--items", "2", "--passes", "1",
                             "--out", str(tmp_path), "--format", "json")  # fmt: skip
        assert code in (0, 1), err
        obj = json.loads(out)
        results.append((code, obj["result"], obj["code"]))
    assert results[0] == results[1]


def test_a_proof_too_large_to_encode_in_its_time_is_undecided_at_the_limit(
    tmp_path: Path,
) -> None:
    """The limit holds while the terms are built too: bounds that take longer to encode
    than --timeout end undecided, saying so, not when the encoding is done."""
    spec = SPECS / "keep_recent.toml"
    res = prove(spec, items=64, passes=4, appends=16, timeout=0.001, out_dir=tmp_path)
    assert res.result == "undecided" and res.reason is not None
    assert "encoding of these bounds ran out of time" in res.reason
    code, out, _ = run("prove", str(spec), "--items", "64", "--timeout", "0.001",
                       "--out", str(tmp_path), "--format", "json")  # fmt: skip
    assert code == 3 and "ran out of time" in json.loads(out)["reason"]


def test_cli_timeout_is_undecided(tmp_path: Path) -> None:
    spec = str(SPECS / "keep_recent.toml")
    code, out, _ = run("prove", spec, "--timeout", "0.000001", "--out", str(tmp_path))
    assert code == 3
    assert out.startswith(f"{spec}: undecided (") and "time" in out
    code, out, _ = run(
        "prove", spec, "--timeout", "0.000001", "--out", str(tmp_path), "--format", "json"
    )
    obj = json.loads(out)
    assert code == 3 and obj["result"] == "undecided" and obj["reason"]


def test_cli_bad_spec_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(HEAD + "[[rule]]\nwhen = { age = 3 }\ndo = \"evict\"\n", "utf-8")
    code, out, err = run("prove", str(bad), "--out", str(tmp_path))
    assert code == 2 and out == ""
    assert f"{bad}:3: rule[0].when.age: expected a table" in err
    code, _, err = run("prove", str(SPECS / "spill_first.toml"), "--items", "0")
    assert code == 2 and "--items" in err


def test_cli_internal_error_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise InternalError("the proof's encoding disagrees with the spec interpreter: test")

    monkeypatch.setattr("verifier.prove.prove", broken)
    code, _, err = run("prove", str(SPECS / "spill_first.toml"), "--out", str(tmp_path))
    assert code == 4 and "disagrees with the spec interpreter" in err


def test_an_induction_counterexample_names_the_pass_its_trace_shows(tmp_path: Path) -> None:
    # a spec that reads age: the trace gives the items their ages by setup rewrites that
    # come first, so the spec's pass is a later one; the result names that pass, as the
    # audit of the trace (and the text output) does
    spec = parse_spec(
        HEAD + '[[rule]]\nwhen = { kind = ["prose"], age = { ge = 2 } }\ndo = "evict"\n',
        "aged.toml",
    )
    result = prove(spec, items=3, induction=True, out_dir=tmp_path)
    assert result.counterexamples
    assert any(c.pass_ > 1 for c in result.counterexamples)  # setup rewrites came first
    for c in result.counterexamples:
        assert replays_with(c.path, c.code, c.pass_)
        assert c.to_json()["pass"] == c.finding.pass_ == c.pass_


def test_bmc_bounds_each_window_not_the_items_appended_in_all(tmp_path: Path) -> None:
    # one item a window, one appended before each of three passes: a failed observation is
    # spilled, then its stub evicted; a claim citing it, appended later, is evicted as not
    # negative (its witness is not in the window) though the store shows it failed. Every
    # window holds one item, but the session appends two: within --items 1.
    spec = parse_spec(
        HEAD
        + 'stop = "all"\n'
        + '[[rule]]\nwhen = { kind = ["observation"], modality = ["failed"] }\ndo = "spill"\n'
        + '[[rule]]\nwhen = { stub = true }\ndo = "evict"\n'
        + '[[rule]]\nwhen = { kind = ["claim"], negative = false, load_bearing = false,'
        + " cited = false }\ndo = \"evict\"\n",
        "spill_then_forget.toml",
    )
    result = prove(spec, items=1, passes=3, appends=1, out_dir=tmp_path)
    assert "CF001" in refuted(result)
    for c in result.counterexamples:
        assert replays_with(c.path, c.code, c.pass_)
        trace = load_trace(c.path)
        windows = [ev.window for ev in trace.events if isinstance(ev, Rewrite)]
        assert windows and all(w is not None and len(w) <= 1 for w in windows)
