"""Bringing a collection's index up to date with its folders: new and changed files read
(in a killable child, at a low priority, a batch of small files at a time), unchanged ones
skipped by their size and time or else their content's hash, removed ones forgotten. Each
file is committed on its own, so a run stopped (cancelled, quit, killed) resumes where it
was. A file that cannot be read is listed with its problem and the rest go on."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from desktop.core.documents.chunks import Chunk, chunk
from desktop.core.documents.formats import readable, sections_of
from desktop.core.documents.index import DocumentIndex, Known
from desktop.core.tools.isolation import WorkerCrashed, run_isolated

# A file larger than this is listed as too large (a 2 GB log is not a document).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
# A batch's (and a lone file's) reading ends after this; a batch that does is read again
# one file at a time, so only the file at fault is listed.
READ_TIMEOUT_S = 60.0
# Small files are read together: a child per file would cost more than reading them.
BATCH_FILES = 64
BATCH_BYTES = 4 * 1024 * 1024
# A folder of more files than this is indexed up to it, with a problem saying so.
MAX_FILES = 200_000
# Folders passed over: version control, caches and dependencies, not the person's writing.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})


@dataclass(frozen=True)
class Read:
    """A file read in the child: its content's hash, its pages, its passages packed flat
    (their texts, their headings, and four numbers each: section, start, end, page or -1).
    Thousands of small objects coming back into the app would each be tracked by Python's
    garbage collector, whose full passes over the app's objects then stall the window;
    strings and an int array are not tracked."""

    sha256: str
    pages: int
    texts: list[str]
    headings: list[str]
    numbers: array[int]

    @classmethod
    def of(cls, sha256: str, pages: int, chunks: list[Chunk]) -> Read:
        numbers = array("q")
        for c in chunks:
            numbers.extend((c.section, c.start, c.end, -1 if c.page is None else c.page))
        return cls(sha256, pages, [c.text for c in chunks], [c.heading for c in chunks], numbers)

    @property
    def chunks(self) -> Iterator[Chunk]:
        """The passages, made one at a time as they are stored."""
        for at, (text, heading) in enumerate(zip(self.texts, self.headings, strict=True)):
            section, start, end, page = self.numbers[4 * at : 4 * at + 4]
            yield Chunk(text, section, start, end, None if page < 0 else page, heading)


@dataclass(frozen=True)
class Found:
    """A file under a collection's sources, as the walk found it."""

    path: str
    size: int
    mtime_ns: int


@dataclass
class IndexProgress:
    """How far a run is: files and bytes looked at of those found, pages read, and the
    time left, from the bytes read so far."""

    collection: str
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    pages: int = 0
    current: str = ""
    started: float = field(default_factory=time.monotonic)

    @property
    def seconds_left(self) -> float | None:
        elapsed = time.monotonic() - self.started
        if self.bytes_done <= 0 or elapsed < 1:
            return None
        return max(0.0, (self.bytes_total - self.bytes_done) * elapsed / self.bytes_done)


@dataclass
class IndexReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)


Progress = Callable[[IndexProgress], None]


async def index_collection(
    index: DocumentIndex, collection: str, progress: Progress | None = None
) -> IndexReport:
    """Bring `collection` up to date; cancelling stops at once (the child is killed) and
    keeps every file committed so far."""
    report = IndexReport()
    sources = await asyncio.to_thread(index.sources, collection)
    found, walk_problems = await asyncio.to_thread(_walk, sources)
    known = await asyncio.to_thread(index.known, collection)
    there = {f.path for f in found} | {path for path, _ in walk_problems}
    gone = [path for path in known if path not in there]
    if gone:
        await asyncio.to_thread(index.forget, collection, gone)
        report.removed = len(gone)
    for path, problem in walk_problems:
        await asyncio.to_thread(index.refuse, collection, path, 0, 0, problem)
        report.problems.append((path, problem))
    state = IndexProgress(collection, files_total=len(found),
                          bytes_total=sum(f.size for f in found))  # fmt: skip
    changed: list[Found] = []
    for file in found:
        was = known.get(file.path)
        if was is not None and (was.size, was.mtime_ns) == (file.size, file.mtime_ns):
            report.unchanged += 1
            state.files_done += 1
            state.bytes_done += file.size
            if was.problem is not None:
                report.problems.append((file.path, was.problem))
        else:
            changed.append(file)
    if progress:
        progress(state)
    for batch in _batches(changed):
        state.current = batch[0].path
        results = await _read_batch(batch)
        for file, result in zip(batch, results, strict=True):
            await _commit(index, collection, file, result, known, report)
            state.files_done += 1
            state.bytes_done += file.size
            state.pages += result.pages if isinstance(result, Read) else 0
        if progress:
            progress(state)
    state.current = ""
    if progress:
        progress(state)
    return report


