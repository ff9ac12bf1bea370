"""A time limit on a block of code in the main thread (``SIGALRM``).

Used where a call cannot be moved to a process of its own: ``fuzz --replay``
calls a policy in the harness's process to show its traceback
(docs/policies.md, "Isolation"), and the test suite bounds what it runs.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["can_limit", "time_limit"]


def can_limit() -> bool:
    """Whether :func:`time_limit` can interrupt a block here: a system with ``SIGALRM``
    timers, in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None, error: Callable[[], BaseException]) -> Iterator[None]:
    """Interrupt the block with ``error()`` raised inside it after ``seconds``. With no
    limit, or where none can be set (:func:`can_limit`), the block runs unbounded; the
    previous handler and timer state are restored afterwards."""
    if seconds is None or not can_limit():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise error()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
