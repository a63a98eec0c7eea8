"""The user's settings: a JSON file checked against a schema, written atomically.

API keys are never in this file: they live in the OS keychain (see `keychain.py`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import jsonschema

from desktop.core.backend_kind import BACKEND_KINDS, TRACKS, Track
from desktop.core.errors import LoomchatError
from desktop.core.limits import DEFAULT_MAX_TOOL_CALLS
from desktop.core.storage.jsonfile import DamagedFile, read_json, write_json

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "backend": {"enum": ["auto", "builtin", *BACKEND_KINDS]},
        "url": {"type": "string"},
        "model": {"type": "string"},
        "track": {"enum": list(TRACKS)},
        "max_tool_calls": {"type": "integer", "minimum": 1, "maximum": 100},
        "cooldown_enabled": {"type": "boolean"},
        "cooldown_overrides": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "tools_enabled": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "context_size": {"type": "integer", "minimum": 512, "maximum": 1048576},
        "runtime_model": {"type": "string"},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "secrets_in_file": {"type": "boolean"},
        "show_inspector": {"type": "boolean"},
        "workspace": {"type": "string"},
        "mcp_config": {"type": "string"},
        "trusted_tools": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "tool_permissions": {
            "type": "object",
            "additionalProperties": {"enum": ["allow", "ask", "never"]},
        },
        "tool_selection": {"enum": ["auto", "off"]},
        "pinned_tools": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "theme": {"enum": ["system", "light", "dark"]},
        "font_size": {"type": "integer", "minimum": 0, "maximum": 40},
        "document_search": {"enum": ["auto", "tool", "always"]},
        "embeddings": {"enum": ["none", "runtime", "server"]},
        "embedding_model": {"type": "string"},
        "ca_file": {"type": "string"},
        "client_cert": {"type": "string"},
        "client_key": {"type": "string"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "proxy": {"type": "string"},
        "api_enabled": {"type": "boolean"},
        "api_port": {"type": "integer", "minimum": 0, "maximum": 65535},
        "server": {"type": "string", "maxLength": 200},
    },
    "additionalProperties": True,  # newer versions may add keys; older ones keep them
}
# What says which server the app talks to and how it reaches it: what a saved server keeps
# (storage/servers.py).
CONNECTION_FIELDS = (
    "backend", "url", "model", "track", "context_size", "runtime_model",
    "ca_file", "client_cert", "client_key", "headers", "proxy",
)  # fmt: skip
SCHEMA["properties"]["servers"] = {
    "type": "object",
    "maxProperties": 200,
    "propertyNames": {"maxLength": 200},
    "additionalProperties": {
        "type": "object",
        "properties": {k: SCHEMA["properties"][k] for k in CONNECTION_FIELDS},
        "additionalProperties": True,
    },
}


SETTINGS_FILE = "settings.json"  # in the data folder

# A field with this metadata changes what the app is connected to: a new value reconnects.
RECONNECT = {"reconnect": True}


@dataclass
class Settings:
    # "auto": find a running backend; "builtin": Loomchat's own
    backend: str = field(default="auto", metadata=RECONNECT)
    url: str = field(default="", metadata=RECONNECT)  # empty: the backend's usual address
    model: str = field(default="", metadata=RECONNECT)
    track: Track = field(default="emulated", metadata=RECONNECT)
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    cooldown_enabled: bool = True
    cooldown_overrides: dict[str, bool] = field(default_factory=dict)
    tools_enabled: dict[str, bool] = field(default_factory=dict)  # absent: on
    context_size: int = field(default=8192, metadata=RECONNECT)
    # a GGUF file for the built-in runtime; empty: the bundled model
    runtime_model: str = field(default="", metadata=RECONNECT)
    temperature: float | None = None
    secrets_in_file: bool = False  # the user opted in to keys in a local file
    show_inspector: bool = False
    workspace: str = ""  # the folder the file tools may use; empty: no file tools
    # a JSON file of MCP servers ({"mcpServers": ...})
    mcp_config: str = field(default="", metadata=RECONNECT)
    trusted_tools: dict[str, bool] = field(default_factory=dict)  # run without asking
    # Tool name or pattern ("server:*") -> "allow", "ask" or "never" (tools/permissions.py);
    # over trusted_tools, which older versions read.
    tool_permissions: dict[str, str] = field(default_factory=dict)
    # "auto": when the tools do not fit (desktop/core/tools/selection.py), each turn offers
    # those that fit its request; "off": always all of them.
    tool_selection: str = "auto"
    pinned_tools: dict[str, bool] = field(default_factory=dict)  # always offered
    theme: str = "system"  # "system" follows the desktop's light or dark scheme
    font_size: int = 0  # points; 0: the desktop's
    # When the documents are searched ("always" is an older name for "auto"): see
    # core/documents/prefetch.py.
    document_search: str = "auto"
    # Vectors for the documents too (core/documents/embedding_service.py): "none", "runtime"
    # (`embedding_model` a GGUF file Loomchat runs), "server" (a model on the backend).
    embeddings: str = "none"
    embedding_model: str = ""
    # Reaching a backend beyond its address (providers/transport.py): certificate
    # authorities of one's own (empty: the system's), a client certificate and its key,
    # headers a gateway needs, a proxy ("system": the environment's; empty: none).
    ca_file: str = field(default="", metadata=RECONNECT)
    client_cert: str = field(default="", metadata=RECONNECT)
    client_key: str = field(default="", metadata=RECONNECT)
    headers: dict[str, str] = field(default_factory=dict, metadata=RECONNECT)
    proxy: str = field(default="", metadata=RECONNECT)
    # The local API (desktop/api): served on 127.0.0.1 while the window is open.
    api_enabled: bool = field(default=False, metadata=RECONNECT)
    api_port: int = field(default=8642, metadata=RECONNECT)
    # Servers saved by name (storage/servers.py), and the one in use ("": none saved).
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    server: str = field(default="", metadata=RECONNECT)

    def tool_enabled(self, name: str, default: bool = True) -> bool:
        """Whether the tool is on: as the user set it, else `default` (the tool's own)."""
        return self.tools_enabled.get(name, default)

    def needs_reconnect(self, before: Settings) -> bool:
        """Whether going from `before` to these settings changes the connection."""
        return any(
            getattr(before, f.name) != getattr(self, f.name)
            for f in fields(self)
            if f.metadata.get("reconnect")
        )


class SettingsError(LoomchatError):
    pass


def load_settings(path: Path) -> Settings:
    """The saved settings, or the defaults when there is no file yet.

    A file that is not valid raises `SettingsError` saying what is wrong; the caller
    decides (the app keeps the defaults and tells the user, and does not overwrite it).
    """
    try:
        raw = read_json(path)
    except FileNotFoundError:
        return Settings()
    except (OSError, DamagedFile) as exc:
        raise SettingsError(f"{path} cannot be read: {exc}") from exc
    try:
        jsonschema.validate(raw, SCHEMA)
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "the file"
        raise SettingsError(f"{path}: {where}: {exc.message}") from exc
    known = {f.name for f in fields(Settings)}
    return Settings(**{k: v for k, v in raw.items() if k in known})


def save_settings(settings: Settings, path: Path) -> None:
    """Write to a temporary file and rename it over the old one: never a half-written file."""
    data = asdict(settings)
    jsonschema.validate(data, SCHEMA)
    write_json(path, data, indent=2)
