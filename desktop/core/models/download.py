"""Downloading a model's files from the Hub into the data folder's `models/`.

The bytes come in a child process (`transfer.fetch`), so that Cancel really stops them,
into `<name>.part`, kept on a cut, a cancel or a quit: the next download of the file asks
only for the rest. The finished file's sha256 is checked against the Hub's before it takes
its name; a file that does not match is deleted, and said so. What the Hub lists is
untrusted too: a name that would land elsewhere is refused, a size it does not give is
checked after the download (an empty file is never a model), and a local name already
taken by another repo's file (two repos' "model-Q4_K_M.gguf", one repo's `v1/m.gguf` and
`v2/m.gguf`) gives the second a longer name instead of passing for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from desktop.core.errors import LoomchatError
from desktop.core.models.hub import OFFLINE, GgufChoice, HubFile
from desktop.core.models.transfer import Failed, fetch
from desktop.core.runtime import projector_for
from desktop.core.storage.jsonfile import DamagedFile, read_json, write_json
from desktop.core.tools.isolation import run_isolated

PART_SUFFIX = ".part"
# Which repo file each name in models/ came from (a name can be taken only once).
SOURCES = "sources.json"
# Longer names are refused: with ".part" they must fit a file system's 255 bytes.
MAX_NAME_BYTES = 200
_POLL_S = 0.25
_HASH_CHUNK = 8 * 1024 * 1024


class DownloadError(LoomchatError):
    """A download that did not finish: why, and what is left on disk."""


@dataclass(frozen=True)
class Progress:
    name: str
    done: int  # bytes on disk, those of earlier runs included
    total: int  # 0 where the Hub does not say
    bytes_per_s: float  # over this run

    @property
    def seconds_left(self) -> float | None:
        if self.bytes_per_s <= 0 or self.total <= 0:
            return None
        return max(self.total - self.done, 0) / self.bytes_per_s


OnProgress = Callable[[Progress], None]


def is_gguf_name(name: str) -> bool:
    """The one rule for a model file's name, whatever its case: "x.gguf", "X.GGUF"."""
    return name.lower().endswith(".gguf")


def local_name(file: HubFile) -> str:
    """Where a repo file lands in `models/`: its own name, without the repo's folders. A
    name the Hub (or a stand-in for it) sends that could land elsewhere is refused."""
    return _checked(file.name.rsplit("/", 1)[-1], file)


def _checked(name: str, file: HubFile) -> str:
    if not is_gguf_name(name) or name.startswith(".") or "\\" in name or "\x00" in name:
        raise DownloadError(f"{file.name[:200]!r} is not a model file name Loomchat will write.")
    if len(name.encode("utf-8", "replace")) > MAX_NAME_BYTES:
        raise DownloadError(f"{name[:60]}… is too long a name for a model file.")
    return name


def longer_name(repo_id: str, file: HubFile, with_repo: bool) -> str:
    """The file's name with its folders in the repo ("v2/m.gguf": "v2-m.gguf"), and the
    repo's own name before them where `with_repo`, for a name already taken."""
    parts = [p for p in file.name.split("/") if p not in ("", ".", "..")]
    if with_repo:
        parts = [*repo_id.split("/"), *parts]
    return _checked("-".join(parts), file)


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
    """The file in `models_dir` (under `name`, else a name of its own that no other file
    has taken), downloaded (or resumed) and checked. Cancelling stops the transfer at once
    and keeps what has arrived."""
    if name is None:
        (name,) = await free_names(models_dir, repo_id, [file])
    destination = models_dir / name
    try:
        if await _is_here(destination, repo_id, file):
            return destination  # downloaded before
        models_dir.mkdir(parents=True, exist_ok=True)
        part = part_path(models_dir, file, name)
        if part.is_symlink():  # planted: the bytes would go wherever it points
            part.unlink()
        have = part.stat().st_size if part.is_file() else 0
    except OSError as exc:
        raise DownloadError(f"{name} cannot be written in {models_dir}: {exc.strerror}.") from None
    if file.size and have > file.size:  # never a part larger than the file
        part.unlink()
        have = 0
    if file.size:
        _check_space(models_dir, file.size - have)
    _remember(models_dir, name, repo_id, file)
    started, first = time.monotonic(), have
    fetching = asyncio.ensure_future(
        run_isolated(fetch, repo_id, file.name, endpoint, str(part), file.size)
    )
    try:
        while not fetching.done():
            await asyncio.wait({fetching}, timeout=_POLL_S)
            if on_progress is not None:
                on_progress(_progress(file, part, first, started))
        outcome = fetching.result()
    finally:
        if not fetching.done():
            fetching.cancel()
            await asyncio.gather(fetching, return_exceptions=True)
    if isinstance(outcome, Failed):
        message = _message(outcome, file, part)
        if outcome.delete:
            part.unlink(missing_ok=True)
            forget_source(models_dir, name)
        raise DownloadError(message)
    _check_arrived(part, name, file, outcome)
    os.replace(part, destination)
    return destination


