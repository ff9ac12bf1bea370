"""Crash test of the durable store: SIGKILL a writer at random moments.

SPEC §2: nothing is acknowledged as spilled before it is committed, and one
spill is one transaction. A child process spills in a loop and prints each ref
only after ``spill()`` returned; the parent kills it with SIGKILL, then checks
that the file is intact, that every acknowledged ref is there and verifies, and
that every spill the child started is either wholly present or wholly absent.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifier.store import SqliteStore

# The child: open the store, say "ready", then spill forever. Each spill is
# announced ("try") before it starts and acknowledged ("ack") after it returned.
CHILD = r"""
import random
import sys
import time

from verifier.io import item_from_json
from verifier.store import SqliteStore

path, first, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
store = SqliteStore(path)
print("ready", flush=True)
n = first
while True:
    batch = []
    for _ in range(rng.randint(1, 3)):
        iid = f"item-{n % 7}"
        batch.append(item_from_json(
            {"id": iid, "kind": "prose", "text": f"spill {n} " + "x" * rng.randint(0, 2000)}
        ))
        n += 1
    print("try " + " ".join(f"{it.ref}={it.id}" for it in batch), flush=True)
    refs = store.spill(batch)
    print("ack " + " ".join(f"{r}={it.id}" for r, it in zip(refs, batch)), flush=True)
    if rng.random() < 0.5:
        # Other work between spills, so kills also land while the store is idle.
        time.sleep(rng.uniform(0, 0.003))
"""

_PAIR = re.compile(r"(sha256:[0-9a-f]{64})=(item-[0-9])")
ROUNDS = 8
SEED = 20240611


@dataclass
class Log:
    """What the children said, across all rounds."""

    acked: dict[str, str] = field(default_factory=dict)  # ref -> id
    tried: list[list[tuple[str, str]]] = field(default_factory=list)


def _parse(out: str, log: Log) -> int:
    """Record one round's output; return how many spills were acknowledged."""
    acks = 0
    for line in out.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # a line cut short by the kill acknowledges nothing
        kind, _, rest = line.rstrip("\n").partition(" ")
        pairs = _PAIR.findall(rest)
        if kind == "try":
            log.tried.append(pairs)
        elif kind == "ack":
            assert pairs == log.tried[-1], "acknowledged refs differ from the attempted ones"
            log.acked.update(pairs)
            acks += 1
    return acks


def _check(path: Path, log: Log) -> None:
    # Raw SQLite first: the file survived the kill.
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    # Then through the store, read-only as an auditor would open it.
    store = SqliteStore(path, readonly=True)
    try:
        assert store.integrity_check() == "ok"
        for ref, iid in log.acked.items():
            item = store.get(ref)
            assert item is not None, f"acknowledged {ref} is missing or corrupt"
            assert item.id == iid
            assert item.ref == ref
        # No entry anywhere is corrupt or unreadable, acknowledged or not.
        all_refs = store._all_refs()
        assert all(store.lookup(r).problem is None for r in all_refs)
        # Each started spill is all or nothing; only the last one of a round
        # can be unacknowledged, and it may or may not have committed.
        present = set(all_refs)
        for batch in log.tried:
            flags = {ref in present for ref, _ in batch}
            assert len(flags) == 1, f"a spill was half written: {batch}"
        assert present <= {ref for batch in log.tried for ref, _ in batch}
    finally:
        store.close()


def test_sigkill_never_loses_an_acknowledged_spill(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "store.db"
    log = Log()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for rnd in range(ROUNDS):
        out_path = tmp_path / f"round{rnd}.out"
        err_path = tmp_path / f"round{rnd}.err"
        with out_path.open("w") as out, err_path.open("w") as err:
            # stdout goes to a file, so the child never blocks on a full pipe.
            proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, str(path), str(rnd * 1_000_000), str(rnd)],
                stdout=out,
                stderr=err,
                env=env,
            )
            try:
                deadline = time.monotonic() + 15
                # Wait for the first acknowledged spill (even on a slow disk),
                # then kill at a random moment after it.
                while "\nack " not in out_path.read_text():
                    assert proc.poll() is None, err_path.read_text()
                    assert time.monotonic() < deadline, "the child never acknowledged a spill"
                    time.sleep(0.005)
                time.sleep(rng.uniform(0.05, 0.4))
                proc.send_signal(signal.SIGKILL)
            finally:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, err_path.read_text()
        before = len(log.acked)
        acks = _parse(out_path.read_text(), log)
        assert acks > 0, "the child was killed before it acknowledged any spill"
        assert len(log.acked) > before
        _check(path, log)
    # A final writable reopen (as the next writer would) still sees everything.
    store = SqliteStore(path)
    try:
        assert store.integrity_check() == "ok"
        assert all(store.get(r) is not None for r in log.acked)
        assert {it.ref for it in store.items()} >= set(log.acked)
    finally:
        store.close()
