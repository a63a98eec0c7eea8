"""The GGUF files in the data folder's `models/`: what each is (from its header, read with
the `gguf` package), delete, import. Reading a header parses the whole tokenizer (seconds
for a large vocabulary), so what was read is kept in `models/index.json`, keyed by name,
size and modification time; a file is read in a child process that a timeout kills (a
hostile file cannot hang the app)."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from desktop.core.errors import LoomchatError
from desktop.core.models.download import PART_SUFFIX
from desktop.core.models.hub import split_part
from desktop.core.runtime import PROJECTOR_SUFFIX, projector_for
from desktop.core.tools.isolation import run_isolated

INDEX = "index.json"
HEADER_TIMEOUT_S = 60.0


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
    if not folder.is_dir():
        return []
    found = [
        p
        for p in folder.glob("*.gguf")
        if p.is_file() and not p.name.endswith(PROJECTOR_SUFFIX) and (split_part(p.name) or 1) == 1
    ]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def companions(model: Path) -> list[Path]:
    """The files that belong to a model: the other parts of a split one, its projector."""
    siblings = [projector_for(model)]
    if split_part(model.name) == 1:
        stem = model.name.rsplit("-00001-of-", 1)[0]
        found = model.parent.glob(f"{glob.escape(stem)}-0*-of-*.gguf")
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
        if not isinstance(entry, dict) or not isinstance(entry.get("header"), dict):
            used = entry.get("last_used") if isinstance(entry, dict) else None
            entry = {"header": asdict(await read_header(path)), "last_used": used}
            index[key] = entry
            changed = True
        header = ModelHeader(**{k: v for k, v in entry["header"].items() if k in _FIELDS})
        models.append(LocalModel(path, stat.st_size, header, entry.get("last_used")))
    if changed:
        _write_index(folder, index)
    return models


async def read_header(path: Path, timeout_s: float = HEADER_TIMEOUT_S) -> ModelHeader:
    try:
        return await asyncio.wait_for(run_isolated(_header, str(path)), timeout_s)
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
    entry = index.get(key)
    index[key] = {**(entry if isinstance(entry, dict) else {}), "last_used": when}
    _write_index(folder, index)


def delete_model(folder: Path, name: str) -> Path:
    """Delete a model by its name, with its other parts, its projector and what is left of
    their downloads."""
    path = folder / Path(name).name  # a name, never a path elsewhere
    if path.suffix != ".gguf" or not path.is_file():
        raise LibraryError(f"There is no model named {name!r} in {folder}.")
    for file in [path, *companions(path)]:
        file.unlink()
        Path(str(file) + PART_SUFFIX).unlink(missing_ok=True)
    projector_part = Path(str(projector_for(path)) + PART_SUFFIX)
    projector_part.unlink(missing_ok=True)
    index = _read_index(folder)
    _write_index(folder, {k: v for k, v in index.items() if k.split(":", 1)[0] != path.name})
    return path


async def import_model(folder: Path, source: Path) -> Path:
    """Copy a GGUF file from elsewhere into `models/` (off the event loop: it may be GBs)."""
    if source.suffix.lower() != ".gguf" or not source.is_file():
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


def _header(path: str) -> ModelHeader:
    """In the child: the header's facts, via gguf's reader."""
    import gguf

    reader = gguf.GGUFReader(path)

    def field(key: str) -> Any:
        found = reader.get_field(key)
        return found.contents() if found is not None else None

    architecture = field("general.architecture")
    file_type = field("general.file_type")
    try:
        quant = gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
    except (TypeError, ValueError):
        quant = None
    context = field(f"{architecture}.context_length") if architecture else None
    return ModelHeader(
        name=str(field("general.name")) if field("general.name") else None,
        architecture=str(architecture) if architecture else None,
        quant=quant,
        context_length=int(context) if context is not None else None,
        has_chat_template=bool(field("tokenizer.chat_template")),
    )


def _read_index(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or damaged: it is only a cache
    return data if isinstance(data, dict) else {}


def _write_index(folder: Path, index: dict[str, Any]) -> None:
    try:
        partial = folder / (INDEX + ".tmp")
        partial.write_text(json.dumps(index, indent=1), encoding="utf-8")
        os.replace(partial, folder / INDEX)
    except OSError:
        pass  # a read-only folder: the headers are read again next time
