"""The streamed import writes the bytes the whole-text import gives, or hands over to it.

Two generators. Snapshots of messages (with and without ids, tool calls and
results shown again cut, cleared, emptied or changed, summaries, rewrites,
annotations) go through :func:`stream_trace` and :func:`build_trace`: the
streamed text keeps only the latest snapshot's items and spills first results,
so a message that comes back has its items computed again. Claude Code
records (a ``parentUuid`` chain with rewinds, compactions that keep messages,
replays, records without uuid, results shown again) are read from files in
small chunks by :func:`iter_snapshots`, which re-reads messages that left the
chain. In both, the streamed text and its coverage equal the whole-text ones,
or the streamed import diverges exactly where the whole-text one refuses.
"""

from __future__ import annotations

import io
import itertools
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.errors import InputError
from verifier.importers import claude_code, import_history, import_session
from verifier.importers import sources as sources_module
from verifier.importers.common import (
    Annotation,
    Diverged,
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    build_trace,
    canonical,
    message_count,
    stream_trace,
)
from verifier.importers.coverage import Coverage, coverage
from verifier.importers.sources import Source

_OUTPUT = st.one_of(
    st.sampled_from(
        [
            "3 passed",
            "Exit code 1\nFAILED test_proxy_auth - AssertionError",
            "Exit code: 0\nall good",
            "line\n" * 30,
        ]
    ),
    st.sampled_from(["", "  ", "[cleared]", "ok"]),
    st.text(alphabet="ab \n", min_size=0, max_size=40),
)


def _reshown(draw: st.DrawFn, first: str) -> str:
    """A later showing of a result whose first content was ``first``."""
    kinds = ["same", "cut", "cut", "middle", "placeholder", "empty", "changed"]
    kind = draw(st.sampled_from(kinds))
    if kind == "cut" and len(first) > 2:
        return first[: draw(st.integers(1, len(first) - 1))] + draw(st.sampled_from(["", "..."]))
    if kind == "middle" and len(first) > 4:
        return first[:1] + " [... 3 characters truncated] " + first[-1:]
    if kind == "placeholder":
        return draw(st.sampled_from(["[cleared]", "(Tool result removed)"]))
    if kind == "empty":
        return ""
    if kind == "changed":
        return first + " (changed)"
    return first


def _message(role: str, own: str | None, **kw: Any) -> Message:
    fields = {"role": role, "id": own, **kw}
    key = canonical(
        {
            "role": role,
            "id": own,
            "text": kw.get("text", ""),
            "calls": [[c.id, c.name, c.arguments] for c in kw.get("calls", ())],
            "results": [[r.call_id, r.content, r.error] for r in kw.get("results", ())],
            "summary": kw.get("summary", False),
        }
    )
    return Message(key=key, file="<gen>", where=f"message {key[:20]}", **fields)


@st.composite
def snapshot_histories(draw: st.DrawFn) -> tuple[list[Snapshot], list[Annotation]]:
    """Snapshots: extensions, rewrites to kept messages and new ones, results shown again."""
    seen: list[Message] = []
    firsts: dict[str, str] = {}
    snaps: list[Snapshot] = []
    current: list[Message] = []
    n = 0
    for step in range(draw(st.integers(1, 6))):
        new: list[Message] = []
        shape = draw(st.sampled_from(["extend", "extend", "rewrite", "compaction"]))
        if not current:
            shape = "extend"

        def own() -> str | None:
            nonlocal n
            n += 1
            return f"m{n}" if draw(st.booleans()) else None

        kinds = draw(st.lists(st.sampled_from(["user", "turn", "again", "summary"]), max_size=5))
        for kind in ["user", *kinds] if step == 0 else kinds:
            if kind == "turn":
                calls = tuple(
                    ToolCall(
                        f"c{n}-{k}",
                        "bash",
                        {"command": draw(st.sampled_from(["ls", "pytest -q", "x" * 1500]))},
                    )
                    for k in range(draw(st.integers(0, 2)))
                )
                text = draw(st.sampled_from(["", "on it", "done"]))
                new.append(_message("assistant", own(), text=text, calls=calls))
                for call in calls:
                    content = draw(_OUTPUT)
                    firsts.setdefault(call.id, content)
                    result = ToolResult(call.id, content, error=draw(st.booleans()))
                    new.append(_message("tool", own(), results=(result,)))
            elif kind == "again" and firsts and shape != "extend":  # after a rewrite
                call_id = draw(st.sampled_from(sorted(firsts)))
                result = ToolResult(call_id, _reshown(draw, firsts[call_id]))
                new.append(_message("tool", own(), results=(result,)))
            elif kind == "summary":
                new.append(_message("user", own(), text=f"summary {n}", summary=True))
            else:
                text = draw(st.sampled_from(["hi", "keep the schema", "again", "hi"]))
                new.append(_message("user", own(), text=text))
        if shape == "extend":
            current = current + new
            policy = None
        else:
            kept = [m for m in current if draw(st.booleans())]
            old = [m for m in seen if m not in current and draw(st.integers(0, 4)) == 0]
            current = old + kept + new
            policy = "gen:compaction" if shape == "compaction" else None
        seen.extend(m for m in new if m not in seen)
        snaps.append(Snapshot(tuple(current), policy))
    notes: list[Annotation] = []
    named = [m.id for m in seen if m.id is not None and (m.text or m.results)]
    if draw(st.booleans()) and named:
        after = draw(st.sampled_from([*named, "nowhere"]))
        items = ({"id": "ann-1", "kind": "commitment", "type": "obligation", "text": "x"},)
        notes.append(Annotation(after, items, "<notes>", 1))
    return snaps, notes


