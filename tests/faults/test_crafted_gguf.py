"""Crafted GGUF files in models/: headers that declare arrays of 2^60 strings, a billion
elements in a sparse gigabyte, keys of exabytes, more keys than bytes. Each is listed at
once with its problem, in a child whose memory is bounded; a real file still reads; the
Models dialog shows such a file as a person would see it."""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path

import pytest

from desktop.core.models.gguf_header import GgufError, read_gguf_header
from desktop.core.models.library import local_models, read_header
from desktop.core.tools.isolation import MEMORY_BUDGET, run_isolated
from tests.core.models.test_library import tiny_gguf

STRING, ARRAY, UINT32 = 8, 9, 4


def gguf_bytes(*pairs: bytes, keys: int | None = None) -> bytes:
    """A GGUF v3 header: magic, version, no tensors, the key count, then `pairs`."""
    count = len(pairs) if keys is None else keys
    return b"GGUF" + struct.pack("<IQQ", 3, 0, count) + b"".join(pairs)


def key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


def string_array(name: str, count: int) -> bytes:
    return key(name) + struct.pack("<IIQ", ARRAY, STRING, count)


CRAFTED = {
    "2^60 strings in 60 bytes": lambda: gguf_bytes(string_array("tokenizer.ggml.tokens", 2**60)),
    "2^60 numbers": lambda: gguf_bytes(key("x") + struct.pack("<IIQ", ARRAY, UINT32, 2**60)),
    "a key of an exabyte": lambda: gguf_bytes(struct.pack("<Q", 2**60) + b"abc"),
    "a string of an exabyte": lambda: gguf_bytes(key("general.name") + struct.pack("<IQ", STRING, 2**60)),
    "more keys than bytes": lambda: gguf_bytes(keys=2**62),
    "an unknown type": lambda: gguf_bytes(key("x") + struct.pack("<I", 99)),
    "cut in a key": lambda: gguf_bytes(key("general.architecture")[:-3], keys=1),
    "version 7": lambda: b"GGUF" + struct.pack("<IQQ", 7, 0, 0),
    "not gguf": lambda: b"PK\x03\x04" + b"\x00" * 56,
}  # fmt: skip


@pytest.mark.parametrize("crafted", CRAFTED, ids=CRAFTED.keys())
async def test_a_crafted_header_is_a_problem_said_at_once(tmp_path: Path, crafted: str) -> None:
    path = tmp_path / "crafted.gguf"
    path.write_bytes(CRAFTED[crafted]())
    with pytest.raises(GgufError):
        read_gguf_header(path)  # in this process: it must stop by itself, fast
    started = time.monotonic()
    header = await read_header(path)
    assert header.problem is not None and "not a readable GGUF file" in header.problem
    assert time.monotonic() - started < 10


async def test_a_billion_strings_in_a_sparse_gigabyte_are_not_walked(tmp_path: Path) -> None:
    """The count fits the file's size, so it is not refused at once: the strings' own
    lengths are. Each is checked as it is met; the first one past the end stops it."""
    path = tmp_path / "sparse.gguf"
    with path.open("wb") as out:
        out.write(gguf_bytes(string_array("tokenizer.ggml.tokens", 10**8)))
        out.write(struct.pack("<Q", 2**40))  # the first string says a terabyte
        out.truncate(10**9)
    started = time.monotonic()
    header = await read_header(path)
    assert header.problem is not None and time.monotonic() - started < 10


async def test_a_real_file_and_a_crafted_one_side_by_side(tmp_path: Path) -> None:
    tiny_gguf(tmp_path / "tiny.gguf")
    (tmp_path / "crafted.gguf").write_bytes(CRAFTED["2^60 strings in 60 bytes"]())
    models = {m.name: m.header for m in await local_models(tmp_path)}
    assert models["tiny.gguf"].problem is None and models["tiny.gguf"].context_length == 4096
    assert models["crafted.gguf"].problem is not None


def allocate(size: int) -> int:
    return len(bytearray(size))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA")
async def test_a_child_cannot_take_more_memory_than_its_budget() -> None:
    assert await run_isolated(allocate, 100 * 1024 * 1024) == 100 * 1024 * 1024
    with pytest.raises(MemoryError):
        await run_isolated(allocate, MEMORY_BUDGET + 512 * 1024 * 1024)
    big = MEMORY_BUDGET + 256 * 1024 * 1024
    assert await run_isolated(allocate, big, memory=None) == big  # unbounded where asked
