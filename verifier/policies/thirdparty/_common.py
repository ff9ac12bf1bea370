"""What the framework adapters share: the role each item plays in a conversation, and the way back.

The way there (:func:`slots_of`). Every item becomes one message of the
framework, by the importers' conventions read in reverse (docs/importers.md):

* an item that some item of the window names by ``call`` is a **tool call**:
  an assistant message whose one tool call has the item's id as its call id;
* an item with ``call`` (an observation, or a prose placeholder left where a
  result was) is a **tool result** answering that call id, with the
  framework's error flag set when the observation failed or the placeholder
  says ``(error)`` (the flag survived an earlier clearing: :data:`ERROR_MARK`);
* an observation without ``call`` is what the model was told: a **system**
  message when its ``source`` is ``system`` or ``developer``, else a **user**
  message;
* everything else (prose, commitments, claims, stubs) is an **assistant**
  message: what the agent said. The frameworks have no place for a commitment
  or a claim, so they travel as the agent's own words, the item itself in the
  message's metadata where the framework has a field for it. They can be
  dropped or summarized like any message: that is what the audit then counts.

The way back (:func:`assemble`). The adapter reads the framework's output as a
list of outcomes: a message it kept (:class:`Kept`, by the id it carried: the
item goes back as the very same dict), a tool result it blanked
(:class:`Cleared`: a prose ``CALLID:cleared`` with ``call``, as the importers
write it; the observation and its evidence are gone, and its text ends in
``(error)`` when the framework kept the error flag), a message of its own
(:class:`Added`: a summary or a note, a prose item ``BASE@PASS``), or a kept
message whose text it changed (:class:`Edited`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifier.policies import item_tokens

__all__ = [
    "ERROR_MARK",
    "Added",
    "Cleared",
    "Edited",
    "Kept",
    "Outcome",
    "Slot",
    "assemble",
    "estimate",
    "fit_head",
    "fit_tail",
    "groups_of",
    "slots_of",
    "summary_text",
]

Obj = dict[str, Any]

_NAMED_SOURCE = re.compile(r"([A-Za-z_][\w.-]*): (.*)", re.DOTALL)

ERROR_MARK = " (error)"
"""How a placeholder says that its result failed and the framework still shows so: a
cleared result that keeps its error flag reads ``[cleared] (error)`` (docs/importers.md,
"Placeholders")."""


def estimate(text: str) -> int:
    """Tokens of a text the framework wrote: a quarter of its characters, at least 1.

    >>> estimate("[cleared]"), estimate("")
    (3, 1)
    """
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True, slots=True)
class Slot:
    """One item as a framework message: its role, its size, and what the message says."""

    item: Obj
    role: str
    """``call``, ``result``, ``user``, ``system`` or ``assistant``."""
    tokens: int
    text: str
    tool: str = ""
    """The tool name of a call or a result."""
    command: str = ""
    """The command a call ran: its arguments are ``{"command": command}``."""

    @property
    def id(self) -> str:
        return str(self.item["id"])

    @property
    def call(self) -> str:
        """The call id a result answers."""
        return str(self.item.get("call", ""))

    @property
    def failed(self) -> bool:
        """Does the framework's error flag belong on this result? A failed observation, or
        a placeholder whose text says the flag survived (:data:`ERROR_MARK`)."""
        if self.item.get("kind") == "observation":
            return self.item.get("modality") == "failed"
        return self.role == "result" and str(self.item.get("text", "")).endswith(ERROR_MARK)

    @property
    def content(self) -> str:
        """What the framework's message holds: the text, less the error mark of a
        placeholder (the framework says that with its flag)."""
        if self.role == "result" and self.item.get("kind") != "observation" and self.failed:
            return self.text.removesuffix(ERROR_MARK)
        return self.text

    @property
    def exit_code(self) -> int | None:
        code = self.item.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None


def message_text(item: Mapping[str, Any]) -> str:
    """What the message of an item says: an observation's content, else its text, else a
    rendering of what the item asserts."""
    kind = item.get("kind")
    if kind == "observation" and isinstance(item.get("content"), str):
        return str(item["content"])
    if isinstance(item.get("text"), str):
        return str(item["text"])
    iid = str(item.get("id"))
    if kind == "commitment":
        return f"{item.get('type', 'commitment')}: {item.get('formula', iid)}"
    if kind == "claim":
        return f"claim: {item.get('formula', iid)}"
    if kind == "observation":
        return f"observed: {item.get('shows', iid)}"
    if kind == "stub":
        return f"(stored: {item.get('ref', iid)})"
    return ""


def _tool(source: Any, fallback: str) -> tuple[str, str]:
    """Tool name and command of a result's ``source`` (``NAME: COMMAND``, else a shell command)."""
    if not isinstance(source, str) or not source:
        return "tool", fallback
    named = _NAMED_SOURCE.fullmatch(source)
    if named is not None:
        return named.group(1), named.group(2)
    return "shell", source


