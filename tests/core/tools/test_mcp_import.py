"""Importing another app's MCP servers: Claude Desktop's, Cursor's, VS Code's, Windsurf's
files, and hostile ones (too large, too deep, not JSON, a FIFO, bad entries)."""

import json
import os
import re
import sys
from pathlib import Path

import pytest

from desktop.core.tools.mcp import McpConfigError, parse_mcp_config
from desktop.core.tools.mcp_servers_file import (
    MAX_IMPORT_BYTES,
    import_file,
    servers_in,
)

CLAUDE = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
        },
        "remote": {"url": "https://mcp.example.org/mcp", "headers": {"Authorization": "x"}},
    },
    "globalShortcut": "Ctrl+Space",
}


def test_claude_desktops_file_comes_in_whole() -> None:
    found = servers_in(json.dumps(CLAUDE), set())
    assert found.skipped == []
    assert found.servers == CLAUDE["mcpServers"]
    assert [c.name for c in parse_mcp_config({"mcpServers": found.servers})] == [
        "filesystem", "remote"
    ]  # fmt: skip


def test_vs_code_and_windsurf_spellings_are_read() -> None:
    vs_code = {"servers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]}}}
    assert servers_in(json.dumps(vs_code), set()).servers == {
        "git": {"command": "uvx", "args": ["mcp-server-git"]}
    }
    settings = {"editor.fontSize": 12, "mcp": {"servers": {"t": {"command": "uvx"}}}}
    assert list(servers_in(json.dumps(settings), set()).servers) == ["t"]
    windsurf = {"mcpServers": {"w": {"serverUrl": "https://example.org/mcp"}}}
    assert servers_in(json.dumps(windsurf), set()).servers == {
        "w": {"url": "https://example.org/mcp"}
    }


def test_names_already_there_are_kept_apart_and_trust_is_not_imported() -> None:
    text = json.dumps({"mcpServers": {"git": {"command": "uvx", "trusted": True}}})
    found = servers_in(text, {"git", "git_2"})
    assert found.servers == {"git_3": {"command": "uvx"}}


def test_bad_entries_are_named_and_the_rest_come_in() -> None:
    text = json.dumps({"mcpServers": {
        "good": {"command": "uvx", "args": ["x"]},
        "no command": {"args": ["x"]},
        "ftp": {"url": "ftp://example.org"},
        "odd": "a string",
        "bad args": {"command": "x", "args": [1, 2]},
        "\x1b[31mred\x00": {"command": "y"},
    }})  # fmt: skip
    found = servers_in(text, set())
    assert list(found.servers) == ["good", "[31mred"]  # control characters gone
    assert len(found.skipped) == 4
    assert any(s.startswith("ftp: url:") for s in found.skipped)
    assert any(re.match(r"bad args: args/\d: .* not of type", s) for s in found.skipped)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply|too large|not valid JSON"),
        (json.dumps({"other": 1}), "has no MCP servers"),
        ("[1, 2]", "has no MCP servers"),
        ("x" * (MAX_IMPORT_BYTES + 1), "larger than"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_what_is_not_a_configuration_is_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        servers_in(text, set())


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_a_fifo_does_not_hang_the_import(tmp_path: Path) -> None:
    fifo = tmp_path / "claude_desktop_config.json"
    os.mkfifo(fifo)
    with pytest.raises(McpConfigError, match="not a regular file"):
        import_file(fifo, set())


def test_a_file_is_imported_like_the_clipboard(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(CLAUDE))
    assert list(import_file(path, set()).servers) == ["filesystem", "remote"]
    with pytest.raises(McpConfigError, match="cannot read"):
        import_file(tmp_path / "missing.json", set())
