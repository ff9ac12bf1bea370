"""Loading a rewrite policy named on the command line or in the API.

Three forms (docs/policies.md):

* ``path/to/file.py:function`` — the file is imported under a module name of
  its own, with its folder first on ``sys.path`` (as pytest's prepend import
  mode does), so it may import the modules beside it;
* ``package.module:function`` — imported with :func:`importlib.import_module`;
* ``path/to/spec.toml`` — a ``ctxproof-policy/1`` spec, run by its interpreter.

Loading a policy runs its code. Every way loading can fail is an
:class:`~verifier.errors.InputError` (exit 2) naming the policy and the fix.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import os
import re
import stat
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.errors import InputError, did_you_mean, wrong_type
from verifier.io import SNIFF_BYTES, sniff_kind
from verifier.policies.spec import Spec, SpecPolicy, load_spec

__all__ = ["Policy", "as_policy", "is_spec_name", "load_policy", "one_line", "spec_policy"]

_USAGE = "name a policy as path/to/file.py:function, package.module:function or path/to/spec.toml"
_counter = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Policy:
    """A loaded policy: the callable, its name, and which keyword arguments it takes."""

    name: str
    function: Callable[..., Any] = field(repr=False)
    takes_pass_no: bool = False
    takes_ages: bool = False
    spec: Spec | None = field(default=None, repr=False)
    """The spec, when the policy is a spec run by its interpreter."""
    takes_store: bool = False
    source: str | None = None
    """The name it was loaded by (``path/to/file.py:function``, ``module:function``): how a
    process of its own loads it again (:mod:`verifier.policies.isolated`)."""


def spec_policy(spec: Spec) -> Policy:
    """A spec run by its interpreter, as a policy that takes every keyword argument."""
    return Policy(spec.name, SpecPolicy(spec), True, True, spec, True)


def one_line(exc: BaseException) -> str:
    """The exception as one line: its type and message, whitespace collapsed, bounded.

    An exception whose ``str()`` itself raises (or returns no string) is named by its
    type, with what went wrong in its place:

    >>> class Odd(Exception):
    ...     def __str__(self): raise RuntimeError("no")
    >>> one_line(Odd())
    'Odd: <its message cannot be shown: str() raised RuntimeError>'
    """
    try:
        shown = str(exc)
        if not isinstance(shown, str):
            raise TypeError(f"__str__ returned {type(shown).__name__}")
    except (Exception, SystemExit) as inner:
        shown = f"<its message cannot be shown: str() raised {type(inner).__name__}>"
    text = " ".join(shown[:2000].split())
    out = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return out if len(out) <= 300 else out[:297] + "..."


_KEYWORDS: tuple[str, ...] = ("pass_no", "ages", "store")
"""The optional keyword arguments a policy may take (docs/policies.md)."""


def _keywords(
    function: Callable[..., Any], name: str, where: str | None
) -> tuple[bool, bool, bool]:
    """Check that function takes (window, budget); which of pass_no, ages and store it
    accepts."""
    try:
        sig = inspect.signature(function)
    except (TypeError, ValueError):
        return False, False, False  # no signature to read (a builtin): calling it will tell
    params = sig.parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    by_keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def takes(keyword: str) -> bool:
        p = params.get(keyword)
        return p.kind in by_keyword if p is not None else var_kw

    given = {k: None for k in _KEYWORDS if takes(k)}
    try:
        sig.bind(None, None, **given)
    except TypeError as exc:
        raise InputError(
            f"policy {name!r} has the signature {sig}, which cannot be called as"
            f" policy(window, budget): {exc}",
            file=where,
            fix="define it as def policy(window, budget): ... (keywords pass_no, ages and"
            " store are optional)",
        ) from None
    return "pass_no" in given, "ages" in given, "store" in given


def as_policy(function: Callable[..., Any], name: str | None = None) -> Policy:
    """Wrap a callable as a :class:`Policy`, checking its signature."""
    if isinstance(function, Policy):
        return function
    shown = name or getattr(function, "__qualname__", None) or repr(function)
    if not callable(function):
        raise InputError(
            f"policy {shown!r} is a {type(function).__name__}, not a function",
            fix="name a function that takes (window, budget)",
        )
    pass_no, ages, store = _keywords(function, shown, None)
    spec = function.spec if isinstance(function, SpecPolicy) else None
    return Policy(shown, function, pass_no, ages, spec, store)


def _error_line(exc: BaseException, path: Path) -> int | None:
    """The line of the policy file where an import error was raised, if it was raised there."""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return exc.lineno
    line = None
    resolved = str(path.resolve())
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == resolved or frame.filename == str(path):
            line = frame.lineno
    return line


def _import_file(path_text: str) -> Any:
    path = Path(path_text)
    try:
        is_file = path.is_file()
    except OSError as exc:  # a name too long, a folder it may not enter
        raise InputError(
            f"policy file cannot be read: {exc.strerror}",
            file=path_text,
            fix="check the path before the ':'",
        ) from None
    if not is_file:
        what = "is a folder" if path.is_dir() else "does not exist"
        raise InputError(f"policy file {what}", file=path_text, fix="check the path before the ':'")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # as pytest's prepend mode: neighbours are importable
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"ctxproof_policy_{next(_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path.resolve())
    if spec is None or spec.loader is None:
        raise InputError(
            "cannot be imported as a Python module", file=path_text, fix="give a .py file"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[module_name]
        raise InputError(
            f"policy module failed to import: {one_line(exc)}",
            file=path_text,
            line=_error_line(exc, path),
            fix="fix the module so that importing it succeeds",
        ) from None
    return module


def _current_folder_first() -> None:
    """Put the current folder first on ``sys.path`` (once), as ``python -m verifier`` has
    it: a module named on the command line is found there from the console command too."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def _import_module(name: str, arg: str) -> Any:
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        raise InputError(f"{arg!r} is not a policy name", fix=_USAGE)
    _current_folder_first()
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise InputError(
                f"policy module {name!r} not found (no module named {exc.name!r})",
                file=name,
                fix="install it, run from the folder that holds it, or give a file path",
            ) from None
        raise InputError(
            f"policy module {name!r} failed to import: {one_line(exc)}",
            file=name,
            fix="fix the module so that importing it succeeds",
        ) from None
    except (Exception, SystemExit) as exc:
        raise InputError(
            f"policy module {name!r} failed to import: {one_line(exc)}",
            file=name,
            fix="fix the module so that importing it succeeds",
        ) from None