def slots_of(window: Sequence[Mapping[str, Any]]) -> list[Slot]:
    """Each item of the window as a framework message (see the module docstring)."""
    called: dict[str, Mapping[str, Any]] = {}
    for it in window:
        call = it.get("call")
        if isinstance(call, str):
            called.setdefault(call, it)
    out: list[Slot] = []
    for it in window:
        obj = dict(it)
        iid = str(obj["id"])
        text = message_text(obj)
        tokens = item_tokens(obj)
        kind = obj.get("kind")
        if isinstance(obj.get("call"), str):
            first = called.get(str(obj["call"]), obj)
            tool, _ = _tool(first.get("source", obj.get("source")), text)
            out.append(Slot(obj, "result", tokens, text, tool))
        elif iid in called:
            tool, command = _tool(called[iid].get("source"), text)
            out.append(Slot(obj, "call", tokens, text, tool, command))
        elif kind == "observation":
            role = "system" if obj.get("source") in ("system", "developer") else "user"
            out.append(Slot(obj, role, tokens, text))
        else:
            out.append(Slot(obj, "assistant", tokens, text))
    return out


def groups_of(slots: Sequence[Slot]) -> list[list[Slot]]:
    """The slots as frameworks whose messages hold several calls or results group them:
    calls one after another are one assistant turn's parallel calls (one message), results
    one after another one message of results; every other slot is a message of its own.

    AutoGen (``AssistantMessage`` with a list of ``FunctionCall``,
    ``FunctionExecutionResultMessage`` with a list of results) and pydantic-ai
    (``ModelResponse`` with several ``ToolCallPart``, ``ModelRequest`` with several
    ``ToolReturnPart``) hold parallel calls that way, and only that way.

    >>> [[s.id for s in g] for g in groups_of(slots_of([
    ...     {"id": "c1", "kind": "prose"}, {"id": "c2", "kind": "prose"},
    ...     {"id": "r2", "kind": "observation", "call": "c2"},
    ...     {"id": "r1", "kind": "observation", "call": "c1"},
    ...     {"id": "p", "kind": "prose"}]))]
    [['c1', 'c2'], ['r2', 'r1'], ['p']]
    """
    out: list[list[Slot]] = []
    for s in slots:
        if out and s.role in ("call", "result") and out[-1][-1].role == s.role:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def fit_tail(sizes: Sequence[int], budget: int) -> int:
    """How many of the last sizes fit in ``budget`` together; at least 1.

    >>> fit_tail([5, 5, 5], 11), fit_tail([50], 10)
    (2, 1)
    """
    total = 0
    count = 0
    for size in reversed(sizes):
        if total + size > budget:
            break
        total += size
        count += 1
    return max(1, count)


def fit_head(sizes: Sequence[int], budget: int) -> int:
    """How many of the first sizes fit in ``budget`` together; at least 1."""
    return fit_tail(list(reversed(sizes)), budget)


