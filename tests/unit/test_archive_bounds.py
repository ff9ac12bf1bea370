"""An archive is bounded by what it unpacks to, not only by its own size (issue 23, item 3).

A 1.2 MB ``.eval`` holding a 1.2 GB sample took 31 s and 2.4 GB of memory:
the samples of an archive may unpack to no more than an input file may hold,
read from each member's header before anything is decompressed, and a member
that unpacks to more than its header says is bad input too.
"""

from __future__ import annotations

import io
import json
import struct
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard

from verifier.cli import main
from verifier.importers import inspect as inspect_importer
from verifier.io import MAX_INPUT_BYTES

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "fixtures" / "histories" / "inspect" / "repo_fix.json"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def sample_bytes(padding: int = 0) -> bytes:
    """The fixture's first sample as a member, with `padding` spaces of JSON white space."""
    sample = json.loads(LOG.read_text("utf-8"))["samples"][0]
    return json.dumps(sample).encode() + b" " * padding


def deflated(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def with_declared_size(archive: bytes, name: str, size: int) -> bytes:
    """The archive with the uncompressed size of one member changed in both its headers."""
    out = bytearray(archive)
    raw = name.encode()
    central = out.find(b"PK\x01\x02")
    while central >= 0:
        n = struct.unpack_from("<H", out, central + 28)[0]
        if bytes(out[central + 46 : central + 46 + n]) == raw:
            struct.pack_into("<I", out, central + 24, size)
            local = struct.unpack_from("<I", out, central + 42)[0]
            struct.pack_into("<I", out, local + 22, size)
        central = out.find(b"PK\x01\x02", central + 4)
    return bytes(out)


def zstd_member(name: str, data: bytes, declared: int) -> bytes:
    """An archive of one zstd member (method 93) whose header declares `declared` bytes."""
    packed = zstandard.ZstdCompressor().compress(data)
    crc, fname = zlib.crc32(data), name.encode()
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 63, 0, 93, 0, 0, crc, len(packed), declared, len(fname), 0
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII",
        0x02014B50, 63, 63, 0, 93, 0, 0, crc, len(packed), declared, len(fname),
        0, 0, 0, 0, 0, 0,
    )
    body = local + fname + packed
    directory = central + fname
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(directory), len(body), 0)
    return body + directory + end


def test_a_member_declaring_more_than_the_bound_is_refused_before_it_is_unpacked(
    tmp_path: Path,
) -> None:
    name = "samples/fix-1_epoch_1.json"
    archive = with_declared_size(deflated({name: sample_bytes()}), name, 1_200_000_000)
    path = tmp_path / "bomb.eval"
    path.write_bytes(archive)
    code, out, err = run("import", "inspect", str(path))
    assert code == 2 and out == "", err
    assert "unpacks to 1200000000 bytes" in err and str(MAX_INPUT_BYTES) in err


def test_the_bound_counts_every_sample_of_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = sample_bytes(padding=600_000)
    members = {"samples/a_epoch_1.json": one, "samples/b_epoch_1.json": one}
    path = tmp_path / "big.eval"
    path.write_bytes(deflated(members))
    assert path.stat().st_size < 200_000  # spaces compress: small on disk, big unpacked
    monkeypatch.setattr(inspect_importer, "MAX_UNPACKED_BYTES", len(one) + 1000)
    tracemalloc.start()
    try:
        started = time.perf_counter()
        code, out, err = run("import", "inspect", str(path), "--sample", "fix-1")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and out == "", err
    assert "samples/b_epoch_1.json unpacks to" in err
    assert time.perf_counter() - started < 30
    assert peak < 8 * len(one)


def test_an_archive_within_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    path.write_bytes(deflated({"samples/fix-1_epoch_1.json": sample_bytes(padding=1000)}))
    code, out, err = run("import", "inspect", str(path))
    assert code == 0, err
    assert out.startswith('{"event": "header"') or out.startswith('{"event":"header"')


def test_a_zstd_member_larger_than_its_header_says_is_refused(tmp_path: Path) -> None:
    data = sample_bytes(padding=50_000)
    path = tmp_path / "lying.eval"
    path.write_bytes(zstd_member("samples/fix-1_epoch_1.json", data, declared=1000))
    code, out, err = run("import", "inspect", str(path))
    assert code == 2 and out == "", err
    assert "does not unpack to the 1000 bytes its header says" in err


def test_a_damaged_member_is_bad_input(tmp_path: Path) -> None:
    name = "samples/fix-1_epoch_1.json"
    archive = bytearray(deflated({name: sample_bytes(padding=5000)}))
    start = archive.find(name.encode()) + len(name) + 20
    archive[start : start + 40] = b"\xff" * 40
    path = tmp_path / "damaged.eval"
    path.write_bytes(bytes(archive))
    code, out, err = run("import", "inspect", str(path))
    assert code == 2 and out == "", err
    assert "cannot be unpacked" in err and "Traceback" not in err
