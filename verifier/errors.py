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
"""

from __future__ import annotations


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
        where = self.file or "<input>"
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