def is_spec_name(arg: str) -> bool:
    """Whether ``arg`` names a spec (``path/to/spec.toml``), not a Python function."""
    return arg.endswith(".toml") and ":" not in Path(arg).name


def load_policy(arg: str) -> Policy:
    """Load the policy named by ``arg`` (see the module docstring for the forms).

    Raises :class:`~verifier.errors.InputError` when the file or module is
    missing or fails to import, when the function is missing or not callable,
    or when it cannot be called as ``policy(window, budget)``.
    """
    if isinstance(arg, os.PathLike):
        arg = os.fspath(arg)
    if not isinstance(arg, str):
        raise wrong_type("load_policy", "arg", arg, "a string", _USAGE)
    if not arg:
        raise InputError("no policy given", fix=_USAGE)
    if is_spec_name(arg):
        return spec_policy(load_spec(arg))
    target, sep, func_name = arg.rpartition(":")
    if not sep or not target or not func_name:
        raise _no_function(arg)
    if is_spec_name(target):
        raise InputError(
            f"a spec is a whole policy: it takes no ':{func_name}'",
            file=target,
            fix=f"give the spec alone: {target}",
        )
    is_file = target.endswith(".py") or "/" in target or "\\" in target
    where = target if is_file else None
    module = _import_file(target) if is_file else _import_module(target, arg)
    obj: Any = module
    for part in func_name.split("."):
        if not hasattr(obj, part):
            defined = sorted(
                n
                for n, v in vars(module).items()
                if callable(v)
                and not n.startswith("_")
                and getattr(v, "__module__", None) == module.__name__
            )
            hint = f"; it defines {', '.join(defined)}" if defined else ""
            meant = did_you_mean(part, defined)
            raise InputError(
                f"policy module has no {func_name!r}{hint}",
                file=where or target,
                fix=f"did you mean {meant!r}?"
                if meant is not None
                else "name a function the module defines, after the ':'",
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(
            f"{func_name!r} is a {type(obj).__name__}, not a function",
            file=where or target,
            fix="name a function that takes (window, budget)",
        )
    pass_no, ages, store = _keywords(obj, func_name, where or target)
    _check_requirements(obj, func_name, where or target)
    return Policy(arg, obj, pass_no, ages, None, store, arg)


_SHOWN_KIND = {
    "trace": ("a trace", "did you mean `ctxproof audit`?"),
    "window": ("a window file", "did you mean `ctxproof check BEFORE AFTER`?"),
    "store": ("a SQLite store", "a store is given to audit or check with --store"),
}


def _no_function(arg: str) -> InputError:
    """The error of a policy argument that names no function, pointing at what was meant."""
    if arg.endswith(".py"):
        return InputError(
            f"policy {arg!r} names no function",
            fix=f"name the function after a ':', as {arg}:FUNCTION",
        )
    head = _head(arg)
    kind = sniff_kind(head) if head is not None else None
    if kind in _SHOWN_KIND:
        what, hint = _SHOWN_KIND[kind]
        return InputError(f"this is {what}, not a policy", file=arg, fix=hint)
    return InputError(f"policy {arg!r} names no function", fix=_USAGE)


def _head(path: str) -> bytes | None:
    """The first bytes of a regular file (None for anything else, or what cannot be read):
    only those are read, and a FIFO or a device is not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a folder, a FIFO, a device: fdopen itself refuses a folder
        return os.read(fd, SNIFF_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def _check_requirements(function: Any, name: str, where: str) -> None:
    """Run the policy's own check of what it needs installed, if it declares one.

    A policy may carry ``ctxproof_requires``, a function of no arguments that
    raises :class:`~verifier.errors.InputError` when a package it runs is
    missing (the third-party adapters do: docs/frameworks.md).
    """
    check = getattr(function, "ctxproof_requires", None)
    if not callable(check):
        return
    try:
        check()
    except InputError as exc:
        raise InputError(f"{name!r} cannot run: {exc.message}", file=where, fix=exc.fix) from None
    except (Exception, SystemExit) as exc:  # the check is the policy's code (a broken package)
        raise InputError(
            f"{name!r} cannot run: its check of what it needs failed: {one_line(exc)}",
            file=where,
            fix="reinstall what the policy needs, or fix its ctxproof_requires",
        ) from None