def _whole(snaps: list[Snapshot], notes: list[Annotation], fmt: str) -> str | InputError:
    try:
        return build_trace(snaps, notes, fmt=fmt, name=f"<import {fmt}>")
    except InputError as exc:
        return exc


def _streamed(
    snaps: Iterator[Snapshot], notes: list[Annotation], fmt: str
) -> tuple[str, Coverage] | None:
    out = io.StringIO()
    try:
        counted = stream_trace(snaps, out.write, notes, fmt=fmt, name=f"<import {fmt}>")
    except Diverged:
        return None
    return out.getvalue(), counted


@settings(max_examples=300, deadline=None)
@given(snapshot_histories())
def test_streamed_snapshots_write_the_whole_text(
    history: tuple[list[Snapshot], list[Annotation]],
) -> None:
    snaps, notes = history
    whole = _whole(snaps, notes, "gen")
    streamed = _streamed(iter(snaps), notes, "gen")
    if isinstance(whole, InputError):
        assert streamed is None  # the whole-text import words the error
        return
    assert streamed is not None, "a history the whole-text import takes was handed over"
    text, counted = streamed
    assert text == whole
    assert counted == coverage(whole, messages=message_count(snaps))


@st.composite
def cc_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Claude Code records: a chain with rewinds, compactions (some keeping messages),
    replays, records without uuid or parentUuid, results shown again."""
    recs: list[dict[str, Any]] = []
    chain: list[str] = []  # uuids of the messages in file order
    calls: dict[str, str] = {}  # call id -> first content
    last: str | None = None
    n = 0

    def add(kind: str, content: Any, **kw: Any) -> None:
        nonlocal last, n
        n += 1
        rec: dict[str, Any] = {"type": kind, "message": {"role": kind, "content": content}}
        style = draw(st.sampled_from(["chain"] * 6 + ["rewind", "no-parent", "no-uuid"]))
        if style != "no-uuid":
            rec["uuid"] = f"r{n}"
            if style == "chain":
                rec["parentUuid"] = last
            elif style == "rewind" and chain:
                rec["parentUuid"] = draw(st.sampled_from(chain))
            chain.append(rec["uuid"])
            last = rec["uuid"]
        rec.update(kw)
        recs.append(rec)

    for turn in range(draw(st.integers(1, 6))):
        add("user", draw(st.sampled_from(["fix it", "again", "keep the schema"])))
        ids = [f"toolu_{turn}_{k}" for k in range(draw(st.integers(0, 2)))]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "on it"}]
        for c in ids:
            command = draw(st.sampled_from(["pytest -q", "ls", "cat " + "f" * 1200]))
            call = {"type": "tool_use", "id": c, "name": "Bash", "input": {"command": command}}
            blocks.append(call)
        add("assistant", blocks)
        for c in ids:
            body = draw(_OUTPUT)
            calls.setdefault(c, body)
            add("user", [{"type": "tool_result", "tool_use_id": c, "content": body}])
        if calls and draw(st.integers(0, 3)) == 0:
            c = draw(st.sampled_from(sorted(calls)))
            shown = _reshown(draw, calls[c])
            add("user", [{"type": "tool_result", "tool_use_id": c, "content": shown}])
        if recs and draw(st.integers(0, 4)) == 0:
            recs.append(dict(draw(st.sampled_from(recs))))  # a record written again
        if last is not None and draw(st.integers(0, 2)) == 0:
            n += 1
            meta: dict[str, Any] = {"trigger": "auto"}
            keep = [u for u in chain[-4:] if draw(st.booleans())]
            listed: bool = draw(st.booleans())
            if keep and listed:
                meta["preservedMessages"] = {"uuids": keep}
            elif len(chain) > 1 and draw(st.booleans()):
                meta["preservedSegment"] = {"headUuid": chain[-2], "tailUuid": chain[-1]}
            recs.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"b{n}",
                    "parentUuid": None,
                    "logicalParentUuid": last,
                    "compactMetadata": meta,
                }
            )
            if draw(st.integers(0, 5)):
                n += 1
                summary = {"role": "user", "content": f"summary {n}"}
                recs.append(
                    {
                        "type": "user",
                        "uuid": f"s{n}",
                        "parentUuid": f"b{n - 1}",
                        "isCompactSummary": True,
                        "message": summary,
                    }
                )
                last = f"s{n}"
    return recs


def _files(recs: list[dict[str, Any]], cuts: list[int], folder: Path) -> list[Path]:
    bounds = [0, *sorted(set(cuts)), len(recs)]
    paths = []
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        if b > a:
            path = folder / f"part{k}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in recs[a:b]), "utf-8")
            paths.append(path)
    return paths


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files read 7 bytes at a time: lines cross every chunk boundary."""
    monkeypatch.setattr(sources_module, "_CHUNK", 7)


