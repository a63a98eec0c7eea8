"""The built-in runtime with the real llama-server: restarts, a kill mid-answer, probing."""

import asyncio
import os
import signal

import httpx
import pytest

from desktop.core.events import TextDelta, TurnFailed
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import Aside, RequestOptions
from desktop.core.providers.discovery import discover
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import (
    LlamaServer,
)
from desktop.core.tools.toolbox import Toolbox


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


async def test_an_aside_leaves_the_conversations_prompt_cached(
    llama_server: LlamaServer,
) -> None:
    """The runtime's three slots: requests pinned to the asides' slots (the turn alone,
    the conversation in words) do not make the conversation's next request read its prompt
    again, nor each other's. The server says how much of each prompt it read
    (`timings.prompt_n`)."""
    from desktop.core.providers.llamacpp import LlamaCppProvider

    provider = LlamaCppProvider(llama_server.base_url)
    provider.capabilities = await provider.probe()
    assert provider.capabilities.slots == 3
    conversation = "Here is a long story. " + "Once upon a time there was a fox. " * 60

    async def read(text: str, aside: Aside | None) -> int:
        options = RequestOptions(temperature=0, max_tokens=1, aside=aside)
        body = provider.request_body([Message.user(text)], [], options) | {"stream": False}
        body.pop("stream_options")
        async with httpx.AsyncClient(timeout=120) as client:
            answer = await client.post(f"{llama_server.base_url}/v1/chat/completions", json=body)
        return int(answer.json()["timings"]["prompt_n"])

    in_words = "In words: " + "A hare ran past the fox. " * 60
    assert await read(conversation + "Who is in it?", aside=None) > 300
    assert await read(in_words + "Who ran?", aside="in words") > 300
    assert await read("What is 2 + 2?", aside="turn alone") > 5
    assert await read(conversation + "Is it short?", aside=None) < 20
    assert await read(in_words + "Was it fast?", aside="in words") < 20
    await provider.aclose()
