"""Loading an extractor named on the command line: ``MODULE:FUNCTION`` or ``path.py:function``.

An extractor is ``extract(message, context)``: it gets each message of a
history as the format holds it and returns the commitments and claims it
gives (``docs/importers.md``, "Extractors"). Loading one runs its module's
code, as loading a policy does; every way loading can fail is an
:class:`~verifier.errors.InputError` (exit 2) naming the extractor and the fix.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from pathlib import Path
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import Extractor, one_line

__all__ = ["load_extractor"]

_USAGE = "name an extractor as path/to/file.py:function or package.module:function"
_counter = itertools.count(1)


def load_extractor(arg: str) -> Extractor:
    """The function ``arg`` names (``path/to/file.py:function`` or ``module:function``).

    A file is imported under a module name of its own with its folder first on
    ``sys.path`` (so it may import the modules beside it); a module with
    :func:`importlib.import_module`.

    Raises:
        InputError: the name has no ``:function``, the file or module is missing
            or fails to import, or the function is missing, not callable, or
            cannot be called as ``extract(message, context)``.
    """
    target, sep, func_name = arg.rpartition(":") if isinstance(arg, str) else ("", "", "")
    if not sep or not target or not func_name:
        raise InputError(f"extractor {arg!r} names no function", fix=_USAGE)
    is_file = target.endswith(".py") or "/" in target or "\\" in target
    with contextlib.redirect_stdout(sys.stderr):  # its prints are no part of the trace
        module = _import_file(target) if is_file else _import_module(target, arg)
    obj: Any = module
    for part in func_name.split("."):
        if not hasattr(obj, part):
            raise InputError(
                f"extractor module has no {func_name!r}",
                file=target,
                fix="name a function the module defines, after the ':'",
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(
            f"{func_name!r} is a {type(obj).__name__}, not a function",
            file=target,
            fix="name a function extract(message, context)",
        )
    try:
        inspect.signature(obj).bind(None, None)
    except TypeError as exc:
        raise InputError(
            f"extractor {func_name!r} cannot be called as extract(message, context): {exc}",
            file=target,
            fix="define it as def extract(message, context): ...",
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): calling it will tell
    found: Extractor = obj

    def function(message: Any, context: Any) -> Any:
        # what it prints goes to stderr: stdout may be the trace (import without -o)
        with contextlib.redirect_stdout(sys.stderr):
            return found(message, context)

    return function


def _import_file(path_text: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise InputError(
            f"extractor file {what}", file=path_text, fix="check the path before the ':'"
        )
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"ctxproof_extractor_{next(_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path.resolve())
    if spec is None or spec.loader is None:
        raise InputError("cannot be imported as a Python module", file=path_text, fix=_USAGE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[module_name]
        raise InputError(
            f"extractor module failed to import: {one_line(exc)}",
            file=path_text,
            fix="fix the module so that importing it succeeds",
        ) from None
    return module


def _import_module(name: str, arg: str) -> Any:
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        raise InputError(f"{arg!r} is not an extractor name", fix=_USAGE)
    here = os.getcwd()  # the current folder first, as python -m verifier has it
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise InputError(
                f"extractor module {name!r} not found",
                fix="install it, run from the folder that holds it, or give a file path",
            ) from None
        raise InputError(
            f"extractor module {name!r} failed to import: {one_line(exc)}",
            fix="fix the module so that importing it succeeds",
        ) from None
    except (Exception, SystemExit) as exc:
        raise InputError(
            f"extractor module {name!r} failed to import: {one_line(exc)}",
            fix="fix the module so that importing it succeeds",
        ) from None
