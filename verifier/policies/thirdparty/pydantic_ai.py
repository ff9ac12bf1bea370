"""pydantic-ai-harness's compaction as ctxproof policies (extra ``policies-pydantic-ai``;
docs/frameworks.md).

Items become ``pydantic_ai.messages`` (:func:`to_messages`): a tool call is a
``TextPart`` (the item's text, ``id`` = the item's id) and a ``ToolCallPart``
whose ``tool_call_id`` is the item's id, in one ``ModelResponse`` with the
calls right before and after it (one turn's parallel calls); a tool result
is a ``ToolReturnPart``, in one ``ModelRequest`` with the results right
before and after it, with
``tool_call_id`` = its ``call``, ``outcome="failed"`` when it failed, and
``metadata`` naming the item (and its exit code); a prose placeholder with
``call`` is such a part already cleared (``outcome="failed"`` when its text
says ``(error)``); user and system observations are a
``ModelRequest`` with a ``UserPromptPart`` or a ``SystemPromptPart`` (the
request's ``metadata`` names the item); everything else is a
``ModelResponse`` with one ``TextPart`` (``id`` = the item's id; a
commitment's, claim's or stub's item in the response's ``metadata``).

The harness counts tokens with a ``tokenizer(text) -> int``: each message's
text starts with ``[ID] ``, its item's id, so that the tokenizer given to the
harness can return the item's own ``tokens`` for it (a text the harness wrote
counts a quarter of its characters; a tool's name and arguments count 0, the
call's size being its text's).

The strategies run through ``compact_now`` (the harness's way to compact
outside an agent run), with pydantic-ai's offline ``TestModel``, which they
never call; ``compact_now`` applies no trigger, so the policy applies the
strategy's own, ``max_tokens=budget``, on ctxproof's sizes:

* :func:`clear_tool_results_policy` — ``ClearToolResults(max_tokens=budget,
  keep_pairs=3)``: all but the 3 most recent tool results become ``[tool
  result cleared]`` (``[tool result cleared] (error)`` for a failed one: the
  part keeps ``outcome="failed"``; its output is gone, and its exit code stays
  only in ``metadata``, which the model does not see);
* :func:`sliding_window_policy` — ``SlidingWindowCompaction(max_tokens=budget,
  keep_tokens=budget // 2)``: the oldest messages go, tool pairs kept
  together, the first user message kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from verifier.policies import window_tokens
from verifier.policies.thirdparty import needs, require
from verifier.policies.thirdparty._common import (
    Added,
    Cleared,
    Edited,
    Kept,
    Outcome,
    Slot,
    assemble,
    estimate,
    groups_of,
    slots_of,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "clear_tool_results_policy",
    "from_messages",
    "sliding_window_policy",
    "to_messages",
]

EXTRA = "policies-pydantic-ai"
ID_KEY = "ctxproof_id"
Obj = dict[str, Any]
_ANNOTATED = ("commitment", "claim", "stub")


def _require() -> None:
    require(EXTRA, "pydantic_ai", "pydantic_ai_harness")


def _tagged(slot: Slot) -> str:
    return f"[{slot.id}] {slot.text}"


def to_messages(slots: Sequence[Slot]) -> list[ModelMessage]:
    """The window's items as pydantic-ai messages, one each (module docstring)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        UserPromptPart,
    )

    out: list[ModelMessage] = []
    for group in groups_of(slots):
        s = group[0]
        kind = s.item.get("kind")
        if s.role == "call":
            calls: list[TextPart | ToolCallPart] = []
            for c in group:
                calls.append(TextPart(content=_tagged(c), id=c.id))
                calls.append(
                    ToolCallPart(tool_name=c.tool, args={"command": c.command}, tool_call_id=c.id)
                )
            out.append(ModelResponse(parts=calls))
        elif s.role == "result":
            out.append(ModelRequest(parts=[_return_part(r) for r in group]))
        elif s.role == "system":
            system = SystemPromptPart(content=_tagged(s))
            out.append(ModelRequest(parts=[system], metadata={ID_KEY: s.id}))
        elif s.role == "user":
            user = UserPromptPart(content=_tagged(s))
            out.append(ModelRequest(parts=[user], metadata={ID_KEY: s.id}))
        else:
            notes = {"ctxproof": [s.item]} if kind in _ANNOTATED else None
            out.append(ModelResponse(parts=[TextPart(content=_tagged(s), id=s.id)], metadata=notes))
    return out


def _return_part(s: Slot) -> Any:
    from pydantic_ai.messages import ToolReturnPart

    meta: Obj = {ID_KEY: s.id}
    if s.exit_code is not None:
        meta["exit_code"] = s.exit_code
    placeholder = s.item.get("kind") != "observation"  # cleared on an earlier pass: as it is
    return ToolReturnPart(
        tool_name=s.tool,
        content=s.content if placeholder else _tagged(s),
        tool_call_id=s.call,
        metadata=meta,
        outcome="failed" if s.failed else "success",
    )


