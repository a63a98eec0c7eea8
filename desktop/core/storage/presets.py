"""Presets: a name, a system prompt, a temperature, tools on or off, a track; kept in the
data folder's `presets.json`, one of them the default for new conversations. A preset
travels as a JSON file of its own (import, export). A damaged file is set aside for the
defaults, never a crash."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from desktop.core.errors import LoomchatError

PRESETS_FILE = "presets.json"
TRACKS = ("", "emulated", "native", "auto")  # "": the connection's own

_PRESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 80},
        "system_prompt": {"type": "string", "maxLength": 100_000},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "tools": {"type": "boolean"},
        "track": {"enum": list(TRACKS)},
    },
}
_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["presets"],
    "properties": {
        "default": {"type": "string"},
        "presets": {"type": "array", "items": _PRESET_SCHEMA},
    },
}


class PresetError(LoomchatError):
    pass


@dataclass(frozen=True)
class Preset:
    name: str
    system_prompt: str = ""
    temperature: float | None = None  # None: the settings' (or the server's)
    tools: bool = True
    track: str = ""  # "": the connection's track

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Preset:
        jsonschema.validate(data, _PRESET_SCHEMA)
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_FIELDS = set(Preset.__dataclass_fields__)

BUILT_IN = (
    Preset("Assistant"),
    Preset(
        "Concise",
        "Answer briefly: a sentence or two, or a short list. No preamble.",
        temperature=0.3,
    ),
    Preset(
        "Chat without tools",
        "You are a friendly conversation partner.",
        temperature=0.8,
        tools=False,
    ),
)


@dataclass
class PresetBook:
    """The presets and which one is the default; `problem` says why the file was not used."""

    presets: list[Preset] = field(default_factory=lambda: list(BUILT_IN))
    default: str = BUILT_IN[0].name
    path: Path | None = None
    problem: str | None = None

    @classmethod
    def load(cls, path: Path) -> PresetBook:
        if not path.exists():
            return cls(path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            jsonschema.validate(data, _FILE_SCHEMA)
            presets = [Preset.from_dict(p) for p in data["presets"]]
        except (OSError, ValueError, jsonschema.ValidationError) as exc:
            reason = exc.message if isinstance(exc, jsonschema.ValidationError) else exc
            # The built-in ones meanwhile; the file is only written when the person saves.
            return cls(path=path, problem=f"The presets in {path} could not be read ({reason}).")
        book = cls(presets, str(data.get("default") or ""), path)
        book._dedupe()
        if book.get(book.default) is None:
            book.default = book.presets[0].name if book.presets else ""
        return book

    def copy(self) -> PresetBook:
        return PresetBook(list(self.presets), self.default, self.path)

    def save(self) -> None:
        if self.path is None:
            return
        data = {"version": 1, "default": self.default,
                "presets": [p.to_dict() for p in self.presets]}  # fmt: skip
        partial = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, self.path)

    def get(self, name: str) -> Preset | None:
        return next((p for p in self.presets if p.name == name), None)

    @property
    def default_preset(self) -> Preset | None:
        return self.get(self.default)

    def put(self, preset: Preset, replacing: str | None = None) -> None:
        """Add `preset`, or put it in the place of the one named `replacing` (a rename)."""
        at = next(
            (i for i, p in enumerate(self.presets) if p.name == (replacing or preset.name)), None
        )
        others = [p for i, p in enumerate(self.presets) if i != at and p.name == preset.name]
        if others:
            raise PresetError(f"There is already a preset named {preset.name!r}.")
        if at is None:
            self.presets.append(preset)
        else:
            self.presets[at] = preset
        if replacing and self.default == replacing:
            self.default = preset.name

    def remove(self, name: str) -> None:
        self.presets = [p for p in self.presets if p.name != name]
        if self.default == name:
            self.default = self.presets[0].name if self.presets else ""

    def export(self, name: str, target: Path) -> None:
        preset = self.get(name)
        if preset is None:
            raise PresetError(f"There is no preset named {name!r}.")
        target.write_text(json.dumps(preset.to_dict(), indent=1, ensure_ascii=False), "utf-8")

    def import_file(self, source: Path) -> Preset:
        """Add the preset in `source` (a name already taken gets " (2)", " (3)"...)."""
        try:
            if source.stat().st_size > 1_000_000:
                raise PresetError(f"{source.name} is too large to be a preset.")
            preset = Preset.from_dict(json.loads(source.read_text(encoding="utf-8")))
        except (OSError, ValueError, jsonschema.ValidationError) as exc:
            reason = exc.message if isinstance(exc, jsonschema.ValidationError) else exc
            raise PresetError(
                f"{source.name} is not a preset Loomchat can read ({reason})."
            ) from None
        name, n = preset.name, 2
        while self.get(name) is not None:
            name, n = f"{preset.name} ({n})", n + 1
        preset = Preset(name, preset.system_prompt, preset.temperature, preset.tools, preset.track)
        self.presets.append(preset)
        return preset

    def _dedupe(self) -> None:
        """A hand-edited file may name two presets alike: the first one counts."""
        by_name: dict[str, Preset] = {}
        for preset in self.presets:
            by_name.setdefault(preset.name, preset)
        self.presets = list(by_name.values())
