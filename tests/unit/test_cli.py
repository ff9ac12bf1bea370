"""The command line as a user meets it: check, repair, why, graph, jobs, exit codes."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from verifier import batch
from verifier.cli import main
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "models" / "scenarios"

BEFORE = {
    "format": "ctxproof-window/1",
    "background": ["db.postgres -> !db.mysql"],
    "items": [
        {
            "id": "o1",
            "kind": "observation",
            "source": "make test",
            "exit_code": 0,
            "shows": "tests.pass",
            "modality": "verified",
            "content": "42 passed",
        },
        {
            "id": "o2",
            "kind": "observation",
            "source": "pip install x",
            "exit_code": 1,
            "modality": "failed",
            "shows": "!x.installs",
        },
        {
            "id": "t1",
            "kind": "claim",
            "formula": "tests.pass",
            "witnesses": ["o1"],
            "modality": "verified",
            "load_bearing": True,
        },
        {
            "id": "t2",
            "kind": "claim",
            "formula": "tests.pass",
            "witnesses": ["o1"],
            "modality": "verified",
        },
        {"id": "why1", "kind": "claim", "formula": "tooling.needs_locks"},
        {
            "id": "d1",
            "kind": "commitment",
            "type": "decision",
            "formula": "db.postgres",
            "rationale": ["why1"],
        },
        {"id": "rej1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"},
        {"id": "p1", "kind": "prose", "text": "long discussion"},
    ],
}
AFTER = {
    "format": "ctxproof-window/1",
    "background": ["db.postgres -> !db.mysql"],
    "items": [
        BEFORE["items"][2],
        BEFORE["items"][3],
        {
            "id": "d1",
            "kind": "commitment",
            "type": "decision",
            "formula": "db.postgres & db.fast",
            "rationale": ["why1"],
        },
        {"id": "s1", "kind": "prose", "text": "summary: Postgres is used"},
    ],
}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def write(path: Path, obj: dict[str, Any]) -> str:
    path.write_text(json.dumps(obj), "utf-8")
    return str(path)


@pytest.fixture
def windows(tmp_path: Path) -> tuple[str, str]:
    return write(tmp_path / "before.json", BEFORE), write(tmp_path / "after.json", AFTER)


def test_check_accepts_an_unchanged_window(windows: tuple[str, str]) -> None:
    before, _ = windows
    code, out, err = run("check", before, before)
    assert (code, out, err) == (0, "", "")  # no finding, and no progress off a terminal
    code, out, _ = run("check", before, before, "--format", "json")
    assert json.loads(out)["rewrites"][0]["verdict"] == "accept"


def test_check_reports_each_defect_on_its_line(windows: tuple[str, str]) -> None:
    before, after = windows
    code, out, _ = run("check", before, after, "--claimed", "d1", "--format", "json")
    codes = sorted(f["code"] for f in json.loads(out)["findings"])
    assert code == 1
    assert codes == ["CF001", "CF002", "CF004", "CF005", "CF006", "WR001", "WR002", "WR008"]
    # text: one line per finding; what follows from the same change is listed on the
    # primary's line, and follows it on lines of its own naming it
    code, out, _ = run("check", before, after, "--claimed", "d1")
    shown = sorted(line.split(": ")[2].split()[0] for line in out.splitlines())
    assert shown == codes
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if " CF002 " in x)
    assert lines[at].endswith("[related: CF005, CF006]")
    assert {lines[at + 1].split(": ")[2].split()[0], lines[at + 2].split(": ")[2].split()[0]} == {
        "CF005",
        "CF006",
    }
    assert all(x.endswith("[related to: CF002]") for x in lines[at + 1 : at + 3])
    assert all(line.startswith(after + ":") for line in out.splitlines())


def test_an_id_with_a_newline_keeps_its_finding_on_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    events = [
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [
            {"id": "c\nx", "kind": "commitment", "type": "decision", "formula": "a"}]},
        {"event": "rewrite", "window": []},
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    code, out, _ = run("audit", str(trace))
    assert code == 1 and out.count("\n") == 1
    assert " CF001 commitment-dropped [c\\nx]: " in out
    _, js, _ = run("audit", str(trace), "--format", "json")
    assert json.loads(js)["findings"][0]["items"] == ["c\nx"]  # JSON keeps the id as it is


def test_an_undecided_check_says_why_on_stderr(tmp_path: Path) -> None:
    """Exit 3 with the reason in text too (the JSON has it under ``undecided``): premises
    that contradict each other make every entailment vacuous, and the core is named."""
    k1 = {"id": "k1", "kind": "claim", "formula": "a"}
    k2 = {"id": "k2", "kind": "claim", "formula": "!a"}
    k3 = {"id": "k3", "kind": "claim", "formula": "b"}
    before, after = tmp_path / "b.json", tmp_path / "a.json"
    for path, items in ((before, [k1, k2]), (after, [k1, k2, k3])):
        path.write_text(json.dumps({"format": "ctxproof-window/1", "items": items}), "utf-8")
    code, out, err = run("check", str(before), str(after))
    assert (code, out) == (3, "")
    assert err.startswith(f"{after}:1: pass 1: undecided: content of 'k3': ")
    assert "'k1', 'k2'" in err and err.count("\n") == 1
    _, js, _ = run("check", str(before), str(after), "--format", "json")
    assert json.loads(js)["rewrites"][0]["undecided"][0] in err


def test_repair_spills_first_then_writes_an_accepted_window(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    before, after = windows
    db, fixed = str(tmp_path / "s.sqlite"), str(tmp_path / "fixed.json")
    code, _, err = run("check", before, after, "--store", db, "--repair", fixed, "--format", "json")
    assert code == 1 and "repaired rewrite: accept" in err
    store = SqliteStore(db, readonly=True)
    assert {it.id for it in store.items()} == {"o1", "o2", "why1", "rej1"}
    repaired = json.loads(Path(fixed).read_text("utf-8"))
    kinds = {it["id"]: it["kind"] for it in repaired["items"]}
    assert kinds["rej1"] == "stub" and kinds["o1"] == "stub"
    # the restored witness stub makes the demotion unnecessary: t2 keeps 'verified'
    assert next(it for it in repaired["items"] if it["id"] == "t2")["modality"] == "verified"
    assert run("check", before, fixed, "--store", db)[0] == 0


def test_repair_that_spills_without_a_store_is_bad_usage(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    before, after = windows
    code, out, err = run("check", before, after, "--repair", str(tmp_path / "x.json"))
    assert code == 2 and "--store" in err and "'rej1'" in err  # names what it would spill
    assert out == ""  # nothing printed that promises another exit code
    assert not (tmp_path / "x.json").exists()


def test_repair_onto_a_corrupt_entry_is_exit_2_not_an_accept(
    windows: tuple[str, str], tmp_path: Path
) -> None:
    """A store whose row for a ref to spill holds other bytes keeps them (append-only):
    the repair is refused, naming the store and the ref, and no window is written."""
    before, after = windows
    db, fixed = tmp_path / "s.sqlite", tmp_path / "fixed.json"
    assert run("check", before, after, "--store", str(db), "--repair", str(fixed))[0] == 1
    fixed.unlink()
    con = sqlite3.connect(db, isolation_level=None)
    try:
        con.execute("DROP TRIGGER entries_no_update")
        (ref,) = con.execute("SELECT ref FROM entries WHERE id = 'rej1'").fetchone()
        con.execute("UPDATE entries SET body = CAST('{}' AS BLOB) WHERE ref = ?", (ref,))
    finally:
        con.close()
    code, out, err = run("check", before, after, "--store", str(db), "--repair", str(fixed))
    assert code == 2 and out == "" and str(db) in err and ref in err
    assert "accept" not in err and not fixed.exists()


def _window_file(path: Path, items: Sequence[Mapping[str, object]]) -> str:
    path.write_text(json.dumps({"format": "ctxproof-window/1", "items": items}), "utf-8")
    return str(path)


def test_repair_that_spills_nothing_needs_no_store(tmp_path: Path) -> None:
    """A repair that only reverts needs no store; nor does a rewrite with nothing to repair."""
    c1 = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a & b"}
    before = _window_file(tmp_path / "b.json", [c1])
    strong = _window_file(tmp_path / "a.json", [{**c1, "formula": "a & b & c"}])  # CF002
    fixed = tmp_path / "fixed.json"
    code, _, err = run("check", before, strong, "--repair", str(fixed))
    assert code == 1 and "0 item(s) spilled" in err
    assert json.loads(fixed.read_text("utf-8"))["items"] == [c1]  # reverted
    assert run("check", before, str(fixed))[0] == 0
    same = tmp_path / "same.json"
    assert run("check", before, before, "--repair", str(same))[0] == 0
    assert json.loads(same.read_text("utf-8"))["items"] == [c1]


def test_repair_does_not_spill_what_it_reverts(tmp_path: Path) -> None:
    """A failed claim softened is CF003 (spill its original) and WR004 (revert it): the
    revert puts the original back, so the store gets no copy of it."""
    ofl = {"id": "o1", "kind": "observation", "modality": "failed", "shows": "t.exit1"}
    kf = {"id": "kf", "kind": "claim", "formula": "t.exit1", "modality": "failed",
          "witnesses": ["o1"], "load_bearing": True}  # fmt: skip
    soft = {**kf, "formula": "t.exit1 | t.issues"}
    before = _window_file(tmp_path / "b.json", [ofl, kf])
    after = _window_file(tmp_path / "a.json", [ofl, soft])
    db, fixed = tmp_path / "s.sqlite", tmp_path / "fixed.json"
    code, out, _ = run(
        "check", before, after, "--store", str(db), "--repair", str(fixed), "--format", "json"
    )
    assert code == 1
    assert {f["code"] for f in json.loads(out)["findings"]} >= {"CF003", "WR004"}
    assert json.loads(out)["repair"]["spill"] == []
    assert json.loads(fixed.read_text("utf-8"))["items"] == [ofl, kf]
    assert not db.exists()  # nothing spilled: the store was never created


def test_missing_store_for_audit_is_bad_input(tmp_path: Path) -> None:
    code, _, err = run(
        "audit",
        str(SCENARIOS / "postgres_spilled_first.jsonl"),
        "--store",
        str(tmp_path / "nope.sqlite"),
    )
    assert code == 2 and "does not exist" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["audit"],
        ["check", "a.json"],
        ["nonsense"],
        ["audit", "x.jsonl", "--witness-mode", "maybe"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    assert run(*argv)[0] == 2


def test_help_states_the_line_format_and_exit_codes() -> None:
    code, out, _ = run("audit", "--help")
    assert code == 0
    assert "TRACE:LINE: pass N: CODE name [ID,...]: message" in out
    assert "3 undecided" in out.replace("\n", " ")


def test_internal_error_exits_4_with_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(batch, "audit_trace", boom)
    code, _, err = run("audit", str(SCENARIOS / "postgres_spilled_first.jsonl"))
    assert code == 4
    assert "internal error" in err and "kaboom" in err and "Traceback" not in err


def test_undecided_exits_3_never_accept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import verifier.solver as solver

    monkeypatch.setattr(solver, "DEFAULT_RLIMIT", 1)
    monkeypatch.setattr(solver.Session.__init__, "__defaults__", None, raising=False)
    original = solver.Session.__init__

    def tiny(self: Any, background: Any = (), *, rlimit: int = 1) -> None:
        original(self, background, rlimit=1)

    monkeypatch.setattr(solver.Session, "__init__", tiny)
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"event":"header","format":"ctxproof-trace/1","background":["a -> b"]}\n'
        '{"event":"append","items":[{"id":"c","kind":"commitment","type":"decision",'
        '"formula":"a & (b | c2) & (c3 -> a)"}]}\n'
        '{"event":"rewrite","window":[{"id":"c","kind":"commitment","type":"decision",'
        '"formula":"(a & b) | (c2 & c3 & !a)"}]}\n',
        "utf-8",
    )
    code, out, _ = run("audit", str(trace), "--format", "json")
    result = json.loads(out)
    assert [r["verdict"] for r in result["rewrites"]] == ["undecided"]
    assert code == 3


def test_jobs_2_gives_the_same_results_in_input_order() -> None:
    traces = sorted(str(p) for p in SCENARIOS.glob("*.jsonl"))
    one = run("audit", *traces, "--format", "json", "--jobs", "1")
    two = run("audit", *traces, "--format", "json", "--jobs", "2")
    assert one[0] == two[0] == 1
    assert one[1] == two[1]
    assert [json.loads(line)["trace"] for line in two[1].splitlines()] == traces


def test_graph_exports(tmp_path: Path) -> None:
    trace = str(SCENARIOS / "exit_code_laundered.jsonl")
    for suffix in ("graphml", "json", "dot"):
        out = tmp_path / f"g.{suffix}"
        code, text, _ = run("graph", trace, "--out", str(out))
        assert code == 0 and out.exists() and "nodes" in text
    g = nx.read_graphml(tmp_path / "g.graphml")
    for _, attrs in g.nodes(data=True):
        for value in attrs.values():
            json.loads(value)  # every attribute is a JSON-encoded scalar
    data = json.loads((tmp_path / "g.json").read_text("utf-8"))
    assert data.get("edges")
    relations = {e["relation"] for e in data["edges"]}
    assert "carried" in relations
    # the same nodes and attributes as GraphML: each node's item id kept beside its name
    js = nx.node_link_graph(data, edges="edges", name="node")
    assert set(js.nodes) == set(g.nodes)
    for node, attrs in js.nodes(data=True):
        assert attrs["id"] == json.loads(g.nodes[node]["id"])
        if not node.startswith("store:"):
            assert node.startswith(f"{attrs['id']}@")
    assert (tmp_path / "g.dot").read_text("utf-8").startswith("digraph")
    assert not list(tmp_path.glob("*.tmp"))
    code, _, _err = run("graph", trace, "--out", str(tmp_path / "g.png"))
    assert code == 2


def test_graphml_holds_ids_xml_cannot(tmp_path: Path) -> None:
    """Ids with characters XML 1.0 cannot hold (a C0 control, U+FFFE) or with a backslash:
    the GraphML reads back, one node per version, each ``id`` attribute the item's id."""
    ids = ["c\x01x", "c\\u0001x", "o\ufffe", "a\\u0001", "t\tab", "plain", "x\\y"]
    items = [{"id": i, "kind": "observation", "shows": "a", "modality": "verified"} for i in ids]
    trace = tmp_path / "t.jsonl"
    header = {"event": "header", "format": "ctxproof-trace/1"}
    rewrite = {"event": "rewrite", "policy": "p", "window": items[1:]}
    events = [header, {"event": "append", "items": items}, rewrite]
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    out = tmp_path / "g.graphml"
    code, _, err = run("graph", str(trace), "--out", str(out))
    assert code == 0, err
    g = nx.read_graphml(out)
    from verifier.audit import audit_trace
    from verifier.graph import JustificationGraph
    from verifier.io import parse_trace_text

    graph = JustificationGraph()
    audit_trace(parse_trace_text(trace.read_text("utf-8"), "t"), graph=graph)
    assert g.number_of_nodes() == graph.g.number_of_nodes()
    assert g.number_of_edges() == graph.g.number_of_edges()
    read = sorted(json.loads(a["id"]) for _, a in g.nodes(data=True) if "id" in a)
    assert read == sorted(a["id"] for _, a in graph.g.nodes(data=True) if "id" in a)
    assert set(read) == set(ids)
    # a name XML can hold is written as it is, as in the node-link JSON: `id@pass`
    assert {"x\\y@0", "c\\u0001x@0", "plain@0"} <= set(g.nodes)


