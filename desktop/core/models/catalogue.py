"""The curated catalogue (`resources/models.json`: data, not code) and which of its models
this machine can run: RAM and free disk, from psutil."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema

from desktop.core.errors import LoomchatError
from desktop.core.models.download import existing_folder
from desktop.core.models.hub import GgufChoice, HubFile, gguf_choices

# Beside the code in a checkout; in the bundle's folder in the packaged app (PyInstaller).
_ROOT = Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parents[3]))
CATALOGUE = _ROOT / "resources" / "models.json"
_GB = 1024**3
# A model whose needs take more than this share of the RAM leaves too little for the rest.
RAM_SHARE = 0.75
# On a CPU, generating reads the whole model once per token: past about this much model per
# physical core, answers come slower than a person reads. Such a model still fits; it is
# not the one recommended.
GB_PER_CORE = 0.6

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["models"],
    "properties": {
        "models": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "id",
                    "name",
                    "repo",
                    "file",
                    "quant",
                    "size_mb",
                    "ram_gb",
                    "licence",
                    "vision",
                ],
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string"},
                    "family": {"type": "string"},
                    "parameters": {"type": "string"},
                    "repo": {"type": "string", "pattern": "^[\\w.-]+/[\\w.-]+$"},
                    "file": {"type": "string", "pattern": "\\.gguf$"},
                    "projector": {"type": "string", "pattern": "\\.gguf$"},
                    "quant": {"type": "string"},
                    "size_mb": {"type": "number", "exclusiveMinimum": 0},
                    "ram_gb": {"type": "number", "exclusiveMinimum": 0},
                    "licence": {"type": "string"},
                    "vision": {"type": "boolean"},
                    "purpose": {"enum": ["chat", "embeddings"]},
                },
            },
        }
    },
}


class CatalogueError(LoomchatError):
    pass


@dataclass(frozen=True)
class CatalogueModel:
    id: str
    name: str
    repo: str
    file: str
    quant: str
    size_mb: float
    ram_gb: float
    licence: str
    vision: bool
    family: str = ""
    parameters: str = ""
    projector: str | None = None
    # "embeddings": a model that makes the documents' vectors (searched by meaning), not one
    # to chat with; never the recommended model.
    purpose: str = "chat"

    @property
    def size_bytes(self) -> int:
        return int(self.size_mb * 1024 * 1024)


@dataclass(frozen=True)
class Machine:
    ram_bytes: int
    free_disk_bytes: int
    cores: int | None = None  # physical; None where unknown (then speed is not judged)

    @classmethod
    def here(cls, models_dir: Path) -> Machine:
        import psutil

        folder = existing_folder(models_dir)
        return cls(
            psutil.virtual_memory().total,
            psutil.disk_usage(str(folder)).free,
            psutil.cpu_count(logical=False) or psutil.cpu_count(),
        )


@dataclass(frozen=True)
class Fit:
    model: CatalogueModel
    fits: bool
    why_not: str = ""  # "needs 7 GB of RAM; this machine has 4 GB"
    slow: bool = False  # fits, but answers slower than a person reads on this CPU

    def text(self) -> str:
        """What the table says: "fits", "fits, slow on this CPU" or why not."""
        if not self.fits:
            return self.why_not
        return "fits, slow on this CPU" if self.slow else "fits"


def load_catalogue(path: Path = CATALOGUE) -> list[CatalogueModel]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, _SCHEMA)
    except (OSError, ValueError, jsonschema.ValidationError) as exc:
        raise CatalogueError(f"The model catalogue {path} cannot be read: {exc}") from None
    return [CatalogueModel(**entry) for entry in data["models"]]


def fit(model: CatalogueModel, machine: Machine) -> Fit:
    if model.ram_gb * _GB > machine.ram_bytes * RAM_SHARE:
        have = machine.ram_bytes / _GB
        return Fit(
            model, False, f"needs {model.ram_gb:g} GB of RAM; this machine has {have:.0f} GB"
        )
    if model.size_bytes > machine.free_disk_bytes:
        free = machine.free_disk_bytes / _GB
        return Fit(model, False, f"needs {model.size_mb / 1024:.1f} GB of disk; {free:.1f} GB free")
    slow = machine.cores is not None and model.size_bytes > machine.cores * GB_PER_CORE * _GB
    return Fit(model, True, slow=slow)


def recommend(models: list[CatalogueModel], machine: Machine) -> CatalogueModel | None:
    """The most capable model that runs comfortably here: the largest that fits and answers
    at reading speed; where none is quick enough, the smallest that fits."""
    fitting = [m for m in models if fit(m, machine).fits and not m.vision and m.purpose == "chat"]
    quick = [m for m in fitting if not fit(m, machine).slow]
    if quick:
        return max(quick, key=lambda m: m.ram_gb)
    return min(fitting, key=lambda m: m.ram_gb, default=None)


def choice_for(model: CatalogueModel, files: list[HubFile]) -> GgufChoice | None:
    """The catalogue model among its repo's files (with the projector it names), or None
    where the repo no longer has it."""
    choice = next((c for c in gguf_choices(files) if c.files[0].name == model.file), None)
    if choice is None or model.projector is None:
        return choice
    projector = next((f for f in files if f.name == model.projector), None)
    return replace(choice, projector=projector) if projector else None
