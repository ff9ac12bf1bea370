"""``ctxproof prove SPEC``: a policy spec proved never to cause the rules it can break.

Calls :func:`verifier.prove.prove` (docs/prove.md).
"""

from __future__ import annotations

import json

import click

from verifier import prove as prove_api
from verifier.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNDECIDED,
    Out,
    format_finding,
    format_option,
)

__all__ = ["prove_cmd"]


_PROVE_EPILOG = """\b
Text output: SPEC: proved (N items, K passes, ...), or for each refuted
property SPEC: counterexample CODE at PATH followed by the finding its trace
audits with (TRACE:LINE: pass N: CODE name [ID,...]: message), or
SPEC: undecided (reason).
JSON output (--format json): one object with spec, result, items, passes,
induction, code, path, reason, seconds, stats.
\b
Exit codes: 0 proved; 1 counterexample; 2 bad spec or usage; 3 undecided
(timeout or unknown); 4 internal error.
"""


@click.command(name="prove", epilog=_PROVE_EPILOG)
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--items",
    type=click.IntRange(1, prove_api.MAX_ITEMS),
    default=prove_api.DEFAULT_ITEMS,
    show_default=True,
    help="Items: appended in all (BMC), or in the state a pass starts from (--induction).",
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
    help="Wall-clock limit in seconds for the whole proof (exit 3 when reached).",
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
    fmt: str,
) -> int:
    """Prove a spec never causes CF001, CF004, WR001, WR002, WR004, WR008, TP001, TP002.

    SPEC is a ctxproof-policy/1 file. Without --induction: bounded model
    checking of --passes passes from the empty window, --items items appended
    in all, at most --appends before each pass. See docs/prove.md.
    """
    from verifier.policies import load_spec

    loaded = load_spec(spec)
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
    elif result.result == "proved":
        obj.line(f"{spec}: proved ({_bounds(result.items, passes, appends, induction)};"
                 f" {len(result.stats['properties'])} properties; {result.seconds:.2f} s)")
    elif result.result == "counterexample":
        for cex in result.counterexamples:
            obj.line(f"{spec}: counterexample {cex.code} at {cex.path}")
            obj.line(format_finding(cex.path, cex.finding))
        if result.reason:
            obj.line(f"{spec}: undecided for the rest ({result.reason})")
    else:
        obj.line(f"{spec}: undecided ({result.reason})")
    if result.result == "proved":
        return EXIT_OK
    return EXIT_FINDINGS if result.result == "counterexample" else EXIT_UNDECIDED


def _bounds(items: int, passes: int, appends: int, induction: bool) -> str:
    if induction:
        return (
            f"by induction: one pass from any state of up to {items} items,"
            " so any number of passes"
        )
    return f"{items} items, {passes} passes, up to {appends} appended before each"
