"""Findings against pressure: the scorecard's bands and the plot ``ctxproof fuzz`` writes
(docs/fuzz.md, "The scorecard").

:func:`plot_pressure` draws with matplotlib, whose import takes about half a
second in a new process: as long as a short fuzz run's own work. A run in a
process that has not loaded it yet draws its plot in a :class:`PlotProcess`,
started when the run starts, which loads matplotlib while the sessions are
played; the bytes are the same as drawn here. ``python -m verifier.pressure``
is that process: it reads one request (JSON) on its standard input and writes
the PNG on its standard output.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["PlotProcess", "plot_pressure", "summarize_pressure"]

Obj = dict[str, Any]

PLOT_WAIT = 60.0
"""Seconds the run waits for a :class:`PlotProcess` to return its plot; past them (or on
any failure of that process) the plot is drawn in the run's own process."""


def summarize_pressure(
    points: Iterable[tuple[float, int]], bins: Sequence[float] = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
) -> list[Obj]:
    """Findings per rewrite by pressure band: the load-correlated failure, as numbers."""
    rows: list[Obj] = []
    pts = list(points)
    for lo, hi in itertools.pairwise(bins):
        inside = [n for p, n in pts if lo < p <= hi or (hi == bins[-1] and p > hi)]
        rows.append(
            {
                "pressure_from": lo,
                "pressure_to": hi,
                "rewrites": len(inside),
                "findings": sum(inside),
                "findings_per_rewrite": round(sum(inside) / len(inside), 3) if inside else None,
            }
        )
    return rows


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_pressure(points: Sequence[tuple[float, int]], title: str) -> bytes:
    """Findings per rewrite against pressure: the bytes of a PNG."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    xs = [p for p, _ in points]
    ys = [n for _, n in points]
    ax.scatter(xs, ys, s=10, alpha=0.35, color="#1565c0", label="one rewrite")
    rows = summarize_pressure(points)
    mids = [(r["pressure_from"] + r["pressure_to"]) / 2 for r in rows if r["rewrites"]]
    means = [r["findings_per_rewrite"] for r in rows if r["rewrites"]]
    if mids:
        ax.plot(mids, means, color="#c62828", marker="o", label="mean per band")
    ax.set_xlabel("pressure (tokens / budget when the policy ran)")
    ax.set_ylabel("findings at that rewrite")
    ax.set_title(title)
    ax.set_xlim(1.0, max([3.05, *(x for x in xs if math.isfinite(x))]))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


_PNG = b"\x89PNG\r\n\x1a\n"


class PlotProcess:
    """:func:`plot_pressure` in a process of its own, started now: it loads matplotlib
    while the caller works on, and draws once :meth:`draw` gives it the points.

    Anything that goes wrong there (the process cannot start, ends, answers what
    is not a PNG, or takes longer than :data:`PLOT_WAIT`) is not the run's
    concern: :meth:`draw` then draws in this process, as :func:`plot_pressure`.
    Use it as a context manager, or call :meth:`close` (which stops a process
    never asked to draw).
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        env = dict(os.environ)
        # the process imports this package as this one does, wherever it was found
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "verifier.pressure"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except (OSError, ValueError):
            self._proc = None  # drawn here, then

    def draw(self, points: Sequence[tuple[float, int]], title: str) -> bytes:
        """The plot's PNG: from the process when it gives one, else drawn here."""
        proc, self._proc = self._proc, None
        if proc is not None:
            request = json.dumps({"points": [list(p) for p in points], "title": title})
            try:
                out, _ = proc.communicate(request.encode("utf-8"), timeout=PLOT_WAIT)
            except (OSError, subprocess.SubprocessError):
                out = b""
            finally:
                _stop(proc)
            if proc.returncode == 0 and out.startswith(_PNG):
                return out
        return plot_pressure(points, title)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop(proc)

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _main() -> int:
    """The plot process: load matplotlib, then draw the one request read from stdin."""
    _pyplot()
    try:
        request = json.loads(sys.stdin.buffer.read())
        points = [(float(p), int(n)) for p, n in request["points"]]
        title = str(request["title"])
    except (ValueError, TypeError, KeyError):
        return 2  # no request (the run went), or not one: the run draws it itself
    sys.stdout.buffer.write(plot_pressure(points, title))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    code = _main()
    # the run waits for this process to end: it ends now, without unloading matplotlib
    sys.stdout.flush()
    os._exit(code)
