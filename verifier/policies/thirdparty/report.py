"""Put every framework policy on trial and write ``docs/frameworks.md``.

``make frameworks`` runs ``python -m verifier.policies.thirdparty.report``: it
fuzzes each policy of :data:`~verifier.policies.thirdparty.ADAPTERS` with the
same seeded sessions (``ctxproof fuzz``, docs/fuzz.md), writes each shrunk
counterexample to ``docs/frameworks/NAME/cex-CODE.jsonl``, and writes the page:
a table of findings by rule, rewrites checked and tokens saved per policy, the
known defects (reported publicly or not) and whether the fuzzing shows them, and how each
framework was run. The same arguments give the same page.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from verifier.errors import CtxproofError
from verifier.findings import RULES
from verifier.fsutil import atomic_write, make_folder
from verifier.policies.thirdparty import ADAPTERS, Adapter

__all__ = ["DEFECTS", "Defect", "Trial", "main", "render", "run"]

DISTRIBUTIONS = (
    "langchain-core",
    "langchain",
    "autogen-core",
    "pydantic-ai-harness",
    "pydantic-ai-slim",
)
"""The packages whose versions the page records."""


@dataclass(frozen=True, slots=True)
class Defect:
    """A known defect, where it was reported, and the rule that shows it on one policy."""

    what: str
    reported: str
    policy: str
    """The function name of the policy, as in :data:`ADAPTERS`."""
    codes: tuple[str, ...]
    shown: str
    """Why the rule shows it, when it does."""
    hidden: str
    """Why the rule may not show it in these sessions."""


_LC_TRIM = "langchain-ai/langchain#33245 (fixes proposed: #33265, closed; #35313, open)"
_AG_POP = "microsoft/autogen#7955 and #6789 (fixes proposed, open: #8025, #8171)"
_CLEARED = (
    "no public report found; LangChain's context editing copies the cleared message with"
    " `artifact=None` and the placeholder as content"
)

DEFECTS: tuple[Defect, ...] = (
    Defect(
        "orphaned ToolMessage after `trim_messages`",
        _LC_TRIM,
        "trim_messages_policy",
        ("TP001",),
        "`strategy='last'` keeps a suffix by tokens with no check of tool pairs: when the cut"
        " falls between a call and its result, the result is kept without its call",
        "the simulated agent appends a call and its result side by side, so the cut must fall"
        " exactly between the two; few rewrites do",
    ),
    Defect(
        "orphaned ToolMessage after `trim_messages`, recommended settings",
        _LC_TRIM,
        "trim_messages_human_policy",
        ("TP001",),
        "a suffix that starts on a user message can still hold a result whose call it cut",
        "`start_on='human'` moves the cut forward to a user message, and a call and its result"
        " are never apart around one: the documented settings avoid it (and keep nothing when"
        " no user message fits the budget)",
    ),
    Defect(
        "middle pop leaves a function call without its result (and a result without its call)",
        _AG_POP,
        "token_limited_policy",
        ("TP002", "TP001"),
        "`get_messages()` pops the message at `len // 2` until the rest fits, and repairs only"
        " a result left first: a popped result orphans its call, a popped call its result",
        "a pop must land on one half of a pair whose other half stays",
    ),
    Defect(
        "middle pop, same family: the buffer that keeps the last messages",
        _AG_POP,
        "buffered_policy",
        ("TP001", "TP002"),
        "a suffix could start on a result whose call it cut",
        "it keeps a suffix and drops a result left first, so no pair is split: the defect is"
        " the token-limited context's alone",
    ),
    Defect(
        "middle pop, same family: the head-and-tail context",
        _AG_POP,
        "head_and_tail_policy",
        ("TP001", "TP002"),
        "a head or tail edge could split a pair",
        "it drops a call left last in the head and a result left first in the tail, so no"
        " pair is split",
    ),
    Defect(
        "cleared tool results lose the exit code",
        _CLEARED,
        "clear_tool_uses_policy",
        ("WR008",),
        "a failed result becomes `[cleared]`: its output, its error status and its exit code"
        " leave the window with no record, and nothing says the command failed",
        "no failed result was among the cleared ones",
    ),
    Defect(
        "cleared tool results lose the exit code (pydantic-ai-harness)",
        "no public report found; pydantic-ai-harness's `ClearToolResults` replaces the"
        " content with the placeholder and keeps `metadata`",
        "clear_tool_results_policy",
        ("WR008",),
        "the exit code survives only in the part's `metadata`, which the model never sees:"
        " for the model the failure is gone",
        "no failed result was among the cleared ones",
    ),
)
"""The defects the page checks, and the policy each is checked on."""


NOTES: dict[str, str] = {
    "trim_messages_policy": (
        "Keeps the most recent messages that fit and drops the rest with no record:"
        " commitments (CF001), the rationale of kept decisions (CF004), failed runs (WR008),"
        " which the agent then runs again or contradicts (CP003). A bulky tool output that"
        " alone exceeds the budget empties the window. A cut between a call and its result"
        " keeps an orphaned result (TP001)."
    ),
    "trim_messages_human_policy": (
        "The documented settings for a valid history. The window must start on a user"
        " message: when none of the messages that fit is one, nothing is kept, so it drops"
        " even more than plain `trim_messages`; it never splits a tool pair."
    ),
    "clear_tool_uses_policy": (
        "Removes no message: it blanks all but the 3 most recent tool results to"
        " `[cleared]` and drops their artifact. A cleared failed result is lost evidence"
        " (WR008) that the agent then re-runs (CP003); a claim or invariant witnessed by a"
        " cleared result loses its support (WR001, WR002), a decision citing it its rationale"
        " (CF004). Pairs always hold. It saves little: most of a window is not tool output."
    ),
    "summarization_policy": (
        "Folds the oldest messages into one summary message (the fixed summarizer's text,"
        " sized a quarter of what it folds) and keeps the most recent half budget; its cutoff"
        " never splits a pair. A summary is prose: it asserts nothing, so every commitment"
        " it folds in is dropped (CF001) with its evidence (WR008), and a decision that cited"
        " an earlier summary as its reason loses it when the next summary folds that one in"
        " (CF004). When the folded messages hold no user message, the middleware does not"
        " even call the summarizer: its own trimming of them (`start_on='human'`) leaves"
        " nothing, and the summary reads `Previous conversation was too long to summarize.`"
    ),
    "buffered_policy": (
        "Keeps the most recent messages that fit and drops a result left first: the same"
        " losses as `trim_messages` (CF001, CF004, WR008, CP003), without orphans."
    ),
    "head_and_tail_policy": (
        "Keeps the first messages (a quarter of the budget: where a task statement would"
        " be), a `Skipped N messages.` note and the most recent messages; the middle is"
        " dropped with no record. It never splits a tool pair."
    ),
    "token_limited_policy": (
        "Pops the middle message until the rest fits, so it keeps the oldest and the newest"
        " messages and loses the middle with no record. A popped call or result splits its"
        " pair (TP002, TP001) unless the orphan ends up first."
    ),
    "clear_tool_results_policy": (
        "The same strategy as LangChain's `ClearToolUsesEdit` (all but 3 results blanked to"
        " `[tool result cleared]`), with the same findings; it keeps the part's `metadata`,"
        " exit code included, where the model does not see it."
    ),
    "sliding_window_policy": (
        "Drops the oldest messages down to the shortest recent suffix of half the budget"
        " (with the calls its results answer) and keeps the first user message; it never"
        " splits a pair. It always keeps the newest message, even one that alone exceeds the"
        " budget (the simulated agent's bulky tool outputs do): the window then stays over"
        " budget, hence the small saving. What it drops has no record (CF001, CF004, WR008,"
        " CP003)."
    ),
}
"""What each policy does to a window, and the findings that follow (mechanisms, not counts)."""


@dataclass(frozen=True, slots=True)
class Trial:
    """One policy fuzzed: its counts, and where each counterexample went."""

    adapter: Adapter
    sessions: int = 0
    rewrites: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    findings: tuple[tuple[str, int], ...] = ()
    counterexamples: tuple[tuple[str, str], ...] = ()
    """(code, path of the trace)."""
    error: str | None = None
    """Why the policy did not run (its extra is not installed)."""

    @property
    def function(self) -> str:
        return self.adapter.name.rpartition(":")[2]

    @property
    def slug(self) -> str:
        module = self.adapter.name.partition(":")[0].rpartition(".")[2]
        return f"{module}-{self.function}"

    def count(self, code: str) -> int:
        return dict(self.findings).get(code, 0)


def _slug(adapter: Adapter) -> str:
    return Trial(adapter).slug


def run(
    cex_root: Path,
    *,
    sessions: int,
    passes: int,
    seed_value: int,
    jobs: int = 1,
    adapters: Sequence[Adapter] = ADAPTERS,
    progress: bool = True,
) -> list[Trial]:
    """Fuzz each adapter; its counterexamples go to ``cex_root/SLUG/`` (emptied first)."""
    from verifier.fuzz import fuzz
    from verifier.policies import load_policy

    trials: list[Trial] = []
    for adapter in adapters:
        folder = cex_root / _slug(adapter)
        if folder.exists():
            shutil.rmtree(folder)
        try:
            policy = load_policy(adapter.name)
        except CtxproofError as exc:
            trials.append(Trial(adapter, error=str(exc)))
            continue
        if progress:
            print(f"fuzzing {adapter.name} ...", file=sys.stderr, flush=True)
        report = fuzz(
            policy,
            sessions=sessions,
            passes=passes,
            seed_value=seed_value,
            out_dir=folder,
            jobs=jobs,
            policy_arg=adapter.name,
            card=False,  # the page is the summary: no scorecard or plot per adapter
        )
        trials.append(
            Trial(
                adapter,
                report.sessions,
                report.rewrites,
                report.tokens_before,
                report.tokens_after,
                tuple(sorted(report.findings_by_rule.items())),
                tuple((c.code, c.path) for c in report.counterexamples),
            )
        )
        if progress:
            found = ", ".join(f"{c} {n}" for c, n in sorted(report.findings_by_rule.items()))
            print(f"  {report.rewrites} rewrites: {found or 'no findings'}", file=sys.stderr)
    return trials


def _versions() -> list[str]:
    out = []
    for name in DISTRIBUTIONS:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return out


def _link(path: str, page_dir: Path) -> str:
    target = Path(path)
    try:
        return target.resolve().relative_to(page_dir.resolve()).as_posix()
    except ValueError:
        return target.as_posix()


def _findings_cell(trial: Trial, page_dir: Path) -> str:
    if trial.error is not None:
        return "not run: " + trial.error.replace("|", "\\|")
    if not trial.findings:
        return "none"
    paths = dict(trial.counterexamples)
    cells = []
    for code, n in trial.findings:
        name = f"{code} {RULES.get(code, '')}".strip()
        shown = f"[{name}]({_link(paths[code], page_dir)})" if code in paths else name
        cells.append(f"{shown}: {n:,}")
    return "<br>".join(cells)


def _saved(trial: Trial) -> str:
    if not trial.tokens_before:
        return "–"
    saved = trial.tokens_before - trial.tokens_after
    return f"{saved:,} ({saved / trial.tokens_before:.0%})"


def _defect_rows(trials: Sequence[Trial], page_dir: Path) -> list[str]:
    by_function = {t.function: t for t in trials}
    rows = []
    for d in DEFECTS:
        trial = by_function.get(d.policy)
        if trial is None or trial.error is not None:
            rows.append(f"| {d.what} | {d.reported} | `{d.policy}` | – | not run | – |")
            continue
        counts = [(c, trial.count(c)) for c in d.codes]
        found = sum(n for _, n in counts)
        paths = dict(trial.counterexamples)
        shown = ", ".join(
            f"[{c}]({_link(paths[c], page_dir)}): {n}" if c in paths else f"{c}: {n}"
            for c, n in counts
        )
        verdict = "**yes**" if found else "no"
        why = d.shown if found else d.hidden
        rows.append(f"| {d.what} | {d.reported} | `{d.policy}` | {shown} | {verdict} | {why} |")
    return rows


def render(
    trials: Sequence[Trial],
    *,
    sessions: int,
    passes: int,
    seed_value: int,
    page_dir: Path,
    versions: Sequence[str] | None = None,
) -> str:
    """The page: results, the reported defects, and how each framework was run."""
    shown_versions = ", ".join(versions if versions is not None else _versions())
    lines = [
        "# Framework compaction on trial",
        "",
        "<!-- generated by `make frameworks` (python -m verifier.policies.thirdparty.report);"
        " edit the generator, not this page -->",
        "",
        "Agent frameworks ship their own context compaction: trimming, clearing tool results,"
        " summarizing. ctxproof runs that code, unchanged, as rewrite policies"
        " (`verifier/policies/thirdparty/`) and fuzzes each with the same simulated agent"
        " ([fuzz.md](fuzz.md)): the same seeded sessions, every rewrite audited.",
        "",
        "```",
        "make frameworks   # its own venv (.venv-frameworks) with the extras; rewrites this page",
        "ctxproof fuzz verifier.policies.thirdparty.langchain:trim_messages_policy   # one of them",
        "```",
        "",
        f"This run: {sessions} sessions of up to {passes} rewrites each, seed {seed_value},"
        f" witness mode `support`; {shown_versions}.",
        "",
        "## Results",
        "",
        "Findings are counted per rule over all sessions; each rule links to the shrunk"
        " counterexample, a trace that `ctxproof audit` replays with that finding. Tokens are"
        " summed over all rewrites (before → after), in ctxproof's sizes.",
        "",
        "| policy | runs | rewrites checked | tokens before → after | saved | findings by rule |",
        "|---|---|---|---|---|---|",
    ]
    for t in trials:
        tokens = f"{t.tokens_before:,} → {t.tokens_after:,}" if t.error is None else "–"
        lines.append(
            f"| `{t.adapter.framework}`<br>`{t.function}` | `{t.adapter.runs}` |"
            f" {t.rewrites:,} | {tokens} | {_saved(t)} | {_findings_cell(t, page_dir)} |"
        )
    lines += [
        "",
        "## Known defects",
        "",
        "| defect | reported | policy | rule: findings | shown | why |",
        "|---|---|---|---|---|---|",
        *_defect_rows(trials, page_dir),
        "",
        "## What each policy does to a window",
        "",
    ]
    for t in trials:
        lines += [f"* **`{t.function}`** ({t.adapter.framework}): {NOTES[t.function]}"]
    lines += ["", *_LIMITS.splitlines()]
    lines += ["", *_MAPPING.format(mapping_table=_mapping_table()).splitlines()]
    return "\n".join(lines) + "\n"


_LIMITS = """\
## What these sessions do not exercise

