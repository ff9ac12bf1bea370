"""Third-party context compaction, wrapped as ctxproof policies (docs/frameworks.md).

Each module here wraps the compaction code of one agent framework as a
``(window, budget)`` policy: it turns the window into that framework's
messages, runs the framework's own compaction offline and deterministically
(no model is called; a fixed summarizer stands in where one is needed), and
turns what comes back into a window again. Load them by name, as any policy::

    ctxproof fuzz verifier.policies.thirdparty.langchain:trim_messages_policy

========================  ======================  ==========================================
module                    extra                   policies
========================  ======================  ==========================================
``langchain``             ``policies-langchain``  ``trim_messages_policy``,
                                                  ``trim_messages_human_policy``,
                                                  ``clear_tool_uses_policy``,
                                                  ``summarization_policy``
``autogen``               ``policies-autogen``    ``buffered_policy``,
                                                  ``head_and_tail_policy``,
                                                  ``token_limited_policy``
``pydantic_ai``           ``policies-pydantic-ai``  ``clear_tool_results_policy``,
                                                  ``sliding_window_policy``
========================  ======================  ==========================================

The frameworks are imported lazily: importing these modules imports nothing
of theirs. A policy declares the extra it needs; :func:`load_policy
<verifier.policies.load_policy>` checks it first, and a missing one is bad
input (exit 2) naming ``pip install 'ctxproof[EXTRA]'``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from verifier.errors import InputError

__all__ = ["ADAPTERS", "Adapter", "needs", "require"]

F = TypeVar("F", bound=Callable[..., Any])


def require(extra: str, *modules: str) -> None:
    """Import ``modules``; when one is missing, raise the error that names the extra.

    Raises:
        InputError: a module cannot be imported; the message names it and the
            fix is ``pip install 'ctxproof[EXTRA]'``.
    """
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = exc.name or name
            also = f" (no module named {missing!r})" if missing != name else ""
            raise InputError(
                f"it needs {name!r}, which is not installed{also}",
                fix=f"pip install 'ctxproof[{extra}]'",
            ) from None


def needs(extra: str, *modules: str) -> Callable[[F], F]:
    """Mark a policy as needing ``modules``, installed by the extra ``extra``.

    The mark is the attribute ``ctxproof_requires``, a function of no
    arguments that raises :class:`~verifier.errors.InputError` when a module is
    missing; :func:`~verifier.policies.load_policy` calls it before the policy
    is used.
    """

    def mark(function: F) -> F:
        def check() -> None:
            require(extra, *modules)

        function.ctxproof_requires = check  # type: ignore[attr-defined]
        return function

    return mark


@dataclass(frozen=True, slots=True)
class Adapter:
    """One framework policy: how to load it, and what it runs."""

    name: str
    """The policy as ``ctxproof fuzz`` takes it: ``module:function``."""
    framework: str
    """The package whose compaction it runs."""
    runs: str
    """What it calls, with which settings."""
    extra: str


_LC = "verifier.policies.thirdparty.langchain"
_AG = "verifier.policies.thirdparty.autogen"
_PA = "verifier.policies.thirdparty.pydantic_ai"

ADAPTERS: tuple[Adapter, ...] = (
    Adapter(
        f"{_LC}:trim_messages_policy",
        "langchain-core",
        "trim_messages(max_tokens=budget, strategy='last')",
        "policies-langchain",
    ),
    Adapter(
        f"{_LC}:trim_messages_human_policy",
        "langchain-core",
        "trim_messages(max_tokens=budget, strategy='last', start_on='human', include_system=True)",
        "policies-langchain",
    ),
    Adapter(
        f"{_LC}:clear_tool_uses_policy",
        "langchain",
        "ClearToolUsesEdit(trigger=budget, keep=3)",
        "policies-langchain",
    ),
    Adapter(
        f"{_LC}:summarization_policy",
        "langchain",
        "SummarizationMiddleware(trigger=('tokens', budget), keep=('tokens', budget // 2),"
        " summarizer=<fixed>)",
        "policies-langchain",
    ),
    Adapter(
        f"{_AG}:buffered_policy",
        "autogen-core",
        "BufferedChatCompletionContext(buffer_size=<the most recent messages that fit>)",
        "policies-autogen",
    ),
    Adapter(
        f"{_AG}:head_and_tail_policy",
        "autogen-core",
        "HeadAndTailChatCompletionContext(head_size=<fit budget/4>, tail_size=<fit the rest>)",
        "policies-autogen",
    ),
    Adapter(
        f"{_AG}:token_limited_policy",
        "autogen-core",
        "TokenLimitedChatCompletionContext(token_limit=budget, model_client=<counter>)",
        "policies-autogen",
    ),
    Adapter(
        f"{_PA}:clear_tool_results_policy",
        "pydantic-ai-harness",
        "ClearToolResults(max_tokens=budget, keep_pairs=3)",
        "policies-pydantic-ai",
    ),
    Adapter(
        f"{_PA}:sliding_window_policy",
        "pydantic-ai-harness",
        "SlidingWindowCompaction(max_tokens=budget, keep_tokens=budget // 2)",
        "policies-pydantic-ai",
    ),
)
"""Every framework policy, in the order ``docs/frameworks.md`` shows them."""
