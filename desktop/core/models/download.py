"""Downloading a model's files from the Hub into the data folder's `models/`.

`huggingface_hub` does the transfer (its URL for the file, its headers, its ranged GET
that resumes after a cut) in a child process, so that Cancel really stops it. The bytes go
to `<name>.part`, kept on a cut, a cancel or a quit: the next download of the file asks
only for the rest. The finished file's sha256 is checked against the Hub's before it takes
its name; a file that does not match is deleted, and said so.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from desktop.core.errors import LoomchatError
from desktop.core.models.hub import OFFLINE, GgufChoice, HubFile
from desktop.core.runtime import projector_for
from desktop.core.tools.isolation import run_isolated

PART_SUFFIX = ".part"
_POLL_S = 0.25
_HASH_CHUNK = 8 * 1024 * 1024


class DownloadError(LoomchatError):
    """A download that did not finish: why, and what is left on disk."""


@dataclass(frozen=True)
class Progress:
    name: str
    done: int  # bytes on disk, those of earlier runs included
    total: int
    bytes_per_s: float  # over this run

    @property
    def seconds_left(self) -> float | None:
        if self.bytes_per_s <= 0:
            return None
        return max(self.total - self.done, 0) / self.bytes_per_s


OnProgress = Callable[[Progress], None]


def local_name(file: HubFile) -> str:
    """Where a repo file lands in `models/`: its own name, without the repo's folders. A
    name the Hub (or a stand-in for it) sends that could land elsewhere is refused."""
    name = file.name.rsplit("/", 1)[-1]
    if not name.lower().endswith(".gguf") or name.startswith(".") or "\\" in name:
        raise DownloadError(f"{file.name!r} is not a model file name Loomchat will write.")
    return name


def part_path(models_dir: Path, file: HubFile, name: str | None = None) -> Path:
    return models_dir / ((name or local_name(file)) + PART_SUFFIX)


async def download_file(
    repo_id: str,
    file: HubFile,
    models_dir: Path,
    *,
    name: str | None = None,
    endpoint: str | None = None,
    on_progress: OnProgress | None = None,
) -> Path:
    """The file in `models_dir` (under `name`, else its own), downloaded (or resumed) and
    checked. Cancelling stops the transfer at once and keeps what has arrived."""
    name = name or local_name(file)
    destination = models_dir / name
    if destination.is_file() and destination.stat().st_size == file.size:
        return destination  # downloaded before
    models_dir.mkdir(parents=True, exist_ok=True)
    part = part_path(models_dir, file, name)
    if part.is_symlink():  # planted: the bytes would go wherever it points
        part.unlink()
    have = part.stat().st_size if part.is_file() else 0
    if have > file.size:  # not this file's beginning: start again
        part.unlink()
        have = 0
    _check_space(models_dir, file.size - have)
    started, first = time.monotonic(), have
    fetch = asyncio.ensure_future(
        run_isolated(_fetch, repo_id, file.name, endpoint, str(part), file.size)
    )
    try:
        while not fetch.done():
            await asyncio.wait({fetch}, timeout=_POLL_S)
            if on_progress is not None:
                on_progress(_progress(file, part, first, started))
        outcome = fetch.result()
    finally:
        if not fetch.done():
            fetch.cancel()
            await asyncio.gather(fetch, return_exceptions=True)
    if isinstance(outcome, _Failed):
        raise DownloadError(outcome.message(file, part))
    if file.sha256 is not None and outcome != file.sha256:
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"{name} arrived damaged (its sha256 is not the one Hugging Face "
            "lists), so it was deleted. Try the download again."
        )
    os.replace(part, destination)
    return destination


async def download_choice(
    repo_id: str,
    choice: GgufChoice,
    models_dir: Path,
    *,
    endpoint: str | None = None,
    on_progress: OnProgress | None = None,
) -> Path:
    """Every file of a choice (the parts of a split model, its projector, kept beside the
    model under the model's name), one after another; progress counts them together.
    Returns the file to load (the first part)."""
    model = models_dir / local_name(choice.files[0])
    files = [(f, local_name(f)) for f in choice.files]
    if choice.projector is not None:
        files.append((choice.projector, projector_for(model).name))
    total = sum(f.size for f, _ in files)
    _check_space(models_dir, total - sum(_on_disk(models_dir, f, n) for f, n in files))
    finished = 0
    for file, name in files:

        def overall(step: Progress, before: int = finished) -> None:
            if on_progress is not None:
                on_progress(Progress(choice.name, before + step.done, total, step.bytes_per_s))

        await download_file(
            repo_id, file, models_dir, name=name, endpoint=endpoint, on_progress=overall
        )
        finished += file.size
    return model


def _on_disk(models_dir: Path, file: HubFile, name: str) -> int:
    done = models_dir / name
    if done.is_file() and done.stat().st_size == file.size:
        return file.size
    part = part_path(models_dir, file, name)
    return part.stat().st_size if part.is_file() else 0


def existing_folder(folder: Path) -> Path:
    """`folder`, or its nearest ancestor that exists (whose disk it will be on)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _check_space(models_dir: Path, needed: int) -> None:
    import psutil

    folder = existing_folder(models_dir)
    free = psutil.disk_usage(str(folder)).free
    if needed > free:
        raise DownloadError(
            f"Not enough free disk space: the download needs {size_text(needed)} more and "
            f"{folder} has {size_text(free)} free."
        )


def size_text(n: float) -> str:
    """A size as a person reads it: "4.8 GB", "491 MB", "12 KB", "17 bytes"."""
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GB"
    if n >= 1024**2:
        return f"{n / 1024**2:.0f} MB"
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n:.0f} bytes"


