"""A policy runs isolated from the harness (issue 23, items 4, 5 and 6; docs/policies.md).

Each call runs in a worker process of its own with a time limit: a loop is
PL003 naming the limit, an exit or a kill is PL001 saying how the process
ended, and the harness carries on with the next session. Whatever the policy
does (huge numbers, an exception whose ``str()`` raises, mutating its input or
the harness's modules, printing to stdout) the harness exits 0 or 1 with its
output whole. PL findings carry the exception's type and text everywhere, and
``fuzz POLICY --replay FILE`` shows the traceback on the counterexample's last
window.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest

from verifier.alarm import time_limit
from verifier.cli import main
from verifier.errors import InputError
from verifier.fuzz import SHRINK_FAULTS, FuzzReport, Plan, fuzz
from verifier.io import item_from_json
from verifier.policies import load_policy, run_policy
from verifier.policies.isolated import (
    LONGEST_TIMEOUT,
    REPLY_SLACK,
    PolicyProcess,
    ended_how,
    reply_bound,
)
from verifier.policies.replay import replay_policy, window_at_end
from verifier.window import Item

pytest_plugins = ["pytester"]

HOSTILE = textwrap.dedent(
    '''
    import os
    import signal


    def keep(window, budget):
        return window


    def loop(window, budget):
        while True:
            pass


    def slow_sometimes(window, budget):
        if len(window) > 6:
            while True:
                pass
        return window


    def exits(window, budget):
        os._exit(0)


    def exits_three(window, budget):
        os._exit(3)


    def exits_on_big(window, budget):
        if len(window) > 6:
            os._exit(0)
        return window


    def killed(window, budget):
        os.kill(os.getpid(), signal.SIGKILL)


    def loops_in_c(window, budget):
        return window if sum(range(10**13)) else []


    def prints(window, budget):
        print("chatter from the policy", flush=True)
        os.write(1, b"more chatter, straight to fd 1\\n")
        return window


    class Odd(Exception):
        def __str__(self):
            raise RuntimeError("no message for you")


    def bad_str(window, budget):
        raise Odd()


    def huge(window, budget):
        out = [dict(it) for it in window]
        out[0]["tokens"] = 10 ** 400
        return out


    def mutates(window, budget):
        for it in window:
            it["kind"] = "prose"
            it.pop("formula", None)
        window.clear()
        return []


    def meddles(window, budget):
        import verifier.fuzz

        verifier.fuzz.TURNS_PER_PASS = 0  # in the harness's process this ends every session
        verifier.fuzz.MAX_PRESSURE = 0.0
        return window


    def raises_on_big(window, budget):
        if len(window) > 6:
            raise ValueError(f"window of {len(window)} items is too much for me")
        return window


    def interrupts(window, budget):
        raise KeyboardInterrupt()


    def marks(window, budget):
        # says it was called, in a file beside this module, then drops the oldest item
        with open(__file__ + ".called", "a") as f:
            f.write(str(len(window)) + "\\n")
        return window[1:]
    '''
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.py"
    path.write_text(HOSTILE, "utf-8")
    return path


def fuzz_cli(
    hostile: Path, name: str, out: Path, *more: str, sessions: int = 4
) -> tuple[int, str, str]:
    return run(
        "fuzz",
        f"{hostile}:{name}",
        "--sessions",
        str(sessions),
        "--passes",
        "3",
        "--out",
        str(out),
        "--policy-timeout",
        "0.5",
        *more,
    )


# ------------------------------------------------------------ item 4: exit 4 no more


def test_an_exception_whose_str_raises_is_pl001_naming_its_type(
    hostile: Path, tmp_path: Path
) -> None:
    code, out, err = fuzz_cli(hostile, "bad_str", tmp_path / "o", "--format", "json")
    assert code == 1, err
    report = json.loads(out)
    assert report["findings_by_rule"] == {"PL001": 4}
    message = report["counterexamples"][0]["message"]
    assert "raised Odd" in message and "str() raised RuntimeError" in message


def test_an_exception_whose_str_raises_is_pl001_in_process_too(hostile: Path) -> None:
    policy = load_policy(f"{hostile}:bad_str")
    res = run_policy(policy, [{"id": "p", "kind": "prose"}], 10)
    assert res.code == "PL001" and "Odd" in (res.message or "")


def test_a_policy_returning_huge_tokens_is_no_internal_error(
    hostile: Path, tmp_path: Path
) -> None:
    code, out, err = fuzz_cli(hostile, "huge", tmp_path / "o", "--format", "json", sessions=6)
    assert code in (0, 1), err
    assert "internal error" not in err
    report = json.loads(out)
    assert report["tokens_after"] > 10**400
    code, out, err = fuzz_cli(hostile, "huge", tmp_path / "t", sessions=6)
    assert code in (0, 1) and "internal error" not in err
    assert "tokens" in out


def test_huge_tokens_in_process_too(hostile: Path, tmp_path: Path) -> None:
    report = fuzz(
        load_policy(f"{hostile}:huge"), sessions=6, passes=3, out_dir=tmp_path, policy_timeout=None
    )
    assert report.tokens_after > 10**400
    card = json.loads((tmp_path / "scorecard.json").read_text("utf-8"))
    assert card["tokens_after"] == report.tokens_after


# ------------------------------------------------------------ item 5: loops and exits


def test_a_policy_that_loops_is_pl003_naming_the_limit(hostile: Path, tmp_path: Path) -> None:
    started = time.perf_counter()
    code, out, err = fuzz_cli(hostile, "loop", tmp_path / "o", "--format", "json")
    assert code == 1, err
    assert time.perf_counter() - started < 60
    report = json.loads(out)
    assert report["findings_by_rule"] == {"PL003": 4}
    cex = report["counterexamples"][0]
    assert "0.5 s" in cex["message"] and "--policy-timeout" in cex["message"]
    assert Path(cex["path"]).is_file()


@pytest.mark.parametrize("limit", ["inf", "1e8"])
def test_a_limit_too_long_for_the_clock_is_the_longest_one(
    hostile: Path, tmp_path: Path, limit: str
) -> None:
    """``--policy-timeout inf`` (or 1e8 s) is no internal error: it is the longest limit."""
    code, out, err = run(
        "fuzz", f"{hostile}:keep", "--sessions", "2", "--passes", "2",
        "--out", str(tmp_path / "o"), "--policy-timeout", limit, "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["rewrites"] > 0
    with PolicyProcess(f"{hostile}:keep", timeout=float(limit)) as proc:
        assert proc.timeout == LONGEST_TIMEOUT


def test_after_a_timeout_the_next_sessions_go_on(hostile: Path, tmp_path: Path) -> None:
    code, out, err = fuzz_cli(
        hostile, "slow_sometimes", tmp_path / "o", "--format", "json", sessions=3
    )
    assert code == 1, err
    report = json.loads(out)
    assert report["findings_by_rule"].get("PL003", 0) >= 1
    assert report["rewrites"] > 0  # sessions whose windows stayed small went on


@pytest.mark.parametrize(
    ("name", "how"),
    [("exits", "exit code 0"), ("exits_three", "exit code 3"), ("killed", "signal 9 (SIGKILL)")],
)
def test_a_policy_that_ends_its_process_is_pl001_saying_how(
    hostile: Path, tmp_path: Path, name: str, how: str
) -> None:
    code, out, err = fuzz_cli(hostile, name, tmp_path / "o", "--format", "json")
    assert code == 1, err
    report = json.loads(out)
    assert report["findings_by_rule"] == {"PL001": 4}
    assert report["counterexamples"][0]["message"].endswith(f"ended its process: {how}")
    assert (tmp_path / "o" / "scorecard.json").is_file()


def test_printing_to_stdout_does_not_corrupt_json_output(
    hostile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, out, err = fuzz_cli(hostile, "prints", tmp_path / "o", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["rewrites"] > 0
    captured = capfd.readouterr()
    assert "chatter" not in captured.out
    assert "chatter from the policy" in captured.err


def test_mutating_its_input_changes_nothing_of_the_harness(
    hostile: Path, tmp_path: Path
) -> None:
    code, out, err = fuzz_cli(hostile, "mutates", tmp_path / "o", "--format", "json")
    assert code == 1, err
    report = json.loads(out)
    assert "CF001" in report["findings_by_rule"]
    for cex in report["counterexamples"]:
        # the counterexample holds the windows as the agent wrote them, not as mutated
        text = Path(cex["path"]).read_text("utf-8")
        assert '"kind": "commitment"' in text or cex["code"] != "CF001"


def test_a_policy_cannot_change_the_harness_it_runs_under(
    hostile: Path, tmp_path: Path
) -> None:
    meddling = fuzz(
        f"{hostile}:meddles", sessions=6, passes=3, out_dir=tmp_path / "m", policy_timeout=5
    )
    clean = fuzz(f"{hostile}:keep", sessions=6, passes=3, out_dir=tmp_path / "k", policy_timeout=5)
    assert meddling.rewrites == clean.rewrites > 0
    assert meddling.tokens_before == clean.tokens_before


def test_a_module_that_ends_the_process_on_import_is_bad_input(tmp_path: Path) -> None:
    policy = tmp_path / "dies.py"
    policy.write_text("import os\nos._exit(7)\n\ndef f(window, budget):\n    return window\n")
    code, out, err = run("fuzz", f"{policy}:f", "--sessions", "2", "--out", str(tmp_path / "o"))
    assert code == 2 and out == ""
    assert "ended its process while loading: exit code 7" in err


@pytest.mark.parametrize("shadow", ["random.py", "json.py", "verifier.py"])
def test_the_working_folder_does_not_shadow_what_the_worker_imports(
    hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shadow: str
) -> None:
    """A module in the folder ctxproof runs from, named like one the worker imports itself
    (the standard library's, or ctxproof's own), is not imported in its place: a policy
    that keeps everything finds nothing, wherever it is run from."""
    here = tmp_path / "cwd"
    here.mkdir()
    (here / shadow).write_text("raise SystemExit(1)\n")
    monkeypatch.chdir(here)
    code, out, err = fuzz_cli(hostile, "keep", tmp_path / "o", "--format", "json", sessions=2)
    assert code == 0, err
    assert json.loads(out)["findings_by_rule"] == {}


def test_a_missing_function_is_still_named_from_the_workers_load(
    hostile: Path, tmp_path: Path
) -> None:
    code, out, err = run("fuzz", f"{hostile}:nope", "--out", str(tmp_path / "o"))
    assert code == 2 and out == ""
    assert "has no 'nope'" in err and "keep" in err


def test_the_worker_is_reused_across_calls(hostile: Path) -> None:
    items = [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(4)]
    with PolicyProcess(f"{hostile}:keep", timeout=5) as proc:
        proc.run_twice(items, 5)
        first = proc._proc
        for _ in range(5):
            assert proc.run_twice(items, 5).ok
        assert proc._proc is first and proc.faults == 0
    with PolicyProcess(f"{hostile}:exits", timeout=5) as proc:
        assert proc.run_twice(items, 5).code == "PL001"
        assert proc.run_twice(items, 5).code == "PL001"
        assert proc.faults == 2


def test_a_launched_worker_loads_while_the_caller_goes_on(hostile: Path) -> None:
    """``launch`` starts the worker without waiting for the policy to load; ``start`` (or
    the first call) waits, and says why a policy did not load."""
    items = [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(4)]
    with PolicyProcess(f"{hostile}:keep", timeout=5) as proc:
        proc.launch()
        first = proc._proc
        assert first is not None
        proc.launch()  # one worker
        assert proc._proc is first
        assert proc.run_twice(items, 5).ok
        assert proc._proc is first and proc.faults == 0
    missing = PolicyProcess(f"{hostile}:nope", timeout=5)
    missing.launch()  # says nothing yet
    with pytest.raises(InputError, match="has no 'nope'"):
        missing.start()
    missing.close()
    unused = PolicyProcess(f"{hostile}:keep", timeout=5)
    unused.launch()
    worker = unused._proc
    unused.close()
    assert worker is not None and worker.poll() is not None


def test_fuzz_takes_a_launched_worker_and_leaves_it_to_its_caller(
    hostile: Path, tmp_path: Path
) -> None:
    def shown(report: FuzzReport) -> dict[str, object]:
        return {k: v for k, v in report.to_json().items() if k != "seconds"}

    with PolicyProcess(f"{hostile}:keep", timeout=5) as proc:
        proc.launch()
        given = fuzz(proc, sessions=3, passes=3, out_dir=tmp_path / "a", card=False)
        worker = proc._proc
        assert worker is not None and proc.run_twice([], 5).ok  # still the caller's
    named = fuzz(f"{hostile}:keep", sessions=3, passes=3, out_dir=tmp_path / "b", card=False)
    assert given.rewrites > 0
    assert shown(given) == shown(named)


def test_a_sent_request_runs_before_its_result_is_asked_for(hostile: Path) -> None:
    """``send`` returns at once and the policy runs meanwhile (fuzz audits the append that
    filled the window while it does); the result is what ``run_twice`` gives."""
    items = [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(4)]
    marker = Path(str(hostile) + ".called")
    with PolicyProcess(f"{hostile}:marks", timeout=5) as proc:
        result = proc.send(items, 5)
        deadline = time.monotonic() + 30
        while (marker.read_text("utf-8").count("\n") if marker.exists() else 0) < 2:
            assert time.monotonic() < deadline, "the policy was not called before its result"
            time.sleep(0.01)
        res = result()
        assert res.ok and [it.id for it in res.window] == ["p1", "p2", "p3"]
        assert res == proc.run_twice(items, 5)
        with pytest.raises(RuntimeError):
            result()  # a result is taken once


def test_a_request_whose_result_is_never_taken_does_not_answer_the_next(
    hostile: Path,
) -> None:
    small = [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(4)]
    big = [item_from_json({"id": f"q{i}", "kind": "prose", "tokens": 3}) for i in range(6)]
    with PolicyProcess(f"{hostile}:marks", timeout=5) as proc:
        abandoned = proc.send(small, 5)
        res = proc.send(big, 5)()
        assert [it.id for it in res.window] == [f"q{i}" for i in range(1, 6)]
        assert proc.faults == 0
        with pytest.raises(RuntimeError):
            abandoned()
        assert proc.run_twice(small, 5).ok


def test_a_callable_with_no_name_runs_forked(tmp_path: Path) -> None:
    calls: list[int] = []

    def counting(window: list[dict[str, object]], budget: int) -> list[dict[str, object]]:
        calls.append(os.getpid())  # in the child: the harness's list stays empty
        return window

    report = fuzz(counting, sessions=3, passes=2, out_dir=tmp_path)
    assert report.rewrites > 0 and calls == []


def test_ended_how_names_signals_and_codes() -> None:
    assert ended_how(0) == "exit code 0"
    assert ended_how(-15) == "signal 15 (SIGTERM)"
    assert ended_how(None).startswith("an end")


# ------------------------------------------------------------ item 6: the message everywhere


def test_pl001_shows_the_exception_in_text_json_and_scorecard(
    hostile: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "o"
    code, text, err = fuzz_cli(hostile, "raises_on_big", out_dir, sessions=6)
    assert code == 1, err
    wanted = "raised ValueError: window of"
    assert wanted in text
    assert f"fuzz {hostile}:raises_on_big --replay {out_dir}/cex-PL001.jsonl" in text
    assert "(pass 1, )" not in text
    card = json.loads((out_dir / "scorecard.json").read_text("utf-8"))
    assert wanted in card["counterexamples"][0]["message"]
    code, out, err = fuzz_cli(hostile, "raises_on_big", out_dir, "--format", "json", sessions=6)
    assert wanted in json.loads(out)["counterexamples"][0]["message"]


def test_replay_calls_the_policy_on_the_last_window_with_its_traceback(
    hostile: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "raises_on_big", out_dir, sessions=6)[0] == 1
    cex = out_dir / "cex-PL001.jsonl"
    window, budget, pass_no, _, _, _ = window_at_end(str(cex))
    assert len(window) > 6 and budget > 0
    code, out, err = run("fuzz", f"{hostile}:raises_on_big", "--replay", str(cex))
    assert code == 1, err
    assert "Traceback (most recent call last)" in out
    assert f'File "{hostile}", line' in out and "in raises_on_big" in out
    assert f"ValueError: window of {len(window)} items is too much for me" in out
    assert f"pass {pass_no}: PL001 policy-error []:" in out
    code, out, err = run(
        "fuzz", f"{hostile}:raises_on_big", "--replay", str(cex), "--format", "json"
    )
    shown = json.loads(out)
    assert shown["code"] == "PL001" and "ValueError" in shown["traceback"]
    assert shown["given"] == len(window)


FLIPS = """
CALLS = [0]