def test_why_names_the_rewrite_that_broke_the_chain() -> None:
    trace = str(SCENARIOS / "tests_passed_loses_run.jsonl")
    code, out, _ = run("why", trace, "d1", "--format", "json")
    answer = json.loads(out)
    assert code == 1 and answer["found"] is False
    assert answer["cut"]["pass"] == 2
    code, out, _ = run("why", trace, "d1", "--pass", "1", "--format", "json")
    answer = json.loads(out)
    assert code == 0 and answer["found"] is True
    assert answer["chain"][-1]["kind"] == "observation"
    assert answer["chain"][-1]["source"] == "make test"
    assert run("why", trace, "nope")[0] == 2


def test_report_is_self_contained_html(tmp_path: Path) -> None:
    traces = sorted(str(p) for p in SCENARIOS.glob("*.jsonl"))
    code, _, _err = run("audit", *traces, "--report", str(tmp_path / "rep"))
    assert code == 1
    index = (tmp_path / "rep" / "index.html").read_text("utf-8")
    assert index.startswith("<!doctype html>")
    # the index links one page per trace; the pages carry the findings and the graphs
    pages = sorted((tmp_path / "rep" / "traces").glob("*.html"))
    assert len(pages) == len(traces)
    for p in pages:
        assert f'href="traces/{p.name}"' in index
    text = "".join(p.read_text("utf-8") for p in pages)
    assert "<svg" in text
    for page in [index, text]:
        assert 'src="http' not in page and 'href="http' not in page
    for name in ("CF001", "WR001", "CP001", "CP003", "WR008"):
        assert name in index and name in text
    assert json.loads((tmp_path / "rep" / "report.json").read_text("utf-8"))["traces"]


