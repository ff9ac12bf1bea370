"""The ``ctxproof`` command line (its output and exit codes: docs/formats.md).

Output: one finding a line, ``TRACE:LINE: pass N: CODE name [ID,...]: message``,
or with ``--format json`` one JSON object per trace per line.

Exit codes: 0 every rewrite accepted and no finding; 1 at least one finding;
2 bad input or usage; 3 undecided (solver unknown or budget) and no finding;
4 internal error.

One module per command group, each a thin layer over the API (docs/api.md, "The
command line"): it parses its arguments, calls the library and prints.
``verifier.cli.common`` holds what they share (output, options, exit codes).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import IO

import click

from verifier.cli.common import (
    EPILOG,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    SOLVER_ENV,
    Out,
    stdout_error,
)
from verifier.errors import CtxproofError, InputError, OutputError, StoreError

__all__ = ["COMMANDS", "cli", "entry", "main"]

COMMANDS: dict[str, str] = {
    "audit": "verifier.cli.audit:audit",
    "check": "verifier.cli.check:check",
    "demo": "verifier.cli.audit:demo",
    "fuzz": "verifier.cli.fuzz:fuzz",
    "graph": "verifier.cli.trace:graph_cmd",
    "import": "verifier.cli.history:import_cmd",
    "prove": "verifier.cli.prove:prove_cmd",
    "ref": "verifier.cli.trace:ref_cmd",
    "why": "verifier.cli.trace:why_cmd",
    "window": "verifier.cli.trace:window_cmd",
}
"""Each command and where it is defined (``module:name``), imported when it is run or
listed: ``ctxproof --version`` imports no command."""


class _Commands(click.Group):
    """A group whose commands are imported on first use, from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command: click.Command = getattr(_imported(module), name)
        return command


_OWNED = [False]
"""Whether this process is the console command's own (:func:`entry`), which ends with the
command: only then is what an import made filed where no collection ever walks it."""


def _imported(module: str) -> ModuleType:
    """A command's module, imported with the cycle collector paused.

    An import makes thousands of objects (classes, functions, the code dataclasses
    writes) that live as long as the process and are in no cycle worth collecting:
    the collector's passes over them find nothing (a fiftieth of a whole 10k-item
    check). On a module's first import, if the collector ran before, it runs again
    afterwards with what the import made filed away: in the console command's own
    process in the permanent generation (``gc.freeze()``), where no pass walks it; in a
    process that calls :func:`main` itself (the Python API, a test suite) in the oldest
    generation only (``gc.freeze()`` then ``gc.unfreeze()``), since a permanent filing
    would keep whatever garbage the caller's process held at that moment for good.
    """
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        if was_enabled:
            gc.freeze()
            if not _OWNED[0]:
                gc.unfreeze()
            gc.enable()


@click.group(cls=_Commands, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ctxproof")
def cli() -> None:
    """Formal verification harness for self-editing context windows."""


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the CLI in-process and return its exit code."""
    out = Out(stdout or sys.stdout, stderr or sys.stderr)  # None: a stream the process lacks
    saved = {k: os.environ.get(k) for k in SOLVER_ENV.values()}
    try:
        return _main(argv, out)
    finally:
        for key, value in saved.items():  # --rlimit/--timeout hold for one command only
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _main(argv: Sequence[str] | None, out: Out) -> int:
    try:
        with contextlib.redirect_stdout(out.stdout), contextlib.redirect_stderr(out.stderr):
            rv = cli.main(
                args=list(argv) if argv is not None else None,
                prog_name="ctxproof",
                standalone_mode=False,
                obj=out,
            )
    except click.exceptions.NoArgsIsHelpError as exc:
        out.note(exc.format_message() if hasattr(exc, "format_message") else str(exc))
        return EXIT_INPUT
    except click.UsageError as exc:
        out.note(f"ctxproof: {exc.format_message()}")
        if exc.ctx is not None:
            out.note(f"try '{exc.ctx.command_path} --help'")
        return EXIT_INPUT
    except click.exceptions.Abort:
        out.note("ctxproof: aborted")
        return EXIT_INPUT
    except click.ClickException as exc:
        out.note(f"ctxproof: {exc.format_message()}")
        return EXIT_INPUT
    except InputError as exc:
        out.note(f"ctxproof: {exc.render()}")
        return EXIT_INPUT
    except StoreError as exc:
        out.note(f"ctxproof: store error: {exc}")
        return EXIT_INPUT
    except OutputError as exc:
        out.note(f"ctxproof: {exc}")
        return EXIT_INPUT
    except CtxproofError as exc:
        out.note(f"ctxproof: internal error: {exc}")
        return EXIT_INTERNAL
    except OSError as exc:
        if _stdout_failed(out, exc):
            # click's own writes (--version, --help) to a standard output that takes
            # no more: an output that cannot be written, as Out.line words it
            out.note(f"ctxproof: {stdout_error(exc)}")
            return EXIT_INPUT
        if exc.errno in _PATH_REFUSED and exc.filename is not None:
            # a path given on the command line (a store, a report folder, a module) that the
            # system refuses: the path is at fault, not ctxproof
            out.note(
                f"ctxproof: {exc.filename}: cannot use this path: {exc.strerror}; give another"
            )
            return EXIT_INPUT
        out.note(f"ctxproof: internal error: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL
    except Exception as exc:
        out.note(f"ctxproof: internal error: {type(exc).__name__}: {exc}")
        if os.environ.get("CTXPROOF_DEBUG"):
            import traceback  # only here: it costs every start otherwise

            traceback.print_exc(file=out.stderr)
        return EXIT_INTERNAL
    if isinstance(rv, int):
        return rv
    return EXIT_OK


_PATH_REFUSED = frozenset(
    {errno.ENAMETOOLONG, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.ELOOP, errno.EROFS}
)
"""What the system says of a path it will not let a command use (a name too long, a folder
without permission): the path's fault, exit 2 naming it."""


_WRITE_REFUSED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE, errno.EBADF})
"""What a write that found no room (or no reader) fails with: files ctxproof writes
itself report it as an OutputError, so one escaping a command is a standard stream's."""


def _stdout_failed(out: Out, exc: OSError) -> bool:
    """Whether the error is standard output refusing a write (click's own, of --version or
    --help): a write error, or a flush of what it holds that fails."""
    if exc.errno in _WRITE_REFUSED:
        return True
    try:
        out.stdout.flush()
    except (OSError, ValueError):  # ValueError: closed
        return True
    return False


def entry() -> None:
    """Console-script entry point.

    The process ends here: every object it still holds is filed in the cycle
    collector's permanent generation (``gc.freeze()``), so the interpreter's
    last collection at exit does not walk them (a tenth of a 10k-item check).
    Files are flushed and closed, and exit handlers run, as before.
    """
    _OWNED[0] = True
    code = main()
    try:
        if sys.stdout is not None:  # None: started without one (see Out)
            sys.stdout.flush()  # what is buffered still: a refusal here is exit 2 as well
    except OSError as exc:
        if sys.stderr is not None:
            sys.stderr.write(f"ctxproof: {stdout_error(exc)}\n")
        code = EXIT_INPUT
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing at exit
    gc.freeze()
    sys.exit(code)
