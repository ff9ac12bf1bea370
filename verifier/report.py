"""Self-contained HTML audit reports: a timeline, the graph drawn, and why chains.

One ``index.html`` (no external assets) plus ``report.json`` with the same
results as ``audit --format json``.
"""

from __future__ import annotations

import contextlib
import html
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verifier.errors import OutputError
from verifier.findings import RULES, SUMMARIES
from verifier.fsutil import atomic_write_all
from verifier.graph import JustificationGraph, WhyAnswer, why

__all__ = ["render_html", "render_why", "svg_graph", "write_report"]

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

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#212121;max-width:1200px}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2.5rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.3rem .6rem;border:1px solid #e0e0e0;
text-align:left;vertical-align:top;font-size:.9rem}th{background:#fafafa}
.badge{color:#fff;border-radius:.6rem;padding:.1rem .5rem;font-size:.8rem;white-space:nowrap}
code{background:#f5f5f5;padding:0 .2rem}.why{font-family:monospace;font-size:.8rem;
white-space:pre-wrap;background:#fafafa;padding:.4rem;border-left:3px solid #90a4ae}
.legend span{display:inline-block;margin-right:1rem;font-size:.85rem}
.svgwrap{overflow-x:auto;border:1px solid #eee;padding:.5rem}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


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
        out.append(
            f"{answer.item}: reported by {excluded}; no premise of any later check"
        )
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


def _finding_label(f: dict[str, Any]) -> str:
    return _e(f"{f['code']} {f['name']} {','.join(f['items'])}")


WhyTexts = dict[tuple[int, str], str]
"""(pass, item) -> the why text of the item as of that pass."""


def why_texts(result: dict[str, Any], graph_at: Callable[[int], JustificationGraph]) -> WhyTexts:
    """The why chain of each finding's first item, as of the finding's own pass."""
    out: WhyTexts = {}
    for f in result["findings"]:
        if f["items"]:
            key = (int(f["pass"]), str(f["items"][0]))
            if key not in out:
                out[key] = _why_text(graph_at(key[0]), key[1])
    return out


def _trace_section(
    result: dict[str, Any], graph: JustificationGraph | None, whys: WhyTexts | None = None
) -> str:
    rows = []
    findings = result["findings"]
    for r in result["rewrites"]:
        here = [f for f in findings if f["pass"] == r["pass"] and f["line"] == r["line"]]
        color = _VERDICT.get(r["verdict"], "#455a64")
        rows.append(
            f"<tr><td>{r['pass']}</td><td>{r['line']}</td><td>{_e(r['policy'] or '—')}</td>"
            f'<td><span class="badge" style="background:{color}">{_e(r["verdict"])}</span></td>'
            f"<td>{'<br>'.join(_finding_label(f) for f in here) or '—'}</td></tr>"
        )
    out = [f"<h2>{_e(result['trace'])}</h2>"]
    out.append(
        "<h3>Timeline</h3><table><tr><th>pass</th><th>line</th><th>policy</th>"
        "<th>verdict</th><th>findings</th></tr>" + "".join(rows) + "</table>"
        if rows
        else "<p>No rewrites.</p>"
    )
    if findings:
        out.append(
            "<h3>Findings</h3><table><tr><th>line</th><th>pass</th><th>rule</th>"
            "<th>items</th><th>message</th><th>how do you know?</th></tr>"
        )
        for f in findings:
            chain = ""
            if whys is not None and f["items"]:
                chain = whys.get((int(f["pass"]), str(f["items"][0])), "")
            elif graph is not None and f["items"]:
                chain = _why_text(graph, f["items"][0])
            cex = f.get("counterexample")
            msg = _e(f["message"]) + (f"<br><code>{_e(json.dumps(cex))}</code>" if cex else "")
            out.append(
                f"<tr><td>{f['line']}</td><td>{f['pass']}</td><td><b>{f['code']}</b> "
                f"{_e(f['name'])}</td><td>{_e(', '.join(f['items']))}</td><td>{msg}</td>"
                f'<td><div class="why">{_e(chain)}</div></td></tr>'
            )
        out.append("</table>")
    else:
        out.append("<p>No findings.</p>")
    if result.get("undecided"):
        out.append(
            "<h3>Undecided at appends</h3><ul>"
            + "".join(f"<li>{_e(u)}</li>" for u in result["undecided"])
            + "</ul>"
        )
    if graph is not None:
        legend = "".join(
            f'<span><svg width="14" height="10"><rect width="14" height="10" fill="{_FILL[m]}" '
            f'stroke="{_STROKE[m]}"/></svg> {m}</span>'
            for m in _FILL
        )
        out.append(
            "<h3>Justification graph</h3>"
            f'<p class="legend">{legend}<span>dashed: no longer retained</span></p>'
            f'<div class="svgwrap">{svg_graph(graph)}</div>'
        )
    return "\n".join(out)


def render_html(
    results: Sequence[dict[str, Any]],
    graphs: Sequence[JustificationGraph | None],
    whys: Sequence[WhyTexts | None] | None = None,
) -> str:
    total = sum(len(r["findings"]) for r in results)
    codes = sorted({f["code"] for r in results for f in r["findings"]})
    legend = (
        "<h2>Rules found</h2><table><tr><th>rule</th><th>name</th><th>what it means</th></tr>"
        + "".join(
            f"<tr><td><b>{c}</b></td><td>{_e(RULES.get(c, ''))}</td>"
            f"<td>{_e(SUMMARIES.get(c, ''))}</td></tr>"
            for c in codes
        )
        + "</table>"
        if codes
        else ""
    )
    per_trace = list(whys) if whys is not None else [None] * len(results)
    sections = "\n".join(
        _trace_section(r, g, w) for r, g, w in zip(results, graphs, per_trace, strict=True)
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>ctxproof audit report</title>"
        f"<style>{_CSS}</style></head><body><h1>ctxproof audit report</h1>"
        f"<p>{len(results)} trace(s), {total} finding(s).</p>{legend}{sections}</body></html>\n"
    )


def write_report(
    folder: str | Path,
    results: Sequence[dict[str, Any]],
    graphs: Sequence[JustificationGraph | None] | None = None,
    whys: Sequence[WhyTexts | None] | None = None,
) -> Path:
    """Write ``index.html`` and ``report.json`` into folder; return the HTML path.

    Both files are written atomically, and both are staged before either is put in
    place: a full disk leaves the folder as it was (a folder made for them is removed).

    Raises:
        OutputError: the folder cannot be made or a file cannot be written.
    """
    out = Path(folder)
    try:
        made = [p for p in (out, *out.parents) if not p.exists()]
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{out}: cannot make the report folder: {exc.strerror or exc}; choose another path"
        ) from exc
    index = out / "index.html"
    page = render_html(results, list(graphs) if graphs else [None] * len(results), whys)
    data = json.dumps({"traces": list(results)}, indent=2, ensure_ascii=False) + "\n"
    try:
        atomic_write_all([(out / "report.json", data), (index, page)])
    except OutputError:
        for p in made:  # deepest first; each is empty unless someone else wrote there
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
    return index
