"""audit and fuzz on Ray (docs/distributed.md): the output of --jobs 1, whatever happens to
the workers.

One local Ray cluster (2 CPUs, a 200 MB object store) serves the whole module. The tests
that need Ray are marked ``ray``: ``make test-ray`` runs them (with the extra installed,
and a missing Ray a failure, not a skip); ``make test`` runs the others.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from verifier import batch
from verifier.audit import TraceReport, audit_trace
from verifier.cli import main
from verifier.errors import InternalError
from verifier.fuzz import fuzz
from verifier.io import parse_trace_text
from verifier.policies import load_policy
from verifier.strategies import traces

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(
    p for p in (ROOT / "tests" / "corpus").glob("*.jsonl") if not p.name.startswith("bad_")
)
POLICY = f"{ROOT / 'models' / 'policies' / 'keep_recent'}.py:keep_recent"


def run(*args: str, tty: bool = False) -> tuple[int, str, str]:
    out = io.StringIO()
    err: io.StringIO = _Terminal() if tty else io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed here (pip install 'ctxproof[ray]' where it has a wheel)"
    )
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        logging_level=logging.ERROR,
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()


def generated(n: int, seed_value: int = 0) -> list[str]:
    """n traces drawn from verifier.strategies.traces() with a fixed seed."""
    out: list[str] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @seed(seed_value)
    @given(traces(max_events=10))
    def collect(text: str) -> None:
        out.append(text)

    collect()
    return out


# -- worker functions the tests send (imported by name in the workers) -------------------------


Job = tuple[str, bytes, str | None, str, bool, bool]


def job(name: str, data: bytes) -> Job:
    """A trace as the command sends it to a worker (no report page, no repairs)."""
    return (name, data, None, "support", False, False)


def audit_or_kill(args: Job) -> dict[str, Any]:
    """Audits as the command does, but a trace named ``*victim.jsonl`` kills its worker
    (SIGKILL, from inside the task) the first time it is seen."""
    name = args[0]
    marker = Path(name + ".killed")
    if name.endswith("victim.jsonl") and not marker.exists():
        marker.write_text(str(os.getpid()), "utf-8")
        os.kill(os.getpid(), signal.SIGKILL)
    return batch.audit_job(args)


def audit_or_always_kill(args: Job) -> dict[str, Any]:
    """A trace named ``*poison.jsonl`` kills every worker that audits it."""
    if args[0].endswith("poison.jsonl"):
        os.kill(os.getpid(), signal.SIGKILL)
    return batch.audit_job(args)


def audit_or_crash(args: Job) -> dict[str, Any]:
    """The checker crashes (a bug) on a trace named ``*crash.jsonl``."""
    if args[0].endswith("crash.jsonl"):
        raise ZeroDivisionError("the checker divided by zero")
    return batch.audit_job(args)


# -- without Ray ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["audit", "fuzz"])
def test_without_the_extra_ray_is_exit_2_naming_the_install(
    command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as when not installed
    args = [str(CORPUS[0])] if command == "audit" else [POLICY, "--out", str(tmp_path)]
    code, out, err = run(command, *args, "--ray")
    assert code == 2
    assert out == ""
    assert "pip install 'ctxproof[ray]'" in err


def test_a_trace_taken_as_the_address_is_refused() -> None:
    code, out, err = run("audit", "--ray", str(CORPUS[0]), str(CORPUS[1]))
    assert code == 2 and out == ""
    assert "put --ray after the inputs" in err


def test_a_trace_taken_as_the_address_without_ray_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as when not installed
    code, out, err = run("audit", "--ray", str(CORPUS[0]))
    assert code == 2 and out == ""
    assert "put --ray after the inputs" in err and "pip install 'ctxproof[ray]'" in err


def test_a_policy_taken_as_the_address_is_refused(tmp_path: Path) -> None:
    code, out, err = run("fuzz", "--ray", POLICY, "--out", str(tmp_path))
    assert code == 2 and out == ""
    assert "is an input, taken as the Ray address" in err


def ctxproof(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own (not connected to this process's cluster)."""
    return subprocess.run(
        [sys.executable, "-m", "verifier", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.ray
def test_an_address_nothing_answers_at_is_exit_2_at_once() -> None:
    pytest.importorskip("ray", reason="Ray is not installed here")
    started = time.perf_counter()
    proc = ctxproof("audit", str(CORPUS[0]), "--ray=127.0.0.1:1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("ctxproof: --ray: cannot reach the Ray cluster at 127.0.0.1:1")
    assert len(proc.stderr.strip().splitlines()) == 1  # one message, no traceback, no Ray log
    assert time.perf_counter() - started < 30  # Ray alone would retry for minutes


def test_a_report_rebuilt_from_its_json_is_equal() -> None:
    for path in CORPUS:
        report = audit_trace(parse_trace_text(path.read_bytes(), str(path)))
        assert TraceReport.from_json(report.to_json()) == report
        assert TraceReport.from_json(report.to_json()).to_json() == report.to_json()
    for k, text in enumerate(generated(40, seed_value=3)):
        report = audit_trace(parse_trace_text(text.encode(), f"g{k}"))
        assert TraceReport.from_json(report.to_json()) == report


# -- on a local cluster -----------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_the_corpus_gives_the_output_of_jobs_1(
    cluster: Any, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [str(p.relative_to(ROOT)) for p in CORPUS]
    monkeypatch.chdir(ROOT)  # names as a user gives them; header stores are found beside them
    local = run("audit", *names, "--format", fmt, "--jobs", "1")
    on_ray = run("audit", *names, "--format", fmt, "--ray")
    assert local[0] == on_ray[0] == 1
    assert on_ray[1] == local[1]
    assert on_ray[1]  # the corpus has findings to print
    assert on_ray[2] == local[2]  # no progress bar when stderr is no terminal


@pytest.mark.ray
def test_generated_traces_give_the_output_of_jobs_1(cluster: Any, tmp_path: Path) -> None:
    paths = []
    for k, text in enumerate(generated(120)):
        path = tmp_path / f"g{k:03d}.jsonl"
        path.write_text(text, "utf-8")
        paths.append(str(path))
    local = run("audit", *paths, "--format", "json", "--jobs", "1")
    on_ray = run("audit", *paths, "--format", "json", "--ray", tty=True)
    assert on_ray[0] == local[0]
    assert on_ray[1] == local[1]
    assert [json.loads(line)["trace"] for line in on_ray[1].splitlines()] == paths
    assert f"{len(paths)}/{len(paths)} traces" in on_ray[2]  # the progress bar, on a terminal


@pytest.mark.ray
def test_the_command_joins_a_running_cluster_by_its_address(cluster: Any) -> None:
    names = [str(p.relative_to(ROOT)) for p in CORPUS[:12]]
    address = cluster.get_runtime_context().gcs_address
    # a local cluster asks for its token (Ray's default); the command sends it when told
    proc = ctxproof(
        "audit", *names, "--format", "json", f"--ray={address}", env={"RAY_AUTH_MODE": "token"}
    )
    local = ctxproof("audit", *names, "--format", "json", "--jobs", "1")
    assert proc.returncode == local.returncode, proc.stderr
    assert proc.stdout == local.stdout
    assert len(proc.stdout.splitlines()) == len(names)


@pytest.mark.ray
def test_bad_input_is_exit_2_with_the_message_of_jobs_1(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = sorted((ROOT / "tests" / "corpus").glob("bad_*.jsonl"))[:3]
    assert bad
    names = [str(p.relative_to(ROOT)) for p in [*CORPUS[:4], *bad, *CORPUS[4:8]]]
    monkeypatch.chdir(ROOT)
    local = run("audit", *names, "--jobs", "1")
    on_ray = run("audit", *names, "--ray")
    assert local[0] == 2 and local[1] == ""
    assert on_ray == local
    assert on_ray[2].startswith(f"ctxproof: {names[4]}")  # the first bad one, in input order


@pytest.mark.ray
def test_report_repair_keep_going_and_summary_as_with_jobs_1(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = sorted((ROOT / "tests" / "corpus").glob("bad_*.jsonl"))[:2]
    names = [str(p.relative_to(ROOT)) for p in [*CORPUS[:6], *bad, *CORPUS[6:12]]]
    monkeypatch.chdir(ROOT)
    outs = []
    for name, extra in (("local", ["--jobs", "1"]), ("ray", ["--ray"])):
        folder = tmp_path / name
        code, out, err = run(
            "audit", *names, "--format", "json", "--keep-going", "--summary",
            "--report", str(folder / "report"), "--repair", str(folder / "repair"), *extra,
        )  # fmt: skip
        files = {
            str(p.relative_to(folder)): p.read_bytes().replace(str(folder).encode(), b"DIR")
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        outs.append((code, out.replace(str(folder), "DIR"), err, files))
    assert outs[0][0] == 2  # the bad files, reported and gone past
    assert any(k.startswith("repair/") for k in outs[0][3])  # the corpus has refused rewrites
    assert outs[1] == outs[0]


@pytest.mark.ray
def test_the_solver_budget_reaches_the_workers(cluster: Any) -> None:
    names = [str(p) for p in CORPUS[:30]]
    local = run("audit", *names, "--format", "json", "--rlimit", "1")
    on_ray = run("audit", *names, "--format", "json", "--rlimit", "1", "--ray")
    assert on_ray == local
    assert '"undecided"' in local[1]  # a budget of 1 decides nothing: it did reach them


@pytest.mark.ray
def test_audit_dataset_returns_the_reports_of_audit_trace(cluster: Any) -> None:
    from verifier.distributed import TraceError, audit_dataset

    texts = generated(30, seed_value=1)
    inputs: list[Any] = [
        *CORPUS[:10],
        *texts[:10],
        *[(f"named{k}", t) for k, t in enumerate(texts[10:])],
    ]
    inputs.append(("bad", '{"event": "header"}\n'))
    got = audit_dataset(inputs)
    expected = [audit_trace(parse_trace_text(p.read_bytes(), str(p))) for p in CORPUS[:10]]
    expected += [
        audit_trace(parse_trace_text(t.encode(), f"<trace {10 + k}>"))
        for k, t in enumerate(texts[:10])
    ]
    expected += [
        audit_trace(parse_trace_text(t.encode(), f"named{k}")) for k, t in enumerate(texts[10:])
    ]
    assert got[:-1] == expected
    bad = got[-1]
    assert isinstance(bad, TraceError)
    assert bad.trace == "bad" and bad.kind == "input" and bad.exit_code == 2
    assert bad.message.startswith("bad:1:")


@pytest.mark.ray
def test_a_killed_worker_loses_nothing(cluster: Any, tmp_path: Path) -> None:
    from verifier.distributed import ray_work

    work = []
    for k, text in enumerate(generated(40, seed_value=2)):
        name = str(tmp_path / ("victim.jsonl" if k == 17 else f"t{k}.jsonl"))
        work.append(job(name, text.encode()))
    got = ray_work(work, work=audit_or_kill)
    marker = tmp_path / "victim.jsonl.killed"
    assert marker.exists()  # the worker auditing the victim was killed
    killed = int(marker.read_text("utf-8"))
    with pytest.raises(ProcessLookupError):
        os.kill(killed, 0)
    assert got == [batch.audit_job(w) for w in work]


@pytest.mark.ray
def test_the_command_prints_only_results_when_a_worker_is_killed(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = []
    for k, text in enumerate(generated(30, seed_value=8)):
        path = tmp_path / ("victim.jsonl" if k == 11 else f"t{k}.jsonl")
        path.write_text(text, "utf-8")
        paths.append(str(path))
    local = run("audit", *paths, "--format", "json", "--jobs", "1")
    monkeypatch.setattr(batch, "audit_job", audit_or_kill)  # what the workers import
    on_ray = run("audit", *paths, "--format", "json", "--ray")
    assert (tmp_path / "victim.jsonl.killed").exists()
    # Ray's report of the dead worker, printed from a thread of its own, is not on stdout
    assert on_ray[:2] == local[:2]


@pytest.mark.ray
def test_a_trace_that_keeps_killing_its_worker_is_the_only_one_lost(
    cluster: Any, tmp_path: Path
) -> None:
    from verifier.distributed import ray_work

    texts = generated(6, seed_value=4)
    work = [
        job(str(tmp_path / ("poison.jsonl" if k == 2 else f"t{k}.jsonl")), t.encode())
        for k, t in enumerate(texts)
    ]
    got = ray_work(work, work=audit_or_always_kill)
    for k, (w, res) in enumerate(zip(work, got, strict=True)):
        if k == 2:
            assert res["internal"].startswith(f"{w[0]}: the worker auditing it failed 4 times")
        else:
            assert res == batch.audit_job(w)


@pytest.mark.ray
def test_a_crash_is_an_internal_error_for_that_trace_only(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verifier.distributed import ray_work

    paths = []
    for k, text in enumerate(generated(12, seed_value=5)):
        path = tmp_path / ("crash.jsonl" if k == 4 else f"t{k}.jsonl")
        path.write_text(text, "utf-8")
        paths.append(str(path))
    work = [job(p, Path(p).read_bytes()) for p in paths]
    got = ray_work(work, work=audit_or_crash)
    assert got[4] == {"internal": f"{paths[4]}: ZeroDivisionError: the checker divided by zero"}
    assert [g for k, g in enumerate(got) if k != 4] == [
        batch.audit_job(w) for k, w in enumerate(work) if k != 4
    ]
    monkeypatch.setattr(batch, "audit_job", audit_or_crash)
    from verifier.distributed import ray_audit

    outcomes = ray_audit([(p, Path(p).read_bytes(), None, "support") for p in paths])
    assert isinstance(outcomes[4], InternalError)
    assert all(isinstance(o, dict) for k, o in enumerate(outcomes) if k != 4)
    code, out, err = run("audit", *paths, "--ray")
    assert code == 4 and out == ""
    assert f"internal error: {paths[4]}: ZeroDivisionError" in err


@pytest.mark.ray
def test_fuzz_on_ray_gives_the_output_of_jobs_1(cluster: Any, tmp_path: Path) -> None:
    outs = []
    for name, extra in (("local", ["--jobs", "1"]), ("ray", ["--ray"])):
        code, out, err = run(
            "fuzz", POLICY, "--sessions", "30", "--passes", "4", "--seed", "7",
            "--out", str(tmp_path / name), "--format", "json", *extra,
        )  # fmt: skip
        assert code == 1, err
        result = timeless(json.loads(out))
        for cex in result["counterexamples"]:
            cex["trace"] = Path(cex.pop("path")).read_text("utf-8")
        card = timeless(json.loads((tmp_path / name / "scorecard.json").read_text("utf-8")))
        card.pop("counterexamples")
        outs.append((result, card))
    assert outs[0] == outs[1]
    assert outs[0][0]["sessions"] == 30 and outs[0][0]["counterexamples"]


@pytest.mark.ray
def test_fuzz_distributed_returns_what_fuzz_returns(cluster: Any, tmp_path: Path) -> None:
    from verifier.distributed import fuzz_distributed

    options: dict[str, Any] = {"passes": 4, "seed_value": 3, "shrink_calls": 40}
    local = fuzz(
        load_policy(POLICY), sessions=20, out_dir=tmp_path / "a", policy_arg=POLICY, **options
    )
    on_ray = fuzz_distributed(POLICY, 20, out_dir=tmp_path / "b", **options)
    strip = re.compile(re.escape(str(tmp_path)) + r"/[ab]")
    assert strip.sub("", json.dumps(timeless(on_ray.to_json()))) == strip.sub(
        "", json.dumps(timeless(local.to_json()))
    )
    assert on_ray.pressures == local.pressures
    for name in sorted(p.name for p in (tmp_path / "a").glob("cex-*.jsonl")):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()


def timeless(value: Any) -> Any:
    """A fuzz result without its costs (every "seconds", the shrinking's too, and the
    sessions shrinking actually "played": rules shrunk in one process answer for each
    other, on Ray each is a task of its own): what must agree between a run on Ray and one
    at home. The candidates tried ("plays") stay."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in ("seconds", "played")}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def _example() -> str:
    text = (ROOT / "docs" / "distributed.md").read_text("utf-8")
    section = text[text.index("## A results table for a pipeline") :]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return str(code)


# Ray Data warns about its own defaults; the warning is Ray's to fix, not the example's
@pytest.mark.ray
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
def test_the_results_table_example_runs_as_written(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow comes with the ray extra")
    from verifier.distributed import result_rows

    folder = tmp_path / "rollouts"
    folder.mkdir()
    chosen = [p for p in CORPUS if "store" not in p.read_text("utf-8").splitlines()[0]][:12]
    for p in chosen:
        shutil.copy(p, folder / p.name)
    (folder / "broken.jsonl").write_text('{"event": "header"}\n', "utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(_example(), "docs/distributed.md", "exec"), {})
    table = pq.read_table("audit-results")
    assert table.column_names == ["trace", "pass", "policy", "verdict", "rule", "items"]
    names = sorted(f"rollouts/{p.name}" for p in [*chosen, folder / "broken.jsonl"])
    local = [
        audit_trace(parse_trace_text((tmp_path / n).read_bytes(), n))
        for n in names
        if "broken" not in n
    ]
    expected = [r for r in result_rows(local)]
    rows = table.to_pylist()
    assert [r for r in rows if r["trace"] != "rollouts/broken.jsonl"] == expected
    assert [r for r in rows if r["trace"] == "rollouts/broken.jsonl"] == [
        {"trace": "rollouts/broken.jsonl", "pass": None, "policy": None,
         "verdict": "bad-input", "rule": None, "items": []},
    ]  # fmt: skip
    assert any(r["rule"] for r in rows)  # the corpus traces have findings


@pytest.mark.ray
def test_a_task_that_raises_is_an_internal_error_per_trace(cluster: Any) -> None:
    from verifier.distributed import ray_work

    def gone(args: Job) -> dict[str, Any]:
        raise AssertionError("never run: the worker cannot import it")

    gone.__qualname__ = "no_such_function"  # the worker's import of it fails
    texts = generated(3, seed_value=6)
    work = [job(f"t{k}.jsonl", t.encode()) for k, t in enumerate(texts)]
    got = ray_work(work, work=gone)
    for (name, *_), res in zip(work, got, strict=True):
        assert res["internal"].startswith(f"{name}: its Ray task failed (")
        assert "no_such_function" in res["internal"]


KILLING_POLICY = '''
import os
import signal
from pathlib import Path
from typing import Any

from verifier.policies import item_tokens

MARKER = Path({marker!r})


def keep_recent_or_die(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """keep_recent, but the first Ray worker to call it is killed (SIGKILL). The policy
    runs in a process of its own, started by the worker: its parent is the worker (the
    driver, in a run without Ray)."""
    worker = os.getppid()
    if worker != {driver} and not MARKER.exists():
        MARKER.write_text(str(worker), "utf-8")
        os.kill(worker, signal.SIGKILL)
    total = sum(item_tokens(it) for it in window)
    kept = list(window)
    while kept and total > budget:
        total -= item_tokens(kept.pop(0))
    return kept
'''


@pytest.mark.ray
def test_a_fuzz_worker_killed_mid_run_loses_nothing(cluster: Any, tmp_path: Path) -> None:
    marker = tmp_path / "killed"
    source = KILLING_POLICY.format(marker=str(marker), driver=os.getpid())
    (tmp_path / "dying.py").write_text(source, "utf-8")
    policy = f"{tmp_path / 'dying.py'}:keep_recent_or_die"
    outs = []
    for name, extra in (("local", ["--jobs", "1"]), ("ray", ["--ray"])):
        code, out, err = run(
            "fuzz", policy, "--sessions", "50", "--passes", "4", "--seed", "2",
            "--out", str(tmp_path / name), "--format", "json", *extra,
        )  # fmt: skip
        assert code == 1, err
        result = timeless(json.loads(out))
        for cex in result["counterexamples"]:
            cex["trace"] = Path(cex.pop("path")).read_text("utf-8")
        outs.append(result)
    assert marker.exists()  # a worker was killed in the middle of a chunk
    with pytest.raises(ProcessLookupError):
        os.kill(int(marker.read_text("utf-8")), 0)
    assert outs[0] == outs[1]
    assert outs[0]["sessions"] == 50 and outs[0]["counterexamples"]
