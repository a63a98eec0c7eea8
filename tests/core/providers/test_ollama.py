"""The Ollama provider against a local server replaying Ollama's NDJSON byte stream."""

import base64
from typing import Any

import pytest

from desktop.core.events import Notice, ProviderEvent, TextChunk, ThinkingChunk, UsageReport
from desktop.core.messages import Image, Message, ToolCall
from desktop.core.providers.base import ProviderError, RequestOptions
from desktop.core.providers.ollama import OllamaProvider
from desktop.core.runtime import free_port
from tests.core.providers.streams import WEATHER, collect, reply_of
from tests.support.replay_server import Canned, ReplayServer, ndjson, resplit

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
NDJSON = "application/x-ndjson"
STAMP = "2026-11-30T10:00:00.000000Z"


def chunk(
    content: str = "", thinking: str | None = None, tool_calls: list[Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"model": "qwen3:4b", "created_at": STAMP, "message": message, "done": False}


def done(prompt: int = 26, completion: int = 8, reason: str = "stop") -> dict[str, Any]:
    return {
        "model": "qwen3:4b", "created_at": STAMP,
        "message": {"role": "assistant", "content": ""},
        "done": True, "done_reason": reason, "total_duration": 4883583458,
        "load_duration": 1334875, "prompt_eval_count": prompt, "prompt_eval_duration": 342546000,
        "eval_count": completion, "eval_duration": 4535599000,
    }  # fmt: skip


@pytest.mark.parametrize("sizes", [[1], [5, 11], [40], [4096]])
async def test_text_and_thinking_survive_any_chunk_boundary(sizes: list[int]) -> None:
    """Edge case 29: interleaved thinking, usage on the done chunk, no duplicated final token."""
    pieces = ndjson(chunk("", thinking="Let me "), chunk("", thinking="think."), chunk("Grüß "),
                    chunk("dich 東京"), chunk("!"), done(31, 4))  # fmt: skip
    async with ReplayServer() as server:
        server.route(
            "POST",
            "/api/chat",
            Canned(content_type=NDJSON, pieces=resplit(pieces, sizes), pause_s=0.001),
        )
        provider = OllamaProvider(server.url, "qwen3:4b")
        events = await collect(provider)
        await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, ThinkingChunk)) == "Let me think."
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["Grüß ", "dich 東京", "!"]
    assert UsageReport(31, 4) in events
    reply = reply_of(events)
    assert reply.text == "Grüß dich 東京!" and reply.finish_reason == "stop"


