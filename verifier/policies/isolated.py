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

The two processes speak over two pipes, one message a request (a message is
its length in eight bytes, then its bytes): the window goes as the items' JSON
texts, and the result comes back as the new window's texts (an item the policy
kept as it was travels as its position). A reply must arrive whole within the
call's limit, and may be :data:`REPLY_SLACK` bytes plus :data:`REPLY_FACTOR`
times what the worker was given (the window, and the store it holds) at most:
past that it is PL001, told from its length alone, and the worker is stopped
(a policy that returns a window of thousands of items it was never given
would make the harness's work, and its memory, grow without bound). A pipe
that closes while the worker's process runs on (a policy that closes
descriptors it did not open) is PL001 too, and the worker is stopped. A policy
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
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verifier.errors import InputError
from verifier.io import item_from_canonical
from verifier.policies import (
    Given,
    Outcome,
    PolicyResult,
    StoreLike,
    StoreView,
    ids_checked_by_caller,
    outcome_twice,
)
from verifier.policies.loading import Policy, as_policy, is_spec_name, load_policy, one_line
from verifier.window import Item

__all__ = [
    "DEFAULT_TIMEOUT",
    "LOAD_TIMEOUT",
    "REPLY_FACTOR",
    "REPLY_SLACK",
    "PolicyProcess",
    "ended_how",
    "reply_bound",
    "runs_apart",
]

DEFAULT_TIMEOUT = 10.0
"""Seconds one call of a policy may take (``fuzz --policy-timeout``)."""

LONGEST_TIMEOUT = 1_000_000.0
"""The longest limit a call is given (about 11 days): a longer one (``inf``) counts as this
one, which every clock and wait of the platform can hold."""

LOAD_TIMEOUT = 60.0
"""Seconds loading a policy in its process may take (its module's import), at least."""

_POLL = 1.0
"""How often a worker waiting for work checks that the harness is still there."""

REPLY_SLACK = 256 * 1024
REPLY_FACTOR = 4
"""A reply may hold ``REPLY_SLACK`` bytes plus ``REPLY_FACTOR`` times the bytes of the
window and the store the worker was given, at most (:func:`reply_bound`)."""

_GRACE = 1.0
"""Seconds a worker whose pipe closed has to be seen ended, before it is stopped."""

_HEADER = struct.Struct("!Q")
"""A message's length, before its bytes."""

_CHUNK = 1 << 20


def runs_apart(policy_arg: str, timeout: float | None) -> bool:
    """Whether the policy named ``policy_arg`` runs in a process of its own: a Python
    policy, given a time limit, where pipes can be handed to a child (POSIX). A spec is
    data and runs in the caller's process, as any policy does without a limit."""
    return timeout is not None and os.name == "posix" and not is_spec_name(policy_arg)


def reply_bound(given: int) -> int:
    """The bytes a worker's reply may hold when it was given ``given`` bytes (the window's
    items and the store it holds).

    >>> reply_bound(0), reply_bound(10_000)
    (262144, 302144)
    """
    return REPLY_SLACK + REPLY_FACTOR * given


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


class _TimedOut(Exception):
    """The other end did not send a whole message within the limit."""


class _TooLong(Exception):
    """A message longer than its bound: only its length was read."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _send(fd: int, data: bytes) -> None:
    """One message: its length, then its bytes."""
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _readable(fd: int, seconds: float | None) -> bool:
    """Whether ``fd`` has bytes to read, or its other end closed, within ``seconds`` (None:
    as long as it takes)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if seconds is None else max(0.0, seconds) * 1000))


def _read(fd: int, size: int, deadline: float | None) -> bytes:
    """``size`` bytes, all of them by ``deadline`` (:func:`time.monotonic`; None: no
    limit); EOFError when the other end closes first."""
    out = bytearray()
    while len(out) < size:
        if deadline is not None and not _readable(fd, deadline - time.monotonic()):
            raise _TimedOut
        chunk = os.read(fd, min(size - len(out), _CHUNK))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


def _receive(fd: int, deadline: float | None = None, most: int | None = None) -> bytes:
    """One message, whole by ``deadline``; :class:`_TooLong` (the rest left unread) when
    it is longer than ``most`` bytes."""
    (size,) = _HEADER.unpack(_read(fd, _HEADER.size, deadline))
    if most is not None and size > most:
        raise _TooLong(size)
    return _read(fd, size, deadline)


def _reply(fd: int, obj: Any) -> None:
    _send(fd, _encode(json.dumps(obj, ensure_ascii=False)))


def _serve(policy: Policy, reader: int, writer: int) -> int:
    """Answer requests until the harness goes: each one the window, a budget, a pass
    (and what changed in the store, for a policy that takes it). The worker's exit code:
    0 when the harness went, 1 when the policy closed the worker's pipes."""
    try:
        _answer(policy, reader, writer)
    except OSError:  # a descriptor the policy closed (or reused): the harness sees the end
        return 1
    return 0