def flips(window, budget):
    CALLS[0] += 1
    out = [dict(it) for it in window]
    out[-1]["text"] = "call %d" % (CALLS[0] % 2)
    return out
"""


def test_replay_of_pl002_names_what_differs_as_fuzz_does(tmp_path: Path) -> None:
    policy = tmp_path / "flips.py"
    policy.write_text(FLIPS, "utf-8")
    out_dir = tmp_path / "o"
    code, _, err = fuzz_cli(policy, "flips", out_dir)
    assert code == 1, err
    found = json.loads((out_dir / "scorecard.json").read_text("utf-8"))["counterexamples"][0]
    assert found["code"] == "PL002" and found["items"]
    cex = str(out_dir / "cex-PL002.jsonl")
    code, out, err = run("fuzz", f"{policy}:flips", "--replay", cex)
    assert code == 1, err
    named = ",".join(found["items"])
    assert f"PL002 policy-nondeterministic [{named}]: " in out
    assert f"item {found['items'][0]!r} differs" in out
    code, out, _ = run("fuzz", f"{policy}:flips", "--replay", cex, "--format", "json")
    assert json.loads(out)["items"] == found["items"]


def test_a_policy_error_is_at_the_last_line_of_its_trace(hostile: Path, tmp_path: Path) -> None:
    """No rewrite is written for a call that failed: the finding is at the line of the
    window the policy was given, the trace's last, where --replay finds it too."""
    code, out, err = fuzz_cli(hostile, "raises_on_big", tmp_path / "o", "--format", "json")
    assert code == 1, err
    cex = json.loads(out)["counterexamples"][0]
    lines = Path(cex["path"]).read_text("utf-8").splitlines()
    assert cex["line"] == len(lines) and json.loads(lines[-1])["event"] != "rewrite"
    code, out, _ = run("fuzz", f"{hostile}:raises_on_big", "--replay", cex["path"])
    assert code == 1 and f"{cex['path']}:{len(lines)}: pass {cex['pass']}: PL001" in out


