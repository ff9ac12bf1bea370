"""The ctxproof pytest plugin: a ``ctxproof`` fixture for a project's own tests.

Installed with ctxproof (entry point ``pytest11``), so any test can ask for it::

    def test_my_compactor_is_safe(ctxproof):
        ctxproof.assert_policy_safe(my_compactor, sessions=50, seed=1)

    def test_this_rewrite(ctxproof):
        ctxproof.assert_rewrite_safe(before_items, after_items)

A failure lists the findings (and, for a policy, the shrunk sessions that
``ctxproof audit`` replays; for a policy error, its exception and the
``ctxproof fuzz POLICY --replay PATH`` that shows its traceback). The policy
runs in a process of its own, as ``ctxproof fuzz`` runs it. Loading the plugin
imports nothing heavy: the solver is loaded when an assertion runs. See
docs/fuzz.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from verifier.check import RewriteResult
    from verifier.fuzz import FuzzReport
    from verifier.store import Store

__all__ = ["CtxproofChecks", "ctxproof"]


class CtxproofChecks:
    """Assertions that a rewrite, or a whole policy, loses nothing."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir

    def assert_rewrite_safe(
        self,
        before: Sequence[Any],
        after: Sequence[Any],
        store: Store | None = None,
        *,
        background: Iterable[str] = (),
        claimed_preserved: Sequence[str] | None = None,
        mode: str = "support",
    ) -> RewriteResult:
        """Fail unless the rewrite of ``before`` into ``after`` is accepted with no finding.

        Windows are lists of item dicts (or Items); the store holds what was
        spilled (default: an empty one).
        """
        from verifier.check import check_rewrite

        result = check_rewrite(
            before,
            after,
            store=store,
            background=background,
            claimed_preserved=claimed_preserved,
            mode=mode,
        )
        if result.findings or not result.accepted:
            lines = [f"the rewrite is {result.verdict}:"]
            lines += [
                f"  {f.code} {f.name} [{','.join(f.items)}]: {f.message}" for f in result.findings
            ]
            lines += [f"  undecided: {u}" for u in result.undecided]
            if result.repair is not None:
                lines.append(
                    f"  repair ({result.repair.verdict}): {'; '.join(result.repair.actions)}"
                )
            raise AssertionError("\n".join(lines))
        return result

    def assert_policy_safe(
        self,
        policy: Callable[..., Any] | str,
        *,
        sessions: int = 50,
        passes: int = 10,
        seed: int = 0,
        out_dir: str | Path | None = None,
        mode: str = "support",
        require_fit: bool = False,
    ) -> FuzzReport:
        """Fuzz the policy; fail when any session makes a finding, or leaves a check
        undecided (the solver's unknown, or its budget spent, is never a pass).

        ``policy`` is a ``(window, budget)`` callable, or a string as the
        command line takes it (``path/to/file.py:function``, ``module:function``,
        ``spec.toml``). The shrunk counterexamples go to ``out_dir`` (default: a
        temporary folder of the test). With ``require_fit`` a rewrite that leaves
        the window over its budget fails it too (PL004 over-budget): a policy
        that keeps everything is safe, and does not pass.
        """
        from verifier.fuzz import fuzz
        from verifier.policies import load_policy
        from verifier.policies.loading import as_policy

        loaded = load_policy(policy) if isinstance(policy, str) else as_policy(policy)
        out = Path(out_dir) if out_dir is not None else self.out_dir
        report = fuzz(
            loaded,
            sessions=sessions,
            passes=passes,
            seed_value=seed,
            out_dir=out,
            mode=mode,
            require_fit=require_fit,
        )
        if report.findings_by_rule or report.undecided:
            raise AssertionError("\n".join(_policy_failure(report, _cli_name(policy))))
        return report


def _policy_failure(report: FuzzReport, policy: str) -> list[str]:
    """The failure message: each rule with its count, its shrunk session and the message of
    its first finding (a PL finding's: the exception's type and text), and how to replay."""
    from verifier.findings import RULES
    from verifier.fuzz import REPLAYABLE

    verdict = "is not safe" if report.findings_by_rule else "is not shown safe"
    lines = [f"policy {report.policy} {verdict}: {report.sessions} session(s), seed {report.seed}"]
    if report.undecided:
        lines.append(
            f"  {report.undecided} check(s) left undecided (the solver's unknown, or its budget"
            " spent): raise CTXPROOF_RLIMIT or CTXPROOF_TIMEOUT"
        )
    shrunk: Mapping[str, Any] = {c.code: c for c in report.counterexamples}
    for code, n in sorted(report.findings_by_rule.items()):
        cex = shrunk.get(code)
        where = ""
        if cex:
            items = f", {','.join(cex.items)}" if cex.items else ""
            where = f"; shrunk session: {cex.path} (pass {cex.pass_}{items})"
        lines.append(f"  {code} {RULES.get(code, '?')}: {n} finding(s){where}")
        if cex and cex.message:
            lines.append(f"    {cex.message}")
    if report.over_budget and "PL004" in report.findings_by_rule:
        lines.append(
            f"  {report.over_budget} of {report.rewrites} rewrite(s) left the window over its"
            " budget"
        )
    codes = set(shrunk)
    if codes - REPLAYABLE:
        lines.append("  replay a rule's session with: ctxproof audit PATH")
    if codes & REPLAYABLE:
        lines.append(
            f"  call the policy again on a PL session's last window, with its traceback:"
            f" ctxproof fuzz {policy} --replay PATH"
        )
    return lines


def _cli_name(policy: Callable[..., Any] | str) -> str:
    """How the command line names the policy: the string given, ``module:function`` for a
    function a module defines, else POLICY."""
    if isinstance(policy, str):
        return policy
    module = getattr(policy, "__module__", None)
    qualname = getattr(policy, "__qualname__", None)
    if (
        isinstance(module, str)
        and isinstance(qualname, str)
        and module != "__main__"
        and "<" not in qualname
    ):
        return f"{module}:{qualname}"
    return "POLICY"


@pytest.fixture
def ctxproof(tmp_path_factory: pytest.TempPathFactory) -> CtxproofChecks:
    """Assertions that a rewrite or a rewrite policy loses nothing (docs/fuzz.md)."""
    return CtxproofChecks(tmp_path_factory.mktemp("ctxproof-fuzz"))