The simulated agent's sessions shape what can show, and how often:

* A tool call and its result are always appended side by side, one result
  per call, one call per assistant message: a cut splits a pair only when it
  falls exactly between the two. Parallel calls (one assistant message, many
  results) would exercise the frameworks' pairing code more.
* A session has no system prompt and no opening task from the user; user
  instructions come now and then. Settings that hinge on a user message
  (`start_on="human"`, `preserve_first_user_message`, the middleware's own
  trimming of what it summarizes) meet few of them.
* Some turns dump one bulky tool output that takes the window up to three
  budgets, often more than a budget by itself: a policy that keeps only what
  fits keeps nothing then, and one that always keeps the newest message
  stays over budget.
* Counts are per finding over all sessions: one dropped commitment is one
  CF001, and an agent that re-runs what it forgot adds CP003s. Compare
  policies by which rules fire and by the shrunk counterexamples, not by the
  raw counts alone."""

_MAPPING = """\
## How items become messages, and come back

Every item is one message, by the importers' conventions read in reverse
([importers.md](importers.md)); the message carries the item's id in the
framework's own id fields, and the way back goes by that id:

{mapping_table}

Ids: LangChain messages carry the item id in `id` (and calls in
`tool_calls[].id` / `tool_call_id`); AutoGen messages have no id field, so a
kept message is recognised as the very object given (calls by
`FunctionCall.id` / `call_id`, checked on the way back); pydantic-ai parts
carry it in `TextPart.id`, `ToolReturnPart.metadata` and the request's
`metadata`.

