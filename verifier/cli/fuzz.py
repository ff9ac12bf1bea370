"""``ctxproof fuzz POLICY``: a rewrite policy played against the simulated agent.

Calls :func:`verifier.fuzz.fuzz` (docs/fuzz.md), here or on Ray
(:func:`verifier.distributed.ray_runner`), and writes its outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from verifier.cli.common import (
    EPILOG,
    Out,
    budget_options,
    format_option,
    fuzz_speed_hint,
    mode_option,
    ray_option,
    show_progress,
)
from verifier.fsutil import make_folder

__all__ = ["fuzz"]


@click.command(epilog=EPILOG)
@click.argument("policy_arg", metavar="POLICY")
@click.option(
    "--sessions",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="How many sessions the simulated agent plays.",
)
@click.option(
    "--passes",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Rewrites per session, at most.",
)
@click.option(
    "--seed",
    "seed_value",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Same seed, same sessions, same output.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="ctxproof-fuzz",
    show_default=True,
    help="Where counterexamples, the scorecard and the plot go.",
)
@mode_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (the same output as --jobs 1).",
)
@click.option(
    "--require-fit",
    is_flag=True,
    help="A rewrite that leaves the window over its budget is a finding (PL004"
    " over-budget); without it, such rewrites are counted (over_budget).",
)
@ray_option
@budget_options
@format_option
@click.pass_obj
def fuzz(
    obj: Out,
    policy_arg: str,
    sessions: int,
    passes: int,
    seed_value: int,
    out_dir: str,
    mode: str,
    jobs: int,
    require_fit: bool,
    ray_address: str | None,
    fmt: str,
) -> int:
    """Fuzz a rewrite POLICY with a simulated agent.

    POLICY is path/to/file.py:function, package.module:function, or a spec
    (path/to/spec.toml). For each rule found, the shrunk session is written to
    OUT/cex-CODE.jsonl (ctxproof audit replays it); OUT/scorecard.json and
    OUT/pressure.png summarize the run. Rewrites that leave the window over
    its budget are counted, and with --require-fit each is PL004 over-budget.
    Exit 0: no finding; 1: findings; 2: bad POLICY or usage. See docs/fuzz.md.
    """
    from verifier.fuzz import fuzz as run_fuzz
    from verifier.fuzz import scorecard_text, write_outputs
    from verifier.policies import load_policy

    policy = load_policy(policy_arg)
    make_folder(out_dir, "fuzz output folder")  # a place that refuses it fails now, not later

    def progress(done: int, total: int) -> None:
        show_progress(obj, done, total, "chunks of sessions")

    if obj.stderr.isatty() and (ray_address is not None or jobs > 1):
        new_cluster: bool | None = None
        if ray_address is not None:
            from verifier.distributed import starts_local_cluster

            new_cluster = starts_local_cluster(ray_address)
        hint = fuzz_speed_hint(sessions, jobs, new_cluster)
        if hint is not None:
            obj.progress(f"ctxproof: hint: {hint}")
    runner = None
    if ray_address is not None:
        from verifier.distributed import command_session, ray_runner

        click.get_current_context().with_resource(command_session(ray_address, obj.stderr))
        runner = ray_runner(ray_address)
    report = run_fuzz(
        policy,
        sessions=sessions,
        passes=passes,
        seed_value=seed_value,
        out_dir=out_dir,
        mode=mode,
        jobs=jobs,
        policy_arg=policy_arg,
        progress=progress,
        runner=runner,
        require_fit=require_fit,
    )
    card = write_outputs(report, out_dir)
    if fmt == "json":
        obj.line(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        for text in scorecard_text(report, card["by_pressure"]):
            obj.line(text)
        out = Path(out_dir)
        obj.line(f"scorecard: {out / 'scorecard.json'}, plot: {out / 'pressure.png'}")
    return report.exit_code
