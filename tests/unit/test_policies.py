"""Loading and running rewrite policies: the forms, the errors, PL001 and PL002 (docs/policies.md).

No CLI command takes a policy yet: loading errors are checked as the
InputError (exit 2) that ``load_policy`` raises.
"""

from __future__ import annotations

import random
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from verifier import (
    RULES,
    MemoryStore,
    PolicyResult,
    check_rewrite,
    item_from_json,
    load_policy,
    ref_of,
    run_policy,
    run_twice,
    stub_for,
)
from verifier.errors import InputError
from verifier.findings import POLICY_RULES
from verifier.policies import AgeTracker, Policy, item_tokens, pressure_of

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]

C1: Obj = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "db.pg"}
P1: Obj = {"id": "p1", "kind": "prose", "text": "notes", "tokens": 40}
O1: Obj = {"id": "o1", "kind": "observation", "modality": "failed", "source": "make test"}
WINDOW = [C1, P1, O1]


@pytest.fixture(autouse=True)
def _restore_sys_path() -> Any:
    """Loading a policy file prepends its folder to sys.path: undo that after each test."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), "utf-8")
    return path


# -- loading -----------------------------------------------------------------------------


def test_a_file_and_function(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.py", "def drop_prose(window, budget):\n    return window[:1]\n")
    policy = load_policy(f"{path}:drop_prose")
    assert policy.name == f"{path}:drop_prose"
    assert (policy.takes_pass_no, policy.takes_ages, policy.takes_store) == (False, False, False)
    assert policy.function(WINDOW, 10) == [C1]


def test_a_file_may_import_its_neighbours(tmp_path: Path) -> None:
    folder = tmp_path / "pols"
    folder.mkdir()
    write(folder, "helpers_for_ctxproof_test.py", "KEEP = 'commitment'\n")
    path = write(
        folder,
        "uses_helper.py",
        """\
        from helpers_for_ctxproof_test import KEEP

        def policy(window, budget):
            return [it for it in window if it["kind"] == KEEP]
        """,
    )
    try:
        res = run_policy(load_policy(f"{path}:policy"), WINDOW, 10)
    finally:
        sys.modules.pop("helpers_for_ctxproof_test", None)
    assert res.ok and [it.id for it in res.window] == ["c1"]
    assert sys.path[0] == str(folder.resolve())  # prepended, as pytest's prepend mode


def test_two_files_with_the_same_name_load_as_two_modules(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write(tmp_path / "a", "policy.py", "def f(window, budget):\n    return []\n")
    b = write(tmp_path / "b", "policy.py", "def f(window, budget):\n    return window\n")
    fa, fb = load_policy(f"{a}:f"), load_policy(f"{b}:f")
    assert fa.function(WINDOW, 0) == [] and fb.function(WINDOW, 0) == WINDOW
    assert fa.function.__module__ != fb.function.__module__


def test_a_module_and_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "ctxproof_test_pkg"
    pkg.mkdir()
    write(pkg, "__init__.py", "")
    write(
        pkg,
        "rewrite.py",
        """\
        class Policies:
            @staticmethod
            def keep(window, budget):
                return window

        def evict_all(window, budget):
            return []
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load_policy("ctxproof_test_pkg.rewrite:evict_all").function(WINDOW, 1) == []
        nested = load_policy("ctxproof_test_pkg.rewrite:Policies.keep")
        assert nested.function(WINDOW, 1) == WINDOW
    finally:
        for name in ("ctxproof_test_pkg", "ctxproof_test_pkg.rewrite"):
            sys.modules.pop(name, None)


def test_a_spec_file() -> None:
    policy = load_policy(str(ROOT / "models" / "specs" / "keep_recent.toml"))
    assert policy.name == "keep-recent" and policy.spec is not None
    assert (policy.takes_pass_no, policy.takes_ages, policy.takes_store) == (True, True, True)
    res = run_policy(policy, WINDOW, 20)
    assert [it.id for it in res.window] == ["o1"]


