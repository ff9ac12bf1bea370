"""Laws of ``prove --suggest`` on generated specs (docs/prove.md, "Suggestions"), in the
slow tier: each example proves specs and runs a search.

* A spec whose every action is made safer (``evict``/``summarize`` -> ``spill``,
  ``soften``/``demote`` -> ``keep``) is proved.
* Broken again by one edit (the inverse of a suggestion's edit), a spec that is refuted
  gets a suggestion of one edit, which ``prove`` proves.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from verifier.policies.spec import Spec, parse_spec
from verifier.prove import prove, suggest
from verifier.prove.search import SAFER
from verifier.strategies import spec_texts

pytestmark = pytest.mark.slow

WORSE = {"spill": ("evict", "summarize"), "keep": ("soften", "demote")}


def made_safe(spec: Spec) -> Spec:
    return replace(spec, rules=tuple(replace(r, do=SAFER.get(r.do, r.do)) for r in spec.rules))


@st.composite
def broken_specs(draw: st.DrawFn) -> tuple[Spec, Spec, str]:
    """A safe spec, and the same spec with one edit undone: an action made less safe, or
    a ``false`` guard taken away."""
    safe = made_safe(parse_spec(draw(spec_texts(max_rules=3)), "generated.toml"))
    undo: list[tuple[str, int, str]] = []
    for i, rule in enumerate(safe.rules):
        undo += [("action", i, worse) for worse in WORSE[rule.do]]
        undo += [
            ("guard", i, key)
            for key in ("cited", "result", "negative", "load_bearing", "stub")
            if getattr(rule.when, key) is False
        ]
    assume(undo)
    kind, i, what = draw(st.sampled_from(undo))
    rule = safe.rules[i]
    if kind == "action":
        changed = replace(rule, do=what)
        how = f"rule {i + 1}: {rule.do} -> {what}"
    else:
        changed = replace(rule, when=replace(rule.when, **{what: None}))
        how = f"rule {i + 1}: when -= {what} = false"
    return safe, replace(safe, rules=(*safe.rules[:i], changed, *safe.rules[i + 1 :])), how


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.nested_given
    ],
)
@given(case=broken_specs())
def test_one_edit_from_a_safe_spec_is_repaired_by_one_edit(
    case: tuple[Spec, Spec, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    safe, broken, how = case
    out = tmp_path_factory.mktemp("suggest")
    assert prove(safe, items=4, out_dir=out).result == "proved"
    if prove(broken, items=4, out_dir=out).result != "counterexample":
        return  # that edit did not make it unsafe (the rule never acts on what matters)
    found = suggest(broken, items=4, out_dir=out, sessions=4)
    assert found.suggestions, (how, found.reason)
    assert found.edits == 1, how
    for s in found.suggestions:
        assert s.path is not None
        again = prove(parse_spec(Path(s.path).read_text("utf-8")), items=4, out_dir=out / "again")
        assert again.result == "proved", (how, s.edits)
