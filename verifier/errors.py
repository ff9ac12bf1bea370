"""The exception tree of ctxproof.

::

    CtxproofError
     +-- InputError (also ValueError)     bad input: exit 2
     |    +-- FormulaError                a formula that does not parse or is too big
     +-- StoreError (also OSError)        the durable store cannot be opened or written
     +-- OutputError (also OSError)       an output file cannot be written where it was asked
     +-- InternalError (also RuntimeError) a bug: a solver model that fails re-evaluation

Every error carries enough context to be printed as one line that names the
file, the line, the item and the remedy.

The public API checks its arguments at the door with the helpers below: a
value of the wrong type is a ``TypeError``, a value of the right type with bad
content an :class:`InputError`; both name the function, the argument and the
fix (docs/api.md, "Errors"). :func:`did_you_mean` finds the word a typo meant.

>>> did_you_mean("modalty", ["modality", "tokens", "text"])
'modality'
>>> try:
...     want_choice("suport", ("support", "count"), func="check_rewrite", arg="mode")
... except InputError as exc:
...     print(exc)
check_rewrite(): mode 'suport' is not one of 'support', 'count'; did you mean 'support'?
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any


class CtxproofError(Exception):
    """Root of every error ctxproof raises on purpose."""


class InputError(CtxproofError, ValueError):
    """Input that ctxproof refuses to check: malformed, inconsistent or oversized."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        item: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.item = item
        self.fix = fix

    def located(self, *, file: str | None = None, line: int | None = None) -> InputError:
        """Return a copy with a file and line filled in where they were missing."""
        err = type(self).__new__(type(self))
        InputError.__init__(
            err,
            self.message,
            file=self.file or file,
            line=self.line if self.line is not None else line,
            item=self.item,
            fix=self.fix,
        )
        return err

    def render(self) -> str:
        where = shown_name(self.file or "<input>")  # a file named with a newline: one line
        if self.line is not None:
            where += f":{self.line}"
        text = f"{where}: "
        if self.item is not None:
            text += f"item {self.item!r}: "
        text += self.message
        if self.fix:
            text += f"; {self.fix}"
        return text

    def __str__(self) -> str:
        return self.render()


def shown_name(text: str) -> str:
    """A name (a trace's path, an item id) as one line of text shows it: a character that
    is not printable (a newline, a tab) is escaped."""
    return text if text.isprintable() else text.encode("unicode_escape").decode()


class FormulaError(InputError):
    """A formula that does not parse, or exceeds the length or nesting bound."""


class StoreError(CtxproofError, OSError):
    """The durable store could not be opened, read or written."""


class OutputError(CtxproofError, OSError):
    """An output file could not be written: a missing or read-only folder, a full disk.

    The message names the path and the reason; nothing partial is left behind.
    """


class InternalError(CtxproofError, RuntimeError):
    """A condition that indicates a bug in ctxproof itself."""


def did_you_mean(word: object, choices: Iterable[str]) -> str | None:
    """The choice a mistyped ``word`` most likely meant, or None when none is close.

    Close is a difflib ratio of at least 0.6 (0.5 for words of three characters or
    fewer, where one wrong character is half the word), compared without case; a word
    that only differs in case from a choice means that choice. Two choices equally
    close mean neither.
    """
    if not isinstance(word, str) or not word:
        return None
    options = [c for c in choices if isinstance(c, str) and c != word]
    folded = {c.casefold(): c for c in options}
    key = word.casefold()
    if key in folded:
        return folded[key]
    import difflib  # only a mistyped word reaches here: not imported at every start

    cutoff = 0.5 if len(word) <= 3 else 0.6
    matcher = difflib.SequenceMatcher(b=key)
    scored = []
    for option in folded:
        matcher.set_seq1(option)
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            ratio = matcher.ratio()
            if ratio >= cutoff:
                scored.append((ratio, option))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return folded[scored[0][1]]


def suggestion(word: object, choices: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for a likely typo of one of ``choices``, else ``""``."""
    meant = did_you_mean(word, choices)
    return f"did you mean {meant!r}?" if meant is not None else ""


def type_name(value: object) -> str:
    """How a message names the type of a value it refuses."""
    return "None" if value is None else type(value).__name__


def wrong_type(func: str, arg: str, value: object, expected: str, fix: str = "") -> TypeError:
    """The TypeError of an argument of the wrong type: ``func(): arg must be ..., not T``."""
    text = f"{func}(): {arg} must be {expected}, not {type_name(value)}"
    return TypeError(f"{text}; {fix}" if fix else text)


def bad_argument(func: str, message: str, *, item: str | None = None, fix: str = "") -> InputError:
    """The InputError of an argument of the right type with bad content."""
    return InputError(message, file=f"{func}()", item=item, fix=fix or None)


def want_choice(value: object, choices: tuple[str, ...], *, func: str, arg: str) -> str:
    """``value`` if it is one of ``choices``; else a TypeError (not a string) or an
    InputError that names the likely typo."""
    if not isinstance(value, str):
        raise wrong_type(func, arg, value, "a string: " + " or ".join(map(repr, choices)))
    if value in choices:
        return value
    hint = suggestion(value, choices)
    raise bad_argument(
        func,
        f"{arg} {value!r} is not one of {', '.join(map(repr, choices))}",
        fix=hint or "use one of them",
    )


def want_int(
    value: object, *, func: str, arg: str, minimum: int = 0, optional: bool = False
) -> int | None:
    """``value`` if it is an int (not a bool) of at least ``minimum`` (or None when
    ``optional``); else a TypeError or an InputError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        expected = f"an int >= {minimum}" + (" or None" if optional else "")
        raise wrong_type(func, arg, value, expected)
    if value < minimum:
        raise bad_argument(func, f"{arg} must be an int >= {minimum}, not {value}")
    return value


def want_bool(value: object, *, func: str, arg: str) -> bool:
    """``value`` if it is True or False; else a TypeError."""
    if not isinstance(value, bool):
        raise wrong_type(func, arg, value, "True or False")
    return value


def want_text(value: object, *, func: str, arg: str, optional: bool = False) -> str | None:
    """``value`` if it is a string (or None when ``optional``); else a TypeError."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise wrong_type(func, arg, value, "a string" + (" or None" if optional else ""))
    return value


def want_strings(value: object, *, func: str, arg: str, what: str = "strings") -> tuple[str, ...]:
    """A list (or other iterable) of strings as a tuple: not one string, not a mapping."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        fix = "wrap it in a list" if isinstance(value, str) else ""
        raise wrong_type(func, arg, value, f"a list of {what}", fix)
    out: tuple[Any, ...] = tuple(value)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise wrong_type(func, f"{arg}[{i}]", v, "a string")
    return out


def want_path(value: object, *, func: str, arg: str) -> str | os.PathLike[str]:
    """``value`` if it is a path (a string or an ``os.PathLike``); else a TypeError."""
    if not isinstance(value, str | os.PathLike) or not isinstance(os.fspath(value), str):
        raise wrong_type(func, arg, value, "a path (str or pathlib.Path)")
    if not os.fspath(value):
        raise bad_argument(func, f"{arg} is empty", fix="give the path of a file")
    if "\0" in os.fspath(value):
        raise bad_argument(func, f"{arg} holds a NUL character", fix="give the path of a file")
    return value


def want_callable(value: object, *, func: str, arg: str, what: str) -> Any:
    """``value`` if it is callable or None; else a TypeError."""
    if value is not None and not callable(value):
        raise wrong_type(func, arg, value, f"{what} or None")
    return value
