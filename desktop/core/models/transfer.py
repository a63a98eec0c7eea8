"""The child side of a model download: one file's bytes from the Hub into its `.part`,
hashed as they arrive, never more than the Hub lists.

`huggingface_hub` gives the file's address, its headers and its HTTP client; the transfer
loop is ours, because a download must be bounded whatever the server does. The library's
own loop resumes after every cut and resets its count of retries whenever bytes arrive:
a server that cuts every connection after some bytes, or sends an endless body, was
resumed for ever. Here a body larger than the listing, or a `Content-Length` that does not
fit it, ends the download at once (the `.part` is then deleted: it holds bytes that are
not the file's); connections are counted, whatever they bring; a full disk deletes the
`.part` too, so that it does not keep the disk full.
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from desktop.core.errors import LoomchatError

# Connections one download may open (each cut costs one); the `.part` is kept when they
# run out, and the next download goes on from it.
MAX_CONNECTIONS = 8
# The bytes a file of unknown size may have: no model is larger.
UNKNOWN_SIZE_CAP = 1024**4
_HASH_CHUNK = 8 * 1024 * 1024
_RETRY_PAUSE_S = 1.0


@dataclass(frozen=True)
class Failed:
    """Why the child's transfer failed, as plain data (the library's errors do not pickle);
    `delete`: the `.part` holds bytes that are not the file's, or fill the disk."""

    kind: Literal["missing", "http", "offline", "disk", "size"]
    detail: str
    delete: bool = False


class _NotTheListedFile(LoomchatError):
    """The server sends something other than the file the Hub lists."""


class HashingWriter:
    """The part file as the transfer writes it, hashed as the bytes go by (no second read
    of a file of gigabytes). Writing and hashing happen in a thread of their own, while the
    next chunk comes off the socket (both let go of the GIL; done in line, the disk and
    the network took turns). A server that ignores a range starts the file over: the hash
    is then taken again from the file at the end."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.whole = True  # the digest covers the file as it is
        start = out.tell()
        out.seek(0)
        while start and (chunk := out.read(min(_HASH_CHUNK, start - out.tell()))):
            self.digest.update(chunk)  # what earlier runs wrote
        out.seek(start)
        self._chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=3)
        self._failed: OSError | None = None
        self._worker = self._start()

    def _start(self) -> threading.Thread:
        worker = threading.Thread(target=self._drain, daemon=True)
        worker.start()
        return worker

    def _drain(self) -> None:
        while (chunk := self._chunks.get()) is not None:
            if self._failed is not None:
                continue  # the disk failed: what follows is dropped, the error is raised
            try:
                self.out.write(chunk)
            except OSError as exc:
                self._failed = exc
            self.digest.update(chunk)

    def _flush(self) -> None:
        """Wait until every chunk is on disk (raising a disk error), ready for more."""
        self._chunks.put(None)
        self._worker.join()
        if self._failed is not None:
            raise self._failed
        self._worker = self._start()

    def write(self, data: bytes) -> int:
        if self._failed is not None:
            raise self._failed
        self._chunks.put(bytes(data))
        return len(data)

    def tell(self) -> int:
        self._flush()
        return self.out.tell()

    def restart(self) -> None:
        """Empty the file: the server sends it from its start again."""
        self._flush()
        self.whole = False
        self.out.seek(0)
        self.out.truncate()

    def close(self) -> None:
        """Stop the writer thread (on a failure too: no thread outlives the transfer)."""
        self._chunks.put(None)
        self._worker.join()

    def hexdigest(self, path: Path) -> str:
        self._flush()
        if self.whole:
            return self.digest.hexdigest()
        digest = hashlib.sha256()
        with path.open("rb") as done:
            while chunk := done.read(_HASH_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()


def fetch(repo_id: str, filename: str, endpoint: str | None, part: str, size: int) -> str | Failed:
    """In the child: the rest of the file after what `part` holds, and the whole file's
    sha256. `size` is the Hub's listing (0: not listed). The library is imported here,
    never on the app's event loop (its first import alone stalls the window visibly)."""
    from huggingface_hub import constants, get_session, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError
    from huggingface_hub.utils._headers import build_hf_headers

    url = str(hf_hub_url(repo_id, filename, endpoint=endpoint))
    limit = size or UNKNOWN_SIZE_CAP
    path = Path(part)
    try:
        with path.open("r+b" if path.exists() else "wb") as out:
            have = out.seek(0, os.SEEK_END)
            if have > limit:  # not this file's beginning
                out.truncate(0)
                out.seek(0)
                have = 0
            writer = HashingWriter(out)
            try:
                for connection in range(MAX_CONNECTIONS):
                    try:
                        have, done = _one_connection(
                            get_session(), url, build_hf_headers(), writer, have, size,
                            constants.DOWNLOAD_CHUNK_SIZE, constants.HF_HUB_DOWNLOAD_TIMEOUT,
                        )  # fmt: skip
                    except _NotTheListedFile as exc:
                        return Failed("size", str(exc), delete=True)
                    except Exception as exc:
                        if _is_http_answer(exc) or connection == MAX_CONNECTIONS - 1:
                            raise
                        have = writer.tell()  # what arrived before the cut is kept
                        time.sleep(_RETRY_PAUSE_S)
                        continue
                    if done:
                        break
                digest = writer.hexdigest(path)
            finally:
                writer.close()
    except EntryNotFoundError as exc:
        return Failed("missing", str(exc).splitlines()[0][:200])
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        return Failed("http", f"HTTP {status}")
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
        kind: Literal["disk", "offline"] = (
            "disk" if full or isinstance(exc, PermissionError) else "offline"
        )
        return Failed(kind, _first_line(exc), delete=full)
    except Exception as exc:  # the library's network errors (httpx2 ...) come here
        return Failed("offline", f"{type(exc).__name__}: {_first_line(exc)}")
    return digest


def _one_connection(
    session: Any,
    url: str,
    headers: dict[str, str],
    writer: HashingWriter,
    have: int,
    size: int,
    chunk_size: int,
    timeout: float,
) -> tuple[int, bool]:
    """One GET for the rest of the file: the bytes the file then has, and whether it is
    whole. `_NotTheListedFile` where the server sends more than the listing holds."""
    from huggingface_hub import hf_raise_for_status

    asked = dict(headers)
    if have:
        asked["Range"] = f"bytes={have}-"
    with session.stream("GET", url, headers=asked, timeout=timeout) as response:
        hf_raise_for_status(response)
        if have and response.status_code == 200:  # the range was ignored: from the start
            writer.restart()
            have = 0
        length = response.headers.get("Content-Length")
        sent = int(length) if length is not None and length.isdigit() else None
        if size and sent is not None and have + sent != size:
            raise _NotTheListedFile(
                f"the server sends {sent:,} bytes where {size - have:,} are left of the "
                f"{size:,} listed"
            )
        limit = size or UNKNOWN_SIZE_CAP
        for chunk in response.iter_bytes(chunk_size=chunk_size):
            if have + len(chunk) > limit:
                raise _NotTheListedFile(f"the server sends more than the {limit:,} bytes listed")
            writer.write(chunk)
            have += len(chunk)
    return have, (have == size) if size else True


def _is_http_answer(exc: Exception) -> bool:
    """An error the server answered with (404, 403...): no use asking again."""
    from huggingface_hub.errors import HfHubHTTPError

    return isinstance(exc, HfHubHTTPError | PermissionError)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__