def _check_arrived(part: Path, name: str, file: HubFile, sha256: str) -> None:
    """The part is the file the Hub lists, or it is deleted and said so."""
    size = part.stat().st_size
    problem = None
    if file.sha256 is not None and sha256 != file.sha256:
        problem = "its sha256 is not the one Hugging Face lists"
    elif size == 0:
        problem = "Hugging Face sent an empty file"
    elif file.size and size != file.size:
        problem = f"it has {size:,} bytes where {file.size:,} are listed"
    elif not file.size and not _starts_as_gguf(part):
        problem = "what arrived is not a GGUF file"
    if problem is not None:
        part.unlink(missing_ok=True)
        forget_source(part.parent, name)
        raise DownloadError(
            f"{name} arrived damaged ({problem}), so it was deleted. Try the download again."
        )


def _starts_as_gguf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == b"GGUF"


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
    names = await free_names(models_dir, repo_id, list(choice.files))
    model = models_dir / names[0]
    files = list(zip(choice.files, names, strict=True))
    if choice.projector is not None:
        files.append((choice.projector, projector_for(model).name))
    total = sum(f.size for f, _ in files)
    if all(f.size for f, _ in files):
        _check_space(models_dir, total - sum(_on_disk(models_dir, f, n) for f, n in files))
    finished = 0
    for file, name in files:

        def overall(step: Progress, before: int = finished) -> None:
            if on_progress is not None:
                on_progress(Progress(choice.name, before + step.done, total, step.bytes_per_s))

        path = await download_file(
            repo_id, file, models_dir, name=name, endpoint=endpoint, on_progress=overall
        )
        finished += file.size or path.stat().st_size
    return model


async def free_names(models_dir: Path, repo_id: str, files: list[HubFile]) -> list[str]:
    """Names in `models_dir` for files downloaded together (a split model's parts): their
    own, unless one of those is another file's; then with their folders in the repo; then
    with the repo's name too. One rule for all of them, so that the parts stay together."""
    choices = [
        [local_name(f) for f in files],
        [longer_name(repo_id, f, with_repo=False) for f in files],
        [longer_name(repo_id, f, with_repo=True) for f in files],
    ]
    for names in choices:
        if all(
            [await _free_for(models_dir / n, repo_id, f) for n, f in zip(names, files, strict=True)]
        ):
            return names
    raise DownloadError(
        f"{files[0].name[:200]} cannot be given a name in {models_dir}: other files have "
        "taken every one it could have."
    )


async def _free_for(path: Path, repo_id: str, file: HubFile) -> bool:
    """Whether `path` may hold this repo file: nothing is there (nor a part of something
    else), or it is this file already."""
    source = _sources(path.parent).get(path.name)
    here = {"repo": repo_id, "file": file.name}
    if source is not None:
        return bool(source == here)
    try:
        if not path.is_file():
            return True  # a part of it may be there: its sha256 is checked at the end
    except OSError:
        return False
    if await _is_here(path, repo_id, file, remembered=False):
        _remember(path.parent, path.name, repo_id, file)  # an older version's download
        return True
    return False


async def _is_here(path: Path, repo_id: str, file: HubFile, *, remembered: bool = True) -> bool:
    """Whether `path` is this repo file, downloaded whole: by the record of where it came
    from, or (an older version's download, `remembered=False`) by its size and sha256."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        if file.size and path.stat().st_size != file.size:
            return False
    except OSError:
        return False
    if remembered:
        return _sources(path.parent).get(path.name) == {"repo": repo_id, "file": file.name}
    if file.sha256 is None:
        return bool(file.size)  # a small file kept in git: its size is all there is
    return await run_isolated(_sha256, str(path)) == file.sha256


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as done:
        while chunk := done.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sources(models_dir: Path) -> dict[str, object]:
    try:
        found = read_json(models_dir / SOURCES)
    except (OSError, DamagedFile):
        return {}
    return found if isinstance(found, dict) else {}


def _remember(models_dir: Path, name: str, repo_id: str, file: HubFile) -> None:
    sources = _sources(models_dir)
    sources[name] = {"repo": repo_id, "file": file.name}
    with contextlib.suppress(OSError, ValueError):
        write_json(models_dir / SOURCES, sources)


def forget_source(models_dir: Path, name: str) -> None:
    """A model deleted: its name is free again."""
    sources = _sources(models_dir)
    if sources.pop(name, None) is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if sources:
            write_json(models_dir / SOURCES, sources)
        else:
            (models_dir / SOURCES).unlink()


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


def _message(failed: Failed, file: HubFile, part: Path) -> str:
    name = part.name.removesuffix(PART_SUFFIX)
    if failed.kind == "missing":
        return f"{name} is not on Hugging Face (any more): {failed.detail}"
    if failed.kind == "size":
        return f"{name} is not the file Hugging Face lists ({failed.detail}), so it was deleted."
    if failed.kind == "disk":
        deleted = ": what had arrived was deleted" if failed.delete else ""
        return f"{name} could not be written ({failed.detail}){deleted}."
    kept = part.stat().st_size if part.is_file() else 0
    total = f" of {size_text(file.size)}" if file.size else ""
    resume = f" {size_text(kept)}{total} are kept: the download goes on from there." if kept else ""
    if failed.kind == "http":
        return f"Hugging Face refused {name}: {failed.detail}.{resume}"
    return f"{OFFLINE}: the download of {name} was cut off ({failed.detail}).{resume}"
