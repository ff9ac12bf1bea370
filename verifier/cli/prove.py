"""``ctxproof prove SPEC``: a policy spec proved never to cause the rules it can break.

Calls :func:`verifier.prove.prove` (docs/prove.md).
"""

from __future__ import annotations

import json
from typing import Any

import click
from click.core import ParameterSource

from verifier import prove as prove_api
from verifier.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNDECIDED,
    Out,
    format_finding,
    format_option,
)
from verifier.prove import search as suggest_api

__all__ = ["prove_cmd"]


_PROVE_EPILOG = """\b
Text output: SPEC: proved (N items, K passes, ...), or for each refuted
property SPEC: counterexample CODE at PATH followed by the finding its trace
audits with (TRACE:LINE: pass N: CODE name [ID,...]: message), or
SPEC: undecided (reason).
JSON output (--format json): one object with spec, result, items, passes,
induction, code, path, reason, seconds, stats.
\b
With --suggest, for each suggestion: suggestion K (E edits, proved ...): PATH,
its edits one a line, the tokens on the fuzz sessions (original and
suggested) and what the sessions found; then a search line. JSON adds
original {tokens_before, tokens_after, ...}, suggestions [{path, edits, proved,
tokens_before, tokens_after, ...}] best first, and search.
\b
Exit codes: 0 proved; 1 counterexample (with --suggest too); 2 bad spec or
usage; 3 undecided (timeout or unknown); 4 internal error.
"""


@click.command(name="prove", epilog=_PROVE_EPILOG)
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--items",
    type=click.IntRange(1, prove_api.MAX_ITEMS),
    default=prove_api.DEFAULT_ITEMS,
    show_default=True,
    help="Items: in each window as a pass starts (BMC), or in the state a pass starts from"
    " (--induction).",
)
@click.option(
    "--passes",
    type=click.IntRange(1, prove_api.MAX_PASSES),
    default=prove_api.DEFAULT_PASSES,
    show_default=True,
    help="Passes of bounded model checking from the empty window.",
)
@click.option(
    "--appends",
    type=click.IntRange(1, prove_api.MAX_APPENDS),
    default=prove_api.DEFAULT_APPENDS,
    show_default=True,
    help="Items appended at most before each pass (BMC).",
)
@click.option(
    "--induction",
    is_flag=True,
    help="Prove one pass from any state of up to --items items: covers any number of passes.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=prove_api.DEFAULT_OUT,
    show_default=True,
    help="Where counterexample traces (cex-CODE.jsonl) go.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help=f"Wall-clock limit in seconds for the whole proof (exit 3 when reached)."
    f"  [default: {prove_api.DEFAULT_TIMEOUT:g}]",
)
@click.option(
    "--suggest",
    is_flag=True,
    help="When refuted: search the fewest edits that make the spec proved, write each as"
    " OUT/suggested-K.toml, ranked by tokens saved on fuzz sessions.",
)
@click.option(
    "--sessions",
    type=click.IntRange(min=1),
    default=suggest_api.DEFAULT_SESSIONS,
    show_default=True,
    help="--suggest: fuzz sessions each suggestion (and the original) is measured on.",
)
@click.option(
    "--seed",
    "seed_value",
    type=click.IntRange(min=0),
    default=suggest_api.DEFAULT_SEED,
    show_default=True,
    help="--suggest: the seed of those sessions (as ctxproof fuzz --seed).",
)
@click.option(
    "--max-edits",
    type=click.IntRange(min=1),
    default=suggest_api.DEFAULT_MAX_EDITS,
    show_default=True,
    help="--suggest: edits per suggestion, at most.",
)
@click.option(
    "--max-candidates",
    type=click.IntRange(min=1),
    default=suggest_api.DEFAULT_MAX_CANDIDATES,
    show_default=True,
    help="--suggest: candidates the search looks at, at most.",
)
@click.option(
    "--search-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=suggest_api.DEFAULT_SEARCH_TIMEOUT,
    show_default=True,
    help="--suggest: wall-clock limit in seconds for the search.",
)
@format_option
@click.pass_obj
def prove_cmd(
    obj: Out,
    spec: str,
    items: int,
    passes: int,
    appends: int,
    induction: bool,
    out_dir: str,
    timeout: float | None,
    suggest: bool,
    sessions: int,
    seed_value: int,
    max_edits: int,
    max_candidates: int,
    search_timeout: float,
    fmt: str,
) -> int:
    """Prove a spec never causes CF001, CF004, WR001, WR002, WR004, WR008, TP001, TP002.

    SPEC is a ctxproof-policy/1 file. Without --induction: bounded model
    checking of --passes passes from the empty window, at most --appends items
    appended before each pass, windows of at most --items items. With --suggest,
    a refuted spec is repaired: see docs/prove.md, "Suggestions".
    """
    from verifier.policies import load_spec

    if not suggest:
        _search_options_need_suggest()
    loaded = load_spec(spec)
    if timeout is None:  # resolved here, not as the option's default: --help shows it
        timeout = prove_api.DEFAULT_TIMEOUT
    if suggest:
        found = prove_api.suggest(
            loaded,
            items=items,
            passes=passes,
            appends=appends,
            induction=induction,
            timeout=timeout,
            out_dir=out_dir,
            sessions=sessions,
            seed=seed_value,
            max_edits=max_edits,
            max_candidates=max_candidates,
            search_timeout=search_timeout,
            progress=obj.progress,
        )
        if fmt == "json":
            obj.line(json.dumps(found.to_json(spec), ensure_ascii=False))
        else:
            _show_proof(obj, spec, found.original, passes, appends, induction)
            _show_suggestions(obj, found)
        return _exit(found.original)
    result = prove_api.prove(
        loaded,
        items=items,
        passes=passes,
        appends=appends,
        induction=induction,
        timeout=timeout,
        out_dir=out_dir,
    )
    if fmt == "json":
        obj.line(json.dumps(result.to_json(spec), ensure_ascii=False))
    else:
        _show_proof(obj, spec, result, passes, appends, induction)
    return _exit(result)


