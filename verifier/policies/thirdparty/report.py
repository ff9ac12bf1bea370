"""Put every framework policy on trial and write ``docs/frameworks.md``.

``make frameworks`` runs ``python -m verifier.policies.thirdparty.report``: it
fuzzes the two baselines (:data:`BASELINES`: drop-oldest with no framework, and
a safe spill-first policy) and each policy of
:data:`~verifier.policies.thirdparty.ADAPTERS` with the same seeded sessions
(``ctxproof fuzz``, docs/fuzz.md), writes each shrunk counterexample to
``docs/frameworks/NAME/cex-CODE.jsonl`` and the plot of tokens kept against
findings per rewrite to ``docs/frameworks/tradeoff.png``, and writes the page:
per policy the rewrites checked, tokens kept and findings by rule, each rule
said to be shared with drop-oldest (any trimming of that shape causes it) or
the framework's own; the known defects with their upstream reports and
whether the fuzzing shows them; what each framework keeps of a message it
changes; and how each framework was run. The same arguments at the pinned
versions (docs/frameworks/constraints.txt) give the same page, byte for byte.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifier.errors import CtxproofError
from verifier.findings import RULES
from verifier.fsutil import atomic_write, make_folder
from verifier.policies.thirdparty import ADAPTERS, Adapter

if TYPE_CHECKING:
    from collections.abc import Iterable

    from verifier.fuzz import SessionResult
    from verifier.policies import Policy

__all__ = [
    "BASELINES",
    "DEFECTS",
    "Defect",
    "Trial",
    "main",
    "plot",
    "render",
    "run",
    "shared_findings",
    "split",
]

Obj = dict[str, Any]

BASELINES: tuple[Adapter, ...] = (
    Adapter(
        "models/policies/keep_recent.py:keep_recent",
        "none (baseline)",
        "drop the oldest items until the window fits",
        "",
    ),
    Adapter(
        "models/policies/spill_first.py:spill_first",
        "none (baseline)",
        "spill the oldest items to the store, stubs in their place, until it fits",
        "",
    ),
)
"""The two rows every framework is compared with, run on the same sessions: the plainest
trimming (drop-oldest, no framework; the reference for "shared" findings) and a safe
policy (spill-first: nothing is lost, the store keeps it). They are the repository's own
models (``models/policies/``): the report runs from the repository's root."""

