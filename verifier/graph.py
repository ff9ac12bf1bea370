"""The justification graph, built incrementally while a trace is audited (docs/formats.md).

One node per item version (``id@pass``: the pass at which that version
appeared) and per store entry (``store:<ref>``). Edges run from an item to
what justifies it — ``witness``, ``derived_from``, ``rationale`` — and record
history: ``carried`` (a version to the next version of the same id),
``spilled`` (a version to its store entry), ``stub`` (a stub to the entry it
stands for) and ``stands_for`` (a stub nothing in the store resolves, to the
version it replaced). Each update touches only the items an event changes, so the cost
of a pass does not grow with the number of passes.

>>> g = JustificationGraph()
>>> from verifier.io import item_from_json
>>> o = item_from_json({"id": "o1", "kind": "observation", "shows": "t"})
>>> c = item_from_json({"id": "c1", "kind": "claim", "formula": "t", "witnesses": ["o1"]})
>>> g.append([o, c], pass_no=0)
>>> why(g, "c1").chain
['c1@0', 'o1@0']
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifier.window import Item

if TYPE_CHECKING:
    import networkx as nx


def _networkx() -> Any:
    """networkx, imported when a graph is first built (a single check needs none)."""
    import networkx

    return networkx

__all__ = ["JustificationGraph", "WhyAnswer", "export", "why"]

_JUSTIFY = ("witness", "derived_from", "rationale")


def _node_attrs(item: Item, pass_no: int, line: int | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "id": item.id,
        "kind": item.kind,
        "pass": pass_no,
        "line": line,
        "modality": item.modality if item.kind in ("commitment", "claim", "observation") else None,
        "retained": True,
        "lost_at": None,
        "lost_by": None,
        "version": item.ref,
    }
    if item.kind in ("commitment", "claim"):
        attrs["formula"] = item.formula_text if item.formula_text is not None else item.id
        attrs["type"] = item.type
    if item.kind == "observation":
        attrs.update(
            shows=item.shows_text,
            source=item.source,
            exit_code=item.exit_code,
            digest=item.digest,
            at=item.at,
        )
    if item.kind == "stub":
        attrs["points_to"] = item.stub_ref
    if item.text is not None:
        attrs["text"] = item.text
    return attrs


@dataclass
class JustificationGraph:
    """A networkx ``DiGraph`` of item versions and store entries, with the live index."""

    g: nx.DiGraph[str] = field(default_factory=lambda: _networkx().DiGraph())
    current: dict[str, str] = field(default_factory=dict)
    """id -> node of its version in the window now."""
    last: dict[str, str] = field(default_factory=dict)
    """id -> node of its latest version, in the window or not."""
    stored_ids: dict[str, str] = field(default_factory=dict)
    """id -> node of its latest store entry."""
    policies: dict[int, str | None] = field(default_factory=dict)
    lines: dict[int, int | None] = field(default_factory=dict)
    node_key: dict[str, str] = field(default_factory=dict)
    """node -> the version it is (Item.key: what the rules read of the item)."""
    key_node: dict[str, str] = field(default_factory=dict)
    """version -> its latest node in a window."""
    versions: dict[str, list[Item]] = field(default_factory=dict)
    """id -> the first item of each version in :attr:`key_node`: one written otherwise (other
    spaces, a default written out) is that version too."""
    stored_keys: set[str] = field(default_factory=set)
    """Versions the store holds."""

    def _link(self, u: str, v: str, relation: str) -> None:
        """Add an edge; a second relation between the same pair joins the first ("a,b")."""
        if self.g.has_edge(u, v):
            rels = set(self.g.edges[u, v]["relation"].split(",")) | {relation}
            self.g.edges[u, v]["relation"] = ",".join(sorted(rels))
        else:
            self.g.add_edge(u, v, relation=relation)

    def _add_version(self, item: Item, pass_no: int, line: int | None) -> str:
        """Add the node of a new version (its citations are linked by _link_citations)."""
        node = f"{item.id}@{pass_no}"
        k = 1
        while node in self.g:  # the same id changed twice at one pass count
            k += 1
            node = f"{item.id}@{pass_no}.{k}"
        self.g.add_node(node, **_node_attrs(item, pass_no, line))
        self.node_key[node] = item.key
        if item.kind != "stub":
            key = item.key
            if key not in self.key_node:
                self.versions.setdefault(item.id, []).append(item)
            self.key_node[key] = node
        prev = self.last.get(item.id)
        if prev is not None:
            self._link(prev, node, "carried")
            if self.current.get(item.id) == prev:
                self.g.nodes[prev]["retained"] = False
        self.current[item.id] = node
        self.last[item.id] = node
        return node

    def _held_node(self, item: Item) -> str | None:
        """The latest node in a window of this version of an item, written as it is or
        otherwise."""
        node = self.key_node.get(item.key)
        if node is None:
            alike = (v for v in self.versions.get(item.id, ()) if item.same_version(v))
            held = next(alike, None)
            node = None if held is None else self.key_node[held.key]
        return node

    def _restore(self, item: Item, pass_no: int, policy: str | None) -> str | None:
        """Put back a version a window held earlier: its node is current again, and it
        follows the id's latest version (``carried``: a claim or commitment is backed
        through its later versions, a restored one as a new one)."""
        node = self._held_node(item)
        if node is None or self.g.nodes[node].get("id") != item.id:
            return None
        gone = self.current.get(item.id)
        latest = self.last.get(item.id)
        attrs = self.g.nodes[node]
        attrs.update(retained=True, lost_at=None, lost_by=None)
        self.current[item.id] = node
        self.last[item.id] = node
        if latest is not None and latest != node:
            self._link(latest, node, "carried")
        if gone is not None and gone != node:
            # the version it replaces is out of the window: lost here unless the store keeps it
            self.g.nodes[gone]["retained"] = False
            if not self.retained(gone):
                self.g.nodes[gone]["lost_at"] = pass_no
                self.g.nodes[gone]["lost_by"] = policy
        return node

    def _link_citations(self, item: Item, node: str) -> None:
        for relation, ids in (
            ("witness", item.witnesses),
            ("derived_from", item.derived_from),
            ("rationale", item.rationale),
        ):
            for ref in ids:
                target = self.last.get(ref) or self.stored_ids.get(ref)
                if target is not None:
                    self._link(node, target, relation)
        if item.kind == "stub" and item.stub_ref is not None:
            entry = f"store:{item.stub_ref}"
            if entry in self.g and self.g.nodes[entry].get("id") == item.id:
                self._link(node, entry, "stub")
            elif (stored := self.stored_ids.get(item.id)) is not None and stored != node:
                # a stub the store does not resolve is still an entry with its id: what the
                # store holds under that id is retained, whatever the stub's ref (a stored
                # stub is no link to itself)
                self._link(node, stored, "spilled")
            elif (replaced := _older(self, node)) is not None:
                # nor anything under its id: it stands for the version it replaced, and a
                # path runs through that version as through a dropped item's last one
                self._link(node, replaced, "stands_for")

    def _add_versions(self, items: Iterable[Item], pass_no: int, line: int | None) -> None:
        """New versions first, then their citations: an item may cite one listed after it."""
        added = [(it, self._add_version(it, pass_no, line)) for it in items]
        for it, node in added:
            self._link_citations(it, node)

    def append(self, items: Iterable[Item], pass_no: int, line: int | None = None) -> None:
        self._add_versions(items, pass_no, line)

    def spill(self, items: Iterable[Item], pass_no: int, line: int | None = None) -> None:
        """Add store entries; an entry keeps the citations of the version it holds."""
        fresh: list[tuple[Item, str]] = []
        for it in items:
            entry = f"store:{it.ref}"
            if entry not in self.g:
                self.g.add_node(
                    entry,
                    **{**_node_attrs(it, pass_no, line), "kind": "store", "stored_kind": it.kind},
                )
                self.node_key[entry] = it.key
                fresh.append((it, entry))
            self.stored_keys.add(it.key)
            # the spilled edge leaves the window version the entry holds, if one was seen
            # (another version of the id is not what went to the store)
            src = self._held_node(it)
            if src is not None and self.g.nodes[src].get("id") == it.id:
                self._link(src, entry, "spilled")
            self.stored_ids[it.id] = entry
        for it, entry in fresh:
            self._link_citations(it, entry)

    def rewrite(
        self,
        before: Iterable[Item],
        after: Iterable[Item],
        pass_no: int,
        *,
        policy: str | None = None,
        line: int | None = None,
    ) -> None:
        old = {it.id: it for it in before}
        new_ids = {it.id for it in after}
        self.rewrite_change(old.get, after, old.keys() - new_ids, pass_no, policy=policy, line=line)

    def rewrite_change(
        self,
        before: Callable[[str], Item | None],
        came: Iterable[Item],
        removed: Iterable[str],
        pass_no: int,
        *,
        policy: str | None = None,
        line: int | None = None,
    ) -> None:
        """:meth:`rewrite` told only what changed: ``before`` looks an id up in the window
        before, ``came`` holds (in window order) every entry of after that is not the same
        version as before's (more do no harm), ``removed`` the ids after lacks."""
        self.policies[pass_no] = policy
        self.lines[pass_no] = line
        changed = []
        for it in came:
            if not it.same_version(before(it.id)) and self._restore(it, pass_no, policy) is None:
                changed.append(it)
        superseded = {it.id: self.current.get(it.id) for it in changed}
        self._add_versions(changed, pass_no, line)
        for it in changed:
            gone = superseded[it.id]
            if gone is not None and not self.retained(gone):
                # replaced by a version that does not keep it (an unresolvable stub, a
                # different item): this rewrite is where it was lost
                self.g.nodes[gone]["lost_at"] = pass_no
                self.g.nodes[gone]["lost_by"] = policy
        for iid in removed:
            node = self.current.pop(iid, None)
            if node is not None:
                attrs = self.g.nodes[node]
                attrs["retained"] = False
                attrs["lost_at"] = pass_no
                attrs["lost_by"] = policy

    def exclude(self, item_id: str, reason: str) -> None:
        """Mark the current version of an id as excluded from the premises of later checks."""
        node = self.current.get(item_id) or self.last.get(item_id)
        if node is not None:
            self.g.nodes[node]["excluded"] = reason

    # -- queries ------------------------------------------------------------------------------
    def retained(self, node: str) -> bool:
        """Is this exact version kept: in the window, or in the store (directly or by stub)?"""
        attrs = self.g.nodes[node]
        if attrs.get("kind") == "store":
            return True
        if f"store:{attrs.get('version')}" in self.g or self.node_key.get(node) in self.stored_keys:
            return True
        return self.current.get(attrs["id"]) == node

    def node_for(self, item_id: str) -> str | None:
        return self.last.get(item_id) or self.stored_ids.get(item_id)