def test_keyword_arguments_go_only_to_policies_that_take_them(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "kw.py",
        """\
        def plain(window, budget):
            return window

        def both(window, budget, *, pass_no, ages):
            return [{"id": f"n{pass_no}", "kind": "prose", "text": repr(sorted(ages.items()))}]

        def anything(window, budget, **options):
            return [{"id": "n", "kind": "prose", "text": repr(sorted(options))}]

        def positional(window, budget, pass_no=1):
            return [{"id": f"n{pass_no}", "kind": "prose"}]
        """,
    )
    plain = load_policy(f"{path}:plain")
    assert (plain.takes_pass_no, plain.takes_ages, plain.takes_store) == (False, False, False)
    # would raise if given
    assert run_policy(plain, WINDOW, 10, pass_no=3, ages={"c1": 2}, store={}).ok
    both = run_policy(load_policy(f"{path}:both"), WINDOW, 10, pass_no=3, ages={"c1": 2})
    assert both.window[0].id == "n3" and both.window[0].text == "[('c1', 2)]"
    anything = run_policy(load_policy(f"{path}:anything"), WINDOW, 10)
    assert anything.window[0].text == "['ages', 'pass_no', 'store']"
    assert run_policy(load_policy(f"{path}:positional"), WINDOW, 10, pass_no=4).window[0].id == "n4"


def test_a_policy_that_takes_store_reads_the_store_and_cannot_change_it(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "st.py",
        """\
        def resolve(window, budget, *, store):
            out = []
            for it in window:
                if it["kind"] == "stub" and it["ref"] in store:
                    stored = store[it["ref"]]
                    stored["text"] = "changed by the policy"  # a copy: the store is unchanged
                    out.append({"id": it["id"], "kind": "prose", "text": str(len(store))})
                else:
                    out.append(it)
            return out
        """,
    )
    policy = load_policy(f"{path}:resolve")
    assert (policy.takes_pass_no, policy.takes_ages, policy.takes_store) == (False, False, True)
    window = [stub_for(C1), P1]
    stored = {ref_of(C1): dict(C1)}
    res = run_policy(policy, window, 10, store=stored)
    assert [(it.id, it.kind, it.text) for it in res.window] == [
        ("c1", "prose", "1"),
        ("p1", "prose", "notes"),
    ]
    assert stored == {ref_of(C1): C1}
    # a store object is read through the same view; no store is an empty one
    store = MemoryStore()
    store.spill([item_from_json(C1), item_from_json(O1)])
    res = run_twice(policy, window, 10, store=store)
    assert res.ok and res.window[0].text == "2"
    assert [it.kind for it in run_policy(policy, window, 10).window] == ["stub", "prose"]


LOAD_ERRORS: list[tuple[str, str, str]] = [
    ("missing.py:f", "", r"policy file does not exist"),
    ("{dir}:f", "", r"policy file is a folder"),
    (
        "boom.py:f",
        "x = 1\ny = 1 / 0\n\ndef f(window, budget):\n    return window\n",
        r"policy module failed to import: ZeroDivisionError: division by zero",
    ),
    ("syntax.py:f", "def f(window, budget)\n    return window\n", r"failed to import: SyntaxError"),
    ("exits.py:f", "import sys\nsys.exit(3)\n", r"failed to import: SystemExit: 3"),
    (
        "nofunc.py:g",
        "def f(window, budget):\n    return window\ndef h(window, budget):\n    return window\n",
        r"policy module has no 'g'; it defines f, h",
    ),
    ("const.py:LIMIT", "LIMIT = 4\n", r"'LIMIT' is a int, not a function"),
    (
        "one.py:f",
        "def f(window):\n    return window\n",
        r"cannot be called as policy\(window, budget\)",
    ),
    (
        "three.py:f",
        "def f(window, budget, extra):\n    return window\n",
        r"cannot be called as policy\(window, budget\)",
    ),
    (
        "kwonly.py:f",
        "def f(window, budget, *, extra):\n    return window\n",
        r"cannot be called as policy\(window, budget\)",
    ),
    (
        "needs.py:f",
        "def f(window, budget):\n    return window\n\ndef need():\n    return 1 / 0\n\n"
        "f.ctxproof_requires = need\n",
        r"'f' cannot run: its check of what it needs failed: ZeroDivisionError: division by"
        r" zero",
    ),
    ("nocolon.py", "", r"names no function"),
    ("ctxproof_no_such_module:f", "", r"policy module 'ctxproof_no_such_module' not found"),
    ("not a module:f", "", r"is not a policy name"),
    ("", "", r"no policy given"),
    ("gone.toml", "", r"cannot read"),
]


@pytest.mark.parametrize(("arg", "source", "message"), LOAD_ERRORS)
def test_loading_errors_are_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arg: str, source: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if source:
        write(tmp_path, arg.split(":")[0], source)
    arg = arg.replace("{dir}", str(tmp_path))
    with pytest.raises(InputError, match=message) as err:
        load_policy(arg)
    assert err.value.fix  # every message says what to do
    assert "\n" not in err.value.render()


