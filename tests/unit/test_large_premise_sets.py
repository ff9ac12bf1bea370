"""Large premise sets: a model sought in Python first gives the verdicts the solver gives."""

from __future__ import annotations

import random

import pytest

from verifier import solver
from verifier.check import check_rewrite
from verifier.io import item_from_json
from verifier.window import Item


def _windows(seed: int) -> tuple[list[Item], list[Item]]:
    """300 claims that join commitments, some rewritten into formulas that do or do not
    follow (CF005), and a few pairs that contradict each other."""
    rng = random.Random(seed)
    before = [
        item_from_json({"id": f"c{i}", "kind": "commitment", "type": "decision"})
        for i in range(150)
    ]
    for i in range(300):
        a, b = rng.sample(range(150), 2)
        op = rng.choice(["&", "|", "->"])
        claim = {"id": f"k{i}", "kind": "claim", "formula": f"c{a} {op} c{b}"}
        before.append(item_from_json(claim))
    after = list(before)
    for i in rng.sample(range(150, 450), 40):
        a, b = rng.sample(range(150), 2)
        formula = rng.choice([f"c{a} | c{b}", f"!c{a}", f"c{a} & x{i}", f"c{a} -> c{b}"])
        after[i] = item_from_json({"id": f"k{i - 150}", "kind": "claim", "formula": formula})
    return before, after


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_python_model_changes_no_verdict_and_no_finding(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    before, after = _windows(seed)
    found: list[bool] = []
    greedy = solver.greedy_model

    def counted(formulas: list[object]) -> object:
        model = greedy(formulas)  # type: ignore[arg-type]
        found.append(model is not None)
        return model

    with monkeypatch.context() as m:
        m.setattr(solver, "greedy_model", counted)
        fast = check_rewrite(before, after, with_repair=False)
    assert any(found)  # the Python model was used
    with monkeypatch.context() as m:
        m.setattr(solver, "GREEDY_MIN", 10**9)  # the solver finds every model
        slow = check_rewrite(before, after, with_repair=False)
    assert fast.verdict == slow.verdict
    assert [(f.code, f.items, f.message) for f in fast.findings] == [
        (f.code, f.items, f.message) for f in slow.findings
    ]
    assert any(f.code == "CF005" for f in fast.findings)  # the seeds do exercise refutations
