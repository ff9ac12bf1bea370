"""LangChain's compaction as ctxproof policies (extra ``policies-langchain``; docs/frameworks.md).

Items become ``langchain_core`` messages (:func:`to_messages`): a tool call is
an ``AIMessage`` whose one ``tool_calls`` entry has the item's id as its
``id``, the tool's name and its command (its text is the content, unless it
is ``NAME: COMMAND``, which the call says already: then the content is empty,
as a model's tool-calling message is); a tool result is a ``ToolMessage``
with ``tool_call_id`` = its ``call``, the tool's ``name``, ``status``
``"error"`` when it failed and ``artifact.exit_code`` when it has one (as the
langchain importer reads them); a prose placeholder with ``call`` is a
``ToolMessage`` that context editing already cleared, ``status="error"`` when
its text says ``(error)``;
user and system observations are ``HumanMessage`` and ``SystemMessage``;
everything else is an ``AIMessage``, with a commitment's, claim's or stub's
item under ``additional_kwargs["ctxproof"]``. Every message's ``id`` is its
item's id, and the way back (:func:`from_messages`) goes by that id.

Token counts are ctxproof's: the counter given to LangChain returns each
message's item ``tokens`` (a message LangChain wrote or changed counts a
quarter of its characters).

Policies:

* :func:`trim_messages_policy` — ``trim_messages(max_tokens=budget,
  strategy="last")``: keeps the most recent messages that fit;
* :func:`trim_messages_human_policy` — the same with ``start_on="human"`` and
  ``include_system=True``, the settings LangChain's documentation recommends
  for a valid history;
* :func:`clear_tool_uses_policy` — ``ClearToolUsesEdit(trigger=budget,
  keep=3)`` of the context editing middleware: blanks all but the three most
  recent tool results (``[cleared]``, or ``[cleared] (error)`` for a failed
  one: the copy keeps ``status="error"``; the output and the exit code, in
  ``artifact``, are gone);
* :func:`summarization_policy` — ``SummarizationMiddleware(trigger=("tokens",
  budget), keep=("tokens", budget // 2), summarizer=...)`` with a fixed
  summarizer (no model is called).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

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
    slots_of,
    summary_text,
)

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "SUMMARY_PREFIX",
    "clear_tool_uses_policy",
    "from_messages",
    "summarization_policy",
    "to_messages",
    "trim_messages_human_policy",
    "trim_messages_policy",
]

EXTRA = "policies-langchain"
SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
"""How SummarizationMiddleware starts its summary message (the langchain importer reads it)."""

Obj = dict[str, Any]
_ANNOTATED = ("commitment", "claim", "stub")


def _require() -> None:
    require(EXTRA, "langchain_core", "langchain")


def to_messages(slots: Sequence[Slot]) -> list[BaseMessage]:
    """The window's items as LangChain messages, one each, ids kept (module docstring)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[BaseMessage] = []
    for s in slots:
        kind = s.item.get("kind")
        if s.role == "call":
            call = {"name": s.tool, "args": {"command": s.command}, "id": s.id, "type": "tool_call"}
            said = "" if s.text == f"{s.tool}: {s.command}" else s.text
            out.append(AIMessage(content=said, id=s.id, tool_calls=[call]))
        elif s.role == "result" and kind != "observation":
            cleared = {"context_editing": {"cleared": True, "strategy": "clear_tool_uses"}}
            out.append(
                ToolMessage(
                    content=s.content,
                    tool_call_id=s.call,
                    id=s.id,
                    name=s.tool,
                    status="error" if s.failed else "success",
                    response_metadata=cleared,
                )
            )
        elif s.role == "result":
            code = s.exit_code
            out.append(
                ToolMessage(
                    content=s.text,
                    tool_call_id=s.call,
                    id=s.id,
                    name=s.tool,
                    status="error" if s.failed else "success",
                    artifact={"exit_code": code} if code is not None else None,
                )
            )
        elif s.role == "system":
            out.append(SystemMessage(content=s.text, id=s.id))
        elif s.role == "user":
            out.append(HumanMessage(content=s.text, id=s.id))
        elif kind == "prose" and s.text.startswith(SUMMARY_PREFIX):
            # a summary this middleware wrote on an earlier pass: it is the user's turn again
            extra = {"lc_source": "summarization"}
            out.append(HumanMessage(content=s.text, id=s.id, additional_kwargs=extra))
        else:
            notes = {"ctxproof": [s.item]} if kind in _ANNOTATED else {}
            out.append(AIMessage(content=s.text, id=s.id, additional_kwargs=notes))
    return out


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    return bool(
        a.content == b.content and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None)
    )


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def from_messages(out: Sequence[BaseMessage], sent: Sequence[BaseMessage]) -> list[Outcome]:
    """What LangChain's output says about each item, read by message id (module docstring)."""
    from langchain_core.messages import RemoveMessage, ToolMessage

    by_id = {str(m.id): m for m in sent}
    outcomes: list[Outcome] = []
    for m in out:
        if isinstance(m, RemoveMessage):
            continue  # the middleware's "replace everything" marker, not a message
        original = by_id.get(str(m.id)) if m.id is not None else None
        if original is None:
            summary = m.additional_kwargs.get("lc_source") == "summarization"
            outcomes.append(Added(_text(m), "summary" if summary else "message", summary))
        elif m is original or _same(m, original):
            outcomes.append(Kept(str(m.id)))
        elif isinstance(m, ToolMessage) and isinstance(original, ToolMessage):
            # ClearToolUsesEdit copies the message: its status (the error flag) stays
            outcomes.append(Cleared(str(m.id), _text(m), m.status == "error"))
        else:
            outcomes.append(Edited(str(m.id), _text(m)))
    return outcomes


