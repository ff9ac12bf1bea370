"""The fuzz plot drawn in a process of its own (:class:`verifier.pressure.PlotProcess`):
the same bytes as drawn here, whatever happens to that process."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

from verifier.pressure import PlotProcess, plot_pressure, summarize_pressure

PNG = b"\x89PNG\r\n\x1a\n"
POINTS = [(1.1, 0), (1.3, 2), (1.3, 0), (2.2, 1), (2.9, 3), (4.5, 0), (math.inf, 1)]
TITLE = "policy: findings vs pressure"


def test_the_process_draws_the_same_bytes() -> None:
    with PlotProcess() as plotter:
        drawn = plotter.draw(POINTS, TITLE)
    assert drawn.startswith(PNG)
    assert drawn == plot_pressure(POINTS, TITLE)


def test_a_process_that_ended_leaves_the_plot_to_this_one() -> None:
    plotter = PlotProcess()
    proc = plotter._proc
    assert proc is not None
    proc.kill()
    proc.wait()
    assert plotter.draw(POINTS, TITLE) == plot_pressure(POINTS, TITLE)


def test_close_stops_a_process_never_asked() -> None:
    plotter = PlotProcess()
    proc = plotter._proc
    assert proc is not None
    plotter.close()
    assert proc.returncode is not None
    # asked afterwards, it draws here
    assert plotter.draw(POINTS[:2], TITLE) == plot_pressure(POINTS[:2], TITLE)


def test_the_process_refuses_what_is_not_a_request() -> None:
    for given in (b"", b"[1, 2]", b'{"points": [[1.5]], "title": "t"}', b"not json"):
        done = subprocess.run(
            [sys.executable, "-m", "verifier.pressure"], input=given, capture_output=True
        )
        assert done.returncode == 2, given
        assert done.stdout == b"", given


def test_a_run_in_a_new_process_draws_apart(tmp_path: Path) -> None:
    """``ctxproof fuzz`` runs once in a new process: its plot is drawn in a plot process
    (matplotlib never loaded in the run's), and is the plot drawn in the run's process."""
    script = textwrap.dedent(
        """
        import json, sys
        from verifier.fuzz import fuzz, keep_everything
        report = fuzz(keep_everything, sessions=2, passes=2, out_dir=sys.argv[1],
                      policy_timeout=None)
        print(json.dumps({"loaded": "matplotlib.pyplot" in sys.modules,
                          "points": report.pressures, "policy": report.policy}))
        """
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)], capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["loaded"] is False
    points = [(float(p), int(n)) for p, n in seen["points"]]
    assert points, "the sessions rewrote nothing: the plot would be empty"
    expected = plot_pressure(points, f"{seen['policy']}: findings vs pressure")
    assert (out / "pressure.png").read_bytes() == expected
    card = json.loads((out / "scorecard.json").read_text("utf-8"))
    assert card["by_pressure"] == summarize_pressure(points)