DROP_OLDEST = BASELINES[0]
PINS = "frameworks/constraints.txt"
"""The pinned versions, beside the page."""
PLOT = "frameworks/tradeoff.png"
"""The plot, beside the page."""
RESULTS = "frameworks/results.json"
"""The run's numbers, beside the page: ``--render-only`` writes the page again from them."""

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
_LC_SUMMARY = (
    "langchain-ai/langchain#38352 (reproduced with langchain 1.5.2 on `[Human, AI(call c1),"
    " AI(call c2), Tool c1, Tool c2, AI]`, `keep=('messages', 3)`: `Tool c1` is kept without"
    " its call)"
)
_AG_POP = "microsoft/autogen#7955 and #6789 (fixes proposed, open: #8025, #8171)"
_CLEARED = (
    "no public report found; LangChain's context editing copies the cleared message with"
    " `artifact=None` and the placeholder as content, keeping `status`"
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
        " are apart around one only when the result arrives after a user message: the"
        " documented settings mostly avoid it (and keep nothing when no user message fits)",
    ),
    Defect(
        "the summarization cutoff orphans a ToolMessage when one turn issues parallel calls",
        _LC_SUMMARY,
        "summarization_policy",
        ("TP001",),
        "`_find_safe_cutoff_point` guards only a cutoff that lands on results, moving it back"
        " to the nearest AIMessage that issued any of them; with one turn's calls in separate"
        " AIMessages, a cutoff between two of them, or moved back to the nearest one, keeps"
        " the earlier calls' results without their calls",
        "the cutoff must land on the results of calls issued in separate AIMessages",
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
        "a result that arrived after other messages is kept when the suffix starts on those"
        " messages, and its call is cut",
        "it keeps a suffix of whole messages (one turn's calls are one message) and drops a"
        " result message left first: only a result that arrives after other messages can be"
        " split from its call, and few cuts land there",
    ),
    Defect(
        "middle pop, same family: the head-and-tail context",
        _AG_POP,
        "head_and_tail_policy",
        ("TP001", "TP002"),
        "a head or tail edge splits a pair when a result arrives after other messages, or"
        " the head ends on calls whose results lie in the tail",
        "it drops a call left last in the head and a result left first in the tail, so a"
        " pair is split only around other messages",
    ),
    Defect(
        "cleared tool results lose the exit code",
        _CLEARED,
        "clear_tool_uses_policy",
        ("WR008",),
        'a failed result becomes `[cleared] (error)`: the copy keeps `status="error"`, so the'
        " model still sees that the call failed, but its output and its exit code (in"
        " `artifact`) leave the window with no record",
        "no failed result was among the cleared ones",
    ),
    Defect(
        "cleared tool results lose the exit code (pydantic-ai-harness)",
        "no public report found; pydantic-ai-harness's `ClearToolResults` replaces the"
        " content with the placeholder and keeps `metadata`",
        "clear_tool_results_policy",
        ("WR008",),
        "a failed result becomes `[tool result cleared] (error)`: the part keeps"
        ' `outcome="failed"`, so the model still sees that the call failed, but its output'
        " is gone and the exit code survives only in `metadata`, which the model never sees",
        "no failed result was among the cleared ones",
    ),
)
"""The defects the page checks, and the policy each is checked on."""


