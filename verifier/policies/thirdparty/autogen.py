"""AutoGen's model contexts as ctxproof policies (extra ``policies-autogen``; docs/frameworks.md).

Items become ``autogen_core.models`` messages (:func:`to_messages`): tool
calls one after another (one turn's parallel calls) are an ``AssistantMessage``
whose content is their ``FunctionCall`` list, each with the item's id as its
``id`` (the items' text goes in ``thought``, the field for text beside function
calls); tool results one after another are a
``FunctionExecutionResultMessage`` with one ``FunctionExecutionResult`` each, whose
``call_id`` is the result's ``call`` and ``name`` the tool's (``is_error`` when
it failed, or when a placeholder says ``(error)``); user and
system observations are ``UserMessage`` and ``SystemMessage``; everything
else is an ``AssistantMessage`` with the item's text. AutoGen's messages have
no id field of their own: the way back (:func:`from_messages`) recognises a
kept message as the very object that was given (the contexts return slices
of their message list), each of its items kept, and checks that a kept
message still carries the same call ids. The contexts count and keep whole
messages: a group of calls or results is one.

Each context is given the window as its ``initial_messages`` and asked for
``get_messages()``, the view a model call would get:

* :func:`buffered_policy` — ``BufferedChatCompletionContext`` with
  ``buffer_size`` = the most recent messages that fit the budget (a message's
  size is its items');
* :func:`head_and_tail_policy` — ``HeadAndTailChatCompletionContext`` with
  ``head_size`` = the first messages that fit a quarter of the budget and
  ``tail_size`` = the last messages that fit what remains (its ``Skipped N
  messages.`` note becomes a prose item ``skipped@PASS``);
* :func:`token_limited_policy` — ``TokenLimitedChatCompletionContext`` with
  ``token_limit=budget`` and, for a model client, a deterministic counter of
  the items' tokens (it needs the client for nothing else).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, cast

from verifier.policies.thirdparty import needs, require
from verifier.policies.thirdparty._common import (
    Added,
    Kept,
    Outcome,
    Slot,
    assemble,
    estimate,
    fit_head,
    fit_tail,
    groups_of,
    slots_of,
)

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient, LLMMessage

__all__ = [
    "buffered_policy",
    "from_messages",
    "head_and_tail_policy",
    "to_messages",
    "token_limited_policy",
]

EXTRA = "policies-autogen"
Obj = dict[str, Any]
_SKIPPED = re.compile(r"Skipped \d+ messages\.")


def _require() -> None:
    require(EXTRA, "autogen_core")


def to_messages(slots: Sequence[Slot]) -> list[LLMMessage]:
    """The window's items as AutoGen messages, one each (module docstring)."""
    from autogen_core import FunctionCall
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        SystemMessage,
        UserMessage,
    )

    out: list[LLMMessage] = []
    for group in groups_of(slots):
        s = group[0]
        if s.role == "call":
            calls = [
                FunctionCall(id=c.id, name=c.tool, arguments=json.dumps({"command": c.command}))
                for c in group
            ]
            thought = "\n".join(c.text for c in group)
            out.append(AssistantMessage(content=calls, thought=thought, source="assistant"))
        elif s.role == "result":
            results = [
                FunctionExecutionResult(
                    content=r.content, name=r.tool, call_id=r.call, is_error=r.failed
                )
                for r in group
            ]
            out.append(FunctionExecutionResultMessage(content=results))
        elif s.role == "system":
            out.append(SystemMessage(content=s.text))
        elif s.role == "user" or (s.item.get("kind") == "prose" and _SKIPPED.fullmatch(s.text)):
            # a HeadAndTail note of an earlier pass is the context's "System" user message again
            source = "user" if s.role == "user" else "System"
            out.append(UserMessage(content=s.text, source=source))
        else:
            out.append(AssistantMessage(content=s.text, source="assistant"))
    return out


def _call_ids(message: Any) -> list[str]:
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return []
    return [str(getattr(c, "call_id", getattr(c, "id", ""))) for c in content]