@dataclass(frozen=True, slots=True)
class WhyAnswer:
    """How an item is known: a chain to a retained primitive, or where it broke."""

    item: str
    node: str | None
    chain: list[str] | None
    reached: list[str]
    cut_pass: int | None
    cut_policy: str | None
    cut_line: int | None
    dropped: tuple[int, str | None, int | None] | None = None
    """(pass, policy, line) of the rewrite that dropped the item, when it is neither in
    the window nor in the store."""

    def to_json(self, graph: JustificationGraph) -> dict[str, Any]:
        def describe(node: str) -> dict[str, Any]:
            attrs = dict(graph.g.nodes[node])
            attrs["node"] = node
            return attrs

        return {
            "item": self.item,
            "node": self.node,
            "found": self.chain is not None,
            "chain": [describe(n) for n in self.chain or []],
            "primitives_reached": [describe(n) for n in self.reached],
            "cut": None
            if self.chain is not None or self.cut_pass is None
            else {"pass": self.cut_pass, "policy": self.cut_policy, "line": self.cut_line},
            "dropped": None
            if self.dropped is None
            else {"pass": self.dropped[0], "policy": self.dropped[1], "line": self.dropped[2]},
        }


def _search(graph: JustificationGraph, start: str) -> tuple[list[str] | None, list[str]]:
    """Breadth-first from start: a chain to a retained observation, and the observations met."""
    g = graph.g
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    reached: list[str] = []
    while queue:
        node = queue.popleft()
        attrs = g.nodes[node]
        kind = attrs.get("kind")
        is_obs = kind == "observation" or (
            kind == "store" and attrs.get("stored_kind") == "observation"
        )
        if is_obs:
            reached.append(node)
            if graph.retained(node):
                chain = [node]
                while (p := parent[chain[-1]]) is not None:
                    chain.append(p)
                chain.reverse()
                entry = f"store:{attrs.get('version')}"
                if kind != "store" and attrs.get("retained") is False and entry in g:
                    chain.append(entry)  # out of the window: the chain ends where it is kept
                return chain, reached
        for _, nxt, data in g.out_edges(node, data=True):
            rels = set(str(data.get("relation", "")).split(","))
            if is_obs:
                # an observation is never rewritten: a later one with its id is another one
                rels.discard("carried")
            # forward along justification, to the store entry a stub or spill points at,
            # and to the newer version of a cited item
            follow = bool(rels & {*_JUSTIFY, "stub", "spilled", "carried", "stands_for"})
            if follow and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return None, reached