@pytest.mark.usefixtures("small_chunks")
@settings(max_examples=200, deadline=None)
@given(cc_records(), st.lists(st.integers(1, 30), max_size=2))
def test_streamed_claude_code_writes_the_whole_text(
    recs: list[dict[str, Any]], cuts: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = _files(recs, cuts, Path(folder))

        def sources() -> list[Source]:
            return [Source.file(str(p), p, p.stat().st_size) for p in paths]

        try:
            snaps = claude_code.snapshots(sources(), keep_records=False)
        except InputError as exc:  # the reader refuses: both ways, the same error
            with pytest.raises(InputError) as caught:
                _streamed(claude_code.iter_snapshots(sources()), [], "claude-code")
            assert caught.value.render() == exc.render()
            return
        whole = _whole(snaps, [], "claude-code")
        streamed = _streamed(
            claude_code.iter_snapshots(sources(), keep_records=False), [], "claude-code"
        )
        if isinstance(whole, InputError):
            assert streamed is None
            return
        assert streamed is not None
        assert streamed[0] == whole
        assert streamed[1] == coverage(whole, messages=message_count(snaps))
        # and the public import, streamed from the files, is that text
        imported = import_session("claude-code", paths)
        assert imported.trace == whole and imported.coverage == streamed[1]


def test_a_result_before_its_call_is_imported_whole() -> None:
    """A tool result read before its call: the whole-text import pairs it with the call
    read later; the streamed one cannot, so it hands over, and the trace is the same."""
    recs = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "u1",
         "message": {"role": "user", "content": "go on"}},
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1",
         "logicalParentUuid": "u2"},
        {"type": "user", "uuid": "s1", "parentUuid": "b1", "isCompactSummary": True,
         "message": {"role": "user", "content": "summary"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "s1", "message": {
            "role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
    ]  # fmt: skip
    data = ("\n".join(json.dumps(r) for r in recs) + "\n").encode()
    snaps = claude_code.snapshots([Source("<s>", data)])
    whole = build_trace(snaps, fmt="claude-code", name="<import claude-code>")
    assert '"call":"t1"' in whole and '"source":"Bash: ls"' in whole
    assert _streamed(claude_code.iter_snapshots([Source("<s>", data)]), [], "claude-code") is None
    assert import_history("claude-code", [data]) == whole
