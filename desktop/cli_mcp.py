"""`python -m desktop mcp ...`: the MCP servers the app runs, headless (as the Tools dialog).

    mcp catalogue [--json]             the servers Loomchat can install, and their runtimes
    mcp install ID [--set KEY=VALUE]   install one into the app's mcpServers file
    mcp list [--start] [--json]        the installed servers; --start starts each and says
                                       how it is (running with its tools, or why it failed)
    mcp remove NAME
    mcp import FILE                    add another app's servers (Claude Desktop, Cursor...)

Exit 0 on success, 1 with a message on failure, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from desktop.cli_models import printable
from desktop.core.errors import UsageError
from desktop.core.storage.paths import data_dir
from desktop.core.storage.settings import SETTINGS_FILE, load_settings, save_settings
from desktop.core.tools.mcp import McpServers, parse_mcp_config
from desktop.core.tools.mcp_catalogue import find_runtime, load_catalogue
from desktop.core.tools.mcp_servers_file import (
    FILE_NAME,
    import_file,
    install,
    read_servers,
    remove_server,
    write_servers,
)


def add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="MCP servers: the catalogue, install, list, import")
    verbs = mcp.add_subparsers(dest="verb", required=True, metavar="VERB")
    catalogue = verbs.add_parser("catalogue", help="the servers Loomchat can install")
    catalogue.add_argument("--json", action="store_true")
    add = verbs.add_parser("install", help="install a catalogue server")
    add.add_argument("id")
    add.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="a setting the server needs (repeatable)")  # fmt: skip
    listing = verbs.add_parser("list", help="the installed servers")
    listing.add_argument("--start", action="store_true", help="start each and say how it is")
    listing.add_argument("--json", action="store_true")
    remove = verbs.add_parser("remove", help="take an installed server out")
    remove.add_argument("name")
    imported = verbs.add_parser("import", help="add the servers of another app's file")
    imported.add_argument("file", type=Path)


def servers_file(write: bool = False) -> Path:
    """The app's mcpServers file: the settings', else its own in the data folder (then named
    in the settings when `write`, so that the window starts what was installed)."""
    settings_path = data_dir() / SETTINGS_FILE
    settings = load_settings(settings_path)
    if settings.mcp_config:
        return Path(settings.mcp_config).expanduser()
    path = data_dir() / FILE_NAME
    if write:
        save_settings(replace(settings, mcp_config=str(path)), settings_path)
    return path


async def mcp_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    match args.verb:
        case "catalogue":
            servers = load_catalogue()
            if args.json:
                rows = [{"id": s.id, "name": s.name, "runtime": s.runtime, "online": s.online,
                         "licence": s.licence, "source": s.source,
                         "runtime_found": find_runtime(s).ok} for s in servers]  # fmt: skip
                out.write(json.dumps(rows) + "\n")
                return 0
            for s in servers:
                needs = "" if find_runtime(s).ok else f" (needs {s.runtime})"
                online = ", online" if s.online else ""
                out.write(f"{s.id}\t{s.name}: {s.description} [{s.licence}{online}]{needs}\n")
            return 0
        case "install":
            return _install(args, out)
        case "list":
            return await _list(args, out)
        case "remove":
            if not remove_server(servers_file(), args.name):
                raise UsageError(f"there is no installed MCP server named {args.name!r}")
            out.write(f"removed {args.name}\n")
            return 0
        case "import":
            path = servers_file(write=True)
            listed = read_servers(path)
            found = import_file(args.file, set(listed))
            for line in found.skipped:
                err.write(printable(f"skipped {line}") + "\n")
            write_servers(path, {**listed, **found.servers})
            for name in found.servers:
                out.write(printable(f"imported {name}") + "\n")
            return 0 if found.servers else 1
    raise AssertionError(args.verb)


def _install(args: argparse.Namespace, out: TextIO) -> int:
    chosen = next((s for s in load_catalogue() if s.id == args.id), None)
    if chosen is None:
        raise UsageError(f"the catalogue has no server {args.id!r} (mcp catalogue lists them)")
    values = dict(_pair(text) for text in args.set)
    unknown = set(values) - {s.key for s in chosen.settings}
    if unknown:
        keys = ", ".join(s.key for s in chosen.settings) or "none"
        raise UsageError(
            f"{chosen.name} has no setting {sorted(unknown)[0]!r} (its settings: {keys})"
        )
    name = install(chosen, values, servers_file(write=True))
    out.write(f"installed {chosen.name} as {name}\n")
    return 0


def _pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals:
        raise UsageError(f"--set {text!r}: write KEY=VALUE")
    return key.strip(), value


async def _list(args: argparse.Namespace, out: TextIO) -> int:
    listed = read_servers(servers_file())
    states: dict[str, str] = {}
    if args.start and listed:
        servers = McpServers(parse_mcp_config({"mcpServers": listed}))
        try:
            await servers.start()
            for server in servers.servers:
                state = server.state
                tools = ", ".join(t.name for t in server.tools)
                states[server.config.name] = (
                    f"running: {tools}" if state.kind == "running" else state.reason or state.kind
                )
        finally:
            await asyncio.shield(servers.close())
    rows = [{"name": n, "command": spec.get("command") or spec.get("url"),
             "disabled": bool(spec.get("disabled")), "state": states.get(n, "")}
            for n, spec in listed.items()]  # fmt: skip
    if args.json:
        out.write(json.dumps(rows) + "\n")
        return 0
    for row in rows:
        shown = "off" if row["disabled"] else row["state"]
        out.write(printable(f"{row['name']}\t{row['command']}\t{shown}".rstrip(), keep="\t") + "\n")
    return 0