NOTES: dict[str, str] = {
    "keep_recent": (
        "The plainest trimming, with no framework: whole items, oldest first, until the"
        " window fits. What it drops has no record (CF001, CF004, WR008, and the CP findings"
        " of an agent that no longer sees them); a cut between a call and its result keeps"
        " the result alone (TP001). The reference for what is shared."
    ),
    "spill_first": (
        "Safe: the oldest items go to the durable store and a stub stays in the window in"
        " their place, so nothing is lost (the agent can retrieve a stubbed item, and the"
        " checks read it through the store). What it costs is the store, and a stub's tokens."
    ),
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
        " even more than plain `trim_messages`. It splits a tool pair only when a result"
        " arrives after a user message that came after its call."
    ),
    "clear_tool_uses_policy": (
        "Removes no message: it blanks all but the 3 most recent tool results to"
        " `[cleared]` and drops their artifact; the copy keeps `status`, so a failed one reads"
        " `[cleared] (error)`. It skips a result whose nearest AIMessage before it is not its"
        " call (a result after a sibling call or another message stays whole). A cleared"
        " failed result is still lost evidence, its output and exit code gone (WR008), that"
        " the agent then re-runs (CP003); a claim or invariant witnessed by a"
        " cleared result loses its support (WR001, WR002), a decision citing it its rationale"
        " (CF004). Pairs always hold. It saves little: most of a window is not tool output."
    ),
    "summarization_policy": (
        "Folds the oldest messages into one summary message (the fixed summarizer's text,"
        " sized a quarter of what it folds) and keeps the most recent half budget. Its cutoff"
        " keeps a pair whole when the call is one message before its results, and orphans"
        " results when one turn's parallel calls are separate AIMessages (langchain#38352,"
        " TP001). A summary is prose: it asserts nothing, so every commitment"
        " it folds in is dropped (CF001) with its evidence (WR008), and a decision that cited"
        " an earlier summary as its reason loses it when the next summary folds that one in"
        " (CF004). When the folded messages hold no user message, the middleware does not"
        " even call the summarizer: its own trimming of them (`start_on='human'`) leaves"
        " nothing, and the summary reads `Previous conversation was too long to summarize.`"
    ),
    "buffered_policy": (
        "Keeps the most recent messages that fit and drops a result message left first:"
        " the same losses as `trim_messages` (CF001, CF004, WR008, CP003). One turn's"
        " parallel calls are one message, so a cut never separates them from their results"
        " unless a result arrived after other messages."
    ),
    "head_and_tail_policy": (
        "Keeps the first messages (a quarter of the budget: where the system prompt and the"
        " user's task are), a `Skipped N messages.` note and the most recent messages; the"
        " middle is dropped with no record. It drops a call left last in the head and a"
        " result left first in the tail; a pair is split only around other messages."
    ),
    "token_limited_policy": (
        "Pops the middle message until the rest fits, so it keeps the oldest and the newest"
        " messages and loses the middle with no record. A popped call or result splits its"
        " pair (TP002, TP001) unless the orphan ends up first."
    ),
    "clear_tool_results_policy": (
        "The same strategy as LangChain's `ClearToolUsesEdit` (all but 3 results blanked to"
        " `[tool result cleared]`, a failed one `[tool result cleared] (error)`: the part"
        " keeps `outcome`), with the same findings; it keeps the part's `metadata`, exit code"
        " included, where the model does not see it."
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
    shared: tuple[tuple[str, int], ...] = ()
    """Of each rule's findings, how many drop-oldest makes too (:func:`shared_findings`)."""

    @property
    def function(self) -> str:
        return self.adapter.name.rpartition(":")[2]

    @property
    def baseline(self) -> bool:
        return self.adapter in BASELINES

    @property
    def slug(self) -> str:
        if self.baseline:
            return f"baseline-{self.function}"
        module = self.adapter.name.partition(":")[0].rpartition(".")[2]
        return f"{module}-{self.function}"

    def count(self, code: str) -> int:
        return dict(self.findings).get(code, 0)

    def shared_count(self, code: str) -> int:
        return dict(self.shared).get(code, 0)

    @property
    def total(self) -> int:
        """Findings of every rule."""
        return sum(n for _, n in self.findings)

    @property
    def per_rewrite(self) -> float:
        return self.total / self.rewrites if self.rewrites else 0.0

    @property
    def kept(self) -> float:
        """The share of tokens its rewrites kept."""
        return self.tokens_after / self.tokens_before if self.tokens_before else 1.0


def trials_to_json(trials: Sequence[Trial], run: dict[str, int], versions: Sequence[str]) -> str:
    """The run's settings, versions and numbers, as the JSON written beside the page."""
    rows = [
        {
            "policy": t.adapter.name,
            "sessions": t.sessions,
            "rewrites": t.rewrites,
            "tokens_before": t.tokens_before,
            "tokens_after": t.tokens_after,
            "findings_by_rule": dict(t.findings),
            "shared_with_drop_oldest": dict(t.shared),
            "counterexamples": dict(t.counterexamples),
            "error": t.error,
        }
        for t in trials
    ]
    obj = {**run, "versions": list(versions), "trials": rows}
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def trials_from_json(text: str) -> tuple[dict[str, Any], list[Trial]]:
    """What :func:`trials_to_json` wrote: the run's settings and versions, and its trials."""
    obj = json.loads(text)
    by_name = {a.name: a for a in (*BASELINES, *ADAPTERS)}
    trials = [
        Trial(
            by_name[row["policy"]],
            row["sessions"],
            row["rewrites"],
            row["tokens_before"],
            row["tokens_after"],
            tuple(sorted(row["findings_by_rule"].items())),
            tuple(sorted(row["counterexamples"].items())),
            row["error"],
            tuple(sorted(row["shared_with_drop_oldest"].items())),
        )
        for row in obj.pop("trials")
    ]
    return obj, trials


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
    reference: Policy | None = None
    reference_rules: set[str] = set()
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
        found = report.findings_by_rule
        if adapter == DROP_OLDEST:
            reference, reference_rules = policy, set(found)
            shared = dict(found)
        elif reference is not None and found:
            shared = shared_findings(
                policy, reference, reference_rules,
                sessions=sessions, passes=passes, seed_value=seed_value,
            )  # fmt: skip
        else:
            shared = {}
        trials.append(
            Trial(
                adapter,
                report.sessions,
                report.rewrites,
                report.tokens_before,
                report.tokens_after,
                tuple(sorted(found.items())),
                tuple((c.code, c.path) for c in report.counterexamples),
                shared=tuple(sorted(shared.items())),
            )
        )
        if progress:
            said = ", ".join(
                f"{c} {n} ({shared.get(c, 0)} shared)" for c, n in sorted(found.items())
            )
            print(f"  {report.rewrites} rewrites: {said or 'no findings'}", file=sys.stderr)
    return trials


def _versions() -> list[str]:
    out = []
    for name in DISTRIBUTIONS:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return out


def unpinned(pins: Path) -> list[str]:
    """The page's distributions whose installed version is not the pinned one."""
    if not pins.is_file():
        return [f"{pins} is missing"]
    pinned = {}
    for line in pins.read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[re.sub(r"[-_.]+", "-", name).lower()] = version
    out = []
    for name in DISTRIBUTIONS:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "not installed"
        if pinned.get(name) != have:
            out.append(f"{name} {have}, pinned {pinned.get(name, 'nowhere')}")
    return out


def _link(path: str, page_dir: Path) -> str:
    target = Path(path)
    try:
        return target.resolve().relative_to(page_dir.resolve()).as_posix()
    except ValueError:
        return target.as_posix()


def _findings_cell(trial: Trial, page_dir: Path, counts: dict[str, int] | None = None) -> str:
    """The findings by rule (default: all of them, else ``counts``), each rule linked to
    its counterexample."""
    if trial.error is not None:
        return "not run: " + trial.error.replace("|", "\\|")
    paths = dict(trial.counterexamples)
    cells = []
    for code, n in sorted(counts.items()) if counts is not None else trial.findings:
        name = f"{code} {RULES.get(code, '')}".strip()
        shown = f"[{name}]({_link(paths[code], page_dir)})" if code in paths else name
        cells.append(f"{shown}: {n:,}")
    return "<br>".join(cells) if cells else "none"


def split(trial: Trial) -> tuple[dict[str, int], dict[str, int]]:
    """The findings of ``trial`` by rule, split into those drop-oldest makes too (any
    trimming of that shape causes them) and the policy's own (:func:`shared_findings`)."""
    shared, own = {}, {}
    for code, n in trial.findings:
        both = min(n, trial.shared_count(code))
        if both:
            shared[code] = both
        if n - both:
            own[code] = n - both
    return shared, own


def shared_findings(
    policy: Policy,
    reference: Policy,
    reference_rules: Iterable[str],
    *,
    sessions: int,
    passes: int,
    seed_value: int,
) -> dict[str, int]:
    """How many of the policy's findings, rule by rule, the reference makes too.

    The sessions fuzz explored are played again. A finding at a rewrite is shared when the
    reference, given the same window and budget, makes a finding of the same rule about the
    same item (its rewrite checked on its own); a finding at an append (the agent's
    reaction to what an earlier rewrite left: CP001, CP003) is shared when the reference
    shows that rule at all; a policy error (PL) is the policy's own.
    """
    from verifier.fuzz import BACKGROUND, explore_sessions
    from verifier.policies import run_policy

    rules = set(reference_rules)
    counts: dict[str, int] = {}

    def base_findings(before: list[Obj], budget: int) -> set[tuple[str, str]]:
        from verifier.check import check_rewrite
        from verifier.io import item_from_json
        from verifier.store import MemoryStore

        items = [item_from_json(o) for o in before]
        res = run_policy(reference, items, budget)
        if not res.ok:
            return set()
        checked = check_rewrite(
            items, list(res.window), store=MemoryStore(), background=BACKGROUND,
            with_repair=False,
        )  # fmt: skip
        return {(f.code, f.items[0]) for f in checked.findings if f.items}

    def visit(result: SessionResult) -> None:
        budget = int(result.trace[0]["budget"])
        before_at: dict[int, list[Obj]] = {}
        window: list[Obj] = []
        for line, ev in enumerate(result.trace, start=1):
            if ev["event"] == "append":
                window = [*window, *ev["items"]]
            elif ev["event"] == "rewrite":
                before_at[line] = window
                window = list(ev["window"])
        base: dict[int, set[tuple[str, str]]] = {}
        for f in result.findings:
            if f.code.startswith("PL"):
                continue
            line = f.line if f.line is not None else -1
            before = before_at.get(line)
            if before is None:
                hit = f.code in rules
            else:
                if line not in base:
                    base[line] = base_findings(before, budget)
                hit = bool(f.items) and (f.code, f.items[0]) in base[line]
            if hit:
                counts[f.code] = counts.get(f.code, 0) + 1

    explore_sessions(policy, visit, sessions=sessions, passes=passes, seed_value=seed_value)
    return counts


def _saved(trial: Trial) -> str:
    if not trial.tokens_before:
        return "–"
    saved = trial.tokens_before - trial.tokens_after
    return f"{saved:,} ({saved / trial.tokens_before:.0%})"


def plot(trials: Sequence[Trial], path: Path) -> None:
    """Tokens kept against findings per rewrite, one point per policy (what a user
    trades), as a PNG whose bytes depend only on the numbers (no date, no version)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    for t in trials:
        if t.error is not None or not t.rewrites:
            continue
        x, y = 100 * t.kept, t.per_rewrite
        color = "#2e7d32" if t.baseline else "#1565c0"
        ax.scatter([x], [y], s=40, color=color, marker="s" if t.baseline else "o", zorder=3)
        ax.annotate(t.function, (x, y), xytext=(5, 4), textcoords="offset points", fontsize=8)
    ax.set_xlabel("tokens kept by its rewrites (% of the tokens before)")
    ax.set_ylabel("findings per rewrite")
    ax.set_title("What each policy trades: tokens kept against findings (squares: baselines)")
    ax.set_xlim(0, 105)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    atomic_write(path, buffer.getvalue())


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
        f" witness mode `support`; {shown_versions} (every package pinned in"
        f" [{PINS}]({PINS}), which `make frameworks` installs).",
        "",
        "## Results",
        "",
        "Every policy runs on the same seeded sessions, the two baselines first: drop-oldest"
        " with no framework (the plainest trimming) and spill-first (safe: what leaves the"
        " window goes to the store, a stub in its place). Findings are counted per rule over"
        " all sessions, and each rule links to the shrunk counterexample, a trace that"
        " `ctxproof audit` replays with that finding. Each count is split: a finding is"
        " **shared** when drop-oldest, given the same window and budget, makes a finding of"
        " the same rule about the same item (any trimming of that shape causes it: a"
        " commitment held only as an ordinary message is dropped by every suffix trim), and"
        " the framework's **own** otherwise; a finding at an append (the agent re-running or"
        " re-adopting what it no longer sees, CP003; using what lost its evidence, CP001) is"
        " shared when drop-oldest shows that rule at all. Tokens are summed over all rewrites"
        " (before → after), in ctxproof's sizes.",
        "",
        "| policy | runs | rewrites checked | tokens before → after | saved |"
        " findings per rewrite | shared with drop-oldest | its own |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in trials:
        tokens = f"{t.tokens_before:,} → {t.tokens_after:,}" if t.error is None else "–"
        shared, own = split(t)
        if t.error is not None:
            cells = f"{_findings_cell(t, page_dir)} | –"
        elif t.adapter == DROP_OLDEST:
            cells = f"{_findings_cell(t, page_dir)} | (the reference)"
        else:
            cells = f"{_findings_cell(t, page_dir, shared)} | {_findings_cell(t, page_dir, own)}"
        rate = f"{t.per_rewrite:.2f}" if t.error is None else "–"
        lines.append(
            f"| `{t.adapter.framework}`<br>`{t.function}` | `{t.adapter.runs}` |"
            f" {t.rewrites:,} | {tokens} | {_saved(t)} | {rate} | {cells} |"
        )
    lines += [
        "",
        f"![Tokens kept against findings per rewrite, one point per policy]({PLOT})",
        "",
        "What a user trades: the share of tokens each policy's rewrites kept against the"
        " findings per rewrite ([the plot](" + PLOT + "), from the table's numbers). Keeping"
        " everything is safe and saves nothing; the safe baseline saves tokens by moving them"
        " to the store.",
        "",
        "## Known defects",
        "",
        "| defect | reported | policy | rule: findings | shown | why |",
        "|---|---|---|---|---|---|",
        *_defect_rows(trials, page_dir),
        "",
        "## What each framework keeps of a message it changes",
        "",
        *_keeps_table().splitlines(),
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
## What these sessions exercise, and what they do not

The simulated agent's sessions ([fuzz.md](fuzz.md)) have the shapes real ones
have: a system prompt and the user's task first; one turn issuing two to four
tool calls whose results arrive in any order, some after other items; a
failing command retried after a fix; user instructions that constrain later
choices. What that leaves:

* Every item is one message. Parallel calls are therefore separate assistant
  messages, one call each, with their results after them (the shape of the
  langchain#38352 reproduction); a model that returns several `tool_calls` in
  one message gives other cuts: SummarizationMiddleware's cutoff then keeps
  the pair whole, and ClearToolUsesEdit finds every call it looks for.
* For AutoGen and pydantic-ai, one turn's calls are one message and the
  results that follow them one message, as those frameworks hold them; a
  result that arrives after other items is a message of its own after them.
  Their agents add a turn's results as one message right after its calls, so
  the TP findings of `buffered_policy` and `head_and_tail_policy`, which need
  that shape, come from a history those agents do not write themselves.
* Commitments and claims are the agent's own messages (below): a framework
  drops or summarizes them like any message.
* Some turns dump one bulky tool output that takes the window up to three
  budgets, often more than a budget by itself: a policy that keeps only what
  fits keeps nothing then, and one that always keeps the newest message
  stays over budget.
* Counts are per finding over all sessions: one dropped commitment is one
  CF001, and an agent that re-runs what it forgot adds CP003s. Compare
  policies by which rules fire, shared or their own, and by the shrunk
  counterexamples, not by the raw counts alone."""

_KEEPS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "framework: change",
        "kept, and the model sees it",
        "kept, not sent to the model",
        "gone",
        "ctxproof item",
    ),
    (
        "LangChain `ClearToolUsesEdit`: a tool result cleared",
        'the `ToolMessage` itself: `tool_call_id`, `name`, `status` (`"error"` stays), `id`;'
        " content `[cleared]`",
        "`response_metadata.context_editing`",
        "the output, `artifact` (the exit code)",
        "`CALLID:cleared` with `call`, text `[cleared] (error)` when it failed",
    ),
    (
        "LangChain `trim_messages`, `SummarizationMiddleware`: messages dropped or folded",
        "kept messages as they were; a summary message (prose)",
        "–",
        "every dropped or folded message",
        "kept items as they were; `summary@PASS` prose",
    ),
    (
        "pydantic-ai-harness `ClearToolResults`: a tool result cleared",
        'the `ToolReturnPart`: `tool_call_id`, `tool_name`, `outcome` (`"failed"` stays);'
        " content `[tool result cleared]`",
        "`metadata` (the exit code, and a cleared mark)",
        "the output",
        "`CALLID:cleared` with `call`, text `[tool result cleared] (error)` when it failed",
    ),
    (
        "pydantic-ai-harness `SlidingWindowCompaction`: messages dropped",
        "kept messages as they were (pairs kept together, the first user message kept)",
        "–",
        "every dropped message",
        "kept items as they were",
    ),
    (
        "AutoGen contexts: messages left out of the view",
        "kept messages, the very objects given; HeadAndTail's `Skipped N messages.` note",
        "the context's full list (the view is what a model call gets)",
        "every message left out",
        "kept items as they were; `skipped@PASS` prose",
    ),
)
"""What each framework keeps of a message it changes (the first row is the header)."""