def from_messages(
    out: Sequence[LLMMessage], sent: Sequence[LLMMessage], slots: Sequence[Slot]
) -> list[Outcome]:
    """What the context's view says about each item: a message given is kept, by identity;
    any other message is the context's own (module docstring).

    Raises:
        RuntimeError: a kept message no longer carries the call id it was given.
    """
    given = {id(m): g for m, g in zip(sent, groups_of(slots), strict=True)}
    outcomes: list[Outcome] = []
    for m in out:
        group = given.get(id(m))
        if group is None:
            text = m.content if isinstance(m.content, str) else str(m.content)
            outcomes.append(Added(text, "skipped" if _SKIPPED.fullmatch(text) else "message"))
            continue
        role = group[0].role
        expected = {
            "call": [s.id for s in group],
            "result": [s.call for s in group],
        }.get(role, [])
        if _call_ids(m) != expected:
            raise RuntimeError(
                f"the message of {group[0].id!r} came back with call ids {_call_ids(m)},"
                f" not {expected}"
            )
        outcomes.extend(Kept(s.id) for s in group)
    return outcomes


def _sizes(slots: Sequence[Slot]) -> list[int]:
    """The tokens of each message: the sum of its items'."""
    return [sum(s.tokens for s in g) for g in groups_of(slots)]


def _view(coroutine: Coroutine[Any, Any, list[LLMMessage]]) -> list[LLMMessage]:
    """Run ``get_messages()`` to its end (it awaits nothing: one fresh loop is enough)."""
    return asyncio.run(coroutine)


def _run(
    window: list[Obj],
    pass_no: int,
    context: Callable[[list[LLMMessage], Sequence[Slot]], Any],
) -> list[Obj]:
    _require()
    slots = slots_of(window)
    sent = to_messages(slots)
    view = _view(context(list(sent), slots).get_messages())
    return assemble(window, from_messages(view, sent, slots), pass_no)


@needs(EXTRA, "autogen_core")
def buffered_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``BufferedChatCompletionContext``: the last ``buffer_size`` messages, ``buffer_size``
    being how many of the most recent messages fit the budget."""

    def context(messages: list[LLMMessage], slots: Sequence[Slot]) -> Any:
        from autogen_core.model_context import BufferedChatCompletionContext

        size = fit_tail(_sizes(slots), budget)
        return BufferedChatCompletionContext(buffer_size=size, initial_messages=messages)

    return _run(window, pass_no, context)


@needs(EXTRA, "autogen_core")
def head_and_tail_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``HeadAndTailChatCompletionContext``: the first messages that fit a quarter of the
    budget, a ``Skipped N messages.`` note, and the last messages that fit the rest."""

    def context(messages: list[LLMMessage], slots: Sequence[Slot]) -> Any:
        from autogen_core.model_context import HeadAndTailChatCompletionContext

        sizes = _sizes(slots)
        head = fit_head(sizes, budget // 4)
        rest = budget - sum(sizes[:head])
        tail = fit_tail(sizes[head:], rest)
        if head + tail < len(sizes):  # messages are skipped: leave room for the note
            tail = fit_tail(sizes[head:], rest - estimate("Skipped 1000 messages."))
        return HeadAndTailChatCompletionContext(
            head_size=head, tail_size=tail, initial_messages=messages
        )

    return _run(window, pass_no, context)


class TokenCounter:
    """The model client a ``TokenLimitedChatCompletionContext`` counts tokens with.

    The context calls only ``count_tokens`` (and ``remaining_tokens`` when it
    has no ``token_limit``): this counter gives each message the tokens of its
    item, and a message it does not know a quarter of its characters. It calls
    no model, and has none of a client's other methods.
    """

    def __init__(self, messages: Sequence[LLMMessage], slots: Sequence[Slot], limit: int) -> None:
        self.sizes = {id(m): n for m, n in zip(messages, _sizes(slots), strict=True)}
        self.keep = list(messages)  # the ids above stay those of these objects
        self.limit = limit

    def count_tokens(self, messages: Sequence[LLMMessage], **_: Any) -> int:
        return sum(self.sizes.get(id(m), estimate(str(m.content))) for m in messages)

    def remaining_tokens(self, messages: Sequence[LLMMessage], **_: Any) -> int:
        return self.limit - self.count_tokens(messages)


@needs(EXTRA, "autogen_core")
def token_limited_policy(window: list[Obj], budget: int, *, pass_no: int = 1) -> list[Obj]:
    """``TokenLimitedChatCompletionContext(token_limit=budget)``: while the messages do not
    fit, it pops the one in the middle."""

    def context(messages: list[LLMMessage], slots: Sequence[Slot]) -> Any:
        from autogen_core.model_context import TokenLimitedChatCompletionContext

        client = cast("ChatCompletionClient", TokenCounter(messages, slots, budget))
        return TokenLimitedChatCompletionContext(
            client, token_limit=max(1, budget), initial_messages=messages
        )

    return _run(window, pass_no, context)