def test_replay_reads_a_keyboard_interrupt_the_policy_raises_as_fuzz_does(
    hostile: Path, tmp_path: Path
) -> None:
    code, out, _ = fuzz_cli(hostile, "interrupts", tmp_path / "o", sessions=2)
    assert code == 1 and "raised KeyboardInterrupt" in out
    cex = str(tmp_path / "o" / "cex-PL001.jsonl")
    code, out, err = run("fuzz", f"{hostile}:interrupts", "--replay", cex)
    assert code == 1 and "raised KeyboardInterrupt" in out
    assert "in interrupts" in out + err and "raise KeyboardInterrupt()" in out + err


def test_replay_of_a_loop_is_interrupted_where_it_loops(hostile: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "loop", out_dir)[0] == 1
    code, out, _ = run(
        "fuzz", f"{hostile}:loop", "--replay", str(out_dir / "cex-PL003.jsonl"),
        "--policy-timeout", "0.3",
    )
    assert code == 1
    assert "in loop" in out and "PL003 policy-timeout" in out and "0.3 s" in out


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("exits", "PL001", "ended its process: exit code 0"),
        ("killed", "PL001", "ended its process: signal 9 (SIGKILL)"),
        ("loops_in_c", "PL003", "did not return within the limit of 0.3 s"),
    ],
)
def test_replay_never_ends_or_hangs_with_the_policy(
    hostile: Path, tmp_path: Path, name: str, code: str, words: str
) -> None:
    """The calls run in a forked copy of the command: a policy that ends its process, or
    loops where the alarm cannot reach it, ends that copy, and the replay says so."""
    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "raises_on_big", out_dir, sessions=6)[0] == 1
    cex = str(out_dir / "cex-PL001.jsonl")
    args = ("fuzz", f"{hostile}:{name}", "--replay", cex, "--policy-timeout", "0.3")
    exit_code, out, err = run(*args)
    assert exit_code == 1, err
    assert f"{code} {'policy-error' if code == 'PL001' else 'policy-timeout'}" in out
    assert words in out
    exit_code, out, _ = run(*args, "--format", "json")
    shown = json.loads(out)
    assert exit_code == 1 and shown["code"] == code and words in shown["message"]


