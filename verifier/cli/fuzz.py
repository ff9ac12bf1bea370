"""``ctxproof fuzz POLICY``: a rewrite policy played against the simulated agent.

Calls :func:`verifier.fuzz.fuzz` (docs/fuzz.md), here or on Ray
(:func:`verifier.distributed.ray_runner`); it writes the output set itself. With
``--replay`` the policy is called again on a PL counterexample's last window
(:func:`verifier.policies.replay.replay_policy`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from verifier.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    FUZZ_EPILOG,
    Out,
    budget_options,
    format_option,
    fuzz_speed_hint,
    mode_option,
    ray_option,
    show_progress,
)
from verifier.findings import RULES

if TYPE_CHECKING:
    from verifier.policies.isolated import PolicyProcess

__all__ = ["fuzz"]


@click.command(epilog=FUZZ_EPILOG)
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
@click.option(
    "--policy-timeout",
    "policy_timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds one call of the policy may take (it runs in a process of its own);"
    " a call past it is PL003.",
)
@click.option(
    "--replay",
    "replay",
    type=click.Path(dir_okay=False),
    help="Call the policy again, in this process, on the last window of a PL"
    " counterexample (cex-PL00N.jsonl) and show its traceback.",
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
    policy_timeout: float,
    replay: str | None,
    ray_address: str | None,
    fmt: str,
) -> int:
    """Fuzz a rewrite POLICY with a simulated agent.

    POLICY is path/to/file.py:function, package.module:function, or a spec
    (path/to/spec.toml). For each rule found, the shrunk session is written to
    OUT/cex-CODE.jsonl (ctxproof audit replays it); OUT/scorecard.json and
    OUT/pressure.png summarize the run. Rewrites that leave the window over
    its budget are counted, and with --require-fit each is PL004 over-budget.
    With --replay FILE, the policy is called again on FILE's last window and
    what it did is shown. Exit 0: no finding; 1: findings; 2: bad POLICY or
    usage. See docs/fuzz.md.
    """
    launched = None
    if replay is None and ray_address is None and jobs == 1:
        # the policy's process loads it while this one imports the fuzzer
        launched = _launched(policy_arg, policy_timeout)
        if launched is not None:
            click.get_current_context().with_resource(launched)
    from verifier.fuzz import fuzz as run_fuzz
    from verifier.fuzz import scorecard_text
    from verifier.policies import load_policy
    from verifier.pressure import summarize_pressure

    if replay is not None:
        from verifier.policies.replay import replay_apart

        def announce(items: int, budget: int, pass_no: int) -> None:
            if fmt == "text":  # said before the call: a policy may end the process
                obj.line(
                    f"{replay}: calling {policy_arg} on its last window ({items} item(s),"
                    f" budget {budget}, pass {pass_no})"
                )
                obj.stdout.flush()

        shown = replay_apart(
            load_policy(policy_arg), replay, timeout=policy_timeout, announce=announce
        )
        if fmt == "json":
            obj.line(json.dumps(shown.to_json(), ensure_ascii=False))
        else:
            if shown.traceback:
                obj.stdout.write(shown.traceback)
            head = f"{replay}:{shown.line}: pass {shown.pass_}: "
            if shown.code is None:
                obj.line(head + shown.message)
            else:
                named = ",".join(
                    i if i.isprintable() else i.encode("unicode_escape").decode()
                    for i in shown.items
                )
                obj.line(f"{head}{shown.code} {RULES[shown.code]} [{named}]: {shown.message}")
        return EXIT_OK if shown.code is None else EXIT_FINDINGS

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
        policy_arg if launched is None else launched,
        sessions=sessions,
        passes=passes,
        seed_value=seed_value,
        out_dir=out_dir,
        mode=mode,
        jobs=jobs,
        policy_arg=policy_arg,
        progress=progress,
        runner=runner,
        policy_timeout=policy_timeout,
        require_fit=require_fit,
    )
    if fmt == "json":
        obj.line(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        for text in scorecard_text(report, summarize_pressure(report.pressures)):
            obj.line(text)
        out = Path(out_dir)
        obj.line(f"scorecard: {out / 'scorecard.json'}, plot: {out / 'pressure.png'}")
    return report.exit_code


def _launched(policy_arg: str, timeout: float) -> PolicyProcess | None:
    """The process a Python policy runs in, launched now (None for a spec, which runs in
    this process, and where a process of its own is not POSIX): it imports the policy
    while this process imports the fuzzer. An error loading it is reported when the
    run starts, as it would be without."""
    from verifier.policies.isolated import PolicyProcess, runs_apart

    if not runs_apart(policy_arg, timeout):
        return None

    proc = PolicyProcess(policy_arg, timeout)
    proc.launch()
    return proc
