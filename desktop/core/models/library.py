"""The GGUF files in the data folder's `models/`: what each is (from its header, read with
the `gguf` package), delete, import. Reading a header parses the whole tokenizer (seconds
for a large vocabulary), so what was read is kept in `models/index.json`, keyed by name,
size and modification time; a file is read in a child process that a timeout kills (a
hostile file cannot hang the app)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from desktop.core.errors import LoomchatError
from desktop.core.models.download import (
    MAX_NAME_BYTES,
    PART_SUFFIX,
    forget_source,
    is_gguf_name,
)
from desktop.core.models.gguf_header import read_gguf_header
from desktop.core.models.hub import split_part
from desktop.core.runtime import PROJECTOR_SUFFIX, LlamaServer, projector_for
from desktop.core.storage.jsonfile import DamagedFile, read_json, write_json
from desktop.core.tools.isolation import run_isolated

INDEX = "index.json"
HEADER_TIMEOUT_S = 60.0
# A model's temperature where a request sends none and its file names none. At
# llama-server's own, a small model's answers after a tool came wrapped like JSON and left
# results unstated more often (docs/experiments/calls-at-chat-temperature.md). A preset's
# or the Settings' temperature still wins.
DEFAULT_TEMPERATURE = 0.3
SAMPLING_TEMPERATURE = "general.sampling.temp"  # the key llama.cpp reads it from


class LibraryError(LoomchatError):
    pass


@dataclass(frozen=True)
class ModelHeader:
    """What a GGUF file's header says (None where it says nothing, or could not be read)."""

    name: str | None = None
    architecture: str | None = None
    quant: str | None = None
    context_length: int | None = None
    has_chat_template: bool = False
    problem: str | None = None  # why the header could not be read


@dataclass(frozen=True)
class LocalModel:
    path: Path
    size: int
    header: ModelHeader
    last_used: float | None  # seconds since the epoch

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def sees_images(self) -> bool:
        return projector_for(self.path).is_file()


def models_in(folder: Path) -> list[Path]:
    """The finished models, newest first: a file each, or the first part of a split one
    (not the other parts, the projectors beside their models, or downloads still going)."""
    try:
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    found = [
        p
        for p in entries
        if is_gguf_name(p.name)
        and not p.name.lower().endswith(PROJECTOR_SUFFIX)
        and (split_part(p.name) or 1) == 1
        and p.is_file()
    ]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def companions(model: Path) -> list[Path]:
    """The files that belong to a model: the other parts of a split one, its projector."""
    siblings = [projector_for(model)]
    if split_part(model.name) == 1:
        stem = model.name.rsplit("-00001-of-", 1)[0]
        found = (p for p in model.parent.iterdir() if p.name.startswith(f"{stem}-"))
        siblings += sorted(p for p in found if split_part(p.name) not in (None, 1))
    return [p for p in siblings if p.is_file()]


async def local_models(folder: Path) -> list[LocalModel]:
    index = _read_index(folder)
    changed = False
    models = []
    for path in models_in(folder):
        stat = path.stat()
        key = f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}"
        entry = index.get(key)
        used = _last_used(entry)
        header = _cached_header(entry)
        if header is None:  # not read yet, or a damaged entry: read (again)
            header = await read_header(path)
            index[key] = {"header": asdict(header), "last_used": used}
            changed = True
        models.append(LocalModel(path, stat.st_size, header, used))
    if changed:
        _write_index(folder, index)
    return models


async def server_temperature(path: Path, timeout_s: float = HEADER_TIMEOUT_S) -> float | None:
    """The temperature to start the built-in server at for the model in `path`: None where
    the file names its own (the server takes it from there), else `DEFAULT_TEMPERATURE`.
    A file whose header cannot be read gets the default: the server says what is wrong,
    and what is not a file at all (a pipe would hold the read till its timeout) is left to
    the server's start to refuse at once."""
    if not path.is_file():
        return DEFAULT_TEMPERATURE
    try:
        names_its_own = await run_isolated(_names_a_temperature, str(path), timeout_s=timeout_s)
    except Exception:  # a damaged or hostile file, or too slow to read
        names_its_own = False
    return None if names_its_own else DEFAULT_TEMPERATURE


async def built_in_server(model: Path, **options: Any) -> LlamaServer:
    """The built-in server for `model` as every caller starts it: at the temperature
    `server_temperature` chooses for the file; `options` are LlamaServer's own."""
    return LlamaServer(model=model, temperature=await server_temperature(model), **options)


def _names_a_temperature(path: str) -> bool:
    """In the child: whether the file carries a sampling temperature of its own."""
    return isinstance(read_gguf_header(Path(path)).values.get(SAMPLING_TEMPERATURE), float)


