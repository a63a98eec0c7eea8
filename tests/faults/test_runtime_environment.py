"""What the built-in server inherits: the app's environment without its keys and tokens,
and a command line with no secret in it that binds only 127.0.0.1. Checked on a real
process started the way the app starts llama-server (a stand-in binary that writes down
what it was given and answers /health)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from desktop.core.runtime import LlamaServer, is_secret

STAND_IN = """#!{python}
import http.server, json, os, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
with open({record!r}, "w") as out:
    json.dump({{"env": dict(os.environ), "argv": sys.argv}}, out)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{{}}")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""

SECRETS = {
    "LOOMCHAT_API_KEY": "sk-loomchat",
    "HF_TOKEN": "hf_secret",
    "HUGGING_FACE_HUB_TOKEN": "hf_secret_2",
    "OPENAI_API_KEY": "sk-openai",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GITHUB_PAT": "ghp",
    "DB_PASSWORD": "pw",
}


@pytest.mark.skipif(sys.platform == "win32", reason="a script as the binary")
async def test_the_server_gets_no_key_or_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOOMCHAT_HARMLESS", "kept")
    record = tmp_path / "seen.json"
    binary = tmp_path / "llama-server"
    binary.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
    binary.chmod(0o755)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    server = LlamaServer(model=model, binary=binary, log_path=tmp_path / "server.log")
    await server.start(timeout_s=30)
    try:
        seen = json.loads(record.read_text())
    finally:
        server.stop()
    assert not set(SECRETS) & set(seen["env"])
    assert seen["env"]["LOOMCHAT_HARMLESS"] == "kept" and "PATH" in seen["env"]
    assert not any(value in " ".join(seen["argv"]) for value in SECRETS.values())
    assert seen["argv"][seen["argv"].index("--host") + 1] == "127.0.0.1"


def test_what_counts_as_a_secret() -> None:
    assert all(is_secret(name) for name in SECRETS)
    assert not any(is_secret(name) for name in ("PATH", "HOME", "LLAMA_ARG_CACHE_RAM", "LANG"))


def test_the_cli_says_a_key_on_its_command_line_can_be_read() -> None:
    import argparse

    from desktop.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = commands.choices["run"].format_help()
    assert "LOOMCHAT_API_KEY" in text and "other users of this computer" in " ".join(text.split())