def why(graph: JustificationGraph, item_id: str) -> WhyAnswer:
    """The shortest chain from the item's latest version to a retained observation.

    A retained observation is the exact version that was cited (or a newer
    version of it) still in the window, or in the store. When there is none,
    the answer lists the observations the item once rested on and names the
    rewrite that cut the last path: the one that lost the last of them, or the
    one that replaced the item by a version citing none. An item that a rewrite
    dropped (neither in the window nor in the store) names that rewrite in
    ``dropped``.

    Raises:
        KeyError: when the item never appeared in the trace.
    """
    start = graph.node_for(item_id)
    if start is None:
        raise KeyError(item_id)
    dropped = _dropped(graph, start)
    chain, reached = _search(graph, start)
    if chain is not None:
        return WhyAnswer(item_id, start, chain, reached, None, None, None, dropped)
    g = graph.g
    cut: int | None = None
    lost = [g.nodes[n]["lost_at"] for n in reached if g.nodes[n].get("lost_at") is not None]
    if lost:
        cut = max(lost)
    elif not reached:
        # the current version cites nothing that leads to a primitive: look at older ones
        newer, node = start, _older(graph, start)
        seen = {start}
        while node is not None and node not in seen:  # a restored version: carried both ways
            seen.add(node)
            _, old_reached = _search(graph, node)
            if old_reached:
                reached = old_reached
                cut = int(g.nodes[newer]["pass"])
                break
            newer, node = node, _older(graph, node)
    return WhyAnswer(
        item_id,
        start,
        None,
        reached,
        cut,
        graph.policies.get(cut) if cut is not None else None,
        graph.lines.get(cut) if cut is not None else None,
        dropped,
    )


