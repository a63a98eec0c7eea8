"""`python -m desktop mcp ...` as a script runs it, over a temporary data folder, with a
`uvx` on its PATH that runs the test suite's own MCP server (whatever package it is asked
for): a catalogue server installed, started and listed, imported, removed."""

import json
import os
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "support" / "mcp_server.py"


def mcp(tmp_path: Path, *args: str, uvx: bool = True) -> tuple[int, str, str]:
    tools = tmp_path / "bin"
    if uvx and not tools.exists():
        tools.mkdir()
        (tools / "uvx").write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER}\n")
        (tools / "uvx").chmod(0o755)
    path = os.pathsep.join([str(tools), os.path.dirname(sys.executable)])  # no npx of its own
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(tmp_path / "data"), "PATH": path,
           "HOME": str(tmp_path)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "desktop", "mcp", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_install_start_list_and_remove_a_catalogue_server(tmp_path: Path) -> None:
    code, out, _ = mcp(tmp_path, "catalogue", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rows["time"]["runtime_found"] and not rows["filesystem"]["runtime_found"]
    code, out, err = mcp(tmp_path, "install", "time", "--set", "timezone=UTC")
    assert code == 0, err
    assert out == "installed Time as time\n"
    settings = json.loads((tmp_path / "data" / "settings.json").read_text())
    assert settings["mcp_config"] == str(tmp_path / "data" / "mcp-servers.json")
    code, out, err = mcp(tmp_path, "list", "--start", "--json")
    (row,) = json.loads(out)
    assert code == 0, err
    assert row["name"] == "time" and row["command"] == str(tmp_path / "bin" / "uvx")
    assert row["state"] == "running: time__add, time__swatch, time__fail"
    code, out, _ = mcp(tmp_path, "remove", "time")
    assert code == 0 and out == "removed time\n"
    assert mcp(tmp_path, "list")[1] == ""


def test_what_cannot_be_installed_says_why(tmp_path: Path) -> None:
    code, _, err = mcp(tmp_path, "install", "filesystem", "--set", f"folder={tmp_path}")
    assert code == 2 and "needs 'npx'" in err and "https://nodejs.org/" in err
    code, _, err = mcp(tmp_path, "install", "time", "--set", "zone=UTC")
    assert code == 2 and "has no setting 'zone'" in err
    code, _, err = mcp(tmp_path, "install", "no-such-server")
    assert code == 2 and "no server 'no-such-server'" in err
    assert not (tmp_path / "data" / "mcp-servers.json").exists()


def test_another_apps_servers_are_imported(tmp_path: Path) -> None:
    claude = tmp_path / "claude_desktop_config.json"
    claude.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": [str(SERVER)]},
        "bad": {"url": "ftp://example.org"},
    }}))  # fmt: skip
    code, out, err = mcp(tmp_path, "import", str(claude))
    assert code == 0 and out == "imported demo\n" and err.startswith("skipped bad: url:")
    code, out, _ = mcp(tmp_path, "list", "--start")
    assert out.startswith(f"demo\t{sys.executable}\trunning: demo__add")
