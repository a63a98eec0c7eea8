"""The app's own `mcpServers` file: servers installed from the catalogue or imported from
another app's file (Claude Desktop's, Cursor's, VS Code's), added and removed without
touching the rest of it.

An imported file is untrusted: read capped (never a FIFO), each server checked on its own,
so one bad entry is named and skipped while the others come in. Nothing is started here;
the session starts what the file lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from desktop.core.storage.jsonfile import DamagedFile, parse, read_bytes, read_json, write_json
from desktop.core.tools.mcp import CONFIG_SCHEMA, McpConfigError, unique_name
from desktop.core.tools.mcp_catalogue import (
    CatalogueServer,
    McpCatalogueError,
    find_runtime,
    server_entry,
)

# What the app's file is called in the data folder, where none was chosen.
FILE_NAME = "mcp-servers.json"
# An imported file larger than this is not another app's MCP configuration.
MAX_IMPORT_BYTES = 1024 * 1024
_SERVER_SCHEMA = CONFIG_SCHEMA["properties"]["mcpServers"]["additionalProperties"]
_MAX_NAME_CHARS = 64


def read_servers(path: Path) -> dict[str, dict[str, Any]]:
    """The servers in the app's file by name ({} where there is no file yet)."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        return {}
    except (OSError, DamagedFile) as exc:
        raise McpConfigError(f"cannot read {path}: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: it has no mcpServers object")
    return servers


def write_servers(path: Path, servers: dict[str, dict[str, Any]]) -> None:
    """The file with `servers` as its `mcpServers`, its other keys kept."""
    try:
        data = read_json(path)
    except (OSError, DamagedFile):
        data = {}
    data = data if isinstance(data, dict) else {}
    write_json(path, {**data, "mcpServers": servers}, indent=2)


def remove_server(path: Path, name: str) -> bool:
    """Take the server `name` out; whether it was there."""
    servers = read_servers(path)
    if name not in servers:
        return False
    del servers[name]
    write_servers(path, servers)
    return True


def set_disabled(path: Path, name: str, disabled: bool) -> None:
    """Keep the server in the file but do not start it (or start it again)."""
    servers = read_servers(path)
    if name not in servers:
        raise McpConfigError(f"there is no MCP server named {name!r}")
    entry = {k: v for k, v in servers[name].items() if k != "disabled"}
    servers[name] = {**entry, "disabled": True} if disabled else entry
    write_servers(path, servers)


@dataclass
class Imported:
    """What an import found: the servers it can add (named apart from those already
    there), and one line for each it skipped."""

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def servers_in(text: str | bytes, known: set[str], source: str = "the text") -> Imported:
    """The MCP servers in another app's configuration: `{"mcpServers": ...}` (Claude
    Desktop, Cursor, Windsurf), `{"servers": ...}` (VS Code's mcp.json) or
    `{"mcp": {"servers": ...}}` (VS Code's settings). A name already in `known` gets a
    suffix. Raises McpConfigError when the text holds no servers at all."""
    size = len(text.encode("utf-8", "replace") if isinstance(text, str) else text)
    if size > MAX_IMPORT_BYTES:
        raise McpConfigError(f"{source} is larger than {MAX_IMPORT_BYTES // 1024} KB")
    try:
        data = parse(text, source)
    except DamagedFile as exc:
        raise McpConfigError(str(exc)) from None
    listed = _listing(data)
    if listed is None:
        raise McpConfigError(f'{source} has no MCP servers (an "mcpServers" or "servers" object)')
    found = Imported()
    taken = set(known)
    for raw_name, spec in listed.items():
        name = "".join(c for c in str(raw_name) if c.isprintable()).strip()[:_MAX_NAME_CHARS]
        entry = _entry(spec)
        try:
            jsonschema.validate(entry, _SERVER_SCHEMA)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            found.skipped.append(f"{name or '(no name)'}: {where + ': ' if where else ''}"
                                 f"{exc.message[:200]}")  # fmt: skip
            continue
        name = unique_name(name or "server", taken)
        taken.add(name)
        found.servers[name] = entry
    return found


def import_file(path: Path, known: set[str]) -> Imported:
    try:
        data = read_bytes(path, MAX_IMPORT_BYTES)
    except DamagedFile as exc:
        raise McpConfigError(str(exc)) from None
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return servers_in(data, known, path.name)


def _listing(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    for found in (data.get("mcpServers"), data.get("servers"), _get(data, "mcp", "servers")):
        if isinstance(found, dict):
            return found
    return None


def _get(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data


def _entry(spec: Any) -> Any:
    """A server as Loomchat's file keeps it: VS Code's `type` and Windsurf's `serverUrl`
    read as the others spell them; any other key dropped (it means nothing here)."""
    if not isinstance(spec, dict):
        return spec
    if "url" not in spec and isinstance(spec.get("serverUrl"), str):
        spec = {**spec, "url": spec["serverUrl"]}
    kept = ("command", "args", "env", "url", "headers", "disabled")
    return {k: spec[k] for k in kept if k in spec}


def install(server: CatalogueServer, values: Mapping[str, str], path: Path,
            search_path: str | None = None) -> str:  # fmt: skip
    """Write the catalogue's `server` into the file at `path`, with the person's settings;
    returns its name there. Raises McpCatalogueError, saying what to do, when its runtime is
    missing or a setting is wrong. Installing it again replaces it (new settings); a server
    of that name from elsewhere keeps its name and this one gets another."""
    check = find_runtime(server, search_path)
    if check.command is None:
        raise McpCatalogueError(check.missing)
    entry = server_entry(server, check.command, values)
    servers = read_servers(path)
    same = [n for n, spec in servers.items() if spec.get("catalogue") == server.id]
    name = same[0] if same else unique_name(server.id, set(servers))
    write_servers(path, {**servers, name: entry})
    return name


def installed_from_catalogue(servers: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Catalogue id -> the name it was installed under, for servers as the file lists them."""
    return {
        str(s["catalogue"]): n for n, s in servers.items() if isinstance(s.get("catalogue"), str)
    }
