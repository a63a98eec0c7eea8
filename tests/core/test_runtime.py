"""The built-in runtime: the bundled model, and llama-server started, watched and stopped."""

import asyncio
import hashlib
import os
import signal
from pathlib import Path

import httpx
import pytest

from desktop.core.events import TextDelta, TurnFailed
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.discovery import discover
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import (
    LlamaServer,
    RuntimeSetupError,
    assemble,
    find_llama_server,
)
from desktop.core.tools.toolbox import Toolbox


def test_assemble_checks_the_sha256(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate([b"GGUF", b"-part-two", b"-three"]):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(data)
        parts.append(part)
    good = hashlib.sha256(b"GGUF-part-two-three").hexdigest()
    target = tmp_path / "models" / "m.gguf"
    assemble(parts, target, good)
    assert target.read_bytes() == b"GGUF-part-two-three"

    other = tmp_path / "models" / "bad.gguf"
    with pytest.raises(RuntimeSetupError, match="checksum does not match"):
        assemble(parts, other, "0" * 64)
    assert not other.exists() and not other.with_suffix(".partial").exists()


def test_binary_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(fake))
    assert find_llama_server() == fake
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(tmp_path / "missing"))
    assert find_llama_server() is None


def test_a_packaged_app_finds_its_own_llama_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    inside = tmp_path / "llama" / "llama-server"
    inside.parent.mkdir()
    inside.write_bytes(b"")
    monkeypatch.delenv("LOOMCHAT_LLAMA_SERVER", raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert find_llama_server() == inside


def test_a_packaged_app_without_the_bundled_model_says_to_choose_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from desktop.core import runtime

    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "_BUNDLED_MODEL_PARTS", [("loomchat_no_such_part", "x.bin")])
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(RuntimeSetupError, match="Choose a GGUF model file") as caught:
        runtime.ensure_bundled_model()
    assert "pip" not in str(caught.value)
    assert not runtime.bundled_model_available()
    runtime.bundled_model_path().parent.mkdir(parents=True)
    runtime.bundled_model_path().write_bytes(b"GGUF")
    assert runtime.bundled_model_available()


async def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    server = LlamaServer(model=tmp_path / "nope.gguf", binary=Path("/bin/true"))
    with pytest.raises(RuntimeSetupError, match="Model file not found"):
        await server.start()


async def test_a_server_that_exits_at_once_points_to_its_log(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "server.log"
    server = LlamaServer(model=model, binary=Path("/bin/false"), log_path=log)
    with pytest.raises(RuntimeSetupError, match=f"exited with code 1; see its log: {log}"):
        await server.start(timeout_s=10)


# --- with the real llama-server ---------------------------------------------------------


@pytest.mark.server
async def test_supervisor_restarts_a_crashed_server(own_server: LlamaServer) -> None:
    supervisor = asyncio.create_task(own_server.supervise(poll_s=0.1))
    assert own_server.process is not None
    first_pid = own_server.process.pid
    os.kill(first_pid, signal.SIGKILL)
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            await asyncio.sleep(0.1)
            if own_server.restarts and own_server.process and own_server.process.pid != first_pid:
                try:
                    if (await client.get(f"{own_server.base_url}/health")).status_code == 200:
                        break
                except httpx.HTTPError:
                    continue
        else:
            pytest.fail("the server was not restarted")
    assert own_server.restarts == 1
    supervisor.cancel()
    own_server.stop()
    assert not own_server.running


@pytest.mark.server
async def test_server_killed_mid_stream_fails_the_turn_and_keeps_the_text(
    own_server: LlamaServer,
) -> None:
    provider = make_provider("llamacpp", own_server.base_url)
    events = []
    settings = LoopSettings(options=RequestOptions(temperature=0, seed=1, max_tokens=2000))
    async for event in run_turn(
        provider, Toolbox(), [Message.user("Count from 1 to 1000.")], settings=settings
    ):
        events.append(event)
        if sum(isinstance(e, TextDelta) for e in events) == 5:
            assert own_server.process is not None
            os.kill(own_server.process.pid, signal.SIGKILL)
    await provider.aclose()
    assert sum(isinstance(e, TextDelta) for e in events) >= 5  # what was shown stays shown
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert f"llama.cpp server at {own_server.base_url}" in failed.message
    assert "mid-answer" in failed.message or "not running" in failed.message


@pytest.mark.server
async def test_probe_and_discovery_on_the_real_server(llama_server: LlamaServer) -> None:
    provider = make_provider("llamacpp", llama_server.base_url)
    probed = await CapabilityCache().capabilities(provider)
    await provider.aclose()
    assert probed.error is None
    assert probed.capabilities.context_size == 4096
    assert probed.capabilities.vision is False
    assert (
        probed.capabilities.native_tools is True
    )  # the template has tools; the model rarely uses them
    (found,) = await discover([llama_server.base_url])
    assert found.kind == "llamacpp" and found.models == [str(llama_server.model)]