def _progress(file: HubFile, part: Path, first: int, started: float) -> Progress:
    try:
        done = part.stat().st_size
    except OSError:
        done = first
    elapsed = time.monotonic() - started
    speed = (done - first) / elapsed if elapsed > 0 else 0.0
    return Progress(part.name.removesuffix(PART_SUFFIX), done, file.size, speed)


@dataclass(frozen=True)
class _Failed:
    """Why the child's transfer failed, as plain data (the library's errors do not pickle)."""

    kind: str  # "missing", "http", "offline", "disk"
    detail: str

    def message(self, file: HubFile, part: Path) -> str:
        kept = part.stat().st_size if part.is_file() else 0
        name = part.name.removesuffix(PART_SUFFIX)
        if self.kind == "missing":
            return f"{name} is not on Hugging Face (any more): {self.detail}"
        if self.kind == "disk":
            return f"{name} could not be written: {self.detail}"
        resume = (
            f" {size_text(kept)} of {size_text(file.size)} are kept: the download goes on"
            " from there."
            if kept
            else ""
        )
        if self.kind == "http":
            return f"Hugging Face refused {name}: {self.detail}.{resume}"
        return f"{OFFLINE}: the download of {name} was cut off ({self.detail}).{resume}"


class _HashingWriter:
    """The part file as `http_get` writes it, hashed as the bytes go by (no second read of
    a file of gigabytes). Writing and hashing happen in a thread of their own, while the
    next chunk comes off the socket (both let go of the GIL; done in line, the disk and
    the network took turns). The library seeks and truncates only when a server ignores
    the range it asked for; then the hash is taken again from the file at the end."""

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

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._flush()
        self.whole = False
        return self.out.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        self._flush()
        self.whole = False
        return self.out.truncate(size)

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


def _fetch(
    repo_id: str, filename: str, endpoint: str | None, part: str, size: int
) -> str | _Failed:
    """In the child: the rest of the file after what `part` holds, and the whole file's
    sha256. The library is imported here, never on the app's event loop (its first import
    alone stalled the window ~100 ms)."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils._headers import build_hf_headers

    url = str(hf_hub_url(repo_id, filename, endpoint=endpoint))

    path = Path(part)
    try:
        with path.open("r+b" if path.exists() else "wb") as out:
            have = out.seek(0, os.SEEK_END)
            writer = _HashingWriter(out)
            try:
                if have < size:
                    http_get(
                        url, cast(BinaryIO, writer), resume_size=have,
                        headers=build_hf_headers(), expected_size=size,
                    )  # fmt: skip
                digest = writer.hexdigest(path)
            finally:
                writer.close()
    except EntryNotFoundError as exc:
        return _Failed("missing", str(exc).splitlines()[0][:200])
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        return _Failed("http", f"HTTP {status}")
    except OSError as exc:
        kind = "disk" if isinstance(exc, PermissionError) or exc.errno == 28 else "offline"
        return _Failed(kind, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
    except Exception as exc:  # the library's network errors (httpx2 ...) come here
        return _Failed("offline", f"{type(exc).__name__}: {str(exc)[:200]}")
    return digest