def test_a_replay_that_fails_itself_is_an_internal_error_not_the_policy_s(
    hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verifier.errors import InternalError
    from verifier.policies import replay as replay_module

    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "raises_on_big", out_dir, sessions=6)[0] == 1

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("a bug of the harness")

    monkeypatch.setattr(replay_module, "replay_policy", broken)
    with pytest.raises(InternalError, match="a bug of the harness"):
        replay_module.replay_apart(
            load_policy(f"{hostile}:keep"), str(out_dir / "cex-PL001.jsonl"), timeout=5.0
        )


def test_replay_of_a_policy_that_now_works_exits_0(hostile: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "raises_on_big", out_dir, sessions=6)[0] == 1
    code, out, _ = run("fuzz", f"{hostile}:keep", "--replay", str(out_dir / "cex-PL001.jsonl"))
    assert code == 0
    assert "without error" in out


def test_replay_of_a_trace_with_no_budget_is_bad_input(hostile: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"event": "header", "format": "ctxproof-trace/1"}\n', "utf-8")
    code, out, err = run("fuzz", f"{hostile}:keep", "--replay", str(trace))
    assert code == 2 and out == "" and "no budget" in err


def test_replay_in_the_api(hostile: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    assert fuzz_cli(hostile, "bad_str", out_dir)[0] == 1
    shown = replay_policy(load_policy(f"{hostile}:bad_str"), str(out_dir / "cex-PL001.jsonl"))
    assert shown.code == "PL001" and shown.traceback is not None
    assert "raise Odd()" in shown.traceback


def test_the_plugin_shows_the_exception_and_the_replay_command(
    pytester: pytest.Pytester, hostile: Path
) -> None:
    pytester.syspathinsert(str(hostile.parent))
    pytester.makepyfile(
        """
        def test_raising_policy(ctxproof):
            ctxproof.assert_policy_safe("hostile.py:raises_on_big", sessions=6, passes=3)
        """
    )
    (pytester.path / "hostile.py").write_text(HOSTILE, "utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*PL001 policy-error: * finding(s); shrunk session: *cex-PL001.jsonl (pass *",
            "*raised ValueError: window of * items is too much for me*",
            "*ctxproof fuzz hostile.py:raises_on_big --replay PATH*",
        ]
    )
    assert "ctxproof audit PATH" not in result.stdout.str()


