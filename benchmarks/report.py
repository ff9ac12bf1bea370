"""Write ``benchmarks/RESULTS.md`` from the JSON that pytest-benchmark saved.

Usage (from the repository root; ``make bench`` and ``make bench-prove`` run it)::

    .venv/bin/python -m benchmarks.report [benchmarks/results] > benchmarks/RESULTS.md

Every ``*.json`` of the folder is one run: its machine, then for each
benchmark module its description (the module's docstring) and a table per
group. In a group, the benchmark whose ``extra_info["role"]`` is ``floor`` is
the baseline and every other row gives its median over the floor's median,
and, where the floor ran before each of its rounds (``floor_rounds``), the
median of the per-round ratios first.
Every number comes from the saved JSON.
"""

from __future__ import annotations

import ast
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "bench.json": "`make bench`",
    "check-large.json": "`make bench-check-large`: check at 100k and 300k items, and with"
    " a quarter of 100k items broken",
    "prove.json": "`make bench-prove`",
    "prove-large.json": "the target problems of `--bench-prove-large`: the bundled safe specs",
    "fuzz-isolation.json": "`make bench-fuzz`: fuzz throughput with the policy in its own"
    " process, and what that costs a call",
    "import.json": "`make bench-import`: Claude Code sessions of 10, 50 and 100 MB with 5"
    " compactions, and with a compaction every 8 MB",
    "scale.json": "`make bench-scale`: cost against items and findings, start-up",
    "fuzz-e2e.json": "`make bench-fuzz-e2e`: fuzz end to end, the README's unsafe policy"
    " against its safe one",
}


def fmt_s(x: float) -> str:
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.0f} µs"


def paired_ratio(b: Obj) -> float | None:
    """The median of the per-round ratios of a benchmark whose floor ran before each of
    its rounds (``extra_info["floor_rounds"]``, :mod:`benchmarks.paired`); None for the
    others, and for a run that kept no per-round data."""
    floor_rounds = b["extra_info"].get("floor_rounds")
    own = b["stats"].get("data")
    if not floor_rounds or not own or len(own) != len(floor_rounds):
        return None
    per_round = sorted(t / f for t, f in zip(own, floor_rounds, strict=True))
    mid = len(per_round) // 2
    if len(per_round) % 2:
        return float(per_round[mid])
    return float(per_round[mid - 1] + per_round[mid]) / 2


def ratio(b: Obj, floor: Obj | None) -> str:
    if floor is None or b is floor:
        return "floor" if b is floor else "—"
    medians = b["stats"]["median"] / floor["stats"]["median"]
    paired = paired_ratio(b)
    if paired is None:
        return f"**{medians:.2f}×**"
    return f"**{paired:.2f}×** paired; {medians:.2f}× of the medians"


def _peak(e: Obj) -> str:
    if "peak_mib" not in e:
        return ""
    return f"; peak memory {e['peak_mib']:.0f} MiB ({e['imports_mib']:.0f} after the imports)"


def _note_check(b: Obj) -> str:
    e = b["extra_info"]
    if e["role"] == "floor":
        return f"{e['changed']:,} items changed; {e['before_bytes'] / 1e6:.1f} MB before"
    return f"verdict {e.get('verdict', '?')}, {e.get('findings', '?')} findings{_peak(e)}"


def _note_check_faults(b: Obj) -> str:
    e = b["extra_info"]
    if e["role"] == "floor":
        return f"{e['faults']:,} items {e['mode']}; {e['before_bytes'] / 1e6:.1f} MB before"
    return (
        f"verdict {e.get('verdict', '?')}, {e.get('findings', 0):,} findings; repair"
        f" {e.get('repair_verdict', '?')} in {e.get('repair_actions', 0):,} actions{_peak(e)}"
    )


def _note_append(b: Obj) -> str:
    e = b["extra_info"]
    return (
        f"{e['store_entries']:,} stored entries, window of {e['window']} items;"
        f" {e.get('findings', '?')} findings"
    )


def _note_audit(b: Obj) -> str:
    e = b["extra_info"]
    per_pass = b["stats"]["median"] / e["passes_per_round"]
    return (
        f"{fmt_s(per_pass)} per pass; passes {e['from_pass'] + 1:,}–"
        f"{e['from_pass'] + e['passes_per_round'] * b['stats']['rounds']:,};"
        f" window {e['window']:,} items, store {e['store_entries']:,} entries, graph"
        f" {e['graph_nodes']:,} nodes; verdicts {', '.join(e.get('verdicts', []))}"
    )