def _answer(policy: Policy, reader: int, writer: int) -> None:
    parent = os.getppid()
    store: dict[str, Any] = {}
    while True:
        try:
            if not _readable(reader, _POLL):
                if os.getppid() != parent:
                    return  # the harness is gone: so is the reason to be here
                continue
            request = _receive(reader)
        except EOFError:
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
            ids_checked_by_caller,  # the harness holds the session: it checks the ids
            between=lambda: _send(writer, b"1"),
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
    reader, writer = int(argv[0]), int(argv[1])
    try:
        first = json.loads(_decode(_receive(reader)))
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
    try:
        _reply(writer, _ready(policy))
    except OSError:  # its module's import closed the pipe: the harness sees the end
        return 1
    return _serve(policy, reader, writer)


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
    _reply(writer_fd, _ready(policy))
    sys.exit(_serve(policy, reader_fd, writer_fd))


# -- the harness's side ------------------------------------------------------------------------

_LIVE: weakref.WeakSet[PolicyProcess] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    for proc in list(_LIVE):
        proc.close()


class _Ended(Exception):
    """The worker's pipe closed while a call was under way: its process ended (``how``,
    in words), or it runs on with the pipe closed (``how`` None; it was stopped)."""

    def __init__(self, how: str | None) -> None:
        super().__init__(how)
        self.how = how


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
        self.timeout = min(float(timeout), LONGEST_TIMEOUT)
        self.source = policy if isinstance(policy, str) else policy.source
        self.policy = None if isinstance(policy, str) else policy
        self.name = policy if isinstance(policy, str) else policy.name
        self.faults = 0
        self._takes_ages = True
        self._takes_store = True
        self._sent: list[str] = []
        """The refs of the store entries the worker holds, in the order it holds them."""
        self._held = 0
        """The bytes of those entries, as they were sent."""
        self._pending: object | None = None
        """The request whose result was not taken yet (:meth:`send`)."""
        self._proc: subprocess.Popen[bytes] | Any = None
        self._loading = False
        """Launched, and its loading not read yet (:meth:`start` reads it)."""
        self._reader: int | None = None  # the pipes' ends, as descriptors
        self._writer: int | None = None
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- life of the worker ----------------------------------------------------------------
    def launch(self) -> None:
        """Start the worker, which loads the policy while the caller goes on; :meth:`start`
        (or the first call) waits for it to be loaded. ``ctxproof fuzz`` launches it
        before its own imports, which then take the time the worker's start would."""
        if self._proc is not None:
            return
        if self.source is not None:
            self._spawn(self.source)
        else:
            self._fork()
        self._loading = True

    def start(self) -> None:
        """Start the worker (unless :meth:`launch` did) and wait for the policy to load.

        Raises :class:`~verifier.errors.InputError` when the policy cannot be
        loaded (the message its loading gave), and when its module's import
        ends the process or takes longer than :data:`LOAD_TIMEOUT` (or the
        call limit, if longer).
        """
        self.launch()
        if not self._loading:
            return
        self._loading = False
        assert self._reader is not None
        limit = max(LOAD_TIMEOUT, self.timeout)
        try:
            reply = self._message(limit, REPLY_SLACK)
            obj = json.loads(_decode(reply))
            if not isinstance(obj, dict):
                raise ValueError(f"{type(obj).__name__}, not an object")
        except _TimedOut:
            self._stop()
            raise InputError(
                f"policy {self.name!r} did not finish loading within {limit:g} s",
                fix="make importing its module quick (no work at import time)",
            ) from None
        except _Ended as ended:
            if ended.how is None:
                raise InputError(
                    f"policy {self.name!r} closed its process's pipe to the harness while"
                    " loading; its process was stopped",
                    fix="do not close file descriptors the module did not open",
                ) from None
            raise InputError(
                f"policy {self.name!r} ended its process while loading: {ended.how}",
                fix="do not exit the process when the module is imported",
            ) from None
        except (_TooLong, ValueError) as exc:  # its import wrote into the harness's pipe
            self._stop()
            raise InputError(
                f"policy {self.name!r}: its process sent, while loading, what the harness"
                f" cannot read ({_unreadable(exc)})",
                fix="do not write to file descriptors the module did not open",
            ) from None
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
                    "-P",  # not the working folder first: its random.py is no stdlib module
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
        self._writer, self._reader = to_child[1], from_child[0]
        first = {"policy": source, "sys_path": list(sys.path)}
        try:
            _send(self._writer, _encode(json.dumps(first, ensure_ascii=False)))
        except BrokenPipeError:
            pass  # a worker gone already: start() reads how it ended
        except OSError as exc:
            self._stop()
            raise InputError(
                f"cannot start a process for policy {self.name!r}: {exc.strerror or exc}",
                fix="check that the system allows ctxproof to start processes",
            ) from None

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
        self._writer, self._reader = to_child[1], from_child[0]

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
        for fd in (self._writer, self._reader):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._writer = self._reader = None
        self._loading = False
        self._sent, self._held = [], 0  # a new worker starts with an empty store
        self._pending = None
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
                os.close(self._writer)  # the worker sees the end of its requests and goes
            self._writer = None
        deadline = time.monotonic() + 1.0
        if self._reader is not None:
            # its pipe closes as its process ends: seen at once, where waiting for the
            # process polls it at growing intervals (tens of milliseconds at the end)
            with contextlib.suppress(OSError, ValueError):
                _readable(self._reader, 1.0)
        self._returncode(max(0.0, deadline - time.monotonic()))
        self._stop()

    def __enter__(self) -> PolicyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one message -----------------------------------------------------------------------
    def _message(self, limit: float, most: int) -> bytes:
        """The worker's next message, whole within ``limit`` seconds and no longer than
        ``most`` bytes (:class:`_TimedOut`, :class:`_TooLong`); :class:`_Ended` when its
        pipe closes first."""
        reader = self._reader
        assert reader is not None
        try:
            return _receive(reader, time.monotonic() + limit, most)
        except (EOFError, OSError):
            raise self._ended() from None

    def _ended(self) -> _Ended:
        """The worker's pipe closed: how its process ended, after it is stopped (an ended
        process is reaped at once; one that runs on closed its pipe)."""
        code = self._returncode(_GRACE)
        self._stop()
        return _Ended(None if code is None else ended_how(code))

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
        return self.send(before, budget, pass_no=pass_no, ages=ages, store=store)()

    def send(
        self,
        before: Sequence[Item],
        budget: int,
        *,
        pass_no: int = 1,
        ages: Mapping[str, int] | None = None,
        store: StoreLike | None = None,
    ) -> Callable[[], PolicyResult]:
        """:meth:`run_twice` in two halves: the request goes now, and the function returned
        waits for the result. Between the two the harness works on while the policy runs
        in its process (``fuzz`` audits the append that filled the window). Each call's
        time limit counts from when the function is called. A request sent while an
        earlier one's result was never taken stops the worker first (its answer would
        come before this one's): the next request starts a new worker."""
        if self._pending is not None:
            self._pending = None
            self._stop()
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
        body = _encode("\n".join(it.raw for it in before))
        most = reply_bound(len(body) + self._held)
        try:
            _send(self._writer, _encode(head + "\n" + changes + "\n") + body)
        except OSError:  # the pipe broke while the request was written
            ended = self._ended()
            return lambda: self._failed(ended, before, pass_no)
        token = object()
        self._pending = token

        def result() -> PolicyResult:
            if self._pending is not token:
                raise RuntimeError("this request's result was taken, or given up, before")
            self._pending = None
            return self._result(before, pass_no, most)

        return result

    def _result(self, before: Sequence[Item], pass_no: int, most: int) -> PolicyResult:
        """The reply to the request just sent: its two calls' messages, each within the
        time limit."""
        try:
            self._message(self.timeout, most)  # the first call returned
            reply = self._message(self.timeout, most)
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
            return self._failed(ended, before, pass_no)
        except _TooLong as long:
            self.faults += 1
            self._stop()
            return self._fault(
                before,
                pass_no,
                "PL001",
                f"policy {self.name!r}: its process sent a reply of {long.size} bytes, over"
                f" the bound of {most} ({REPLY_SLACK} bytes and {REPLY_FACTOR} times the"
                " window and store it was given); its process was stopped",
            )
        return self._outcome(reply, before).result(before, pass_no)

    def _failed(self, ended: _Ended, before: Sequence[Item], pass_no: int) -> PolicyResult:
        """PL001 for a worker whose pipe closed, saying how its process ended."""
        self.faults += 1
        if ended.how is None:
            return self._fault(
                before,
                pass_no,
                "PL001",
                f"policy {self.name!r} closed its process's pipe to the harness;"
                " its process was stopped",
            )
        return self._fault(
            before, pass_no, "PL001", f"policy {self.name!r} ended its process: {ended.how}"
        )

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
        line = json.dumps({"reset": reset, "add": add}, ensure_ascii=False)
        self._held = (0 if reset else self._held) + len(_encode(line))
        return line

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
                f" ({_unreadable(exc)})",
            )


def _unreadable(exc: BaseException) -> str:
    if isinstance(exc, _TooLong):
        return f"a message of {exc.size} bytes"
    return one_line(exc)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