def _keeps_table() -> str:
    head, *rows = _KEEPS
    lines = [
        "A framework that changes a message keeps some of it; the adapters carry all of it"
        " back (the error flag included), and the placeholder says what survives. The rules"
        " read what is gone: a cleared failed result that still says `(error)` has lost its"
        " output and exit code, so WR008 applies (the failure's evidence left with no"
        " record), and a claim it witnessed loses its support (WR001).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


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
(the observation and its evidence are gone, the pairing holds), whose text
ends in `(error)` when the framework kept the error flag; a message of
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
        "`AIMessage`, one `tool_calls` entry (`id` = item id, the tool's name, its command),"
        " content empty when the text is `NAME: COMMAND`",
        "`AssistantMessage` with one `FunctionCall(id=item id)`, the text in `thought`",
        "`ModelResponse`: `TextPart(id=item id)` + `ToolCallPart(tool_call_id=item id)`",
    ),
    (
        "a tool result (an item with `call`)",
        '`ToolMessage(tool_call_id=call, name=tool)`, `status="error"` if failed,'
        " `artifact.exit_code`",
        "`FunctionExecutionResultMessage`, one result with `call_id=call`, `name`, `is_error`",
        '`ModelRequest` with `ToolReturnPart(tool_call_id=call, tool_name)`, `outcome="failed"`,'
        " the exit code in `metadata`",
    ),
    (
        "a prose placeholder with `call` (`... (error)`: the flag survived)",
        "a `ToolMessage` already cleared (`response_metadata.context_editing`),"
        ' `status="error"` when it says `(error)`',
        "a result message with the placeholder text, `is_error` when it says `(error)`",
        'a `ToolReturnPart` holding the placeholder, `outcome="failed"` when it says `(error)`',
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
    parser.add_argument(
        "--pins", default=f"docs/{PINS}", help="the pinned versions the run must have"
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help=f"write the page again from the numbers of the last run ({RESULTS}), fuzzing"
        " nothing (after an edit of the page's text)",
    )
    args = parser.parse_args(argv)
    page = Path(args.out)
    cex_root = page.parent / page.stem
    make_folder(cex_root, "counterexample folder")
    if args.render_only:
        settings, trials = trials_from_json((page.parent / RESULTS).read_text("utf-8"))
        text = render(
            trials,
            sessions=settings["sessions"],
            passes=settings["passes"],
            seed_value=settings["seed_value"],
            page_dir=page.parent,
            versions=settings["versions"],
        )
        atomic_write(page, text)
        print(f"wrote {page} from {page.parent / RESULTS}", file=sys.stderr)
        return 0
    drift = unpinned(Path(args.pins))
    if drift:
        print(
            "ctxproof: the installed versions are not the pinned ones"
            f" ({'; '.join(drift)}): the page would not reproduce;"
            " run `make frameworks` (it installs the pins)",
            file=sys.stderr,
        )
        return 2
    trials = run(
        cex_root,
        sessions=args.sessions,
        passes=args.passes,
        seed_value=args.seed,
        jobs=args.jobs,
        adapters=[*BASELINES, *ADAPTERS],
    )
    plot(trials, page.parent / PLOT)
    settings = {"sessions": args.sessions, "passes": args.passes, "seed_value": args.seed}
    versions = _versions()
    atomic_write(page.parent / RESULTS, trials_to_json(trials, settings, versions))
    text = render(
        trials,
        sessions=args.sessions,
        passes=args.passes,
        seed_value=args.seed,
        page_dir=page.parent,
        versions=versions,
    )
    atomic_write(page, text)
    print(f"wrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
