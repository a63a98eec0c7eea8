"""The few facts the app shows of a GGUF file, read from its header with every declared
count and length checked against the bytes left in the file before anything is read.

A GGUF header is a list of typed key-value pairs, some of them arrays (the tokenizer's
vocabulary). A general reader believes the counts it finds: a 60-byte file that declares
an array of 2^60 strings made one grow by a hundred megabytes a second. Here a count that
the rest of the file cannot hold is a damaged file, said at once; arrays are skipped, not
kept; only short strings are kept at all.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from desktop.core.errors import LoomchatError

MAGIC = b"GGUF"
# Value types (ggml's gguf.h): their size in bytes, for the fixed-size ones.
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}  # fmt: skip
_STRING, _ARRAY = 8, 9
MAX_KEY_BYTES = 4096
# Strings longer than this are skipped, not kept (a chat template is only looked for).
MAX_KEPT_STRING_BYTES = 1024
# No real model has more keys than this; a header that says so is damaged.
MAX_KEYS = 1_000_000


class GgufError(LoomchatError, ValueError):
    """Not a GGUF file, or one whose header cannot be true."""


@dataclass
class GgufHeader:
    """The header's scalar values (strings up to MAX_KEPT_STRING_BYTES), and the keys of
    the longer strings and arrays it holds."""

    version: int
    values: dict[str, Any] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)


class _Reader:
    def __init__(self, file: BinaryIO, size: int, endian: str, wide: bool) -> None:
        self.file, self.size, self.endian = file, size, endian
        self.count_format = "Q" if wide else "I"  # version 1 counted in 32 bits

    @property
    def left(self) -> int:
        return self.size - self.file.tell()

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > self.left:
            raise GgufError(f"{what} declares {n:,} bytes, but only {self.left:,} are left")
        data = self.file.read(n)
        if len(data) != n:
            raise GgufError(f"the file ended inside {what}")
        return data

    def skip(self, n: int, what: str) -> None:
        if n < 0 or n > self.left:
            raise GgufError(f"{what} declares {n:,} bytes, but only {self.left:,} are left")
        self.file.seek(n, 1)

    def number(self, kind: str, what: str) -> Any:
        data = self.take(struct.calcsize(kind), what)
        return struct.unpack(self.endian + kind, data)[0]

    def count(self, what: str) -> int:
        return int(self.number(self.count_format, what))

    def string_length(self, what: str) -> int:
        length = self.count(what)
        if length > self.left:
            raise GgufError(f"{what} declares {length:,} bytes, but only {self.left:,} are left")
        return length


def read_gguf_header(path: Path) -> GgufHeader:
    """The header of the GGUF file at `path`; `GgufError` if it is not one or is damaged."""
    with path.open("rb") as file:
        size = file.seek(0, 2)
        file.seek(0)
        if file.read(4) != MAGIC:
            raise GgufError("it does not start as a GGUF file does")
        raw_version = file.read(4)
        if len(raw_version) != 4:
            raise GgufError("the file ends inside its header")
        little, big = struct.unpack("<I", raw_version)[0], struct.unpack(">I", raw_version)[0]
        endian = "<" if little in (1, 2, 3) else ">" if big in (1, 2, 3) else ""
        if not endian:
            raise GgufError(f"GGUF version {little} is not one this app reads")
        version = little if endian == "<" else big
        reader = _Reader(file, size, endian, wide=version >= 2)
        reader.count("the tensor count")
        keys = reader.count("the key count")
        # Each pair takes at least a key length, a type and one byte of value.
        if keys > MAX_KEYS or keys * 13 > reader.left:
            raise GgufError(f"it declares {keys:,} keys, more than the file can hold")
        header = GgufHeader(version)
        for _ in range(keys):
            _read_pair(reader, header)
        return header


def _read_pair(reader: _Reader, header: GgufHeader) -> None:
    length = reader.string_length("a key")
    if length > MAX_KEY_BYTES:
        raise GgufError(f"a key is {length:,} bytes long")
    key = reader.take(length, "a key").decode("utf-8", "replace")
    kind = reader.number("I", f"the type of {key}")
    if kind == _ARRAY:
        _skip_array(reader, key)
        header.present.add(key)
    elif kind == _STRING:
        size = reader.string_length(key)
        if size <= MAX_KEPT_STRING_BYTES:
            header.values[key] = reader.take(size, key).decode("utf-8", "replace")
        else:
            reader.skip(size, key)
        header.present.add(key)
    elif kind in _FORMATS:
        header.values[key] = reader.number(_FORMATS[kind], key)
        header.present.add(key)
    else:
        raise GgufError(f"{key} has a value of unknown type {kind}")


def _skip_array(reader: _Reader, key: str) -> None:
    kind = reader.number("I", f"the element type of {key}")
    count = reader.count(f"the length of {key}")
    if kind in _FIXED:
        reader.skip(count * _FIXED[kind], key)
    elif kind == _STRING:
        if count * struct.calcsize(reader.count_format) > reader.left:  # its length, at least
            raise GgufError(f"{key} declares {count:,} strings, more than the file can hold")
        for _ in range(count):
            reader.skip(reader.string_length(key), key)
    else:  # arrays of arrays: no model header has them
        raise GgufError(f"{key} is an array of type {kind}, which GGUF headers do not hold")


# Architectures that only embed (encoders): their files make vectors, never chat.
ENCODERS = frozenset(
    {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert",
     "neo-bert", "eurobert", "t5encoder"}
)  # fmt: skip


def embeds(path: Path) -> bool:
    """Whether the file is an embedding model (an encoder, or a model that says how it pools
    its tokens into one vector), from its header; False for a file that cannot be read."""
    try:
        header = read_gguf_header(path)
    except (GgufError, OSError):
        return False
    architecture = header.values.get("general.architecture")
    return architecture in ENCODERS or f"{architecture}.pooling_type" in header.values
