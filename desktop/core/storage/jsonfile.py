"""The data folder's JSON files (settings, presets, calibrations, the models' index), read
as untrusted input and written so that no one else can read them.

Anything may have written such a file: another version, a hand edit, a full disk, another
program. Reading one never raises anything but `DamagedFile`: not a regular file (a FIFO
would hang the read, `/dev/zero` would fill memory), larger than its cap, not UTF-8, not
JSON, nested past Python's recursion limit, or holding NaN or Infinity (which pass every
numeric bound of a schema, since no comparison with NaN is true).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from desktop.core.errors import LoomchatError

# No data file of Loomchat's comes near; a larger one is not read.
MAX_BYTES = 32 * 1024 * 1024


class DamagedFile(LoomchatError, ValueError):
    """A data file that cannot be used, and why, in words a person can act on."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """At most `max_bytes` of a regular file, or `DamagedFile`; `OSError` where it cannot be
    opened at all (missing, no right to read). Opened without blocking, then checked: a
    FIFO planted under the name does not hang the read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DamagedFile(f"{path.name} is not a regular file")
    with os.fdopen(fd, "rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DamagedFile(f"{path.name} is larger than {max_bytes // (1024 * 1024)} MB")
    return data


def parse(data: bytes | str, name: str = "the file") -> Any:
    """JSON from untrusted bytes (a byte order mark allowed), or `DamagedFile` saying why."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data.lstrip("\ufeff")
        return json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise DamagedFile(f"{name} is not UTF-8 text") from None
    except RecursionError:
        raise DamagedFile(f"{name} is nested too deeply to read") from None
    except ValueError as exc:
        raise DamagedFile(f"{name} is not valid JSON ({exc})") from None


def read_json(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON in `path`; `DamagedFile` for anything that cannot be used, `OSError` where
    the file cannot be opened (`FileNotFoundError` where there is none)."""
    return parse(read_bytes(path, max_bytes), path.name)


def write_json(path: Path, data: Any, *, indent: int | None = 1) -> None:
    """Write to a private temporary file beside `path`, then rename it over `path`: never
    a half-written file, never one another user can read."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp: readable by its owner only
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
