"""HTML audit reports a person reads (docs/formats.md, "Reports").

``audit --report DIR`` and ``demo`` write:

* ``DIR/index.html`` — the overview: one row per trace (rewrites, verdicts,
  findings by rule) linking to its page, one row per policy, and a legend of the
  rules found. It stays small, so a report of 1,000 traces opens at once.
* ``DIR/traces/NNNN-NAME.html`` — one page per trace: the timeline of passes with
  what each rewrite did (kept, changed, spilled, dropped, new items), then each
  finding with the text and formula of its items before and after the rewrite,
  the findings that follow from the same change listed under it, its
  counterexample as a small truth table, and a link to the item's "how do you
  know?" chain (each chain shown once per item); the justification graph last.
* ``DIR/report.json`` — the results, as ``audit --format json`` prints them.

Every page is self-contained (no scripts, no external assets).
"""

from __future__ import annotations

import contextlib
import difflib
import html
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.audit import Auditor, TraceReport
from verifier.errors import FormulaError, OutputError
from verifier.findings import RULES, SUMMARIES, cause_item
from verifier.formula import evaluate
from verifier.fsutil import write_set
from verifier.graph import JustificationGraph, WhyAnswer, why
from verifier.parser import parse_formula
from verifier.rules.context import MODE_SUPPORT
from verifier.store import Store
from verifier.window import Append, Item, Rewrite, Trace

__all__ = [
    "ContentChange",
    "RewriteView",
    "TraceView",
    "content_changes",
    "page_name",
    "render_index",
    "render_trace_page",
    "render_why",
    "svg_graph",
    "view_trace",
    "write_report",
]