def _counter(slots: Sequence[Slot], sent: Sequence[BaseMessage]) -> Callable[[Any], int]:
    """LangChain token counter: each message's item tokens; a changed or new one, its text."""
    sizes = {s.id: (s.tokens, m) for s, m in zip(slots, sent, strict=True)}

    def count(messages: Any) -> int:
        total = 0
        for m in messages:
            known = sizes.get(str(m.id)) if getattr(m, "id", None) is not None else None
            if known is not None and (m is known[1] or _same(m, known[1])):
                total += known[0]
            else:
                total += estimate(_text(m))
        return total

    return count


def _run(
    window: list[Obj],
    pass_no: int,
    compact: Callable[[list[BaseMessage], Callable[[Any], int], Sequence[Slot]], Any],
) -> list[Obj]:
    _require()
    slots = slots_of(window)
    sent = to_messages(slots)
    out = compact(list(sent), _counter(slots, sent), slots)
    return assemble(window, from_messages(out, sent), pass_no)


def _trim(**settings: Any) -> Callable[..., Any]:
    def compact(
        messages: list[BaseMessage], count: Callable[[Any], int], slots: Sequence[Slot]
    ) -> Any:
        from langchain_core.messages import trim_messages

        return trim_messages(messages, token_counter=count, **settings)

    return compact


@needs(EXTRA, "langchain_core")
def trim_messages_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``trim_messages(max_tokens=budget, strategy="last")``: the most recent messages that fit."""
    return _run(window, pass_no, _trim(max_tokens=budget, strategy="last"))


@needs(EXTRA, "langchain_core")
def trim_messages_human_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``trim_messages`` as LangChain's documentation recommends it: ``strategy="last"``,
    ``start_on="human"``, ``include_system=True``."""
    settings = {"start_on": "human", "include_system": True}
    return _run(window, pass_no, _trim(max_tokens=budget, strategy="last", **settings))


@needs(EXTRA, "langchain_core", "langchain")
def clear_tool_uses_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``ClearToolUsesEdit(trigger=budget, keep=3)``: all but the 3 most recent tool results
    become ``[cleared]`` (the edit the context editing middleware applies)."""

    def compact(
        messages: list[BaseMessage], count: Callable[[Any], int], slots: Sequence[Slot]
    ) -> Any:
        from langchain.agents.middleware import ClearToolUsesEdit

        ClearToolUsesEdit(trigger=budget, keep=3).apply(cast(Any, messages), count_tokens=count)
        return messages

    return _run(window, pass_no, compact)


@needs(EXTRA, "langchain_core", "langchain")
def summarization_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``SummarizationMiddleware`` with a fixed summarizer: the oldest messages become one
    summary message, the most recent ``budget // 2`` tokens stay."""

    def compact(
        messages: list[BaseMessage], count: Callable[[Any], int], slots: Sequence[Slot]
    ) -> Any:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        def summarize(folded: list[Any]) -> str:
            return summary_text((_text(m) for m in folded), len(folded))

        middleware: Any = SummarizationMiddleware(
            # the model is never called: the summarizer replaces it (the middleware reads
            # only its profile, for fractional limits, which these settings do not use)
            model=FakeListChatModel(responses=["(unused)"]),
            trigger=("tokens", max(1, budget)),
            keep=("tokens", max(1, budget // 2)),
            token_counter=count,
            summarizer=summarize,
        )
        update = middleware.before_model({"messages": messages}, None)
        return messages if update is None else update["messages"]

    return _run(window, pass_no, compact)