def test_demo_runs_and_writes_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("demo")
    assert code == 0
    assert "CF001 commitment-dropped" in out and "report written" in out
    assert (tmp_path / "ctxproof-report" / "index.html").exists()


def test_python_dash_m_is_the_same_program() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "verifier", "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and "audit" in proc.stdout


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_stderr_only_on_a_terminal() -> None:
    traces = sorted(str(p) for p in SCENARIOS.glob("*.jsonl"))[:3]
    out, err = io.StringIO(), _Tty()
    main(["audit", *traces, "--format", "json"], stdout=out, stderr=err)
    assert "3/3 traces" in err.getvalue() and "traces" not in out.getvalue()
    plain = io.StringIO()
    main(["audit", *traces, "--format", "json"], stdout=io.StringIO(), stderr=plain)
    assert "3/3" not in plain.getvalue()


def test_claimed_id_that_no_window_defines_is_bad_input(windows: tuple[str, str]) -> None:
    before, after = windows
    code, out, err = run("check", before, after, "--claimed", "nosuch")
    assert code == 2 and out == "" and "nosuch" in err


def test_an_id_claimed_twice_is_claimed_once(windows: tuple[str, str]) -> None:
    before, after = windows
    once = run("check", before, after, "--claimed", "d1", "--format", "json")[1]
    twice = run("check", before, after, "--claimed", "d1", "--claimed", "d1", "--format", "json")
    assert json.loads(twice[1])["findings"] == json.loads(once)["findings"]
    assert [f["code"] for f in json.loads(once)["findings"]].count("CF006") == 1