async def _commit(index: DocumentIndex, collection: str, file: Found, result: Read | str,
                  known: dict[str, Known], report: IndexReport) -> None:  # fmt: skip
    previous = known.get(file.path)
    if isinstance(result, str):
        await asyncio.to_thread(index.refuse, collection, file.path, file.size,
                                file.mtime_ns, result)  # fmt: skip
        report.problems.append((file.path, result))
    elif previous is not None and previous.sha256 == result.sha256:
        await asyncio.to_thread(index.touch, collection, file.path, file.size, file.mtime_ns)
        report.unchanged += 1
    else:
        await asyncio.to_thread(index.store, collection, file.path, file.size, file.mtime_ns,
                                result.sha256, result.pages, result.chunks)  # fmt: skip
        if previous is None:
            report.added += 1
        else:
            report.updated += 1


def _batches(files: list[Found]) -> Iterator[list[Found]]:
    batch: list[Found] = []
    size = 0
    for file in files:
        if batch and (len(batch) >= BATCH_FILES or size + file.size > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(file)
        size += file.size
    if batch:
        yield batch


async def _read_batch(batch: list[Found]) -> list[Read | str]:
    """Each file's passages or problem; a batch that times out or kills its child is read
    again file by file."""
    try:
        paths = [f.path for f in batch]
        return await run_isolated(read_files, paths, timeout_s=READ_TIMEOUT_S)
    except (TimeoutError, WorkerCrashed, MemoryError) as exc:
        if len(batch) > 1:
            return [result for file in batch for result in await _read_batch([file])]
        if isinstance(exc, TimeoutError):
            return [f"could not be read in {READ_TIMEOUT_S:g} s"]
        return ["needed too much memory to read"]


def read_files(paths: list[str]) -> list[Read | str]:
    """In the child, at a low priority (the chat's model needs the cores more)."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(10)
    return [read_file(path) for path in paths]


def read_file(path: str) -> Read | str:
    """The file's passages, or its problem in words. What is read is the file that was
    opened (never through a link, never a FIFO or device), at most the cap, and only if it
    did not change while it was read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return "is not a regular file"
        if before.st_size > MAX_DOCUMENT_BYTES:
            return f"is over {MAX_DOCUMENT_BYTES // 1024 // 1024} MB: too large to index"
        with os.fdopen(fd, "rb", closefd=False) as opened:
            data = opened.read(MAX_DOCUMENT_BYTES + 1)
        after = os.fstat(fd)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    finally:
        os.close(fd)
    if len(data) > MAX_DOCUMENT_BYTES:
        return f"is over {MAX_DOCUMENT_BYTES // 1024 // 1024} MB: too large to index"
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(
        data
    ) != before.st_size:
        return "changed while it was read; it is read again on the next update"
    try:
        sections = sections_of(os.path.basename(path), data)
    except ValueError as exc:
        return f"has no text to index: {exc}"
    if not sections:
        return "has no text to index"
    pages = max((s.page or 0 for s in sections), default=0)
    return Read.of(hashlib.sha256(data).hexdigest(), pages, chunk(sections))


def _walk(sources: list[Path]) -> tuple[list[Found], list[tuple[str, str]]]:
    """The readable files under the sources (a source may be a file), without following
    links; a link out of its folder is a problem, one inside it is the file it names."""
    found: dict[str, Found] = {}
    problems: list[tuple[str, str]] = []

    def add(path: Path, info: os.stat_result) -> None:
        if len(found) < MAX_FILES:
            found[str(path)] = Found(str(path), info.st_size, info.st_mtime_ns)

    for source in sources:
        try:
            info = source.lstat()
        except OSError:
            problems.append((str(source), "is no longer there"))
            continue
        if stat.S_ISREG(info.st_mode):
            add(source, info)
            continue
        if not stat.S_ISDIR(info.st_mode):
            problems.append((str(source), "is not a folder or a regular file"))
            continue
        root = source.resolve()
        for folder, dirs, files in os.walk(source, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
            for name in sorted(files):
                path = Path(folder) / name
                if not readable(path):
                    continue
                try:
                    info = path.lstat()
                except OSError:
                    continue  # gone since the folder was listed
                if stat.S_ISLNK(info.st_mode):
                    if not path.resolve().is_relative_to(root):
                        problems.append((str(path), "links outside the folder, so it is left out"))
                elif stat.S_ISREG(info.st_mode):
                    add(path, info)
                else:
                    problems.append((str(path), "is not a regular file"))
    if len(found) >= MAX_FILES:
        problems.append((str(sources[0]), f"more than {MAX_FILES:,} files: the rest are left out"))
    return list(found.values()), problems
