"""The MCP servers Loomchat offers to install (`resources/mcp-servers.json`: data, not
code), whether this machine has the runtime each needs, and the `mcpServers` entry an
install writes: the catalogue's command with the person's settings filled in."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema

from desktop.core.errors import UsageError

# Beside the code in a checkout; in the bundle's folder in the packaged app (PyInstaller).
_ROOT = Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parents[3]))
CATALOGUE = _ROOT / "resources" / "mcp-servers.json"

Runtime = Literal["uvx", "npx", "command"]
SettingKind = Literal["text", "folder", "file"]

# How to get each runtime, said when it is missing.
HOW_TO_GET: dict[str, str] = {
    "uvx": "It runs with uv's `uvx`: install uv (https://docs.astral.sh/uv/getting-started/"
    "installation/), then install the server again.",
    "npx": "It runs with Node.js's `npx`: install Node.js (https://nodejs.org/), then install "
    "the server again.",
}
# Where the runtimes' installers put them, though an app started from a desktop menu may
# not have these folders on its PATH.
_USUAL_FOLDERS = ("~/.local/bin", "~/.cargo/bin", "/opt/homebrew/bin", "/usr/local/bin")

_SETTING: dict[str, Any] = {
    "type": "object",
    "required": ["key", "label", "kind", "required"],
    "properties": {
        "key": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "label": {"type": "string", "minLength": 1},
        "kind": {"enum": ["text", "folder", "file"]},
        "required": {"type": "boolean"},
        "arg": {"type": "string", "pattern": "\\{value\\}"},
        "env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
    },
    "oneOf": [{"required": ["arg"]}, {"required": ["env"]}],
    "additionalProperties": False,
}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["servers"],
    "properties": {
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "id",
                    "name",
                    "description",
                    "runtime",
                    "args",
                    "settings",
                    "online",
                    "licence",
                    "source",
                ],
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"},
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "runtime": {"enum": ["uvx", "npx", "command"]},
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "settings": {"type": "array", "items": _SETTING},
                    "online": {"type": "boolean"},
                    "licence": {"type": "string", "minLength": 1},
                    "source": {"type": "string", "pattern": "^https://"},
                },
                "if": {"properties": {"runtime": {"const": "command"}}},
                "then": {"required": ["command"]},
            },
        }
    },
}


class McpCatalogueError(UsageError):
    """The catalogue cannot be read, or an install cannot be made as asked."""


@dataclass(frozen=True)
class Setting:
    """One thing a server needs from the person: put into an argument or a variable."""

    key: str
    label: str
    kind: SettingKind
    required: bool
    arg: str | None = None  # "--repository={value}"
    env: str | None = None  # "MEMORY_FILE_PATH"


@dataclass(frozen=True)
class CatalogueServer:
    id: str
    name: str
    description: str
    runtime: Runtime
    args: tuple[str, ...]
    settings: tuple[Setting, ...]
    online: bool  # it reaches the internet
    licence: str
    source: str
    command: str | None = None  # a "command" runtime's program

    def matches(self, words: str) -> bool:
        """Whether every word of a search is in its name, description or id."""
        text = f"{self.id} {self.name} {self.description}".casefold()
        return all(word in text for word in words.casefold().split())


def load_catalogue(path: Path = CATALOGUE) -> list[CatalogueServer]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, _SCHEMA)
    except (OSError, ValueError, RecursionError, jsonschema.ValidationError) as exc:
        raise McpCatalogueError(f"The MCP catalogue {path} cannot be read: {exc}") from None
    servers = []
    for entry in data["servers"]:
        fields = {k: v for k, v in entry.items() if k not in ("args", "settings")}
        settings = tuple(Setting(**s) for s in entry["settings"])
        servers.append(CatalogueServer(**fields, args=tuple(entry["args"]), settings=settings))
    return servers


@dataclass(frozen=True)
class RuntimeCheck:
    """Whether the runtime a server needs is here: the program to run, or how to get it."""

    command: str | None
    missing: str = ""

    @property
    def ok(self) -> bool:
        return self.command is not None


def find_runtime(server: CatalogueServer, path: str | None = None) -> RuntimeCheck:
    """The program that runs `server`: on the PATH (`path`, else the app's), else in the
    folders the runtimes' installers use; else why not, and how to get it."""
    program = server.command if server.runtime == "command" else server.runtime
    assert program is not None  # the schema requires a command for "command"
    found = shutil.which(program, path=path)
    if found is None and not os.path.dirname(program):
        for folder in _USUAL_FOLDERS:
            candidate = Path(folder).expanduser() / program
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found = str(candidate)
                break
    if found is not None:
        return RuntimeCheck(found)
    how = HOW_TO_GET.get(server.runtime, f"'{program}' must be installed and on the PATH.")
    return RuntimeCheck(
        None, f"{server.name} needs '{program}', which is not on this machine. {how}"
    )


def server_entry(
    server: CatalogueServer, command: str, values: Mapping[str, str]
) -> dict[str, Any]:
    """The `mcpServers` entry that runs `server` with the person's `values` (by setting key;
    an empty optional one is left out). Raises McpCatalogueError naming a required one left
    empty, or a folder or file that is not there."""
    args = list(server.args)
    env: dict[str, str] = {}
    for setting in server.settings:
        value = values.get(setting.key, "").strip()
        if not value:
            if setting.required:
                raise McpCatalogueError(f"{server.name} needs {setting.label[0].lower()}"
                                     f"{setting.label[1:]}.")  # fmt: skip
            continue
        if "\n" in value or "\x00" in value:
            raise McpCatalogueError(f"{setting.label}: one line, please.")
        if setting.kind == "folder":
            folder = Path(value).expanduser()
            if not folder.is_dir():
                raise McpCatalogueError(f"{setting.label}: {value} is not a folder.")
            value = str(folder.resolve())
        elif setting.kind == "file":
            value = str(Path(value).expanduser().resolve())
        if setting.arg is not None:
            args.append(setting.arg.replace("{value}", value))
        else:
            assert setting.env is not None  # the schema requires one of them
            env[setting.env] = value
    entry: dict[str, Any] = {"command": command, "args": args, "catalogue": server.id}
    if env:
        entry["env"] = env
    return entry
