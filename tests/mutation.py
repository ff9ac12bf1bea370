"""Mutation testing of the rules: would the tests notice a broken rule? (``make mutate``)

A small AST mutator makes single-point mutants of ``verifier/rules/*.py`` and
``verifier/check.py`` (a comparison turned around, ``and`` for ``or``, a ``not``
dropped, a constant flipped, a ``continue``, ``return`` or finding left out), runs
the rule tests against each in a copy of the tree with a time limit, and prints the
score per rule family and every mutant no test killed. Survivors of the rule tests
are run again against the wider suite (golden outputs, properties, the CLI), and
what survives that is listed with its line, to be read: a real gap in the tests, or
an equivalent mutant (one that changes nothing a user can see).

Not part of ``make test`` nor of CI: a full run takes tens of minutes.

Usage::

    python tests/mutation.py [--jobs N] [--timeout S] [--only SUBSTR] [--sample N] [--no-wider]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = (
    "verifier/rules/commitments.py",
    "verifier/rules/witnesses.py",
    "verifier/rules/composition.py",
    "verifier/rules/pairing.py",
    "verifier/rules/context.py",
    "verifier/check.py",
)
FAMILY = {
    "commitments.py": "CF",
    "witnesses.py": "WR",
    "composition.py": "CP",
    "pairing.py": "TP",
    "context.py": "shared",
    "check.py": "repair",
}
RULE_TESTS = (
    "tests/golden/test_expected.py",
    "tests/unit/test_second_reading.py",
    "tests/unit/test_third_reading.py",
    "tests/unit/test_merge_rules.py",
)
WIDER_TESTS = (
    "tests/golden/test_golden.py",
    "tests/unit/test_api_plain.py",
    "tests/unit/test_cli.py",
    "tests/unit/test_why_and_messages.py",
    "tests/unit/test_docs.py",
    "tests/properties/test_rewrite_props.py",
    "tests/properties/test_witness_props.py",
    "tests/properties/test_contradiction_props.py",
    "tests/properties/test_third_reading_props.py",
)
COPIED = ("verifier", "tests", "models", "docs", "pyproject.toml", "README.md")

_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True, slots=True)
class Mutant:
    path: str
    index: int
    """The mutation point's place among the points of its file (the order of ast.walk)."""
    line: int
    what: str

    @property
    def family(self) -> str:
        return FAMILY[Path(self.path).name]


def _is_docstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    return isinstance(parent, ast.Expr) and isinstance(node, ast.Constant)


def _points(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every mutation point of a module, with what the mutation does, in a fixed order."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _SWAP:
                    yield node, f"cmp{i}: {type(op).__name__} -> {_SWAP[type(op)].__name__}"
        elif isinstance(node, ast.BoolOp):
            yield (
                node,
                f"{type(node.op).__name__} -> {'Or' if isinstance(node.op, ast.And) else 'And'}",
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "drop not"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, f"{node.value} -> {not node.value}"
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and not _is_docstring(node, parents)
        ):
            yield node, f"{node.value} -> {node.value + 1}"
        elif isinstance(node, ast.Continue):
            yield node, "continue -> pass"
        elif isinstance(node, ast.Break):
            yield node, "break -> pass"
        elif isinstance(node, ast.Return) and node.value is not None:
            if isinstance(parents.get(node), ast.If | ast.For | ast.While):
                yield node, "return -> pass"
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in ("report", "append", "extend", "add", "update", "unknown")
        ):
            yield node, f"drop .{node.value.func.attr}(...)"


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, what: str) -> None:
        self.target = target
        self.what = what

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if node is not self.target:
            return node
        what = self.what
        if isinstance(node, ast.Compare):
            i = int(what[3 : what.index(":")])
            node.ops[i] = _SWAP[type(node.ops[i])]()
        elif isinstance(node, ast.BoolOp):
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        elif isinstance(node, ast.UnaryOp):
            return node.operand
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return ast.copy_location(ast.Constant(not node.value), node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, int):
            return ast.copy_location(ast.Constant(node.value + 1), node)
        else:  # a statement left out
            return ast.copy_location(ast.Pass(), node)
        return node


def mutants(root: Path) -> list[Mutant]:
    out: list[Mutant] = []
    for rel in TARGETS:
        tree = ast.parse((root / rel).read_text("utf-8"))
        for i, (node, what) in enumerate(_points(tree)):
            out.append(Mutant(rel, i, getattr(node, "lineno", 0), what))
    return out


