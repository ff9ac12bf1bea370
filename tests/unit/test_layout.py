"""The house stays built (README.md, "Layout"): every module of the package sits in a room
of the README's table, imports only the lower rooms its room's row names (or the ground
floor), never a higher one, not even inside a function, and no imports run in a circle.

Imports are read from the code with ``ast``; nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]

GROUND = ("errors.py", "findings.py", "fsutil.py")
"""The ground floor: every room may import these."""

BEHIND_A_DOOR = {
    "z3": ("encoding", "solver", "prove.smt"),
    "lark": ("grammar",),
    "cvc5": ("crosscheck",),
    "ray": ("distributed",),
}
"""Third-party packages and the only modules (below the package) that may import them."""

Row = tuple[str, tuple[str, ...]]
"""A room (``name.py``, ``package/`` or ``__init__.py``) and the rooms it may import."""


def readme_rows(text: str) -> list[Row]:
    """The rows of the table in the README's "Layout" section, in order."""
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    rows: list[Row] = []
    for line in section.splitlines():
        m = re.fullmatch(r"\| `([^`]+)` \|.*\| (.*) \|", line)
        if m is not None:
            rows.append((m.group(1), tuple(re.findall(r"`([^`]+)`", m.group(2)))))
    return rows


def module_files(package: Path) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    files = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def imported(name: str, path: Path, modules: set[str]) -> set[str]:
    """What a module imports, as dotted names, wherever the import statement is (at the
    top, in a function, under ``TYPE_CHECKING``). ``from pkg import x`` is ``pkg.x``
    when that is a module of the package, else ``pkg``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
    return found


def room_of(module: str, package: str, rooms: list[str]) -> str | None:
    """The room a module sits in: its own ``name.py``, else the innermost ``package/``
    holding it; the package's own ``__init__.py`` is the room ``__init__.py``."""
    if module == package:
        return "__init__.py" if "__init__.py" in rooms else None
    rel = module[len(package) + 1 :].split(".")
    if f"{'/'.join(rel)}.py" in rooms:
        return f"{'/'.join(rel)}.py"
    for k in range(len(rel), 0, -1):
        if f"{'/'.join(rel[:k])}/" in rooms:
            return f"{'/'.join(rel[:k])}/"
    return None


def problems(
    package_dir: Path,
    rows: list[Row],
    ground: tuple[str, ...] = GROUND,
    doors: Mapping[str, tuple[str, ...]] | None = None,
) -> list[str]:
    """Everything in the package that the table does not allow, one message each."""
    package = package_dir.name
    files = module_files(package_dir)
    rooms = [room for room, _ in rows]
    floor = {room: k for k, (room, _) in enumerate(rows)}
    may = {room: {*allowed, *ground} for room, allowed in rows}
    out: list[str] = []
    for room, allowed in rows:
        if rooms.count(room) > 1:
            out.append(f"{room}: has two rows")
        place = package_dir / room
        if not (place.is_dir() if room.endswith("/") else place.is_file()):
            out.append(f"{room}: no such module or package in {package}/")
        for other in allowed:
            if floor.get(other, len(rows)) >= floor[room]:
                out.append(f"{room}: may import {other}, which is not a room below it")
    graph: nx.DiGraph[str] = nx.DiGraph()
    for name, path in files.items():
        graph.add_node(name)
        where = room_of(name, package, rooms)
        shown = path.relative_to(package_dir.parent)
        if where is None:
            out.append(f"{shown}: in no room of the Layout table; give it a row (or a room)")
            continue
        for target in sorted(imported(name, path, set(files))):
            top = target.split(".")[0]
            if doors is not None and top in doors:
                if name.removeprefix(f"{package}.") not in doors[top]:
                    out.append(f"{shown}: imports {top}, which only {', '.join(doors[top])} may")
                continue
            if target not in files or target == name:
                continue
            graph.add_edge(name, target)
            there = room_of(target, package, rooms)
            if there is None or there == where:
                continue
            if floor[there] > floor[where]:
                out.append(
                    f"{shown}: imports {target} ({there}), a room above {where}: a lower room"
                    " never imports a higher one"
                )
            elif there not in may[where]:
                out.append(
                    f"{shown}: imports {target} ({there}), which the row of {where} does not"
                    " list; add it to the row (it is lower) or import something else"
                )
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            cycle = nx.find_cycle(graph.subgraph(component))
            out.append("import circle: " + " -> ".join([*(u for u, _ in cycle), cycle[0][0]]))
    return out