def _dropped(graph: JustificationGraph, node: str) -> tuple[int, str | None, int | None] | None:
    """The rewrite that took this version out of the window, when nothing retains it (a
    stub whose store entry the graph holds is retained: the item is in the store)."""
    attrs = graph.g.nodes[node]
    lost = attrs.get("lost_at")
    if lost is None or attrs.get("kind") == "store" or graph.retained(node):
        return None
    if attrs.get("kind") == "stub" and any(
        "stub" in str(data.get("relation", "")).split(",")
        for _, _, data in graph.g.out_edges(node, data=True)
    ):
        return None
    return int(lost), attrs.get("lost_by"), graph.lines.get(int(lost))


def _older(graph: JustificationGraph, node: str) -> str | None:
    for prev, _, data in graph.g.in_edges(node, data=True):
        if "carried" in str(data.get("relation", "")).split(","):
            return str(prev)
    return None


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


_NOT_XML = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character XML 1.0 cannot hold, even as a character reference: C0 controls but tab,
newline and carriage return, lone surrogates, U+FFFE and U+FFFF."""


def _u_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def _xml_names(nodes: Sequence[str]) -> dict[str, str]:
    """Each node's name as GraphML writes it: the name itself (``id@pass``, as in the
    node-link JSON), except where it holds a character XML cannot hold; such a name is
    written with each backslash doubled and each of those characters as ``\\uXXXX``,
    and a ``#K`` appended where that is the name of another node (the node's ``id``
    attribute keeps the item's id exactly)."""
    names = {node: node for node in nodes if _NOT_XML.search(node) is None}
    taken = set(names.values())
    for node in nodes:
        if node in names:
            continue
        name = base = _NOT_XML.sub(_u_escape, node.replace("\\", "\\\\"))
        k = 1
        while name in taken:
            name, k = f"{base}#{k}", k + 1
        names[node] = name
        taken.add(name)
    return names