def test_an_import_error_names_the_line_it_was_raised_on(tmp_path: Path) -> None:
    path = write(tmp_path, "boom.py", "x = 1\ny = 1 / 0\n")
    with pytest.raises(InputError) as err:
        load_policy(f"{path}:f")
    assert (err.value.file, err.value.line) == (str(path), 2)
    path = write(tmp_path, "syntax.py", "\n\ndef f(:\n")
    with pytest.raises(InputError) as err:
        load_policy(f"{path}:f")
    assert err.value.line == 3
    assert f"{path}:f" not in sys.modules  # a module that failed leaves nothing behind


def test_a_module_name_that_does_not_import_is_the_message_s_file() -> None:
    with pytest.raises(InputError) as err:
        load_policy("ctxproof_no_such_module:f")
    assert err.value.file == "ctxproof_no_such_module"
    assert err.value.render().startswith("ctxproof_no_such_module: policy module")


def test_a_module_whose_own_import_fails_is_not_reported_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "ctxproof_test_needs.py", "import ctxproof_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match="failed to import: ModuleNotFoundError") as err:
        load_policy("ctxproof_test_needs:f")
    assert err.value.file == "ctxproof_test_needs"


# -- running -----------------------------------------------------------------------------


def test_the_policy_gets_its_own_copy_of_the_items_as_written() -> None:
    seen: list[list[Obj]] = []

    def mutating(window: list[Obj], budget: int) -> list[Obj]:
        seen.append([dict(it) for it in window])
        window[0]["formula"] = "db.mysql"
        window.pop()
        return window

    items = [item_from_json(o) for o in WINDOW]
    res = run_policy(mutating, items, 10)
    assert seen == [WINDOW]  # no defaults filled in: no modality, no load_bearing, no tokens
    assert "modality" not in seen[0][0] and "tokens" not in seen[0][0]
    assert [it.as_json() for it in items] == WINDOW  # the caller's items are untouched
    assert res.window[0].formula_text == "db.mysql"


def test_a_list_or_a_dict_result() -> None:
    res = run_policy(lambda w, b: w[:2], WINDOW, 10, pass_no=4)
    assert res.ok and [it.id for it in res.window] == ["c1", "p1"]
    assert (res.spill, res.claimed_preserved, res.pass_no) == ((), None, 4)

    def spilling(window: list[Obj], budget: int) -> Obj:
        return {
            "window": [stub_for(window[0]), window[1]],
            "spill": ["c1", "o1"],
            "claimed_preserved": ["p1"],
        }

    res = run_policy(spilling, WINDOW, 10)
    assert res.ok
    assert res.window[0].kind == "stub" and res.window[0].stub_ref == ref_of(C1)
    assert res.spill == ("c1", "o1")
    assert [it.as_json() for it in res.spilled] == [C1, O1]  # the before versions
    assert res.claimed_preserved == ("p1",)
    assert res.finding() is None


def test_spilling_a_stub_writes_the_stub() -> None:
    """The before version of every spill id is written, a stub's too: a stub the policy
    leaves for it resolves through it to the item (the store follows stubs of stubs)."""
    stub = stub_for(C1)
    res = run_policy(lambda w, b: {"window": [], "spill": ["c1"]}, [stub], 0)
    assert res.ok and res.spill == ("c1",) and [it.as_json() for it in res.spilled] == [stub]


def _pl001(policy: Any, window: list[Obj] = WINDOW, **kw: Any) -> PolicyResult:
    res = run_policy(policy, window, 10, pass_no=2, **kw)
    assert res.code == "PL001", res
    assert res.message is not None and "\n" not in res.message
    assert [it.as_json() for it in res.window] == window  # the window given, unchanged
    finding = res.finding(line=9)
    assert finding is not None
    assert (finding.code, finding.name, finding.pass_, finding.line) == (
        "PL001",
        "policy-error",
        2,
        9,
    )
    return res