_SEARCH_OPTIONS = {
    "sessions": "--sessions",
    "seed_value": "--seed",
    "max_edits": "--max-edits",
    "max_candidates": "--max-candidates",
    "search_timeout": "--search-timeout",
}


def _search_options_need_suggest() -> None:
    ctx = click.get_current_context()
    given = [
        flag
        for name, flag in _SEARCH_OPTIONS.items()
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    ]
    if given:
        verb = "needs" if len(given) == 1 else "need"
        raise click.UsageError(f"{', '.join(given)} {verb} --suggest: add it, or leave them out")


def _exit(result: prove_api.ProofResult) -> int:
    if result.result == "proved":
        return EXIT_OK
    return EXIT_FINDINGS if result.result == "counterexample" else EXIT_UNDECIDED


def _show_proof(
    obj: Out,
    spec: str,
    result: prove_api.ProofResult,
    passes: int,
    appends: int,
    induction: bool,
) -> None:
    if result.result == "proved":
        obj.line(f"{spec}: proved ({_bounds(result.items, passes, appends, induction)};"
                 f" {len(result.stats['properties'])} properties; {result.seconds:.2f} s)"
                 f"{_z3_line(result.stats.get('z3'))}")
    elif result.result == "counterexample":
        for cex in result.counterexamples:
            obj.line(f"{spec}: counterexample {cex.code} at {cex.path}")
            obj.line(format_finding(cex.path, cex.finding))
        if result.reason:
            obj.line(f"{spec}: undecided for the rest ({result.reason})")
    else:
        obj.line(f"{spec}: undecided ({result.reason})")


_Z3_SHOWN = ("checks", "assertions", "decisions", "conflicts", "propagations", "max_memory")
"""z3's statistics the text line gives, in this order (JSON ``stats.z3`` has them all)."""


def _z3_line(z3_stats: Any) -> str:
    """``; z3: checks 8, assertions 608, ...``: z3's statistics, when the proof has them."""
    if not isinstance(z3_stats, dict):
        return ""
    shown = [
        f"memory {z3_stats[key]:g} MB" if key == "max_memory" else f"{key} {z3_stats[key]}"
        for key in _Z3_SHOWN
        if key in z3_stats
    ]
    return f"; z3: {', '.join(shown)}" if shown else ""


def _show_suggestions(obj: Out, found: prove_api.SuggestResult) -> None:
    if found.original.result == "proved":
        return
    before, after = found.cost.tokens_before, found.cost.tokens_after
    for k, s in enumerate(found.suggestions, 1):
        edits = _count(len(s.edits), "edit")
        obj.line(f"suggestion {k} ({edits}, proved {_proof(s.proof)}): {s.path}")
        for e in s.edits:
            obj.line(f"  {e.text()}")
        obj.line(
            f"  tokens on {found.sessions} sessions: original {before:,} -> {after:,};"
            f" suggested {s.tokens_before:,} -> {s.tokens_after:,}"
        )
        findings = s.cost.findings_by_rule
        if findings:
            shown = ", ".join(f"{code} {n}" for code, n in sorted(findings.items()))
            obj.line(f"  the sessions show: {shown}")
        else:
            obj.line("  the sessions show no finding")
    if not found.suggestions:
        obj.line(f"no suggestion: {found.reason}")
        return
    line = (
        f"search: {_count(found.candidates, 'candidate')} with up to"
        f" {_count(found.edits, 'edit')}, {found.proofs} given to z3 (the rest replayed a known"
        f" counterexample), sessions seeded {found.seed}; {found.seconds:.1f} s"
    )
    if found.undecided:
        line += f"; {found.undecided} undecided"
    if found.reason:
        line += f" ({found.reason})"
    obj.line(line)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _proof(p: prove_api.ProofResult) -> str:
    if p.induction:
        return f"by induction at N={p.items}"
    return f"at N={p.items}, K={p.passes}, A={p.appends}"


def _bounds(items: int, passes: int, appends: int, induction: bool) -> str:
    if induction:
        return (
            f"by induction: one pass from any state of up to {items} items,"
            " so any number of passes"
        )
    return f"{items} items, {passes} passes, up to {appends} appended before each"