def _xml_scalar(value: Any) -> str:
    """An attribute as GraphML writes it: JSON-encoded, the characters XML cannot hold
    written as JSON escapes (they only stand in strings), so it decodes to the same."""
    return _NOT_XML.sub(_u_escape, _scalar(value))


def export(graph: JustificationGraph, path: str | Path) -> Path:
    """Write the graph as GraphML, node-link JSON or DOT, by the file's suffix, atomically.

    Raises:
        ValueError: for any other suffix.
        OutputError: the file could not be written (nothing partial is left).
    """
    out = Path(path)
    suffix = out.suffix.lower()
    g = graph.g
    if suffix == ".graphml":
        networkx = _networkx()
        flat: nx.DiGraph[str] = networkx.DiGraph()
        name = _xml_names(list(g.nodes))
        for node, attrs in g.nodes(data=True):
            flat.add_node(name[node], **{k: _xml_scalar(v) for k, v in attrs.items()})
        for u, v, attrs in g.edges(data=True):
            flat.add_edge(name[u], name[v], **{k: _xml_scalar(val) for k, val in attrs.items()})
        text = "\n".join(networkx.generate_graphml(flat)) + "\n"
    elif suffix == ".json":
        # the node's name goes under "node": "id" is the item's id, as in GraphML
        data = _networkx().node_link_data(g, edges="edges", name="node")
        text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    elif suffix == ".dot":
        text = to_dot(graph)
    else:
        raise ValueError(f"unknown graph format {suffix!r}: use .graphml, .json or .dot")
    from verifier.fsutil import atomic_write  # only where a file is written

    return atomic_write(out, text)


_COLORS = {
    "verified": "#2e7d32",
    "failed": "#c62828",
    "unverified": "#616161",
    "unwitnessed": "#ef6c00",
    None: "#455a64",
}


def to_dot(graph: JustificationGraph) -> str:
    """The graph in Graphviz DOT, coloured by modality, lost versions dashed."""
    lines = ["digraph justification {", "  rankdir=LR;", '  node [shape=box, fontname="sans"];']
    for node, attrs in graph.g.nodes(data=True):
        color = _COLORS.get(attrs.get("modality"), "#455a64")
        style = "solid" if attrs.get("retained", True) else "dashed"
        label = f"{node}\n{attrs.get('kind')}"
        lines.append(
            f"  {_scalar(node)} [label={_scalar(label)}, color={_scalar(color)}, style={style}];"
        )
    for u, v, attrs in graph.g.edges(data=True):
        lines.append(f"  {_scalar(u)} -> {_scalar(v)} [label={_scalar(attrs.get('relation'))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