_FILL = {
    "verified": "#e8f5e9",
    "failed": "#ffebee",
    "unverified": "#f5f5f5",
    "unwitnessed": "#fff3e0",
}
_STROKE = {
    "verified": "#2e7d32",
    "failed": "#c62828",
    "unverified": "#757575",
    "unwitnessed": "#ef6c00",
}
_VERDICT = {
    "accept": "#2e7d32",
    "accept-demoted": "#ef6c00",
    "refuse": "#c62828",
    "undecided": "#6a1b9a",
}
_STATUS = {
    "kept": "#eceff1",
    "changed": "#fff3e0",
    "spilled": "#e3f2fd",
    "dropped": "#ffebee",
    "new": "#f3e5f5",
    "appended": "#f3e5f5",
}

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#212121;max-width:1200px}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin:.2rem 0}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.3rem .6rem;border:1px solid #e0e0e0;
text-align:left;vertical-align:top;font-size:.9rem}th{background:#fafafa}
.badge{color:#fff;border-radius:.6rem;padding:.1rem .5rem;font-size:.8rem;white-space:nowrap}
code{background:#f5f5f5;padding:0 .2rem}.why{font-family:monospace;font-size:.8rem;
white-space:pre-wrap;background:#fafafa;padding:.4rem;border-left:3px solid #90a4ae;margin:.3rem 0}
.legend span{display:inline-block;margin-right:1rem;font-size:.85rem}
.svgwrap{overflow-x:auto;border:1px solid #eee;padding:.5rem}
.finding{border:1px solid #e0e0e0;border-left:4px solid #c62828;border-radius:4px;
padding:.6rem .9rem;margin:1rem 0}.finding.cp{border-left-color:#6a1b9a}.msg{margin:.3rem 0}
.related{font-size:.85rem;color:#455a64}.related li{margin:.15rem 0}
.text{color:#37474f;font-style:italic}.muted{color:#78909c;font-size:.85rem}
.tt td,.tt th{text-align:center;font-family:monospace}.t{background:#e8f5e9}.f{background:#ffebee}
td.status{font-weight:600;white-space:nowrap}details{margin:.3rem 0}summary{cursor:pointer}
.num{text-align:right}
pre{white-space:pre-wrap;margin:.2rem 0;font-size:.8rem}pre.lost{background:#ffebee}
pre.diff{background:#fafafa}.coverage{color:#37474f}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _anchor(text: str) -> str:
    """An id attribute value for any text (ids may hold any character)."""
    return "x" + "".join(c if c.isalnum() or c in "-_" else f".{ord(c):x}." for c in text)


# -- what the report is made of ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RewriteView:
    """One rewrite as the report shows it: the windows around it and what the store held."""

    pass_: int
    line: int | None
    policy: str | None
    before: tuple[Item, ...]
    after: tuple[Item, ...]
    stored: frozenset[str]
    """Ids the store holds once the rewrite is done."""


@dataclass
class TraceView:
    """Everything a trace's page shows, gathered in one audit."""

    result: dict[str, Any]
    rewrites: dict[int, RewriteView] = field(default_factory=dict)
    appended: dict[tuple[int | None, str], Item] = field(default_factory=dict)
    """(line, id) -> the item an append put in."""
    known: dict[tuple[int | None, str], Item] = field(default_factory=dict)
    """(line, id) -> the version of an item an append's finding names that the session held
    then (in the window, behind a stub, or last seen)."""
    whys: dict[str, str] = field(default_factory=dict)
    """item -> its why chain, as it stood at its first finding."""
    graph: JustificationGraph | None = None
    kinds: dict[str, int] = field(default_factory=dict)
    """kind -> how many distinct item ids of that kind the trace holds."""


def _held(auditor: Auditor, item_id: str) -> Item | None:
    """The version of an id the session holds: in the window (a stub resolved), in the
    store, or the last one a window held."""
    for it in auditor.window:
        if it.id == item_id:
            if it.kind != "stub":
                return it
            return auditor.store.resolve(it.stub_ref or "") or it
    return auditor.store.latest(item_id) or auditor.history.last_seen.get(item_id)


def view_trace(
    trace: Trace,
    *,
    store: Store | None = None,
    mode: str = MODE_SUPPORT,
    repair: bool = True,
) -> tuple[TraceReport, TraceView]:
    """Audit a trace once and gather what its page shows: the windows around each
    rewrite, the appended items, each item's why chain as it stood when its first
    finding was made, the justification graph, and (with ``repair``) the repairs."""
    graph = JustificationGraph()
    auditor = Auditor(
        trace.header.background,
        name=trace.name,
        store=store,
        mode=mode,
        graph=graph,
        repair=repair,
    )
    rewrites: dict[int, RewriteView] = {}
    kinds: dict[str, str] = {}
    appended: dict[tuple[int | None, str], Item] = {}
    known: dict[tuple[int | None, str], Item] = {}
    whys: dict[str, str] = {}
    for ev in trace.events:
        seen = len(auditor.findings)
        before = auditor.window
        auditor.feed(ev)
        for it in auditor.window:
            kinds.setdefault(it.id, it.kind)
        if isinstance(ev, Rewrite):
            after = auditor.window
            ids = {it.id for it in (*before, *after)}
            stored = frozenset(i for i in ids if auditor.store.has_id(i))
            rewrites[auditor.pass_no] = RewriteView(
                auditor.pass_no, ev.line, ev.policy, before, after, stored
            )
        elif isinstance(ev, Append):
            for it in ev.items:
                appended[(ev.line, it.id)] = it
            for f in auditor.findings[seen:]:
                for iid in f.items:
                    held = _held(auditor, iid)
                    if held is not None:
                        known[(ev.line, iid)] = held
        for f in auditor.findings[seen:]:
            for iid in dict.fromkeys((*f.items[:1], cause_item(f.code, f.items) or "")):
                if iid and iid not in whys:
                    whys[iid] = _why_text(graph, iid)
    report = auditor.report()
    view = TraceView(report.to_json(repairs=repair), rewrites, appended, known, whys, graph)
    view.kinds = dict(Counter(kinds.values()))
    return report, view


# -- pieces -----------------------------------------------------------------------------------


def svg_graph(graph: JustificationGraph) -> str:
    """The graph drawn as SVG: one column per pass, colour by modality, lost dashed."""
    g = graph.g
    columns: dict[int, list[str]] = {}
    for node, attrs in g.nodes(data=True):
        columns.setdefault(int(attrs.get("pass") or 0), []).append(node)
    order = sorted(columns)
    w, h, gap_x, gap_y = 150, 34, 70, 14
    pos: dict[str, tuple[int, int]] = {}
    for ci, col in enumerate(order):
        for ri, node in enumerate(sorted(columns[col])):
            pos[node] = (20 + ci * (w + gap_x), 40 + ri * (h + gap_y))
    width = 40 + len(order) * (w + gap_x)
    height = 60 + max((len(v) for v in columns.values()), default=1) * (h + gap_y)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        '<defs><marker id="arr" markerWidth="8" markerHeight="8" refX="8" refY="4" '
        'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#90a4ae"/></marker></defs>',
    ]
    for ci, col in enumerate(order):
        parts.append(
            f'<text x="{20 + ci * (w + gap_x)}" y="20" fill="#546e7a">'
            f"{'appended' if col == 0 else f'pass {col}'}</text>"
        )
    for u, v, attrs in g.edges(data=True):
        (x1, y1), (x2, y2) = pos[u], pos[v]
        rel = attrs.get("relation", "")
        dash = ' stroke-dasharray="4 3"' if "carried" in rel else ""
        if x1 == x2:
            bend, ya, yb = x1 + w + 40, y1 + h / 2, y2 + h / 2
            path = f"M{x1 + w},{ya} C{bend},{ya} {bend},{yb} {x2 + w},{yb}"
        elif x2 > x1:
            path = f"M{x1 + w},{y1 + h / 2} L{x2},{y2 + h / 2}"
        else:
            path = f"M{x1},{y1 + h / 2} L{x2 + w},{y2 + h / 2}"
        parts.append(
            f'<path d="{path}" fill="none" stroke="#90a4ae"{dash} marker-end="url(#arr)">'
            f"<title>{_e(u)} → {_e(v)}: {_e(rel)}</title></path>"
        )
    for node, (x, y) in pos.items():
        a = g.nodes[node]
        modality = a.get("modality")
        kind = a.get("kind")
        fill = _FILL.get(modality or "", "#eceff1")
        stroke = _STROKE.get(modality or "", "#455a64")
        lost = not a.get("retained", True) and kind != "store"
        dash = ' stroke-dasharray="5 3"' if lost else ""
        opacity = ' opacity="0.55"' if lost else ""
        label = str(a.get("id", node))
        if len(label) > 20:
            label = label[:19] + "…"
        tip = f"{node} ({kind}{', ' + modality if modality else ''})"
        if a.get("lost_at") is not None:
            tip += f"; lost at pass {a['lost_at']}"
        parts.append(
            f'<g{opacity}><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="5" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.5"{dash}/>'
            f'<text x="{x + 6}" y="{y + 14}" font-weight="bold">{_e(label)}</text>'
            f'<text x="{x + 6}" y="{y + 27}" fill="#546e7a">{_e(kind)}'
            f"{' · ' + _e(modality) if modality else ''}</text>"
            f"<title>{_e(tip)}</title></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def render_why(graph: JustificationGraph, answer: WhyAnswer) -> list[str]:
    """Text lines for a why answer."""

    def describe(node: str) -> str:
        a = graph.g.nodes[node]
        parts = [f"{node} {a.get('kind')}"]
        if a.get("modality"):
            parts.append(a["modality"])
        for key in ("formula", "shows", "source", "exit_code", "digest", "at"):
            if a.get(key) is not None:
                value = a[key]
                parts.append(f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}")
        return " ".join(parts)

    out: list[str] = []
    excluded = graph.g.nodes[answer.node].get("excluded") if answer.node is not None else None
    if excluded is not None:
        out.append(f"{answer.item}: reported by {excluded}; no premise of any later check")
    dropped = None
    if answer.dropped is not None:
        p, policy, line = answer.dropped
        by = f" by {policy!r}" if policy is not None else ""
        at = f", line {line}" if line is not None else ""
        dropped = f"  dropped at pass {p}{by}{at}; not in the store"
    if answer.chain is not None:
        out.append(f"{answer.item}: known through {len(answer.chain) - 1} step(s)")
        if dropped is not None:
            out.append(dropped)
        for i, node in enumerate(answer.chain):
            rel = ""
            if i > 0:
                rel = graph.g.edges[answer.chain[i - 1], node].get("relation", "") + ": "
            out.append("  " * (i + 1) + ("<- " if i else "") + rel + describe(node))
        return out
    out.append(f"{answer.item}: no path to a retained primitive")
    if answer.node is not None:
        out.append("  " + describe(answer.node))
    if dropped is not None:
        out.append(dropped)
    for node in answer.reached:
        a = graph.g.nodes[node]
        lost = (
            f"lost at pass {a['lost_at']} (policy {a.get('lost_by')!r})"
            if a.get("lost_at") is not None
            else "not retained"
        )
        out.append(f"    primitive {describe(node)}: {lost}")
    if answer.cut_pass is not None:
        out.append(
            f"  the chain broke at pass {answer.cut_pass}, rewrite {answer.cut_policy!r}"
            f" (line {answer.cut_line})"
        )
    elif not answer.reached:
        out.append("  no primitive ever backed it")
    return out


def _why_text(graph: JustificationGraph, item: str) -> str:
    try:
        return "\n".join(render_why(graph, why(graph, item)))
    except KeyError:
        return f"{item}: not in the graph"


def _describe_item(it: Item | None, stored: bool = False) -> str:
    """An item's kind, modality, formula and text, as one table cell."""
    if it is None:
        return '<span class="muted">—</span>'
    head = it.kind
    if it.type is not None:
        head += f" ({it.type})"
    if it.kind in ("commitment", "claim", "observation"):
        head += f" · {it.modality}"
    parts = [f"<b>{_e(head)}</b>"]
    if it.kind in ("commitment", "claim"):
        formula = it.formula_text if it.formula_text is not None else it.id
        parts.append(f"<code>{_e(formula)}</code>")
    elif it.kind == "observation":
        if it.shows_text is not None:
            parts.append(f"shows <code>{_e(it.shows_text)}</code>")
        if it.source is not None:
            code = f", exit {it.exit_code}" if it.exit_code is not None else ""
            parts.append(f'<span class="muted">{_e(it.source)}{_e(code)}</span>')
    elif it.kind == "stub":
        where = "resolves in the store" if stored else "stands for a stored item"
        parts.append(f'<span class="muted">{_e(where)}: {_e((it.stub_ref or "")[:19])}…</span>')
    cites = [
        f"{name} {', '.join(ids)}"
        for name, ids in (
            ("rationale", it.rationale),
            ("witnesses", it.witnesses),
            ("derived from", it.derived_from),
            ("covers", it.covers),
        )
        if ids
    ]
    if cites:
        parts.append(f'<span class="muted">{_e("; ".join(cites))}</span>')
    if it.text:
        text = it.text if len(it.text) <= 400 else it.text[:399] + "…"
        parts.append(f'<span class="text">“{_e(text)}”</span>')
    return "<br>".join(parts)


DiffRow = tuple[str, str, Item | None, Item | None]
"""(id, what the rewrite did, version before, version after)."""


def diff_rows(rw: RewriteView) -> list[DiffRow]:
    """(id, status, before, after) for every item the rewrite saw: kept, changed, spilled
    (left as a stub), dropped (with '(in the store)' when the store holds it) or new."""
    before = {it.id: it for it in rw.before}
    after = {it.id: it for it in rw.after}
    rows: list[DiffRow] = []
    for iid in [*before, *(i for i in after if i not in before)]:
        old, new = before.get(iid), after.get(iid)
        if old is None:
            status = "new"
        elif new is None:
            status = "dropped (in the store)" if iid in rw.stored else "dropped"
        elif old.same_version(new):
            status = "kept"
        elif new.kind == "stub" and old.kind != "stub":
            status = "spilled"
        else:
            status = "changed"
        rows.append((iid, status, old, new))
    return rows


def _diff_table(rows: Sequence[DiffRow], stored: frozenset[str]) -> str:
    out = [
        "<table><tr><th>item</th><th>what the rewrite did</th><th>before</th><th>after</th></tr>"
    ]
    for iid, status, old, new in rows:
        color = _STATUS.get(status.split()[0], "#fff")
        out.append(
            f'<tr><td><code>{_e(iid)}</code></td><td class="status" style="background:{color}">'
            f"{_e(status)}</td><td>{_describe_item(old)}</td>"
            f"<td>{_describe_item(new, iid in stored)}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class ContentChange:
    """What a rewrite did to an observation's content.

    ``what`` is ``removed`` (the content left the window: dropped, or replaced by a
    placeholder), ``cut`` (a placeholder keeps part of it: ``lost`` is the rest) or
    ``changed`` (the same id with other content: ``diff`` is a unified diff).
    ``placeholder`` is the prose item left where the content was, if any.
    """

    id: str
    what: str
    before: str
    after: str | None = None
    lost: str = ""
    diff: str = ""
    placeholder: str | None = None


def content_changes(rw: RewriteView) -> list[ContentChange]:
    """Every observation whose content the rewrite removed, cut or changed, with the text.

    An observation left as a stub is spilled, not lost, and is not listed; one that
    left the window is ``removed`` unless a placeholder that answers the same call
    keeps part of its text (``cut``).
    """
    after = {it.id: it for it in rw.after}
    placeholders = {
        it.call: it
        for it in rw.after
        if it.kind == "prose" and it.call is not None and it.id not in {b.id for b in rw.before}
    }
    out: list[ContentChange] = []
    for old in rw.before:
        if old.kind != "observation":
            continue
        text = old.content if old.content is not None else ""
        new = after.get(old.id)
        if new is None:
            ph = placeholders.get(old.call) if old.call is not None else None
            kept = ph.text if ph is not None and ph.text is not None else None
            cut = ph is not None and ph.id.endswith(":truncated")
            lost = _lost_part(text, kept, cut=cut) if kept is not None else None
            if ph is not None and lost is not None:
                out.append(ContentChange(old.id, "cut", text, kept, lost, "", ph.id))
            else:
                out.append(
                    ContentChange(old.id, "removed", text, None, text, "", ph.id if ph else None)
                )
        elif new.kind == "observation" and new.content != old.content:
            diff = "\n".join(
                difflib.unified_diff(
                    text.splitlines(),
                    (new.content or "").splitlines(),
                    "before",
                    "after",
                    lineterm="",
                )
            )
            out.append(ContentChange(old.id, "changed", text, new.content, "", diff))
    return out


_MAX_DIFF = 20_000


def _lost_part(old: str, kept: str, *, cut: bool) -> str | None:
    """The text of ``old`` that ``kept`` no longer shows, when ``kept`` is a cut of it
    (what survives is a prefix, a suffix or both; ``cut`` says the placeholder is
    one, else at least 8 characters must survive): else None."""
    if not old or kept == old:
        return None
    head = len(_common_prefix(old, kept))
    tail = len(_common_prefix(old[head:][::-1], kept[head:][::-1]))
    if head + tail >= len(old) or (not cut and head + tail < 8):
        return None
    lost = old[head : len(old) - tail]
    return lost if lost.strip() else None


def _common_prefix(a: str, b: str) -> str:
    n = 0
    limit = min(len(a), len(b), _MAX_DIFF * 50)
    while n < limit and a[n] == b[n]:
        n += 1
    return a[:n]


def _clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content_table(changes: Sequence[ContentChange]) -> str:
    """The content a rewrite removed, cut or changed, with the text itself."""
    if not changes:
        return ""
    out = [
        '<table class="content"><tr><th>item</th><th>what happened to its content</th>'
        "<th>the text</th></tr>"
    ]
    for c in changes:
        if c.what == "changed":
            shown = f'<pre class="diff">{_e(_clip(c.diff, _MAX_DIFF))}</pre>'
        elif c.what == "cut":
            shown = (
                f'<div class="muted">kept (in {_e(c.placeholder)}):</div>'
                f"<pre>{_e(_clip(c.after or ''))}</pre>"
                f'<div class="muted">lost:</div><pre class="lost">{_e(_clip(c.lost))}</pre>'
            )
        else:
            where = f" ({_e(c.placeholder)} left in its place)" if c.placeholder else ""
            shown = (
                f'<div class="muted">lost{where}:</div><pre class="lost">{_e(_clip(c.lost))}</pre>'
            )
        out.append(
            f"<tr><td><code>{_e(c.id)}</code></td>"
            f'<td class="status" style="background:{_STATUS["dropped"]}">{_e(c.what)}</td>'
            f"<td>{shown}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _truth_table(f: Mapping[str, Any]) -> str:
    """The counterexample as a row of atom values, then the entailment it refutes with the
    truth value of each formula under it."""
    cex: dict[str, bool] = f["counterexample"]
    atoms = sorted(cex)
    head = "".join(f"<th>{_e(a)}</th>" for a in atoms)
    row = "".join(
        f'<td class="{"t" if cex[a] else "f"}">{"true" if cex[a] else "false"}</td>' for a in atoms
    )
    out = [
        '<p class="muted">Counterexample: an assignment under which what was known holds and'
        " what is asserted does not.</p>",
        f'<table class="tt"><tr>{head}</tr><tr>{row}</tr></table>',
    ]
    refutes = f.get("refutes")
    if refutes:
        lines = [("background", t) for t in refutes["background"]]
        lines += [("known", t) for t in refutes["premises"]]
        lines.append(("asserted", refutes["goal"]))
        cells = []
        for role, text in lines:
            try:
                value: bool | None = evaluate(parse_formula(text), cex)
            except FormulaError:
                value = None
            shown = "?" if value is None else ("true" if value else "false")
            cls = "" if value is None else ("t" if value else "f")
            cells.append(
                f"<tr><td>{_e(role)}</td><td><code>{_e(text)}</code></td>"
                f'<td class="{cls}">{shown}</td></tr>'
            )
        out.append("<table><tr><th></th><th>formula</th><th>under it</th></tr>")
        out.extend(cells)
        out.append("</table>")
    return "".join(out)


def _finding_title(f: Mapping[str, Any]) -> str:
    return f"{f['code']} {f['name']} [{', '.join(f['items'])}]"


# -- a trace's page ---------------------------------------------------------------------------


def _finding_section(
    index: int,
    f: dict[str, Any],
    related: list[dict[str, Any]],
    view: TraceView,
    rewrite: RewriteView | None,
) -> str:
    cp = " cp" if f["code"].startswith("CP") else ""
    out = [f'<section class="finding{cp}" id="f{index}">']
    out.append(
        f"<h3>{_e(_finding_title(f))}</h3>"
        f'<div class="muted">line {f["line"]}, pass {f["pass"]} — '
        f"{_e(SUMMARIES.get(f['code'], ''))}</div>"
        f'<p class="msg">{_e(f["message"])}</p>'
    )
    if related:
        out.append('<div class="related">Following from the same change:<ul>')
        for g in related:
            out.append(f"<li><b>{_e(g['code'])}</b> {_e(g['name'])}: {_e(g['message'])}</li>")
        out.append("</ul></div>")
    ids = list(dict.fromkeys(i for g in (f, *related) for i in g["items"]))
    if rewrite is not None:
        diff = [r for r in diff_rows(rewrite) if r[0] in ids]
        if diff:
            out.append(_diff_table(diff, rewrite.stored))
        out.append(_content_table([c for c in content_changes(rewrite) if c.id in ids]))
    else:
        rows: list[str] = []
        for iid in ids:
            new = view.appended.get((f["line"], iid))
            held = new or view.known.get((f["line"], iid))
            if held is not None:
                what = "appended" if new is not None else "held by the session"
                rows.append(
                    f"<tr><td><code>{_e(iid)}</code></td><td class='status' "
                    f"style='background:{_STATUS['appended'] if new else '#eceff1'}'>"
                    f"{what}</td><td>{_describe_item(held)}</td></tr>"
                )
        if rows:
            out.append("<table><tr><th>item</th><th>at this append</th><th>version</th></tr>")
            out.extend(rows)
            out.append("</table>")
    with_cex = next((g for g in (f, *related) if g.get("counterexample")), None)
    if with_cex is not None:
        out.append(_truth_table(with_cex))
    links = [
        f'<a href="#why-{_anchor(i)}">how do you know {_e(i)}?</a>' for i in ids if i in view.whys
    ]
    if links:
        out.append(f'<p class="muted">{" · ".join(links)}</p>')
    out.append("</section>")
    return "\n".join(out)


def _counts(findings: Sequence[Mapping[str, Any]]) -> str:
    by = Counter(f["code"] for f in findings)
    return ", ".join(f"{c} {n}" for c, n in sorted(by.items())) or "—"


def _badge(verdict: str) -> str:
    color = _VERDICT.get(verdict, "#455a64")
    return f'<span class="badge" style="background:{color}">{_e(verdict)}</span>'


def render_trace_page(view: TraceView, *, index_href: str | None = "../index.html") -> str:
    """One trace's page: timeline, findings with their items before and after, why
    chains once per item, and the graph."""
    result = view.result
    findings: list[dict[str, Any]] = result["findings"]
    out = [f"<h1>{_e(result['trace'])}</h1>"]
    if index_href is not None:
        out.append(f'<p><a href="{_e(index_href)}">← all traces</a></p>')
    verdicts = Counter(r["verdict"] for r in result["rewrites"])
    out.append(
        f"<p>{len(result['rewrites'])} rewrite(s) "
        f"({', '.join(f'{v} {n}' for v, n in sorted(verdicts.items())) or 'none'}),"
        f" {len(findings)} finding(s) ({_e(_counts(findings))}), exit {result['exit']}.</p>"
    )
    out.append(_coverage(view.kinds))
    # where each primary finding's section is
    primary = [i for i, f in enumerate(findings) if f.get("related_to") is None]
    rows = []
    for r in result["rewrites"]:
        rw = view.rewrites.get(r["pass"])
        at = (r["pass"], r["line"])
        here = [i for i in primary if (findings[i]["pass"], findings[i]["line"]) == at]
        links = (
            "<br>".join(f'<a href="#f{i}">{_e(_finding_title(findings[i]))}</a>' for i in here)
            or "—"
        )
        did = "—"
        if rw is not None:
            diff = diff_rows(rw)
            tally = Counter(status.split()[0] for _, status, _, _ in diff)
            summary = ", ".join(
                f"{k} {tally[k]}"
                for k in ("kept", "changed", "spilled", "dropped", "new")
                if tally[k]
            )
            touched = [d for d in diff if d[1] != "kept"]
            table = _diff_table(touched, rw.stored) if touched else ""
            table += _content_table(content_changes(rw))
            did = f"<details><summary>{_e(summary or 'nothing')}</summary>{table}</details>"
        repair = r.get("repair")
        fix = (
            f"<br><span class='muted'>repair ({_e(repair['verdict'])}): "
            f"{_e('; '.join(repair['actions']) or 'none')}</span>"
            if repair
            else ""
        )
        rows.append(
            f"<tr><td>{r['pass']}</td><td>{r['line']}</td><td>{_e(r['policy'] or '—')}</td>"
            f"<td>{_badge(r['verdict'])}{fix}</td><td>{did}</td><td>{links}</td></tr>"
        )
    out.append(
        "<h2>Timeline</h2><table><tr><th>pass</th><th>line</th><th>policy</th><th>verdict</th>"
        "<th>what the rewrite did</th><th>findings</th></tr>" + "".join(rows) + "</table>"
        if rows
        else "<h2>Timeline</h2><p>No rewrites.</p>"
    )
    appends = [
        i
        for i in primary
        if not any(
            (findings[i]["pass"], findings[i]["line"]) == (r["pass"], r["line"])
            for r in result["rewrites"]
        )
    ]
    if appends:
        out.append(
            "<p>At appends: "
            + ", ".join(f'<a href="#f{i}">{_e(_finding_title(findings[i]))}</a>' for i in appends)
            + "</p>"
        )
    out.append("<h2>Findings</h2>")
    if not findings:
        out.append("<p>No findings.</p>")
    for i in primary:
        f = findings[i]
        key = cause_item(f["code"], f["items"])
        related = [
            g
            for g in findings
            if g.get("related_to") == f["code"]
            and (g["pass"], g["line"]) == (f["pass"], f["line"])
            and cause_item(g["code"], g["items"]) == key
        ]
        rw = view.rewrites.get(f["pass"])
        at_rewrite = rw if rw is not None and rw.line == f["line"] else None
        out.append(_finding_section(i, f, related, view, at_rewrite))
    if view.whys:
        out.append("<h2>How do you know?</h2>")
        out.append(
            '<p class="muted">Each item\'s chain to the primitives that back it, as it'
            " stood at the item's first finding.</p>"
        )
        for item, text in view.whys.items():
            out.append(
                f'<div id="why-{_anchor(item)}"><h3><code>{_e(item)}</code></h3>'
                f'<div class="why">{_e(text)}</div></div>'
            )
    if result.get("undecided"):
        out.append(
            "<h2>Undecided at appends</h2><ul>"
            + "".join(f"<li>{_e(u)}</li>" for u in result["undecided"])
            + "</ul>"
        )
    if view.graph is not None:
        legend = "".join(
            f'<span><svg width="14" height="10"><rect width="14" height="10" fill="{_FILL[m]}" '
            f'stroke="{_STROKE[m]}"/></svg> {m}</span>'
            for m in _FILL
        )
        out.append(
            "<h2>Justification graph</h2>"
            f'<p class="legend">{legend}<span>dashed: no longer retained</span></p>'
            f'<div class="svgwrap">{svg_graph(view.graph)}</div>'
        )
    return _page(f"ctxproof: {result['trace']}", "\n".join(out))


def _coverage(kinds: Mapping[str, int]) -> str:
    """Items by kind, and the plain sentence when no commitment or claim is checked."""
    if not kinds:
        return ""
    bound = kinds.get("commitment", 0) + kinds.get("claim", 0)
    parts = [f"{bound} commitment(s) and claim(s)"]
    parts += [f"{kinds[k]} {k}" for k in ("observation", "prose", "stub") if kinds.get(k)]
    text = f'<p class="coverage">Items: {_e(", ".join(parts))}.'
    if bound == 0:
        text += " <b>Nothing here is checked as a commitment: annotate or extract.</b>"
    return text + "</p>"


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


# -- the overview -----------------------------------------------------------------------------


def render_index(results: Sequence[Mapping[str, Any]], hrefs: Sequence[str | None]) -> str:
    """The overview: per trace and per policy, rewrites, verdicts and findings by rule."""
    total = sum(len(r.get("findings", ())) for r in results)
    errors = sum(1 for r in results if "error" in r)
    codes = sorted({f["code"] for r in results for f in r.get("findings", ())})
    out = ["<h1>ctxproof audit report</h1>"]
    bad = f", {errors} bad file(s)" if errors else ""
    out.append(f"<p>{len(results)} trace(s), {total} finding(s){bad}.</p>")
    if codes:
        out.append(
            "<h2>Rules found</h2><table><tr><th>rule</th><th>name</th><th>what it means</th>"
            "<th class=num>findings</th></tr>"
        )
        by = Counter(f["code"] for r in results for f in r.get("findings", ()))
        for c in codes:
            out.append(
                f"<tr><td><b>{c}</b></td><td>{_e(RULES.get(c, ''))}</td>"
                f"<td>{_e(SUMMARIES.get(c, ''))}</td><td class=num>{by[c]}</td></tr>"
            )
        out.append("</table>")
    # per policy
    policies: dict[str, dict[str, Counter[str]]] = {}
    for r in results:
        rewrites = r.get("rewrites", ())
        where = {(w["pass"], w["line"]): w["policy"] or "(no policy)" for w in rewrites}
        for w in rewrites:
            p = policies.setdefault(w["policy"] or "(no policy)", {"v": Counter(), "f": Counter()})
            p["v"][w["verdict"]] += 1
        for f in r.get("findings", ()):
            name = where.get((f["pass"], f["line"]), "(at appends)")
            policies.setdefault(name, {"v": Counter(), "f": Counter()})["f"][f["code"]] += 1
    if policies:
        out.append(
            "<h2>By policy</h2><table><tr><th>policy</th><th class=num>rewrites</th>"
            "<th>verdicts</th><th>findings by rule</th></tr>"
        )
        for name in sorted(policies):
            p = policies[name]
            verdicts = " ".join(f"{_badge(v)} {n}" for v, n in sorted(p["v"].items())) or "—"
            by_rule = ", ".join(f"{c} {n}" for c, n in sorted(p["f"].items())) or "—"
            out.append(
                f"<tr><td>{_e(name)}</td><td class=num>{sum(p['v'].values())}</td>"
                f"<td>{verdicts}</td><td>{_e(by_rule)}</td></tr>"
            )
        out.append("</table>")
    out.append(
        "<h2>Traces</h2><table><tr><th>trace</th><th class=num>rewrites</th><th>verdicts</th>"
        "<th class=num>findings</th><th>by rule</th><th>exit</th></tr>"
    )
    for r, href in zip(results, hrefs, strict=True):
        name = _e(r["trace"])
        link = f'<a href="{_e(href)}">{name}</a>' if href else name
        if "error" in r:
            out.append(
                f"<tr><td>{link}</td><td colspan=4>{_e(r['error'].get('message', ''))}</td>"
                f"<td>{r.get('exit', 2)}</td></tr>"
            )
            continue
        tally = Counter(w["verdict"] for w in r["rewrites"])
        shown = " ".join(f"{_badge(v)} {n}" for v, n in sorted(tally.items())) or "—"
        out.append(
            f"<tr><td>{link}</td><td class=num>{len(r['rewrites'])}</td><td>{shown}</td>"
            f"<td class=num>{len(r['findings'])}</td><td>{_e(_counts(r['findings']))}</td>"
            f"<td>{r['exit']}</td></tr>"
        )
    out.append("</table>")
    return _page("ctxproof audit report", "\n".join(out))


def page_name(index: int, trace: str) -> str:
    """The file name of a trace's page: its position and a safe form of its name."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(trace).stem)[:60] or "trace"
    return f"{index + 1:04d}-{stem}.html"


def _is_page(name: str) -> bool:
    return name.endswith(".html")


def write_report(
    folder: str | Path,
    results: Sequence[dict[str, Any]],
    pages: Sequence[str | None] | None = None,
) -> Path:
    """Write ``index.html``, ``report.json`` and one page per trace into folder; return
    the index's path.

    ``pages`` are the trace pages (:func:`render_trace_page`), one per result (None: no
    page, as for a bad file). The files are written as one set
    (:func:`~verifier.fsutil.write_set`): a full disk leaves the folder as it was (a
    folder made for the report is removed). Pages an earlier report left in ``traces/``
    that this one does not write are removed; ``traces/`` as a link is refused, never
    followed.

    Raises:
        OutputError: the folder cannot be made or a file cannot be written.
    """
    out = Path(folder)
    pages = list(pages) if pages is not None else [None] * len(results)
    made = [p for p in (out / "traces", out, *out.parents) if not p.exists()]
    names = [
        page_name(i, r["trace"]) if p is not None else None
        for i, (r, p) in enumerate(zip(results, pages, strict=True))
    ]
    hrefs = [f"traces/{n}" if n is not None else None for n in names]
    files: dict[str, str | bytes] = {
        f"traces/{n}": p
        for n, p in zip(names, pages, strict=True)
        if n is not None and p is not None
    }
    data = json.dumps({"traces": list(results)}, indent=2, ensure_ascii=False)
    files["report.json"] = data + "\n"
    files["index.html"] = render_index(results, hrefs)
    index = out / "index.html"
    try:
        # pages an earlier report left in traces/ that this one does not write are removed
        write_set(out, files, stale={"traces": _is_page}, what="report folder")
    except OutputError:
        for p in made:  # deepest first; each is empty unless someone else wrote there
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
    return index