def test_header_store_answers_references(tmp_path: Path) -> None:
    obs = {"id": "o1", "kind": "observation", "shows": "x", "modality": "verified"}
    from verifier.io import item_from_json

    SqliteStore(tmp_path / "hs.sqlite").spill([item_from_json(obs)])
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"event":"header","format":"ctxproof-trace/1","store":"hs.sqlite"}\n'
        '{"event":"append","items":[{"id":"c","kind":"claim","formula":"x",'
        '"witnesses":["o1"]}]}\n',
        "utf-8",
    )
    code, out, err = run("audit", str(trace))
    # valid input, and the witness held only in the store is retained: no WR005
    assert code == 0, (out, err)
    assert "WR005" not in run("audit", str(trace), "--format", "json")[1]


@pytest.mark.parametrize(
    "line",
    [
        '{"event":"append","items":[{"id":"o","kind":"observation","text":"\\ud800"}]}',
        '{"event":"rewrite","window":[],"pressure":1e999}',
    ],
)
def test_unencodable_or_infinite_values_are_bad_input(tmp_path: Path, line: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"event":"header","format":"ctxproof-trace/1"}\n' + line + "\n", "utf-8")
    code, out, err = run("audit", str(trace))
    assert code == 2 and out == "" and "t.jsonl:2" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_bad_input_in_one_trace_leaves_no_output(tmp_path: Path, jobs: str) -> None:
    good = sorted(str(p) for p in SCENARIOS.glob("*.jsonl"))[:2]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event":"header","format":"ctxproof-trace/1"}\n{"event":"nope"}\n', "utf-8")
    code, out, err = run("audit", good[0], str(bad), good[1], "--jobs", jobs)
    assert code == 2 and out == ""
    assert f"{bad}:2" in err