# -- the package ------------------------------------------------------------------------------


def test_the_package_is_the_house_the_readme_describes() -> None:
    rows = readme_rows((ROOT / "README.md").read_text("utf-8"))
    assert len(rows) > 20
    assert problems(ROOT / "verifier", rows, doors=BEHIND_A_DOOR) == []


def test_the_ground_floor_comes_first_and_imports_nothing_above_it() -> None:
    rows = readme_rows((ROOT / "README.md").read_text("utf-8"))
    assert [room for room, _ in rows[: len(GROUND)]] == list(GROUND)
    assert rows[-1][0] == "__init__.py"  # the public API, over everything it names


# -- the checker itself: each rule fires on a package that breaks it, and only then -----------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, "utf-8")
    return package


ROWS: list[Row] = [
    ("errors.py", ()),
    ("low.py", ()),
    ("sub/", ("low.py",)),
    ("high.py", ("low.py", "sub/")),
    ("__init__.py", ()),
]
CLEAN = {
    "errors.py": "",
    "low.py": "from pkg.errors import E\n",
    "sub/__init__.py": "from pkg.sub import a\n",
    "sub/a.py": "from . import b\nfrom ..low import x\n",
    "sub/b.py": "import json\n",
    "high.py": "def f():\n    from pkg import low, sub\n",
}


def test_a_package_that_keeps_to_its_table_has_no_problem(tmp_path: Path) -> None:
    assert problems(_package(tmp_path, CLEAN), ROWS, ground=("errors.py",)) == []


def test_an_upward_import_inside_a_function_is_caught(tmp_path: Path) -> None:
    files = {**CLEAN, "low.py": "def f():\n    import pkg.high\n"}
    found = problems(_package(tmp_path, files), ROWS, ground=("errors.py",))
    assert found[0] == (
        "pkg/low.py: imports pkg.high (high.py), a room above low.py: a lower room never"
        " imports a higher one"
    )
    # high imports low, so the arrow back also closes a circle
    assert found[1:] in (
        ["import circle: pkg.high -> pkg.low -> pkg.high"],
        ["import circle: pkg.low -> pkg.high -> pkg.low"],
    )


def test_an_arrow_the_row_does_not_list_is_caught(tmp_path: Path) -> None:
    rows = [*ROWS[:3], ("high.py", ("sub/",)), ROWS[4]]
    assert problems(_package(tmp_path, CLEAN), rows, ground=("errors.py",)) == [
        "pkg/high.py: imports pkg.low (low.py), which the row of high.py does not list; add"
        " it to the row (it is lower) or import something else"
    ]


def test_a_circle_inside_a_room_is_caught(tmp_path: Path) -> None:
    files = {**CLEAN, "sub/b.py": "from pkg.sub.a import y\n"}
    found = problems(_package(tmp_path, files), ROWS, ground=("errors.py",))
    assert len(found) == 1 and found[0].startswith("import circle: ")
    assert set(found[0].removeprefix("import circle: ").split(" -> ")) == {"pkg.sub.a", "pkg.sub.b"}


def test_a_module_without_a_room_and_a_row_that_is_wrong_are_caught(tmp_path: Path) -> None:
    files = {**CLEAN, "stray.py": ""}
    rows = [*ROWS[:3], ("high.py", ("low.py", "sub/", "__init__.py")), ROWS[4], ("gone.py", ())]
    assert problems(_package(tmp_path, files), rows, ground=("errors.py",)) == [
        "high.py: may import __init__.py, which is not a room below it",
        "gone.py: no such module or package in pkg/",
        "pkg/stray.py: in no room of the Layout table; give it a row (or a room)",
    ]


def test_a_third_party_package_outside_its_door_is_caught(tmp_path: Path) -> None:
    files = {**CLEAN, "low.py": "import z3\n", "sub/b.py": "def f():\n    import z3.z3util\n"}
    doors = {"z3": ("low",)}
    assert problems(_package(tmp_path, files), ROWS, ground=("errors.py",), doors=doors) == [
        "pkg/sub/b.py: imports z3, which only low may"
    ]
