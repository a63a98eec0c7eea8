"""The MCP catalogue: the shipped data, the runtime check, and installs written into the
app's own `mcpServers` file and started, with the test suite's own MCP server."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from desktop.core.storage.settings import Settings
from desktop.core.tools.catalog import ToolCatalog
from desktop.core.tools.mcp import McpConfigError, ServerState
from desktop.core.tools.mcp_catalogue import (
    CATALOGUE,
    CatalogueServer,
    McpCatalogueError,
    Setting,
    find_runtime,
    load_catalogue,
    server_entry,
)
from desktop.core.tools.mcp_servers_file import (
    install,
    installed_from_catalogue,
    read_servers,
    remove_server,
    set_disabled,
)

SERVER = str(Path(__file__).resolve().parents[2] / "support" / "mcp_server.py")


def demo_entry(**changes: object) -> CatalogueServer:
    """The test suite's MCP server, as a catalogue entry run by this Python."""
    fields: dict[str, object] = {
        "id": "demo", "name": "Demo", "description": "Adds numbers and draws swatches.",
        "runtime": "command", "command": sys.executable, "args": (SERVER,), "settings": (),
        "online": False, "licence": "MIT", "source": "https://example.org/demo",
    }  # fmt: skip
    return CatalogueServer(**{**fields, **changes})  # type: ignore[arg-type]


def test_the_shipped_catalogue_reads_and_says_licence_and_source() -> None:
    servers = load_catalogue()
    assert len(servers) >= 8
    assert len({s.id for s in servers}) == len(servers)
    assert {s.runtime for s in servers} == {"uvx", "npx"}
    for server in servers:
        assert server.licence and server.source.startswith("https://github.com/")
    assert any(s.online for s in servers) and any(not s.online for s in servers)
    assert [s.id for s in servers if s.matches("arXiv papers")] == ["arxiv"]
    assert "fetch" in {s.id for s in servers if s.matches("web page")}
    assert {s.id for s in servers if s.matches("FOLDER")} >= {"filesystem"}


def test_a_damaged_catalogue_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "catalogue.json"
    data = json.loads(CATALOGUE.read_text())
    data["servers"][0]["runtime"] = "curl | sh"
    bad.write_text(json.dumps(data))
    with pytest.raises(McpCatalogueError, match="cannot be read"):
        load_catalogue(bad)


def test_a_missing_runtime_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.local/bin/uvx to find
    uvx = next(s for s in load_catalogue() if s.runtime == "uvx")
    check = find_runtime(uvx, path=str(tmp_path))
    assert not check.ok
    assert "'uvx'" in check.missing and "https://docs.astral.sh/uv/" in check.missing
    npx = next(s for s in load_catalogue() if s.runtime == "npx")
    assert "https://nodejs.org/" in find_runtime(npx, path=str(tmp_path)).missing


def test_a_runtime_off_the_path_is_found_where_its_installer_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    uvx = tmp_path / ".local" / "bin" / "uvx"
    uvx.parent.mkdir(parents=True)
    uvx.write_text("#!/bin/sh\n")
    uvx.chmod(uvx.stat().st_mode | stat.S_IXUSR)
    time_server = next(s for s in load_catalogue() if s.id == "time")
    assert find_runtime(time_server, path=os.devnull).command == str(uvx)


def test_settings_fill_in_arguments_and_variables(tmp_path: Path) -> None:
    server = demo_entry(settings=(
        Setting("folder", "The folder it may use", "folder", True, arg="--root={value}"),
        Setting("zone", "Your time zone", "text", False, arg="--zone={value}"),
        Setting("file", "Where to keep it", "file", False, env="DEMO_FILE"),
    ))  # fmt: skip
    with pytest.raises(McpCatalogueError, match="needs the folder it may use"):
        server_entry(server, "python", {})
    with pytest.raises(McpCatalogueError, match="is not a folder"):
        server_entry(server, "python", {"folder": str(tmp_path / "nowhere")})
    with pytest.raises(McpCatalogueError, match="one line"):
        server_entry(server, "python", {"folder": str(tmp_path), "zone": "UTC\n--evil"})
    entry = server_entry(server, "python", {"folder": str(tmp_path), "file": "~/m.jsonl"})
    assert entry["args"] == [SERVER, f"--root={tmp_path.resolve()}"]  # no empty --zone
    assert entry["env"] == {"DEMO_FILE": str(Path("~/m.jsonl").expanduser().resolve())}
    assert entry["catalogue"] == "demo"


def test_install_writes_the_file_and_again_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    path.write_text(json.dumps({"note": "kept", "mcpServers": {"demo": {"command": "x"}}}))
    server = demo_entry(settings=(Setting("zone", "Zone", "text", False, arg="--zone={value}"),))
    name = install(server, {"zone": "UTC"}, path)
    assert name == "demo_2"  # a server of that name came from elsewhere: it stays
    name_again = install(server, {"zone": "Europe/Paris"}, path)
    assert name_again == "demo_2"
    data = json.loads(path.read_text())
    assert data["note"] == "kept" and data["mcpServers"]["demo"] == {"command": "x"}
    assert data["mcpServers"]["demo_2"]["args"][-1] == "--zone=Europe/Paris"
    assert installed_from_catalogue(read_servers(path)) == {"demo": "demo_2"}
    set_disabled(path, "demo_2", True)
    assert read_servers(path)["demo_2"]["disabled"] is True
    assert remove_server(path, "demo_2") and not remove_server(path, "demo_2")
    assert installed_from_catalogue(read_servers(path)) == {}


def test_install_stops_where_the_runtime_is_missing(tmp_path: Path) -> None:
    server = demo_entry(command="no-such-runtime-xyz")
    with pytest.raises(McpCatalogueError, match="no-such-runtime-xyz"):
        install(server, {}, tmp_path / "mcp-servers.json", search_path=str(tmp_path))
    assert not (tmp_path / "mcp-servers.json").exists()


def test_a_damaged_servers_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    path.write_text("{not json")
    with pytest.raises(McpConfigError, match="not valid JSON"):
        install(demo_entry(), {}, path)
    assert path.read_text() == "{not json"


async def test_an_installed_server_starts_and_the_others_run_on(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    install(demo_entry(), {}, path)
    settings = Settings(mcp_config=str(path))
    catalog = ToolCatalog()
    try:
        assert await catalog.start_mcp(settings) == []
        (first,) = catalog.mcp.servers
        assert first.state.kind == "running" and first.state.tools == 3
        assert "demo__add" in {t.name for t in catalog.all}

        install(demo_entry(id="second"), {}, path)
        assert await catalog.start_mcp(settings) == []
        assert catalog.mcp.servers[0] is first  # not restarted for the new one
        assert [s.prefix for s in catalog.mcp.servers] == ["demo", "second"]
        assert catalog.mcp.servers[1].state.kind == "running"

        remove_server(path, "demo")
        await catalog.start_mcp(settings)
        assert [s.config.name for s in catalog.mcp.servers] == ["second"]
        assert first.state == ServerState("stopped")
        assert "demo__add" not in {t.name for t in catalog.all}
        assert "second__add" in {t.name for t in catalog.all}
    finally:
        await catalog.mcp.close()


async def test_a_server_that_fails_says_why_in_its_state(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    install(demo_entry(args=("-c", "import sys; sys.exit(3)")), {}, path)
    catalog = ToolCatalog()
    try:
        problems = await catalog.start_mcp(Settings(mcp_config=str(path)))
        (server,) = catalog.mcp.servers
        assert server.state.kind == "failed"
        assert server.state.reason == problems[0] and "failed" in problems[0]
    finally:
        await catalog.mcp.close()
