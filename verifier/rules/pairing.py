"""Tool pairing: TP001 and TP002 (docs/rules.md, "Tool pairing").

A *result* is an observation with ``call`` (a tool's output) or a prose item
with ``call`` (a placeholder left where an output was); its ``call`` names the
item that requested it (an assistant's tool call). Provider APIs reject a
history where one half of a pair is kept without the other, and a model
misreads it. A rewrite is charged only with the pairs it orphaned: an orphan
that an append made, or that the window before already held, is not its doing.
A stub is an entry with its id whether or not the store resolves it: a call whose
result stands as a stub the store cannot resolve is not orphaned (the result is known
by its id, as the session last saw it). That stub itself is charged with nothing but
WR006 (RewriteContext.report).
"""

from __future__ import annotations

from verifier.rules.context import RewriteContext, WindowView, cite

__all__ = ["check_pairing", "results_by_call"]


def _call_of(ctx: RewriteContext, view: WindowView, item_id: str) -> str | None:
    it = view.get(item_id)
    if it is None:
        return None
    real = ctx.stands_for(it, view.resolve(item_id))
    return real.call if real is not None else None


def results_by_call(ctx: RewriteContext, view: WindowView) -> dict[str, list[str]]:
    """call id -> ids of the results in the window (item or stub), in window order."""
    out: dict[str, list[str]] = {}
    stands_for = ctx.stands_for
    for it, real in view.resolved():
        if real is None:  # a stub the store cannot resolve (stands_for keeps any other)
            real = stands_for(it, real)
        call = real.call if real is not None else None
        if call is not None:
            out.setdefault(call, []).append(it.id)
    return out


def check_pairing(ctx: RewriteContext) -> None:
    """TP001 orphaned-tool-result and TP002 orphaned-tool-call for one rewrite."""
    before, after = ctx.before, ctx.after
    results_before = results_by_call(ctx, before)
    results_after = results_by_call(ctx, after)
    for it, real in after.resolved():
        call = real.call if real is not None else None
        if call is None or call in after:
            continue
        if it.id in before and _call_of(ctx, before, it.id) == call and call not in before:
            continue  # an orphan already: not this rewrite's doing
        ctx.report(
            "TP001",
            [it.id, call],
            f"result {it.id!r} is kept while the call {call!r} that requested it is not;"
            f" keep {call!r} (a stub is enough), or drop the result with it",
        )
    answered = set(results_before) | set(ctx.history.answered)
    for it in after.items:
        call = it.id
        if call not in answered or results_after.get(call):
            continue
        left = results_before.get(call, [])
        if call in before and not left:
            continue  # it had no result in the window before: not this rewrite's doing
        if not left:
            # its results seen last: those not in the window, or there answering another call
            # (an id used again)
            left = [
                r
                for r in ctx.history.answered.get(call, [])
                if r not in after or _call_of(ctx, after, r) != call
            ]
        named = f" {cite(left)}" if left else ""
        ctx.report(
            "TP002",
            [call, *left],
            f"call {call!r} is kept while its result{'s' if len(left) > 1 else ''}{named}"
            f" {'are' if len(left) > 1 else 'is'} not; keep a result (a stub or"
            " a placeholder with 'call' is enough), or drop the call with it",
        )