def test_the_spec_policies_run_in_process_still(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[2] / "models" / "specs" / "spill_first.toml"
    report = fuzz(str(spec), sessions=3, passes=2, out_dir=tmp_path)
    assert report.rewrites > 0 and not report.findings_by_rule
    assert sys.modules["verifier.policies.spec"] is not None


def test_an_item_with_a_lone_surrogate_is_pl001_not_an_internal_error(tmp_path: Path) -> None:
    """Found by the bad-input fuzzer: no trace can hold such a string, and writing the
    counterexample failed with UnicodeEncodeError (exit 4)."""
    policy = tmp_path / "surrogate.py"
    policy.write_text(
        "def policy(window, budget):\n    return [{'id': '\\udc80', 'kind': 'prose'}]\n", "utf-8"
    )
    res = run_policy(load_policy(f"{policy}:policy"), [{"id": "p", "kind": "prose"}], 10)
    assert res.code == "PL001" and "lone surrogate" in (res.message or "")
    code, out, err = run(
        "fuzz", f"{policy}:policy", "--sessions", "2", "--passes", "2",
        "--out", str(tmp_path / "o"), "--format", "json",
    )
    assert code == 1, err
    assert json.loads(out)["findings_by_rule"] == {"PL001": 2}


def test_a_policy_that_does_not_load_leaves_no_output_folder(tmp_path: Path) -> None:
    """Found by the bad-input fuzzer: the folder was made before the policy was loaded."""
    fifo = tmp_path / "policy.py"
    os.mkfifo(fifo)
    for arg in (f"{fifo}:f", f"{tmp_path / 'missing.py'}:f", "no_such_module_here:f"):
        code, out, err = run("fuzz", arg, "--out", str(tmp_path / "o"))
        assert code == 2 and out == "", err
        assert not (tmp_path / "o").exists()


# ------------------------------------------------------------ the store, in the worker too

LISTING = textwrap.dedent(
    """
    def listing(window, budget, *, store):
        head = dict(window[0])
        head["text"] = "|".join(f"{ref[7:15]}={store[ref]['id']}" for ref in store)
        return [head, *window[1:]]
    """
)


def test_a_policy_that_takes_store_reads_the_same_store_in_its_process(tmp_path: Path) -> None:
    """The worker holds a copy of the store, sent a piece at a time: the policy reads the
    entries the harness gives, in the same order, as it does in this process; a store that
    no longer begins with what was sent (a new session) is sent again whole."""
    from verifier.io import ref_of
    from verifier.store import MemoryStore

    path = tmp_path / "listing.py"
    path.write_text(LISTING, "utf-8")
    policy = load_policy(f"{path}:listing")
    assert policy.takes_store
    items = [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(3)]
    a, b, c = ({"id": x, "kind": "prose", "text": x * 3} for x in "abc")
    memory = MemoryStore()
    memory.spill([item_from_json(c), item_from_json(a)])
    stores: list[object] = [
        {},
        {ref_of(a): a},
        {ref_of(a): a, ref_of(b): b},
        {ref_of(a): a, ref_of(b): b},  # nothing new: no store line
        {},  # a new session
        {ref_of(b): b, ref_of(a): a, ref_of(c): c},  # holds all that was sent, in another order
        {ref_of(b): b, ref_of(a): a},  # one gone
        memory,
        None,
    ]
    seen: list[str] = []
    with PolicyProcess(f"{path}:listing", timeout=5) as proc:
        for store in stores:
            isolated = proc.run_twice(items, 5, store=store)  # type: ignore[arg-type]
            here = run_policy(policy, items, 5, store=store, check_determinism=True)  # type: ignore[arg-type]
            assert isolated.ok and here.ok, (isolated.message, here.message)
            assert isolated.window == here.window
            seen.append(isolated.window[0].text or "")
        assert proc.faults == 0
    assert seen[2].endswith("=a|" + ref_of(b)[7:15] + "=b") and seen[4] == ""
    assert seen[5].split("|")[0].endswith("=b") and seen[5].count("|") == 2
    assert seen[7].count("|") == 1 and seen[8] == ""


SPILLER = textwrap.dedent(
    """
    from verifier import stub_for
    from verifier.policies import item_tokens


    def spiller(window, budget, *, store):
        # a new stub's size tells what the store held, and in which order: its first entry
        first = next(iter(store), "sha256:00")
        size = 4 + len(store) % 3 + int(first[7:9], 16) % 2
        total = sum(item_tokens(it) for it in window)
        out, spill = [], []
        for it in window:
            if total > budget and it["kind"] != "stub" and item_tokens(it) > size:
                out.append({**stub_for(it), "tokens": size})
                spill.append(it["id"])
                total += size - item_tokens(it)
            else:
                out.append(it)
        return {"window": out, "spill": spill}


    def blind(window, budget, *, store):
        return spiller(window, budget, store={})
    """
)


def test_a_store_reading_policy_fuzzes_alike_isolated_and_in_process(tmp_path: Path) -> None:
    """A policy that reads the store (what it spilled earlier in the session) shows in its
    own process what it shows in this one, session after session."""
    path = tmp_path / "spiller.py"
    path.write_text(SPILLER, "utf-8")
    reports = {
        (name, timeout): fuzz(
            f"{path}:{name}",
            sessions=25,
            passes=8,
            seed_value=3,
            out_dir=tmp_path / f"{name}-{timeout}",
            policy_timeout=timeout,
        )
        for name, timeout in (("spiller", None), ("spiller", 10.0), ("blind", None))
    }
    here, apart = reports["spiller", None], reports["spiller", 10.0]
    for field in ("findings_by_rule", "rewrites", "tokens_before", "tokens_after", "texts"):
        assert getattr(apart, field) == getattr(here, field), field
    # the store made a difference: without it the same policy saves other tokens
    assert reports["blind", None].tokens_after != here.tokens_after


# ------------------------------------------------------------ what the harness reads of a reply

BULKY = textwrap.dedent(
    """
    import os
    import sys
    import time


    def swells(window, budget):
        return [{"id": f"x{i}", "kind": "prose", "tokens": 1} for i in range(20000)]


    def floods(window, budget):
        return [{"id": "big", "kind": "prose", "text": "z" * 40_000_000}]


    def restores(window, budget, *, store):
        return [*window, *store.values()]


    def closes_and_sleeps(window, budget):
        os.closerange(3, 256)
        time.sleep(30)
        return window


    def closes_and_returns(window, budget):
        os.closerange(3, 256)
        return window


    def stalls(window, budget):
        # the start of a message on the harness's pipe, and never the rest of it
        os.write(int(sys.argv[2]), (100).to_bytes(8, "big") + (100).to_bytes(4, "big") + b"x" * 6)
        time.sleep(30)
        return window
    """
)


@pytest.fixture
def bulky(tmp_path: Path) -> Path:
    path = tmp_path / "bulky.py"
    path.write_text(BULKY, "utf-8")
    return path


def within(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Fail the test, rather than hang it, past ``seconds``."""
    return time_limit(seconds, lambda: AssertionError(f"still waiting after {seconds} s"))


def small_window(n: int = 4) -> list[Item]:
    return [item_from_json({"id": f"p{i}", "kind": "prose", "tokens": 3}) for i in range(n)]


def test_a_reply_over_its_bound_is_pl001_naming_the_bound(bulky: Path) -> None:
    """Found by the long tier's hostile policies: 20,000 items returned for a window of a
    few made every candidate of the shrinking audit them, past the case's time limit."""
    items = small_window()
    given = len("\n".join(it.raw for it in items).encode())
    with PolicyProcess(f"{bulky}:swells", timeout=10) as proc:
        res = proc.run_twice(items, 5)
        assert res.code == "PL001" and proc.faults == 1
        assert f"over the bound of {reply_bound(given)}" in (res.message or "")
        assert "its process was stopped" in (res.message or "")
        assert proc._proc is None  # stopped: its pipe holds the rest of the reply


def test_a_reply_over_its_bound_is_not_read(bulky: Path) -> None:
    """Only the reply's length is read: a policy that returns 40 MB costs the harness
    nothing like 40 MB."""
    with PolicyProcess(f"{bulky}:floods", timeout=30) as proc:
        proc.start()
        tracemalloc.start()
        try:
            res = proc.run_twice(small_window(), 5)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert res.code == "PL001" and re.search(r"reply of 400\d{5} bytes", res.message or "")
    assert peak < 4_000_000, peak


def test_the_bound_counts_the_store_the_worker_holds(bulky: Path) -> None:
    """A policy may return what it was given in the store (restore it): the bound grows
    with the store, so restoring a store larger than the slack is no finding."""
    from verifier.io import ref_of

    entries = [{"id": f"s{i}", "kind": "prose", "text": "y" * 300} for i in range(1000)]
    store = {ref_of(e): e for e in entries}
    assert len(json.dumps(entries)) > REPLY_SLACK
    with PolicyProcess(f"{bulky}:restores", timeout=10) as proc:
        res = proc.run_twice(small_window(), 5, store=store)
    assert res.ok, res.message
    assert len(res.window) == 1004


def test_a_pipe_closed_under_a_running_worker_is_pl001_at_once(bulky: Path) -> None:
    """A policy that closes the worker's pipes and carries on: PL001 saying so, within a
    moment of the pipe closing (the worker is stopped), not the limit or a guess at how
    the process ended."""
    started = time.perf_counter()
    with PolicyProcess(f"{bulky}:closes_and_sleeps", timeout=10) as proc, within(8):
        res = proc.run_twice(small_window(), 5)
    assert res.code == "PL001"
    assert res.message == (
        f"policy '{bulky}:closes_and_sleeps' closed its process's pipe to the harness;"
        " its process was stopped"
    )
    assert time.perf_counter() - started < 5


def test_a_worker_whose_pipe_is_closed_ends_without_a_traceback(
    bulky: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with PolicyProcess(f"{bulky}:closes_and_returns", timeout=10) as proc:
        res = proc.run_twice(small_window(), 5)
    assert res.code == "PL001"
    assert (res.message or "").endswith("ended its process: exit code 1")
    assert "Traceback" not in capfd.readouterr().err


def test_a_reply_must_arrive_whole_within_the_limit(bulky: Path) -> None:
    """A worker that sends the start of a message and stops is PL003 at the limit: the
    harness never waits on the rest of a message."""
    with PolicyProcess(f"{bulky}:stalls", timeout=1) as proc, within(15):
        res = proc.run_twice(small_window(), 5)
    assert res.code == "PL003", res.message


@pytest.mark.parametrize(
    ("at_import", "said"),
    [
        (
            "os.closerange(3, 256)\ntime.sleep(30)",
            "closed its process's pipe to the harness while loading",
        ),
        (
            "os.write(int(sys.argv[2]), (5).to_bytes(8, 'big') + b'hello')",
            "its process sent, while loading, what the harness cannot read (JSONDecodeError",
        ),
        (
            "os.write(int(sys.argv[2]), (10**9).to_bytes(8, 'big'))",
            "cannot read (a message of 1000000000 bytes)",
        ),
    ],
)
def test_a_module_that_meddles_with_the_pipe_at_import_is_bad_input(
    tmp_path: Path, at_import: str, said: str
) -> None:
    policy = tmp_path / "meddles.py"
    policy.write_text(
        f"import os, sys, time\n{at_import}\n\ndef f(window, budget):\n    return window\n"
    )
    with within(20):
        code, out, err = run("fuzz", f"{policy}:f", "--out", str(tmp_path / "o"))
    assert code == 2 and out == "", err
    assert said in err and "Traceback" not in err


# ------------------------------------------------------------ shrinking past the faults


def test_shrinking_ends_once_its_candidates_have_ended_the_process_enough(
    hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the long tier: once SHRINK_FAULTS candidates had ended the policy's process,
    hypothesis went on through about a thousand more it could no longer play (18 s of a
    case's time under tracemalloc). The search ends at the next candidate it would play,
    with the last session that showed the rule."""
    import verifier.fuzz as fuzz_module

    drawn = [0]
    plans = fuzz_module.session_plans

    def counted(plan: Plan) -> Plan:
        drawn[0] += 1
        return plan

    monkeypatch.setattr(
        fuzz_module, "session_plans", lambda *a, **k: plans(*a, **k).map(counted)
    )
    report = fuzz(
        f"{hostile}:exits_on_big", sessions=6, passes=3, out_dir=tmp_path / "o", policy_timeout=5
    )
    shrunk = report.shrinking["by_rule"]["PL001"]
    assert shrunk["bounded"] and shrunk["plays"] == SHRINK_FAULTS + 1
    assert drawn[0] < 40, drawn[0]  # the sessions explored, replayed and shrunk
    (cex,) = report.counterexamples
    assert cex.code == "PL001" and cex.message.endswith("ended its process: exit code 0")
    assert Path(cex.path).is_file()