**Commitments and claims.** No framework has a place for them: they travel
as the agent's own messages (what an agent that states its decisions in its
replies would have in its history). A framework can therefore drop or
summarize them like any message, and CF001, CF004 and the CP findings that
follow count exactly that. A policy that must never lose them would keep
them aside and put them back; none of these frameworks does.

The way back: a message the framework kept is the very same item dict; a tool
result it blanked becomes a prose placeholder `CALLID:cleared` with `call`
(the observation and its evidence are gone, the pairing holds); a message of
its own (a summary, a `Skipped N messages.` note) becomes a prose item
`summary@PASS` or `skipped@PASS`. A summary is sized a quarter of the tokens
it replaced, as if a model had written it; any other new text a quarter of
its characters.

## How each framework was run

Offline and deterministic: no model is called, no network is used.

* **Sizes.** Every framework counts with ctxproof's sizes (an item's
  `tokens`): LangChain's `token_counter` and AutoGen's model client (a
  deterministic counter standing in for the client, which the token-limited
  context uses only to count) return each message's item tokens;
  pydantic-ai-harness counts text with a `tokenizer(text)`, so each message's
  text starts with `[ID] ` and the tokenizer returns that item's tokens.
* **Triggers.** ctxproof runs a policy when the window exceeds the budget;
  each framework is set to trigger at the budget too (`trigger=budget`,
  `max_tokens=budget`, `("tokens", budget)`).