async def read_header(path: Path, timeout_s: float = HEADER_TIMEOUT_S) -> ModelHeader:
    try:
        return await run_isolated(_header, str(path), timeout_s=timeout_s)
    except TimeoutError:
        return ModelHeader(problem=f"its header could not be read in {timeout_s:g} s")
    except Exception as exc:  # a damaged or hostile file: said, never a crash
        return ModelHeader(problem=f"not a readable GGUF file ({type(exc).__name__}: {exc})")


def mark_used(path: Path, when: float) -> None:
    """Remember when a model was last run (the manager shows it)."""
    try:
        stat = path.stat()
    except OSError:
        return
    folder = path.parent
    index = _read_index(folder)
    key = f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}"
    header = _cached_header(index.get(key))
    index[key] = {**({"header": asdict(header)} if header else {}), "last_used": when}
    _write_index(folder, index)


def delete_model(folder: Path, name: str) -> Path:
    """Delete a model by its name, with its other parts, its projector and what is left of
    their downloads."""
    path = folder / Path(name).name  # a name, never a path elsewhere
    shown = name if len(name) <= 80 else name[:80] + "…"
    try:
        too_long = len(path.name.encode("utf-8", "replace")) > MAX_NAME_BYTES
        if too_long or not is_gguf_name(path.name) or not path.is_file():
            raise LibraryError(f"There is no model named {shown!r} in {folder}.")
        for file in [path, *companions(path)]:
            file.unlink()
            Path(str(file) + PART_SUFFIX).unlink(missing_ok=True)
        projector_part = Path(str(projector_for(path)) + PART_SUFFIX)
        projector_part.unlink(missing_ok=True)
    except OSError as exc:
        raise LibraryError(f"{shown} could not be deleted: {exc.strerror or exc}.") from None
    forget_source(folder, path.name)
    index = _read_index(folder)
    _write_index(folder, {k: v for k, v in index.items() if k.split(":", 1)[0] != path.name})
    return path


async def import_model(folder: Path, source: Path) -> Path:
    """Copy a GGUF file from elsewhere into `models/` (off the event loop: it may be GBs)."""
    if not is_gguf_name(source.name) or not source.is_file():
        raise LibraryError(f"{source} is not a GGUF model file.")
    target = folder / source.name
    if target.exists():
        raise LibraryError(f"{folder} already has a model named {source.name}.")
    folder.mkdir(parents=True, exist_ok=True)
    partial = Path(str(target) + PART_SUFFIX)
    try:
        await asyncio.to_thread(shutil.copyfile, source, partial)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise LibraryError(f"{source.name} could not be copied: {exc}") from None
    return target


_FIELDS = set(ModelHeader.__dataclass_fields__)
# What each field of a header kept in the index may hold; anything else is a damaged entry.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str, type(None)),
    "architecture": (str, type(None)),
    "quant": (str, type(None)),
    "context_length": (int, type(None)),
    "has_chat_template": (bool,),
    "problem": (str, type(None)),
}


def _cached_header(entry: Any) -> ModelHeader | None:
    """The header an index entry keeps, or None where it keeps none that can be trusted."""
    raw = entry.get("header") if isinstance(entry, dict) else None
    if not isinstance(raw, dict):
        return None
    values = {k: v for k, v in raw.items() if k in _FIELDS}
    for name, value in values.items():
        wrong_int = name == "context_length" and isinstance(value, bool)
        if not isinstance(value, _FIELD_TYPES[name]) or wrong_int:
            return None
    return ModelHeader(**values)


def _last_used(entry: Any) -> float | None:
    used = entry.get("last_used") if isinstance(entry, dict) else None
    if isinstance(used, int | float) and not isinstance(used, bool) and math.isfinite(used):
        return float(used)
    return None


def _header(path: str) -> ModelHeader:
    """In the child: the header's facts, read with every declared size checked."""
    import gguf

    header = read_gguf_header(Path(path))

    def text(key: str) -> str | None:
        value = header.values.get(key)
        return value if isinstance(value, str) and value else None

    architecture = text("general.architecture")
    try:
        quant = gguf.LlamaFileType(int(header.values["general.file_type"])).name
        quant = quant.removeprefix("MOSTLY_")
    except (KeyError, TypeError, ValueError, OverflowError):
        quant = None
    context = header.values.get(f"{architecture}.context_length") if architecture else None
    valid_context = isinstance(context, int) and not isinstance(context, bool) and context > 0
    return ModelHeader(
        name=text("general.name"),
        architecture=architecture,
        quant=quant,
        context_length=context if valid_context else None,
        has_chat_template="tokenizer.chat_template" in header.present,
    )


def _read_index(folder: Path) -> dict[str, Any]:
    try:
        data = read_json(folder / INDEX)
    except (OSError, DamagedFile):
        return {}  # none yet, or damaged: it is only a cache
    return data if isinstance(data, dict) else {}


def _write_index(folder: Path, index: dict[str, Any]) -> None:
    with contextlib.suppress(OSError, ValueError):  # read-only: read again next time
        write_json(folder / INDEX, index)