def mutated_source(root: Path, m: Mutant) -> str:
    tree = ast.parse((root / m.path).read_text("utf-8"))
    node, what = list(_points(tree))[m.index]
    new = ast.fix_missing_locations(_Apply(node, what).visit(tree))
    return ast.unparse(new) + "\n"


def _copy(root: Path, dest: Path) -> None:
    for name in COPIED:
        src = root / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis")
            )
        elif src.exists():
            shutil.copy2(src, dest / name)


def _run(copy: Path, tests: tuple[str, ...], timeout: float) -> str:
    """'killed', 'survived' or 'timeout' for the tree in copy."""
    present = [t for t in tests if (copy / t).exists()]
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *present]
    try:
        done = subprocess.run(
            cmd, cwd=copy, env=env, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "killed"


def _worker(
    root: Path, batch: list[Mutant], timeout: float, wider: bool
) -> list[tuple[Mutant, str]]:
    results: list[tuple[Mutant, str]] = []
    with tempfile.TemporaryDirectory(prefix="ctxproof-mutate-") as tmp:
        copy = Path(tmp)
        _copy(root, copy)
        for m in batch:
            target = copy / m.path
            original = target.read_text("utf-8")
            target.write_text(mutated_source(root, m), "utf-8")
            try:
                outcome = _run(copy, RULE_TESTS, timeout)
                if outcome == "survived" and wider:
                    outcome = _run(copy, WIDER_TESTS, timeout * 4)
                    outcome = {"killed": "killed-wider", "timeout": "timeout"}.get(
                        outcome, "survived"
                    )
            finally:
                target.write_text(original, "utf-8")
            results.append((m, outcome))
            print(f"  {outcome:12} {m.path}:{m.line}: {m.what}", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the tree to mutate (a copy is made)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per rule-test run")
    ap.add_argument("--only", default="", help="mutate only files whose path contains this")
    ap.add_argument("--limit", type=int, default=0, help="the first N mutants only")
    ap.add_argument(
        "--sample", type=int, default=1, help="every N-th mutant only (a quicker, fixed sample)"
    )
    ap.add_argument("--no-wider", action="store_true", help="rule tests only")
    args = ap.parse_args(argv)
    root: Path = args.root.resolve()
    todo = [m for m in mutants(root) if args.only in m.path][:: args.sample]
    if args.limit:
        todo = todo[: args.limit]
    start = time.monotonic()
    print(f"{len(todo)} mutants; rule tests: {', '.join(RULE_TESTS)}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="ctxproof-mutate-") as tmp:
        _copy(root, Path(tmp))
        # the tree as it is must pass, or every mutant would count as killed
        for tests in (RULE_TESTS, () if args.no_wider else WIDER_TESTS):
            if tests and _run(Path(tmp), tests, args.timeout * 4) != "survived":
                print(f"the unmutated tree fails {', '.join(tests)}", file=sys.stderr)
                return 2
    batches = [todo[i :: args.jobs] for i in range(args.jobs)]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        parts = pool.map(lambda b: _worker(root, b, args.timeout, not args.no_wider), batches)
        results = sorted(
            (r for part in parts for r in part), key=lambda r: (r[0].path, r[0].line, r[0].index)
        )
    by_family: dict[str, list[str]] = {}
    for m, outcome in results:
        by_family.setdefault(m.family, []).append(outcome)
    print(f"mutation score ({time.monotonic() - start:.0f} s)")
    total = killed = 0
    for family in ("CF", "WR", "CP", "TP", "shared", "repair"):
        outs = by_family.get(family, [])
        if not outs:
            continue
        k = sum(1 for o in outs if o != "survived")
        wide = sum(1 for o in outs if o == "killed-wider")
        total += len(outs)
        killed += k
        print(
            f"  {family:7} {k:4} / {len(outs):4}  {100 * k / len(outs):5.1f}%"
            f"  ({wide} by the wider suite only)"
        )
    if total:
        print(f"  {'all':7} {killed:4} / {total:4}  {100 * killed / total:5.1f}%")
    survivors = [m for m, o in results if o == "survived"]
    if survivors:
        print("survivors:")
        for m in survivors:
            line = (root / m.path).read_text("utf-8").splitlines()[m.line - 1].strip()
            print(f"  {m.path}:{m.line}: {m.what}    | {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