async def test_request_body_is_ollamas_format() -> None:
    messages = [
        Message.system("sys"),
        Message.user("look", [Image.from_bytes(PNG)]),
        Message.assistant("", [ToolCall("c1", "get_weather", {"city": "Oslo"})]),
        Message.tool("c1", "get_weather", "cold"),
    ]
    async with ReplayServer() as server:
        server.route(
            "POST", "/api/chat", Canned(content_type=NDJSON, pieces=ndjson(chunk("x"), done()))
        )
        provider = OllamaProvider(server.url, "llava", num_ctx=16384)
        await collect(
            provider, messages, [WEATHER], RequestOptions(temperature=0, seed=3, max_tokens=99)
        )
    body = server.requests[0].json()
    assert body["model"] == "llava" and body["stream"] is True
    assert body["options"] == {"num_ctx": 16384, "temperature": 0, "seed": 3, "num_predict": 99}
    assert body["tools"] == [WEATHER.wire_definition()]
    assert body["messages"][1] == {
        "role": "user",
        "content": "look",
        "images": [base64.b64encode(PNG).decode()],
    }
    assert body["messages"][2]["tool_calls"] == [
        {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "content": "cold",
        "tool_name": "get_weather",
        "tool_call_id": "c1",
    }


async def test_num_ctx_is_sent_even_without_options() -> None:
    async with ReplayServer() as server:
        server.route(
            "POST", "/api/chat", Canned(content_type=NDJSON, pieces=ndjson(chunk("x"), done()))
        )
        await collect(OllamaProvider(server.url, "m"))
    assert server.requests[0].json()["options"] == {"num_ctx": 8192}


async def test_native_tool_call_arrives_whole_with_object_arguments() -> None:
    calls = [{"id": "call_x1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}},
             {"function": {"index": 1, "name": "get_weather", "arguments": {"city": "Paris"}}}]  # fmt: skip
    pieces = ndjson(chunk("", tool_calls=calls), done(reason="stop"))
    async with ReplayServer() as server:
        server.route("POST", "/api/chat", Canned(content_type=NDJSON, pieces=pieces))
        reply = reply_of(await collect(OllamaProvider(server.url, "m"), tools=[WEATHER]))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Tokyo"}),
        ("get_weather", {"city": "Paris"}),
    ]
    assert reply.tool_calls[0].id == "call_x1" and reply.tool_calls[1].id.startswith("call_")


async def test_string_arguments_from_older_builds() -> None:
    calls = [{"function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
             {"function": {"name": "get_weather", "arguments": "{broken"}}]  # fmt: skip
    async with ReplayServer() as server:
        server.route(
            "POST",
            "/api/chat",
            Canned(content_type=NDJSON, pieces=ndjson(chunk("", tool_calls=calls), done())),
        )
        reply = reply_of(await collect(OllamaProvider(server.url, "m"), tools=[WEATHER]))
    assert reply.tool_calls[0].arguments == {"city": "Rome"}
    assert reply.broken_calls[0].reason == "Its arguments were not valid JSON."


async def test_error_line_mid_stream() -> None:
    pieces = ndjson(
        chunk("Par"), {"error": "an error was encountered while running the model: unexpected EOF"}
    )
    async with ReplayServer() as server:
        server.route("POST", "/api/chat", Canned(content_type=NDJSON, pieces=pieces))
        seen: list[ProviderEvent] = []
        with pytest.raises(ProviderError, match="failed mid-answer: an error was encountered"):
            async for event in OllamaProvider(server.url, "m").stream(
                [Message.user("q")], [], RequestOptions()
            ):
                seen.append(event)
    assert seen == [TextChunk("Par")]


async def test_model_not_found_says_how_to_install_it() -> None:
    async with ReplayServer() as server:
        server.route(
            "POST", "/api/chat", Canned.json({"error": "model 'llama9' not found"}, status=404)
        )
        with pytest.raises(ProviderError) as caught:
            await collect(OllamaProvider(server.url, "llama9"))
    assert (
        str(caught.value)
        == f"The model 'llama9' is not installed in Ollama at {server.url}. Install it with: ollama pull llama9"
    )


async def test_model_without_tool_support_points_to_the_emulated_track() -> None:
    body = {"error": "registry.ollama.ai/library/gemma3:4b does not support tools"}
    async with ReplayServer() as server:
        server.route("POST", "/api/chat", Canned.json(body, status=400))
        with pytest.raises(
            ProviderError, match=r"does not support native tool calling .* Use the emulated track"
        ):
            await collect(OllamaProvider(server.url, "gemma3:4b"), tools=[WEATHER])


async def test_server_error_500() -> None:
    async with ReplayServer() as server:
        server.route(
            "POST",
            "/api/chat",
            Canned.json(
                {"error": "llama runner process has terminated: signal: killed"}, status=500
            ),
        )
        with pytest.raises(
            ProviderError, match="answered HTTP 500: llama runner process has terminated"
        ):
            await collect(OllamaProvider(server.url, "m"))


async def test_not_running() -> None:
    port = free_port()
    with pytest.raises(ProviderError) as caught:
        await collect(OllamaProvider(f"http://127.0.0.1:{port}", "m"))
    assert (
        str(caught.value)
        == f"Ollama is not running at http://127.0.0.1:{port} (connection refused)."
    )


async def test_stream_that_ends_without_done() -> None:
    async with ReplayServer() as server:
        server.route(
            "POST", "/api/chat", Canned(content_type=NDJSON, pieces=ndjson(chunk("Hal")), cut=True)
        )
        with pytest.raises(ProviderError, match="mid-answer"):
            await collect(OllamaProvider(server.url, "m"))


async def test_context_warning_before_sending_and_from_the_count() -> None:
    long = Message.user("word " * 2000)
    async with ReplayServer() as server:
        server.route(
            "POST",
            "/api/chat",
            Canned(content_type=NDJSON, pieces=ndjson(chunk("ok"), done(prompt=2000))),
        )
        events = await collect(OllamaProvider(server.url, "m", num_ctx=2048), [long])
        assert (
            isinstance(events[0], Notice) and "of the 2048 tokens of context" in events[0].message
        )
        assert sum(isinstance(e, Notice) for e in events) == 1
        events = await collect(
            OllamaProvider(server.url, "m", num_ctx=2048), [Message.user("short")]
        )
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "about 2000 of the 2048" in notices[0].message


async def test_models_and_capabilities() -> None:
    tags = {"models": [{"name": "qwen3:4b", "model": "qwen3:4b", "modified_at": STAMP, "size": 2497293931, "digest": "abc",
                        "details": {"format": "gguf", "family": "qwen3", "parameter_size": "4.0B", "quantization_level": "Q4_K_M"}},
                       {"name": "llava:7b", "model": "llava:7b"}]}  # fmt: skip
    show = {"modelfile": "...", "parameters": "...", "template": "...", "details": {},
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
            "capabilities": ["completion", "tools", "thinking"]}  # fmt: skip
    async with ReplayServer() as server:
        server.route("GET", "/api/tags", Canned.json(tags))
        server.route("POST", "/api/show", Canned.json(show))
        provider = OllamaProvider(server.url, "qwen3:4b", num_ctx=8192)
        assert await provider.list_models() == ["qwen3:4b", "llava:7b"]
        capabilities = await provider.probe()
    assert (capabilities.native_tools, capabilities.vision, capabilities.context_size) == (
        True,
        False,
        8192,
    )
    assert server.requests[-1].json() == {"model": "qwen3:4b"}


async def test_json_schema_becomes_format() -> None:
    schema = {"type": "object", "properties": {"name": {"const": "x"}}}
    async with ReplayServer() as server:
        server.route(
            "POST", "/api/chat", Canned(content_type=NDJSON, pieces=ndjson(chunk("{}"), done()))
        )
        await collect(OllamaProvider(server.url, "m"), options=RequestOptions(json_schema=schema))
    assert server.requests[0].json()["format"] == schema