def _note_fuzz(b: Obj) -> str:
    e = b["extra_info"]
    if e.get("kind") == "calls":
        per_call = b["stats"]["median"] / e["policy_calls"] if e["policy_calls"] else 0.0
        return (
            f"**{fmt_s(per_call)} per call** ({e['policy_calls']} calls, two a rewrite, on"
            f" {e['window_items']:.0f} items on average, validation included)"
        )
    rate = e["rewrites"] / b["stats"]["median"]
    if e.get("end_to_end"):
        played = f" ({e['shrink_played']} played)" if "shrink_played" in e else ""
        return (
            f"**{rate:,.0f} rewrites/s** ({e['rewrites']} rewrites of {e['sessions']} sessions);"
            f" {e['findings']:,} findings of {e['rules']} rules; shrinking {e['shrink_plays']}"
            f" sessions{played} in {fmt_s(e['shrink_seconds'])}"
        )
    found = "" if e["role"] == "floor" else f"; {e.get('findings', '?')} findings a round"
    return (
        f"**{rate:,.0f} rewrites/s** ({e['rewrites']} rewrites of {e['sessions']} sessions,"
        f" {e['policy_calls']} policy calls on {e['window_items']:.0f} items on average){found}"
    )


def _note_prove(b: Obj) -> str:
    e = b["extra_info"]
    what = "proved" if e["result"] == "proved" else ", ".join(e["codes"]) or e["result"]
    return f"{e['encoding']}: {what}; {e.get('z3_checks') or 0:.0f} z3 checks"


def _note_import(b: Obj) -> str:
    e = b["extra_info"]
    size = f"{e['bytes'] / 2**20:.1f} MiB file"
    if e.get("role") not in ("import", "command"):
        return size
    text = f"{size}; {e['rewrites']} rewrites; trace {e['trace_bytes'] / 2**20:.1f} MiB"
    if "peak_mib" in e:
        text += f"; peak {e['peak_mib']:.0f} MiB ({e['imports_mib']:.0f} after the imports)"
    return text


def _note_scale(b: Obj) -> str:
    e = b["extra_info"]
    codes = ", ".join(f"{code} {n:,}" for code, n in sorted(e.get("codes", {}).items()))
    return (
        f"{e['items']:,} items, {e['trace_bytes'] / 1e6:.1f} MB; {e.get('rewrites', 0)}"
        f" rewrites; {e.get('findings', 0):,} findings{f' ({codes})' if codes else ''}"
    )


def _note_startup(b: Obj) -> str:
    e = b["extra_info"]
    note = f"`{e['command']}`; exit {e.get('exit', '?')}"
    if "rewrites" in e:
        rate = e["rewrites"] / b["stats"]["median"]
        note += (
            f"; **{rate:,.0f} rewrites/s** ({e['rewrites']} rewrites of {e['sessions']}"
            f" sessions, {e['rules']} rules found; shrinking {fmt_s(e['shrink_seconds'])})"
        )
    return note


NOTES: dict[str, Callable[[Obj], str]] = {
    "test_bench_startup": _note_startup,
    "test_bench_scale": _note_scale,
    "test_bench_check": _note_check,
    "test_bench_check_faults": _note_check_faults,
    "test_bench_append": _note_append,
    "test_bench_audit": _note_audit,
    "test_bench_fuzz": _note_fuzz,
    "test_bench_prove": _note_prove,
    "test_bench_import": _note_import,
}


def module_of(b: Obj) -> str:
    return str(b["fullname"]).split("::", 1)[0]


def docstring(module: str) -> str:
    path = ROOT / module
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except OSError:
        doc = None
    return doc or ""


def machine(run: Obj, name: str) -> list[str]:
    m, c = run["machine_info"], run["commit_info"]
    cpu = m.get("cpu", {})
    brand = cpu.get("brand_raw") or m.get("processor") or "unknown CPU"
    pkgs = "; ".join(f"{k} {v}" for k, v in m.get("packages", {}).items())
    start = ", ".join(f"{x:.2f}" for x in m.get("loadavg_start", []))
    end = ", ".join(f"{x:.2f}" for x in m.get("loadavg_end", []))
    dirty = " (with uncommitted changes)" if c.get("dirty") else ""
    args = shlex.join(m.get("args", []))
    return [
        f"- date: {run['datetime'][:16].replace('T', ' ')} UTC; commit {c.get('id', '?')[:12]}"
        f"{dirty}",
        f"- command: `pytest {args}`" if args else f"- run: {name}",
        f"- machine: {m['system']} {m['release']} {m['machine']}, {brand}",
        f"- nproc: {m.get('nproc')} (usable by the run: {m.get('cores_usable')})",
        f"- Python: {m.get('python')}; z3: {m.get('z3')}",
        f"- packages: {pkgs}",
        f"- load average (1, 5, 15 min): {start} at the start, {end} at the end"
        " (other jobs share this machine)",
        *_speed(m),
    ]


