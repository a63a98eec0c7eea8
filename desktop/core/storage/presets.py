"""Presets: a name, a system prompt, a temperature, tools on or off, a track, the document
collections searched, the saved server talked to; kept in the data folder's `presets.json`,
one of them the default for new conversations. A preset travels as a JSON file of its own
(import, export).

The file is read preset by preset: one that breaks the schema is left out, the others are
used. A file that could not be read whole is set aside under a new name, and said so, so
that the next save never writes over what the person had."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import jsonschema

from desktop.core.errors import LoomchatError
from desktop.core.storage.jsonfile import DamagedFile, parse, read_bytes, read_json, write_json

PRESETS_FILE = "presets.json"
# "": the connection's own track
PresetTrack = Literal["", "emulated", "native", "auto"]
TRACKS: tuple[PresetTrack, ...] = get_args(PresetTrack)
MAX_NAME_CHARS = 80
MAX_PROMPT_CHARS = 100_000

_PRESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
        "system_prompt": {"type": "string", "maxLength": MAX_PROMPT_CHARS},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "tools": {"type": "boolean"},
        "track": {"enum": list(TRACKS)},
        "collections": {
            "type": ["array", "null"],
            "items": {"type": "string", "maxLength": 200},
            "maxItems": 1000,
        },
        "server": {"type": "string", "maxLength": 200},
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
# A preset file to import is a name and a prompt: a larger one is not read.
MAX_IMPORT_BYTES = 1_000_000


class PresetError(LoomchatError):
    pass


@dataclass(frozen=True)
class Preset:
    name: str
    system_prompt: str = ""
    temperature: float | None = None  # None: the settings' (or the server's)
    tools: bool = True
    track: PresetTrack = ""  # "": the connection's track
    # The document collections its conversations search (by name); None: every one.
    collections: tuple[str, ...] | None = None
    # The saved server its conversations talk to (storage/servers.py); "": the one in use.
    server: str = ""

    @classmethod
    def from_dict(cls, data: Any) -> Preset:
        """The preset, or `PresetError` saying which of its values breaks the rules."""
        _check(data)
        known = {k: v for k, v in data.items() if k in _FIELDS}
        if isinstance(known.get("collections"), list):
            known["collections"] = tuple(known["collections"])
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.collections is not None:
            data["collections"] = list(self.collections)
        return data


def _check(data: Any, schema: dict[str, Any] = _PRESET_SCHEMA) -> None:
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = " ".join(str(p) for p in exc.absolute_path)
        said = exc.message if len(exc.message) <= 200 else exc.message[:200] + "…"
        raise PresetError(f"{where}: {said}" if where else said) from None


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
        try:
            data = read_json(path)
        except FileNotFoundError:
            return cls(path=path)
        except (OSError, DamagedFile) as exc:
            return cls._set_aside(path, str(exc))
        if not isinstance(data, dict) or not isinstance(data.get("presets"), list):
            return cls._set_aside(path, "it holds no list of presets")
        presets, broken = [], 0
        for raw in data["presets"]:
            try:
                presets.append(Preset.from_dict(raw))
            except PresetError:
                broken += 1
        default = data.get("default")
        book = cls(presets or list(BUILT_IN), default if isinstance(default, str) else "", path)
        book._dedupe()
        if book.get(book.default) is None:
            book.default = book.presets[0].name if book.presets else ""
        if broken:
            kept = _aside(path)
            book.path = path if kept else None  # not set aside: never saved over
            book.problem = (
                f"{broken} of the presets in {path} could not be read and were left out; "
                f"the file was kept as {kept.name if kept else path.name}."
            )
        return book

    @classmethod
    def _set_aside(cls, path: Path, reason: str) -> PresetBook:
        """The built-in presets, the unreadable file renamed out of the way of the next save."""
        kept = _aside(path)
        where = f"it was kept as {kept.name}" if kept else "it was left as it is"
        book = cls(path=path if kept else None)  # not set aside: never saved over
        book.problem = f"The presets in {path} could not be read ({reason}); {where}."
        return book

    def copy(self) -> PresetBook:
        return PresetBook(list(self.presets), self.default, self.path)

    def save(self) -> None:
        """Write the presets; `PresetError` (nothing written) if one breaks the schema the
        file is read with: what is saved can always be loaded again."""
        if self.path is None:
            return
        data = {"version": 1, "default": self.default,
                "presets": [p.to_dict() for p in self.presets]}  # fmt: skip
        _check(data, _FILE_SCHEMA)
        write_json(self.path, data)

    def get(self, name: str) -> Preset | None:
        return next((p for p in self.presets if p.name == name), None)

    @property
    def default_preset(self) -> Preset | None:
        return self.get(self.default)

    def put(self, preset: Preset, replacing: str | None = None) -> None:
        """Add `preset`, or put it in the place of the one named `replacing` (a rename);
        `PresetError` if it breaks the rules (a name over 80 characters, say)."""
        try:
            Preset.from_dict(preset.to_dict())
        except PresetError as exc:
            raise PresetError(f"The preset cannot be kept: {exc}.") from None
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
            data = read_bytes(source, MAX_IMPORT_BYTES)
        except DamagedFile as exc:
            raise PresetError(f"{source.name} is not a preset Loomchat can read: {exc}.") from None
        except OSError as exc:
            raise PresetError(f"{source.name} cannot be read ({exc.strerror or exc}).") from None
        try:
            preset = Preset.from_dict(parse(data, source.name))
        except (DamagedFile, PresetError) as exc:
            raise PresetError(f"{source.name} is not a preset Loomchat can read ({exc}).") from None
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


def _aside(path: Path) -> Path | None:
    """Rename `path` out of the way (presets.json -> presets.json.unreadable-20261204-101500);
    None if it could not be renamed."""
    kept = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        path.replace(kept)
    except OSError:
        return None
    return kept
