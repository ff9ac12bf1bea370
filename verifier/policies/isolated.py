"""A policy run in a process of its own, with a time limit on every call.

``ctxproof fuzz`` never calls a Python policy in its own process
(docs/policies.md, "Isolation"): a :class:`PolicyProcess` starts one worker
process per run (per ``--jobs`` worker), in which the policy is loaded by its
name (:func:`~verifier.policies.load_policy`, so its module's import runs
there too) and called on its own copy of the window. A call that takes longer
than the time limit is **PL003 policy-timeout**; a policy that exits or kills
its process is **PL001 policy-error** naming how the process ended; either way
the worker is stopped and a fresh one started for the next call. Whatever the
policy does to its copy, to the modules it imports or to its process, the
harness sees only the validated result. Its prints go to stderr, never into
the harness's output.

A callable with no name to load it by (the Python API, the pytest plugin) is
run in a child forked from the calling process where the system can fork.

The two processes speak over two pipes, one message a request: the window
goes as the items' JSON texts, and the result comes back as the new window's
texts (an item the policy kept as it was travels as its position). A policy
that takes the keyword ``store`` reads a copy of the store the worker keeps:
each request carries the entries it has not been sent yet (a store's refs name
their content, so an entry sent once stays as it was), and the whole store
again when the store no longer begins with what it was sent (a new session).
Each call of a pair (the policy runs twice per rewrite: PL002) has its own
limit.
``random`` is seeded from each request, and str hashing is fixed, so a policy
is called alike in every worker: the same session shows the same findings
when it is played again to be shrunk.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

from verifier.errors import InputError
from verifier.io import item_from_canonical
from verifier.policies import Given, Outcome, PolicyResult, StoreLike, StoreView, outcome_twice
from verifier.policies.loading import Policy, as_policy, load_policy, one_line
from verifier.window import Item

__all__ = ["DEFAULT_TIMEOUT", "LOAD_TIMEOUT", "PolicyProcess", "ended_how"]

DEFAULT_TIMEOUT = 10.0
"""Seconds one call of a policy may take (``fuzz --policy-timeout``)."""

LOAD_TIMEOUT = 60.0
"""Seconds loading a policy in its process may take (its module's import), at least."""

_POLL = 1.0
"""How often a worker waiting for work checks that the harness is still there."""


def ended_how(returncode: int | None) -> str:
    """How a process ended, in words: ``exit code 3``, ``signal 9 (SIGKILL)``.

    >>> ended_how(0), ended_how(-9)
    ('exit code 0', 'signal 9 (SIGKILL)')
    """
    if returncode is None:
        return "an end that could not be told"
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
    return f"signal {-returncode} ({name})"


# -- the worker's side -------------------------------------------------------------------------


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # an id may hold a lone surrogate


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _reply(conn: Connection, obj: Any) -> None:
    conn.send_bytes(_encode(json.dumps(obj, ensure_ascii=False)))


def _serve(policy: Policy, reader: Connection, writer: Connection) -> None:
    """Answer requests until the harness goes: each one the window, a budget, a pass
    (and what changed in the store, for a policy that takes it)."""
    parent = os.getppid()
    store: dict[str, Any] = {}
    while True:
        try:
            if not reader.poll(_POLL):
                if os.getppid() != parent:
                    return  # the harness is gone: so is the reason to be here
                continue
            request = reader.recv_bytes()
        except (EOFError, OSError):
            return
        head, _, rest = _decode(request).partition("\n")
        changes, _, body = rest.partition("\n")
        args = json.loads(head)
        if changes:
            delta = json.loads(changes)
            if delta["reset"]:
                store.clear()
            store.update(delta["add"])
        _seed(_encode(head + "\n" + body))  # the store's changes aside: they depend on history
        raws = tuple(body.split("\n")) if body else ()
        given = Given(raws, dict(zip(args["ids"], args["kinds"], strict=True)))
        outcome = outcome_twice(
            policy,
            given,
            args["budget"],
            args["pass_no"],
            args["ages"],
            between=lambda: writer.send_bytes(b"1"),
            contained=True,
            store=store if policy.takes_store else None,
        )
        position = {raw: i for i, raw in enumerate(raws)}
        _reply(
            writer,
            {
                "code": outcome.code,
                "message": outcome.message,
                "items": list(outcome.items),
                "window": [position.get(it.raw, it.raw) for it in outcome.window],
                "spill": list(outcome.spill),
                "claimed_preserved": outcome.claimed_preserved,
            },
        )


def _seed(request: bytes) -> None:
    """Seed ``random`` (and numpy's, if loaded) from the request: a policy that draws
    random numbers gives the same output for the same input in any worker, as it does
    in a hypothesis test; its two calls of a rewrite still draw differently (PL002)."""
    value = int.from_bytes(hashlib.sha256(request).digest()[:8], "big")
    random.seed(value)
    numpy = sys.modules.get("numpy")
    seeder = getattr(getattr(numpy, "random", None), "seed", None)
    if callable(seeder):
        with contextlib.suppress(Exception):
            seeder(value % 2**32)


def _quiet_stdout() -> None:
    """A policy's prints go to stderr: stdout is the harness's (``--format json``)."""
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    sys.stdout = sys.stderr


def _worker_main(argv: Sequence[str]) -> int:
    """``python -m verifier.policies.isolated R W``: load the policy the first message
    names, say whether that worked, and serve."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's to handle
    _quiet_stdout()
    reader = Connection(int(argv[0]), writable=False)
    writer = Connection(int(argv[1]), readable=False)
    try:
        first = json.loads(_decode(reader.recv_bytes()))
    except (EOFError, OSError):
        return 0
    sys.path[:] = first["sys_path"]
    try:
        policy = load_policy(first["policy"])
    except InputError as exc:
        _reply(
            writer,
            {
                "error": {
                    "message": exc.message,
                    "file": exc.file,
                    "line": exc.line,
                    "item": exc.item,
                    "fix": exc.fix,
                }
            },
        )
        return 0
    _reply(writer, _ready(policy))
    _serve(policy, reader, writer)
    return 0


def _ready(policy: Policy) -> dict[str, Any]:
    """The worker's first reply: the policy loaded, and which growing arguments it takes."""
    return {"ready": policy.name, "ages": policy.takes_ages, "store": policy.takes_store}


def _forked(policy: Policy, reader_fd: int, writer_fd: int, close: Sequence[int]) -> None:
    """The body of a forked worker (a callable with no name to load it by)."""
    for fd in close:
        with contextlib.suppress(OSError):
            os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _quiet_stdout()
    reader = Connection(reader_fd, writable=False)
    writer = Connection(writer_fd, readable=False)
    _reply(writer, _ready(policy))
    _serve(policy, reader, writer)


# -- the harness's side ------------------------------------------------------------------------

_LIVE: weakref.WeakSet[PolicyProcess] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    for proc in list(_LIVE):
        proc.close()


class _Ended(Exception):
    """The worker's process ended (or its pipe broke) while a call was under way."""


class _TimedOut(Exception):
    """The worker did not answer within the limit."""


class PolicyProcess:
    """A policy run in a worker process; :meth:`run_twice` is one rewrite's pair of calls.

    ``policy`` is what ``ctxproof fuzz`` takes (``path/to/file.py:function``,
    ``package.module:function``; a spec is data and runs in process, not here),
    a loaded :class:`~verifier.policies.Policy` or a callable: one loaded from a
    name is loaded again by that name in the worker, any other runs in a child
    forked from this process. The worker starts at the first call (or :meth:`start`) and
    is reused for every call after; :attr:`faults` counts the calls that timed
    out or ended the process (each costs a new worker).

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self, policy: str | Policy | Callable[..., Any], timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        if not isinstance(policy, str | Policy):
            policy = as_policy(policy)
        if not timeout > 0:
            raise InputError(
                f"--policy-timeout must be a positive number of seconds, not {timeout!r}",
                fix="give --policy-timeout S with S > 0",
            )
        self.timeout = float(timeout)
        self.source = policy if isinstance(policy, str) else policy.source
        self.policy = None if isinstance(policy, str) else policy
        self.name = policy if isinstance(policy, str) else policy.name
        self.faults = 0
        self._takes_ages = True
        self._takes_store = True
        self._sent: list[str] = []
        """The refs of the store entries the worker holds, in the order it holds them."""
        self._proc: subprocess.Popen[bytes] | Any = None
        self._reader: Connection | None = None
        self._writer: Connection | None = None
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- life of the worker ----------------------------------------------------------------
    def start(self) -> None:
        """Start the worker and load the policy there.

        Raises :class:`~verifier.errors.InputError` when the policy cannot be
        loaded (the message its loading gave), and when its module's import
        ends the process or takes longer than :data:`LOAD_TIMEOUT` (or the
        call limit, if longer).
        """
        if self._proc is not None:
            return
        if self.source is not None:
            self._spawn(self.source)
        else:
            self._fork()
        assert self._reader is not None
        limit = max(LOAD_TIMEOUT, self.timeout)
        try:
            reply = self._receive(limit)
        except _TimedOut:
            self._stop()
            raise InputError(
                f"policy {self.name!r} did not finish loading within {limit:g} s",
                fix="make importing its module quick (no work at import time)",
            ) from None
        except _Ended as ended:
            raise InputError(
                f"policy {self.name!r} ended its process while loading: {ended}",
                fix="do not exit the process when the module is imported",
            ) from None
        obj = json.loads(_decode(reply))
        if "error" in obj:
            self._stop()
            raise InputError(**obj["error"])
        self._takes_ages = bool(obj.get("ages", True))
        self._takes_store = bool(obj.get("store", True))

    def _spawn(self, source: str) -> None:
        to_child = os.pipe()
        from_child = os.pipe()
        try:
            env = dict(os.environ)
            # the worker imports this package as the harness does, wherever it was found
            here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (here, env.get("PYTHONPATH", "")) if p
            )
            # str hashes alike in every worker: a policy that walks a set of ids gives the
            # same output in the next worker (after a timeout, under --jobs)
            env["PYTHONHASHSEED"] = "0"
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "verifier.policies.isolated",
                    str(to_child[0]),
                    str(from_child[1]),
                ],
                pass_fds=(to_child[0], from_child[1]),
                stdin=subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            for fd in (*to_child, *from_child):
                os.close(fd)
            raise InputError(
                f"cannot start a process for policy {self.name!r}: {exc.strerror or exc}",
                fix="check that the system allows ctxproof to start processes",
            ) from None
        os.close(to_child[0])
        os.close(from_child[1])
        self._writer = Connection(to_child[1], readable=False)
        self._reader = Connection(from_child[0], writable=False)
        first = {"policy": source, "sys_path": list(sys.path)}
        self._writer.send_bytes(_encode(json.dumps(first, ensure_ascii=False)))

    def _fork(self) -> None:
        import multiprocessing

        assert self.policy is not None
        to_child = os.pipe()
        from_child = os.pipe()
        context = multiprocessing.get_context("fork")
        proc = context.Process(
            target=_forked,
            args=(self.policy, to_child[0], from_child[1], (to_child[1], from_child[0])),
            daemon=True,
        )
        proc.start()
        os.close(to_child[0])
        os.close(from_child[1])
        self._proc = proc
        self._writer = Connection(to_child[1], readable=False)
        self._reader = Connection(from_child[0], writable=False)

    def _returncode(self, wait: float) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        if isinstance(proc, subprocess.Popen):
            try:
                return proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                return None
        proc.join(wait)
        code: int | None = proc.exitcode
        return code

    def _stop(self) -> int | None:
        """Stop the worker (killed if it does not go at once); its return code."""
        for conn in (self._writer, self._reader):
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.close()
        self._writer = self._reader = None
        self._sent = []  # a new worker starts with an empty store
        proc, code = self._proc, None
        if proc is not None:
            code = self._returncode(0)
            if code is None:
                with contextlib.suppress(OSError):
                    proc.kill()
                code = self._returncode(30)
            if not isinstance(proc, subprocess.Popen):
                with contextlib.suppress(ValueError):
                    proc.close()
        self._proc = None
        return code

    def close(self) -> None:
        """Stop the worker; the next call starts a new one."""
        if self._proc is None:
            return
        if self._writer is not None:
            with contextlib.suppress(OSError):
                self._writer.close()  # the worker sees the end of its requests and goes
            self._writer = None
        self._returncode(1.0)
        self._stop()

    def __enter__(self) -> PolicyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one message -----------------------------------------------------------------------
    def _receive(self, limit: float) -> bytes:
        reader = self._reader
        assert reader is not None
        try:
            if not reader.poll(limit):
                raise _TimedOut
            return reader.recv_bytes()
        except (EOFError, OSError):
            # give the process a moment to be reaped: its end is the message
            code = self._returncode(5)
            self._stop()
            raise _Ended(ended_how(code)) from None

    # -- a rewrite's calls -----------------------------------------------------------------
    def run_twice(
        self,
        before: Sequence[Item],
        budget: int,
        *,
        pass_no: int = 1,
        ages: Mapping[str, int] | None = None,
        store: StoreLike | None = None,
    ) -> PolicyResult:
        """Call the policy twice on copies of ``before`` in its process, as
        :func:`~verifier.policies.run_twice` does in this one; a call past the
        time limit is PL003, a process that ends is PL001 (saying how it ended).

        ``store`` (refs -> item dicts, or a :class:`~verifier.store.Store`) is
        what a policy that takes the keyword ``store`` reads; the worker is sent
        only the entries it does not hold yet."""
        self.start()
        assert self._writer is not None
        changes = self._store_changes(store) if self._takes_store else ""
        head = json.dumps(
            {
                "budget": budget,
                "pass_no": pass_no,
                # only to a policy that takes them: they grow with the session
                "ages": None if ages is None or not self._takes_ages else dict(ages),
                "ids": [it.id for it in before],
                "kinds": [it.kind for it in before],
            },
            ensure_ascii=False,
        )
        body = "\n".join(it.raw for it in before)
        try:
            self._writer.send_bytes(_encode(head + "\n" + changes + "\n" + body))
            self._receive(self.timeout)  # the first call returned
            reply = self._receive(self.timeout)
        except _TimedOut:
            self.faults += 1
            self._stop()
            return self._fault(
                before,
                pass_no,
                "PL003",
                f"policy {self.name!r} did not return within the limit of {self.timeout:g} s"
                " (--policy-timeout); its process was stopped",
            )
        except _Ended as ended:
            self.faults += 1
            return self._fault(
                before, pass_no, "PL001", f"policy {self.name!r} ended its process: {ended}"
            )
        except OSError as exc:  # the pipe broke while the request was written
            self.faults += 1
            code = self._stop()
            return self._fault(
                before,
                pass_no,
                "PL001",
                f"policy {self.name!r} ended its process: {ended_how(code)}"
                f" ({one_line(exc)})",
            )
        return self._outcome(reply, before).result(before, pass_no)

    def _store_changes(self, store: StoreLike | None) -> str:
        """The request's line for the store: the entries the worker lacks, or the whole
        store when what the worker holds is not where this store begins (a new session:
        the worker's copy then lists its entries in the order this one does, as the
        policy reads them in this process) ("" when nothing changed)."""
        view = StoreView(store)
        refs = list(view)
        held = len(self._sent)
        reset = refs[:held] != self._sent
        new = refs if reset else refs[held:]
        if not new and not reset:
            return ""
        self._sent = refs
        add = {ref: view[ref] for ref in new}
        return json.dumps({"reset": reset, "add": add}, ensure_ascii=False)

    def _fault(self, before: Sequence[Item], pass_no: int, code: str, message: str) -> PolicyResult:
        return PolicyResult(tuple(before), pass_no=pass_no, code=code, message=message)

    def _outcome(self, reply: bytes, before: Sequence[Item]) -> Outcome:
        try:
            obj = json.loads(_decode(reply))
            window = tuple(
                before[entry] if isinstance(entry, int) else item_from_canonical(entry)
                for entry in obj["window"]
            )
            claimed = obj["claimed_preserved"]
            return Outcome(
                window,
                tuple(obj["spill"]),
                None if claimed is None else tuple(claimed),
                obj["code"],
                obj["message"],
                tuple(obj["items"]),
            )
        except Exception as exc:  # the policy wrote into the harness's pipe
            self.faults += 1
            self._stop()
            return Outcome(
                code="PL001",
                message=f"policy {self.name!r}: its process sent a reply that cannot be read"
                f" ({one_line(exc)})",
            )


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