def test_a_policy_that_raises_is_pl001_with_the_exception_on_one_line() -> None:
    def boom(window: list[Obj], budget: int) -> list[Obj]:
        raise ValueError("budget\n  too small")

    res = _pl001(boom)
    assert res.message is not None and res.message.endswith("raised ValueError: budget too small")
    assert "SystemExit" in (_pl001(lambda w, b: sys.exit(1)).message or "")


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (None, r"returned NoneType, not a list of item dicts"),
        ("c1", r"returned str"),
        ((), r"returned tuple, not a list of item dicts"),
        ({"window": ()}, r"returned tuple, not a list of item dicts"),
        ({"items": []}, r"has the key 'items'"),
        ({"spill": []}, r"has no 'window'"),
        ({"window": [], "spill": "c1"}, r"'spill' must be a list of item ids"),
        ({"window": [], "spill": ["c1", "c1"]}, r"'spill' lists 'c1' twice"),
        ({"window": [], "spill": ["zz"]}, r"'spill' names 'zz', which was not in the window"),
        ({"window": [], "claimed_preserved": [3]}, r"'claimed_preserved' must be a list"),
        ({"window": [], "claimed_preserved": ["zz"]}, r"names 'zz', which is in neither window"),
        ([C1, "p1"], r"window\[1\] is a str, not an item dict"),
        ([{"id": "x", "kind": "note"}], r"item 'x' is invalid: unknown kind 'note'"),
        ([{"id": "x", "kind": "commitment"}], r"item 'x' is invalid: commitment has no 'type'"),
        ([{"id": "x", "kind": "prose", "colour": 1}], r"unknown field 'colour' for a prose"),
        ([{"kind": "prose"}], r"window\[0\] is invalid: an item has no \"id\""),
        ([C1, P1, dict(C1, text="again")], r"holds id 'c1' twice"),
        ([{"id": "x", "kind": "prose", "tokens": float("nan")}], r"window\[0\] is not plain JSON"),
        ([{"id": "x", "kind": "prose", "text": {1, 2}}], r"window\[0\] is not plain JSON"),
    ],
)
def test_what_a_policy_returns_wrong_is_pl001(returned: Any, message: str) -> None:
    res = _pl001(lambda w, b: returned)
    assert res.message is not None and re.search(message, res.message), res.message


def test_pl001_names_the_ids_it_is_about() -> None:
    assert _pl001(lambda w, b: [C1, C1]).items == ("c1",)
    assert _pl001(lambda w, b: {"window": [], "spill": ["zz"]}).items == ("zz",)


def test_with_known_ids_a_reference_to_nowhere_is_pl001() -> None:
    citing = {"id": "k9", "kind": "claim", "derived_from": ["c1", "gone"]}
    res = _pl001(lambda w, b: [*w, citing], known=lambda i: i == "elsewhere")
    assert "cites derived_from 'gone'" in (res.message or "")
    ok = run_policy(lambda w, b: [*w, citing], WINDOW, 10, known=lambda i: i == "gone")
    assert ok.ok
    assert run_policy(lambda w, b: [*w, citing], WINDOW, 10).ok  # not checked without known