* **LangChain.** `trim_messages(...)` is called on the messages;
  `ClearToolUsesEdit(...).apply(messages, count_tokens=...)` is the edit
  `ContextEditingMiddleware` applies before a model call;
  `SummarizationMiddleware(model=FakeListChatModel(...), summarizer=<fixed>,
  ...).before_model(state, runtime)` with a summarizer that writes a
  deterministic digest (the fake model is never called).
* **AutoGen.** Each context gets the messages as `initial_messages` and is
  asked for `get_messages()`. Message-count contexts are sized to the budget:
  `buffer_size` = the most recent messages that fit; `head_size` = the first
  messages that fit a quarter of it, `tail_size` = the last that fit the rest.
* **pydantic-ai-harness.** The strategy runs through `compact_now` (the
  harness's way to compact outside an agent run) with pydantic-ai's offline
  `TestModel`, which these strategies do not call.
"""


_MAPPING_ROWS: tuple[tuple[str, str, str, str], ...] = (
    (
        "item",
        "LangChain (`langchain_core.messages`)",
        "AutoGen (`autogen_core.models`)",
        "pydantic-ai (`pydantic_ai.messages`)",
    ),
    (
        "a tool call (an item some result names by `call`)",
        "`AIMessage`, one `tool_calls` entry, `id` = item id",
        "`AssistantMessage` with one `FunctionCall(id=item id)`, the text in `thought`",
        "`ModelResponse`: `TextPart(id=item id)` + `ToolCallPart(tool_call_id=item id)`",
    ),
    (
        "a tool result (an item with `call`)",
        '`ToolMessage(tool_call_id=call)`, `status="error"` if failed, `artifact.exit_code`',
        "`FunctionExecutionResultMessage`, one result with `call_id=call`, `is_error`",
        '`ModelRequest` with `ToolReturnPart(tool_call_id=call)`, `outcome="failed"`,'
        " the exit code in `metadata`",
    ),
    (
        "a prose placeholder with `call`",
        "a `ToolMessage` already cleared (`response_metadata.context_editing`)",
        "a result message with the placeholder text",
        "a `ToolReturnPart` holding the placeholder",
    ),
    (
        "an observation from `user` (or any source but system)",
        "`HumanMessage`",
        '`UserMessage(source="user")`',
        "`UserPromptPart`",
    ),
    (
        "an observation from `system` or `developer`",
        "`SystemMessage`",
        "`SystemMessage`",
        "`SystemPromptPart`",
    ),
    (
        "prose, commitment, claim, stub",
        "`AIMessage` (a commitment's, claim's or stub's item in `additional_kwargs[\"ctxproof\"]`)",
        "`AssistantMessage`",
        "`ModelResponse` with a `TextPart` (the item in `metadata`)",
    ),
)
"""How each kind of item travels in each framework (the first row is the header)."""


def _mapping_table() -> str:
    head, *rows = _MAPPING_ROWS
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trial and write the page; exit 0 (findings are the page's content)."""
    parser = argparse.ArgumentParser(
        prog="python -m verifier.policies.thirdparty.report",
        description="Fuzz every framework policy and write docs/frameworks.md.",
    )
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="docs/frameworks.md", help="the page to write")
    args = parser.parse_args(argv)
    page = Path(args.out)
    cex_root = page.parent / page.stem
    make_folder(cex_root, "counterexample folder")
    trials = run(
        cex_root,
        sessions=args.sessions,
        passes=args.passes,
        seed_value=args.seed,
        jobs=args.jobs,
    )
    text = render(
        trials,
        sessions=args.sessions,
        passes=args.passes,
        seed_value=args.seed,
        page_dir=page.parent,
    )
    atomic_write(page, text)
    print(f"wrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