def summary_text(texts: Iterable[str], count: int) -> str:
    """The fixed summarizer: a deterministic digest of the messages it is given.

    It stands in for the model a framework would ask for a summary; what it
    writes is prose, which the checker reads nothing from.

    >>> summary_text(["we use postgres", "run: make test"], 2)
    'Summary of 2 earlier message(s): we use postgres | run: make test'
    """
    parts = [" ".join(t.split())[:60] for t in texts if t.strip()]
    return (f"Summary of {count} earlier message(s): " + " | ".join(parts))[:600]


@dataclass(frozen=True, slots=True)
class Kept:
    """The framework kept the message of this item as it was."""

    id: str


@dataclass(frozen=True, slots=True)
class Cleared:
    """The framework blanked this tool result: ``text`` is its placeholder, and ``error``
    says the framework still flags the result as an error (the placeholder then ends in
    :data:`ERROR_MARK`)."""

    id: str
    text: str
    error: bool = False


@dataclass(frozen=True, slots=True)
class Added:
    """A message of the framework's own (a summary, a note): it becomes prose ``BASE@PASS``.

    A summary (``summary`` true) is given the size of a quarter of the tokens
    that left the window, as if a model had written it; any other message
    its own size (:func:`estimate`).
    """

    text: str
    base: str
    summary: bool = False


@dataclass(frozen=True, slots=True)
class Edited:
    """The framework kept the message of this item but changed its text to ``text``."""

    id: str
    text: str


Outcome = Kept | Cleared | Added | Edited


class _Names:
    """Fresh item ids: a base, then ``BASE.2``, ``BASE.3``... when the base is taken."""

    def __init__(self, taken: Iterable[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}.{n}"
        self.taken.add(name)
        return name


def assemble(window: Sequence[Obj], outcomes: Sequence[Outcome], pass_no: int) -> list[Obj]:
    """The new window the outcomes describe (see the module docstring).

    Raises:
        RuntimeError: the framework gave back one item's message twice, or a
            message with an id the window does not hold (a bug of the adapter
            or of the framework: the policy run is then a PL001 finding).
    """
    by_id = {str(it["id"]): it for it in window}
    names = _Names(by_id)
    placed: set[str] = set()
    out: list[Obj] = []
    pending: list[int] = []  # positions of summaries, sized once the removals are known
    for o in outcomes:
        if isinstance(o, Added):
            item: Obj = {"id": names.fresh(f"{o.base}@{pass_no}"), "kind": "prose"}
            item.update(text=o.text, tokens=estimate(o.text))
            if o.summary:
                pending.append(len(out))
            out.append(item)
            continue
        if o.id not in by_id:
            raise RuntimeError(f"the framework returned a message with the unknown id {o.id!r}")
        if o.id in placed:
            raise RuntimeError(f"the framework returned the message of {o.id!r} twice")
        placed.add(o.id)
        original = by_id[o.id]
        if isinstance(o, Kept):
            out.append(original)
        elif isinstance(o, Cleared):
            call = original.get("call")
            base = f"{call}:cleared" if isinstance(call, str) else f"{o.id}:cleared"
            name = base if base == o.id else names.fresh(base)
            text = o.text + ERROR_MARK if o.error else o.text
            cleared: Obj = {"id": name, "kind": "prose", "text": text, "tokens": estimate(text)}
            if isinstance(call, str):
                cleared["call"] = call
            out.append(cleared)
        else:
            out.append(_edited(original, o.text))
    if pending:
        gone = sum(item_tokens(by_id[i]) for i in by_id if i not in placed)
        for at in pending:
            out[at]["tokens"] = max(1, math.ceil(gone / 4))
    return out


def _edited(original: Obj, text: str) -> Obj:
    """An item whose message the framework rewrote: same id and kind, the new text.

    An observation keeps its kind with the new content (and no digest): an
    observation that no append created, as the importers treat an edited tool
    output.
    """
    item = dict(original)
    item.pop("tokens", None)
    if item.get("kind") == "observation":
        item.pop("digest", None)
        item["content"] = text
    else:
        item["text"] = text
    item["tokens"] = estimate(text)
    return item