# -- the command line as a package: commands load on first use, every door opens ------------


def test_every_command_is_found_where_the_group_says() -> None:
    import click

    from verifier.cli import COMMANDS, cli

    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert cli.get_command(ctx, "nosuch") is None


def test_version_imports_no_command_and_no_heavy_dependency() -> None:
    import subprocess
    import sys

    heavy = ("z3", "networkx", "matplotlib", "hypothesis", "ray", "lark", "cvc5")
    code = (
        "import io, json, sys\n"
        "from verifier.cli import main\n"
        "code = main(sys.argv[1:], stdout=io.StringIO(), stderr=io.StringIO())\n"
        f"heavy = {heavy!r}\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules} & set(heavy)),"
        " sorted(m for m in sys.modules if m.startswith('verifier.cli.'))]))\n"
    )

    def imported(*argv: str) -> list[Any]:
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        result: list[Any] = json.loads(done.stdout)
        return result

    assert imported("--version") == [0, [], ["verifier.cli.common"]]
    # a command's module, and what it imports, load when the command is asked for
    code_, loaded, commands = imported("prove", "--help")
    assert code_ == 0 and "z3" in loaded and "verifier.cli.prove" in commands
    assert "verifier.cli.audit" not in commands


def test_a_command_imports_the_heavy_dependencies_its_work_needs_only(tmp_path: Path) -> None:
    """z3 loads when a question reaches the solver, networkx when an audit builds its
    graph, multiprocessing when a batch goes to worker processes: a check that the
    shortcuts settle, or ``ref`` of an item, loads none of them."""
    import subprocess
    import sys

    heavy = ("z3", "networkx", "matplotlib", "hypothesis", "ray", "cvc5", "multiprocessing")
    code = (
        "import io, json, sys\n"
        "from verifier.cli import main\n"
        "code = main(sys.argv[1:], stdout=io.StringIO(), stderr=io.StringIO())\n"
        f"heavy = {heavy!r}\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules} & set(heavy))]))\n"
    )

    def imported(*argv: str) -> list[Any]:
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        result: list[Any] = json.loads(done.stdout)
        return result

    item = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a -> b"}
    window = {"format": "ctxproof-window/1", "background": [], "items": [item]}
    kept = tmp_path / "w.json"
    kept.write_text(json.dumps(window))
    assert imported("check", str(kept), str(kept)) == [0, []]
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        json.dumps({"event": "header", "format": "ctxproof-trace/1"})
        + "\n"
        + json.dumps({"event": "append", "items": [item]})
        + "\n"
    )
    assert imported("ref", str(trace), "c1") == [0, []]
    assert imported("audit", str(trace)) == [0, ["networkx"]]
    contradicted = tmp_path / "c.jsonl"
    claim = {"id": "k", "kind": "claim", "formula": "a & !b"}
    contradicted.write_text(
        trace.read_text() + json.dumps({"event": "append", "items": [claim]}) + "\n"
    )
    code_, loaded = imported("audit", str(contradicted))
    assert code_ == 1 and loaded == ["networkx", "z3"]


