"""`python -m desktop serve --server NAME`: the local API served from a server saved in the
app, reached as the app reaches it (its address, model, headers and key), over real HTTP,
asked with the `openai` client."""

from __future__ import annotations

import asyncio
import io
import re
from dataclasses import replace
from pathlib import Path

import openai
import pytest

from desktop.cli import build_parser
from desktop.cli_serve import serve_command
from desktop.core.errors import UsageError
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.servers import key_name, saved_as
from desktop.core.storage.settings import Settings, save_settings
from tests.support.replay_server import Canned, ReplayServer
from tests.test_cli import PATH, content

MODELS = Canned.json({"object": "list", "data": [{"id": "big-model", "object": "model"}]})


async def test_serve_answers_from_a_saved_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(tmp_path))
    async with ReplayServer() as gpu:
        gpu.route("GET", "/v1/models", MODELS)
        gpu.route("POST", PATH, lambda _: Canned(pieces=content("From the GPU box.")))
        settings = saved_as(
            Settings(backend="openai", url=gpu.url, headers={"X-Team": "ml"}), "GPU box"
        )
        settings = replace(settings, secrets_in_file=True)  # where no keychain answers
        save_settings(replace_server_in_use(settings), tmp_path / "settings.json")
        SecretStore(file=tmp_path / "secrets.json").set(key_name("GPU box"), "gpu-token")
        args = build_parser().parse_args(["serve", "--server", "GPU box", "--port", "0"])
        out = io.StringIO()
        serving = asyncio.ensure_future(serve_command(args, out, io.StringIO()))
        try:
            for _ in range(200):
                if "token:" in out.getvalue() or serving.done():
                    break
                await asyncio.sleep(0.05)
            url = re.search(r"API at (\S+)", out.getvalue())
            token = re.search(r"token: (\S+)", out.getvalue())
            assert url and token, out.getvalue()
            assert "big-model" in out.getvalue()
            client = openai.AsyncOpenAI(api_key=token[1], base_url=url[1], max_retries=0)
            answer = await client.chat.completions.create(
                model="big-model", messages=[{"role": "user", "content": "Hi"}]
            )
            await client.close()
            assert answer.choices[0].message.content == "From the GPU box."
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    asked = [r for r in gpu.requests if r.path == PATH]
    assert asked and all(r.headers.get("authorization") == "Bearer gpu-token" for r in asked)
    assert all(r.headers.get("x-team") == "ml" for r in asked)


def replace_server_in_use(settings: Settings) -> Settings:
    """The app left connected to another server: `--server` is what chooses."""
    return replace(settings, backend="ollama", url="http://127.0.0.1:9", server="")


async def test_serve_refuses_a_server_that_is_not_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(tmp_path))
    args = build_parser().parse_args(["serve", "--server", "Nowhere"])
    with pytest.raises(UsageError, match="no saved server called 'Nowhere'"):
        await serve_command(args, io.StringIO(), io.StringIO())