def test_bad_arguments_to_run_policy_are_bad_input() -> None:
    with pytest.raises(InputError, match=r"budget must be an int >= 0, not -1"):
        run_policy(lambda w, b: w, WINDOW, -1)
    with pytest.raises(TypeError, match=r"budget must be an int >= 0, not str"):
        run_policy(lambda w, b: w, WINDOW, "10")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="policy must be a function"):
        run_policy(3, WINDOW, 1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cannot be called as policy"):
        run_policy(lambda w: w, WINDOW, 1)
    with pytest.raises(InputError, match="id appears twice"):
        run_policy(lambda w, b: w, [C1, C1], 1)
    with pytest.raises(InputError, match="unknown kind"):
        run_policy(lambda w, b: w, [{"id": "x", "kind": "note"}], 1)


# -- determinism -------------------------------------------------------------------------


def test_a_random_policy_is_pl002() -> None:
    def shuffled(window: list[Obj], budget: int) -> list[Obj]:
        return [*window, {"id": "n", "kind": "prose", "text": str(random.random())}]

    res = run_twice(shuffled, WINDOW, 10, pass_no=5)
    assert res.code == "PL002"
    assert res.items == ("n",)
    assert "gave two different outputs" in (res.message or "") and "item 'n' differs" in (
        res.message or ""
    )
    finding = res.finding()
    assert finding is not None and (finding.name, finding.pass_) == ("policy-nondeterministic", 5)
    assert run_policy(shuffled, WINDOW, 10, check_determinism=True).code == "PL002"
    assert run_policy(shuffled, WINDOW, 10).ok  # one run alone cannot tell


def test_a_policy_that_fails_only_once_is_pl002() -> None:
    calls: list[int] = []

    def flaky(window: list[Obj], budget: int) -> list[Obj]:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("second time")
        return window

    res = run_twice(flaky, WINDOW, 10)
    assert res.code == "PL002" and "then an error" in (res.message or "")


def test_a_deterministic_policy_passes_and_a_steady_error_stays_pl001() -> None:
    res = run_twice(lambda w, b: w[1:], WINDOW, 10)
    assert res.ok and [it.id for it in res.window] == ["p1", "o1"]
    assert run_twice(lambda w, b: None, WINDOW, 10).code == "PL001"


def test_each_run_gets_a_fresh_copy_of_ages() -> None:
    def consuming(window: list[Obj], budget: int, *, ages: dict[str, int]) -> list[Obj]:
        ages.pop("c1", None)  # a policy may change what it was given
        return window if "c1" in ages else []

    assert run_twice(consuming, WINDOW, 10, ages={"c1": 1}).ok


# -- helpers -----------------------------------------------------------------------------


def test_the_pl_rules_are_registered() -> None:
    assert RULES["PL001"] == "policy-error"
    assert RULES["PL002"] == "policy-nondeterministic"
    assert RULES["PL003"] == "policy-timeout"
    assert RULES["PL004"] == "over-budget"
    assert frozenset({"PL001", "PL002", "PL003", "PL004"}) == POLICY_RULES


def test_tokens_and_pressure() -> None:
    assert item_tokens(P1) == 40
    assert (
        item_tokens(C1)
        == item_tokens(item_from_json(C1))
        == max(1, len(item_from_json(C1).raw) // 4)
    )
    assert pressure_of([P1], 20) == 2.0
    assert pressure_of([P1], 0) == float("inf") and pressure_of([], 0) == 0.0


def test_age_tracker_counts_rewrites_since_the_first_append() -> None:
    ages = AgeTracker()
    ages.appended(["c1", "p1"])
    ages.rewritten()
    ages.rewritten()
    ages.appended(["o1", "c1"])  # c1 re-appended: its age counts from the first time
    ages.rewritten()
    assert ages.ages() == {"c1": 3, "p1": 3, "o1": 1}


def test_a_policy_result_can_be_checked_as_a_rewrite() -> None:
    def spill_all(window: list[Obj], budget: int) -> Obj:
        return {"window": [stub_for(it) for it in window], "spill": [it["id"] for it in window]}

    before = [item_from_json(o) for o in WINDOW]
    res = run_policy(spill_all, before, 1)
    store = MemoryStore()
    store.spill(list(res.spilled))
    assert check_rewrite(before, res.window, store=store).verdict == "accept"


def test_policy_is_a_plain_record() -> None:
    policy = load_policy(str(ROOT / "models" / "specs" / "spill_first.toml"))
    assert isinstance(policy, Policy)
    assert "function" not in repr(policy)


def test_the_example_policy_in_the_docs_runs_as_written(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "policies.md").read_text("utf-8")
    section = text.split("## An example policy", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    path = write(tmp_path, "doc_policy.py", code.group(1))
    call = {"id": "t1", "kind": "prose", "text": "make test", "tokens": 20}
    window: list[Obj] = [
        {"id": "why", "kind": "prose", "text": "because", "tokens": 30},
        {"id": "free", "kind": "prose", "text": "chatter", "tokens": 30},
        {**C1, "rationale": ["why"], "tokens": 30},
        call,
        {**O1, "call": "t1", "tokens": 30},
        {"id": "tail", "kind": "prose", "tokens": 5},
    ]
    res = run_policy(load_policy(f"{path}:policy"), window, 60)
    assert res.ok, res.message
    assert [(it.id, it.kind) for it in res.window] == [
        ("why", "stub"),
        ("c1", "stub"),
        ("t1", "stub"),  # 145 tokens -> 123, 93 (free prose evicted), 71, 59: fits
        ("o1", "observation"),
        ("tail", "prose"),
    ]
    assert res.spill == ("why", "c1", "t1")
    assert res.claimed_preserved == ("o1", "tail")
    store = MemoryStore()
    store.spill(list(res.spilled))
    before = [item_from_json(o) for o in window]
    verdict = check_rewrite(
        before, res.window, store=store, claimed_preserved=res.claimed_preserved
    )
    assert verdict.verdict == "accept", verdict.findings
    # a decision spilled earlier: its stub cites its rationale, which is not free prose
    decision = {**C1, "rationale": ["why"]}
    spilled = MemoryStore()
    spilled.spill([item_from_json(decision)])
    later = [window[0], {**stub_for(decision), "tokens": 8}, window[1]]  # 68 tokens
    res = run_policy(load_policy(f"{path}:policy"), later, 40, store=spilled)
    assert [(it.id, it.kind) for it in res.window] == [("why", "stub"), ("c1", "stub")]
    assert res.spill == ("why",)
    # without the store the stub resolves to nothing: the rationale is evicted as free
    res = run_policy(load_policy(f"{path}:policy"), later, 40)
    assert [it.id for it in res.window] == ["c1", "free"]