def _speed(m: Obj) -> list[str]:
    """The machine's speed during the run: the reference loop at its start and end, and
    the CPU time its host gave other machines meanwhile (absent from older runs)."""
    if "reference_ms_start" not in m:
        return []
    steal = m.get("steal_seconds")
    stolen = (
        f"; CPU time the host gave other machines during the run (steal): {steal:g} s"
        if steal is not None
        else ""
    )
    return [
        f"- speed: a reference loop (a million additions in Python) took"
        f" {m['reference_ms_start']:g} ms at the start, {m['reference_ms_end']:g} ms at the"
        f" end{stolen}"
    ]


def group_table(benches: Sequence[Obj], note: Callable[[Obj], str] | None) -> list[str]:
    floors = [b for b in benches if b["extra_info"].get("role") == "floor"]
    floor = floors[0] if floors else None
    rows = [
        "| benchmark | role | median | IQR | min | rounds | × floor | |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    order = sorted(benches, key=lambda b: b is not floor)
    for b in order:
        s = b["stats"]
        text = note(b) if note is not None else ""
        rows.append(
            f"| `{b['name']}` | {b['extra_info'].get('role', '')} | {fmt_s(s['median'])}"
            f" | {fmt_s(s['iqr'])} | {fmt_s(s['min'])} | {s['rounds']} | {ratio(b, floor)}"
            f" | {text} |"
        )
    return rows


def ratios(run: Obj) -> list[str]:
    out: list[str] = []
    for group, benches in groups(run["benchmarks"]).items():
        floor = next((b for b in benches if b["extra_info"].get("role") == "floor"), None)
        if floor is None:
            continue
        for b in benches:
            if b is floor:
                continue
            r = b["stats"]["median"] / floor["stats"]["median"]
            paired = paired_ratio(b)
            shown = f"{r:.2f}×" if paired is None else f"{paired:.2f}× paired ({r:.2f}× medians)"
            out.append(f"- {group}: `{b['name']}` {shown} `{floor['name']}`")
    return out


def groups(benches: Sequence[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for b in benches:
        out.setdefault(str(b["group"]), []).append(b)
    return out


def render_run(path: Path) -> list[str]:
    run: Obj = json.loads(path.read_text(encoding="utf-8"))
    name = RUNS.get(path.name, path.name)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    parts = [f"## {name}", "", f"Saved as `{shown}`.", ""]
    parts += machine(run, name)
    modules: dict[str, list[Obj]] = {}
    for b in run["benchmarks"]:
        modules.setdefault(module_of(b), []).append(b)
    prove_only = set(modules) == {"benchmarks/test_bench_prove.py"}
    summary = ratios(run)
    if summary and not prove_only:
        parts += ["", "Ratios (medians, each against the floor of its group):", "", *summary]
    for module, benches in modules.items():
        stem = Path(module).stem
        parts += ["", f"### `{module}`", "", docstring(module)]
        for group, members in groups(benches).items():
            parts += ["", f"**{group}**", "", *group_table(members, NOTES.get(stem))]
    return parts


def render(folder: Path) -> str:
    runs = sorted(folder.glob("*.json"), key=lambda p: (p.name not in RUNS, p.name))
    medians = [
        "Measured with pytest-benchmark: each benchmark runs a fixed number of rounds",
        "(one call each, built before the clock starts) and the tables give the median,",
        "the interquartile range and the fastest round. A group compares its benchmarks",
        "with its floor, measured in the same run; benchmarks of a group run one after",
        "the other. Where a benchmark also ran its floor right before each of its rounds,",
        "its ratio is *paired*: the median of the per-round ratios, which the host's",
        "changes of speed over a run do not move (the ratio of the medians follows it).",
        "The raw data of every round is in the JSON files beside this page. Written by",
        "`benchmarks/report.py` from those files.",
    ]
    parts = ["# Benchmark results", "", *medians]
    for path in runs:
        parts += ["", *render_run(path)]
    for page in sorted(folder.glob("*.md")):
        # measurements of whole commands, timed from outside (bench_distributed.py)
        parts += ["", page.read_text(encoding="utf-8").rstrip("\n")]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    folder = Path(args[0]) if args else ROOT / "benchmarks" / "results"
    sys.stdout.write(render(folder.resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