def _part_text(part: Any) -> str:
    content = getattr(part, "content", "")
    return content if isinstance(content, str) else str(content)


def from_messages(out: Sequence[ModelMessage], sent: Sequence[ModelMessage]) -> list[Outcome]:
    """What the harness's output says about each item, read by the ids the parts carry
    (``TextPart.id``, ``ToolReturnPart.metadata``, the request's ``metadata``)."""
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart

    texts: dict[str, str] = {}  # what each item's part said when sent
    for m in sent:
        for part in m.parts:
            iid = _part_id(m, part)
            if iid is not None and not isinstance(part, ToolCallPart):
                texts[iid] = _part_text(part)
    outcomes: list[Outcome] = []
    for m in out:
        for part in m.parts:
            if isinstance(part, ToolCallPart):
                continue  # the call's item comes back with its TextPart
            iid = _part_id(m, part)
            if iid is None or iid not in texts:
                outcomes.append(Added(_part_text(part), "message"))
            elif _part_text(part) == texts[iid]:
                outcomes.append(Kept(iid))
            elif isinstance(part, ToolReturnPart):
                # ClearToolResults replaces the content only: the outcome stays
                outcomes.append(Cleared(iid, _part_text(part), part.outcome == "failed"))
            else:
                outcomes.append(Edited(iid, _part_text(part)))
    return outcomes


def _part_id(message: Any, part: Any) -> str | None:
    """The item id a part carries: its own ``id``, its metadata's, or its request's."""
    own = getattr(part, "id", None)
    if isinstance(own, str):
        return own
    meta = getattr(part, "metadata", None)
    if isinstance(meta, dict) and isinstance(meta.get(ID_KEY), str):
        return str(meta[ID_KEY])
    if getattr(part, "part_kind", None) in ("user-prompt", "system-prompt"):
        request_meta = getattr(message, "metadata", None)
        if isinstance(request_meta, dict) and isinstance(request_meta.get(ID_KEY), str):
            return str(request_meta[ID_KEY])
    return None


def tokenizer_for(slots: Sequence[Slot]) -> Callable[[str], int]:
    """The harness's tokenizer: each item's text its ``tokens``, a tool's name and arguments
    0, any other text a quarter of its characters."""
    sizes: dict[str, int] = {}
    for s in slots:
        if s.role == "call":
            sizes[s.tool] = 0
            sizes[str({"command": s.command})] = 0
        sizes[_tagged(s)] = s.tokens
        if s.role == "result" and s.item.get("kind") != "observation":
            sizes[s.content] = s.tokens

    def tokens(text: str) -> int:
        size = sizes.get(text)
        return size if size is not None else estimate(text)

    return tokens


def _run(
    window: list[Obj],
    budget: int,
    pass_no: int,
    strategy: Callable[[Callable[[str], int]], Any],
) -> list[Obj]:
    _require()
    if window_tokens(window) <= budget:
        return window  # the strategy's trigger, max_tokens=budget, does not fire
    from pydantic_ai.models.test import TestModel
    from pydantic_ai_harness.compaction import compact_now

    slots = slots_of(window)
    sent = to_messages(slots)
    tokenizer = tokenizer_for(slots)
    compacted = asyncio.run(
        compact_now(strategy(tokenizer), list(sent), model=TestModel(), tokenizer=tokenizer)
    )
    return assemble(window, from_messages(compacted, sent), pass_no)


@needs(EXTRA, "pydantic_ai", "pydantic_ai_harness")
def clear_tool_results_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``ClearToolResults(max_tokens=budget, keep_pairs=3)``: all but the 3 most recent tool
    results become ``[tool result cleared]``."""

    def strategy(tokenizer: Callable[[str], int]) -> Any:
        from pydantic_ai_harness.compaction import ClearToolResults

        return ClearToolResults(max_tokens=max(1, budget), keep_pairs=3, tokenizer=tokenizer)

    return _run(window, budget, pass_no, strategy)


@needs(EXTRA, "pydantic_ai", "pydantic_ai_harness")
def sliding_window_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``SlidingWindowCompaction(max_tokens=budget, keep_tokens=budget // 2)``: drops the
    oldest messages, keeps the most recent ``budget // 2`` tokens and the first user message."""

    def strategy(tokenizer: Callable[[str], int]) -> Any:
        from pydantic_ai_harness.compaction import SlidingWindowCompaction

        return SlidingWindowCompaction(
            max_tokens=max(1, budget), keep_tokens=max(1, budget // 2), tokenizer=tokenizer
        )

    return _run(window, budget, pass_no, strategy)