def test_the_console_script_and_python_m_verifier_run_the_same_command() -> None:
    import subprocess
    import sys

    trace = str(SCENARIOS / "postgres_spilled_first.jsonl")
    code, out, _ = run("audit", trace, "--format", "json")
    script = Path(sys.executable).parent / "ctxproof"
    for argv in ([str(script)], [sys.executable, "-m", "verifier"]):
        done = subprocess.run(
            [*argv, "audit", trace, "--format", "json"], capture_output=True, text=True, check=False
        )
        assert (done.returncode, done.stdout) == (code, out)


def test_a_module_in_the_current_folder_loads_from_the_console_script_too(
    tmp_path: Path,
) -> None:
    """``package.module:function`` is found in the folder the command runs in, by the
    console script as by ``python -m verifier`` (which has that folder first on the path):
    a policy for fuzz, an extractor for import."""
    import subprocess
    import sys

    pkg = tmp_path / "ctxproof_cwd_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mine.py").write_text(
        "def keep(window, budget):\n    return window\n"
        "def none(message, context):\n    return []\n"
    )
    history = ROOT / "tests" / "fixtures" / "histories" / "openai"
    script = Path(sys.executable).parent / "ctxproof"
    fuzz = ["fuzz", "ctxproof_cwd_pkg.mine:keep", "--sessions", "1", "--out", "o"]
    imp = ["import", "openai", str(history / "chat_snapshots.json")]
    for argv in ([str(script)], [sys.executable, "-m", "verifier"]):
        done = subprocess.run(
            [*argv, *fuzz], capture_output=True, text=True, check=False, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        done = subprocess.run(
            [*argv, *imp, "--extract", "ctxproof_cwd_pkg.mine:none"],
            capture_output=True, text=True, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr


def test_a_check_that_writes_nothing_imports_no_file_writing_helpers(tmp_path: Path) -> None:
    """tempfile (and what it pulls in), traceback and difflib load where a file is
    written, an internal error shown with CTXPROOF_DEBUG or a typo named, not for every
    start."""
    import subprocess
    import sys

    code = (
        "import io, json, sys\n"
        "from verifier.cli import main\n"
        "code = main(sys.argv[1:], stdout=io.StringIO(), stderr=io.StringIO())\n"
        "print(json.dumps([code, sorted({'tempfile', 'traceback', 'difflib', 'verifier.fsutil'}"
        " & set(sys.modules))]))\n"
    )
    item = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a -> b"}
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": [item]}))
    argv = ["check", str(window), str(window)]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, []]
    # --repair writes a file: the helpers load then, and the window is written
    out = tmp_path / "out.json"
    argv += ["--store", str(tmp_path / "s.sqlite"), "--repair", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, ["tempfile", "verifier.fsutil"]]
    assert json.loads(out.read_text())["items"] == [item]


def test_entry_exits_with_the_code_of_main_its_objects_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The console script ends the process with main's exit code; what the process
    holds is frozen first, so the collector's last pass at exit skips it."""
    import gc

    import verifier.cli as cli_module

    calls: list[str] = []

    def main() -> int:
        calls.append("main")
        return 3

    owned = [False]
    monkeypatch.setattr(cli_module, "_OWNED", owned)
    monkeypatch.setattr(cli_module, "main", main)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    with pytest.raises(SystemExit) as exc:
        cli_module.entry()
    assert exc.value.code == 3
    assert calls == ["main", "freeze"]
    assert owned == [True]


def test_commands_run_in_process_leave_their_garbage_collectable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that runs commands itself (the Python API, a test suite) keeps nothing
    for good: no command files the process's objects where no collection walks them, so
    a cycle one command leaves behind is freed by the next collection (a long fuzz run
    in one process grew by a gigabyte when every command froze what it found)."""
    import gc
    import weakref

    import verifier.cli as cli_module

    class Cycle:
        me: object

    def garbage() -> weakref.ref[Cycle]:
        cycle = Cycle()
        cycle.me = cycle
        return weakref.ref(cycle)

    trace = tmp_path / "t.jsonl"
    trace.write_bytes((ROOT / "tests" / "corpus" / "cf001_fires.jsonl").read_bytes())
    (tmp_path / "probe_command_module.py").write_text("VALUE = [1, 2, 3]\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    frozen = gc.get_freeze_count()
    left = garbage()
    module = cli_module._imported("probe_command_module")  # a command module's first import
    assert module.VALUE == [1, 2, 3] and gc.get_freeze_count() == frozen
    gc.collect()
    assert left() is None
    for argv in (["audit", str(trace)], ["graph", str(trace), "--out", str(tmp_path / "g")]):
        left = garbage()
        main(argv, stdout=io.StringIO(), stderr=io.StringIO())
        assert gc.get_freeze_count() == frozen, argv
        gc.collect()
        assert left() is None, argv
    assert not cli_module._OWNED[0]
    sys.modules.pop("probe_command_module", None)


def test_check_reads_the_background_of_before(tmp_path: Path) -> None:
    """The domain knowledge is BEFORE's: a formula AFTER's background adds is no premise
    (the rewrite cannot certify what it made up: CF005, CF002), a background AFTER leaves
    out still holds, and an AFTER background unsatisfiable on its own is bad input."""
    claim = {"id": "n1", "kind": "claim", "formula": "db.replicas3"}
    decision = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a"}

    def window(name: str, background: list[str], items: list[dict[str, Any]]) -> str:
        path = tmp_path / name
        obj = {"format": "ctxproof-window/1", "background": background, "items": items}
        path.write_text(json.dumps(obj), "utf-8")
        return str(path)

    def codes(*argv: str) -> tuple[int, list[str]]:
        code, out, err = run("check", *argv, "--format", "json")
        assert code in (0, 1), err
        return code, [f["code"] for f in json.loads(out)["findings"]]

    before = window("b.json", [], [decision])
    assert codes(before, window("a0.json", [], [decision, claim])) == (1, ["CF005"])
    # AFTER adds an axiom that would entail its new claim: not read
    added = window("a1.json", ["a -> db.replicas3"], [decision, claim])
    assert codes(before, added) == (1, ["CF005"])
    stronger = {**decision, "formula": "a & db.replicas3"}
    strengthened = window("a2.json", ["a -> db.replicas3"], [stronger])
    assert codes(before, strengthened) == (1, ["CF002", "CF005"])
    # BEFORE's axiom holds in AFTER, whatever AFTER's background says
    knows = window("b1.json", ["a -> db.replicas3"], [decision])
    assert codes(knows, window("a3.json", [], [decision, claim])) == (0, [])
    code, _, err = run("check", before, window("a4.json", ["x", "!x"], [decision]))
    assert code == 2 and "unsatisfiable" in err and "a4.json" in err


def test_a_check_finding_stands_at_the_line_of_its_item(tmp_path: Path) -> None:
    """The line of the item's id in AFTER, not of an earlier string that names it (a
    prose text, a citation)."""
    obs = {"id": "o1", "kind": "observation", "shows": "t", "modality": "verified"}
    claim = {"id": "k2", "kind": "claim", "formula": "t", "witnesses": ["o1"]}
    claim["modality"] = "verified"
    before = tmp_path / "before.json"
    before.write_text(json.dumps({"format": "ctxproof-window/1", "items": [obs, claim]}))
    note = {"id": "p0", "kind": "prose", "text": "k2"}
    after = tmp_path / "after.json"
    after.write_text(json.dumps({"format": "ctxproof-window/1", "items": [note, claim]}, indent=1))
    code, out, _ = run("check", str(before), str(after), "--format", "json")
    found = [(f["code"], f["items"], f["line"]) for f in json.loads(out)["findings"]]
    lines = after.read_text().splitlines()
    assert code == 1 and [(c, i) for c, i, _ in found] == [("WR002", ["k2"])]
    assert '"id": "k2"' in lines[found[0][2] - 1]
    assert '"text": "k2"' in "\n".join(lines[: found[0][2] - 1])  # named earlier, as text


def test_an_audit_event_pauses_the_collector_and_leaves_it_as_it_found_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each event is checked with the cycle collector paused; it runs again afterwards
    only if it ran before, and nothing stays frozen."""
    import gc

    from verifier.audit import Auditor, audit_trace
    from verifier.io import load_trace

    seen: list[bool] = []
    real = Auditor._feed

    def feed(self: Auditor, ev: Any) -> None:
        seen.append(gc.isenabled())
        real(self, ev)

    monkeypatch.setattr(Auditor, "_feed", feed)
    trace = load_trace(str(ROOT / "tests" / "corpus" / "cf001_fires.jsonl"))
    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            seen.clear()
            report = audit_trace(trace)
            assert [f.code for f in report.findings] == ["CF001"]
            assert seen and not any(seen)
            assert gc.isenabled() is enabled
            assert gc.get_freeze_count() == frozen
    finally:
        (gc.enable if was else gc.disable)()
