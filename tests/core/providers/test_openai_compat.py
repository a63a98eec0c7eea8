"""The OpenAI-compatible provider against a real local HTTP server replaying llama.cpp's
and LM Studio's byte streams."""

import asyncio
import json
from typing import Any

import pytest

from desktop.core.events import ProviderEvent, ThinkingChunk, UsageReport
from desktop.core.messages import Image, Message, ToolCall
from desktop.core.providers.base import ProviderError, RequestOptions
from desktop.core.providers.openai_compat import OpenAICompatProvider
from desktop.core.runtime import free_port
from tests.core.providers.streams import WEATHER, collect, reply_of, text_of
from tests.support.replay_server import Canned, ReplayServer, resplit, sse

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PATH = "/v1/chat/completions"


def delta(**fields: Any) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "delta": fields, "finish_reason": None}],
        "object": "chat.completion.chunk",
    }


def finish(reason: str = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                      "total_tokens": prompt + completion}}  # fmt: skip


@pytest.mark.parametrize("sizes", [[1], [3, 7], [17], [64]])
async def test_text_survives_any_chunk_boundary(sizes: list[int]) -> None:
    """Split UTF-8 characters, split JSON lines, SSE comments and keep-alive blank lines."""
    pieces = [b": ping\n\n", *sse(delta(role="assistant", content=None), delta(content="Grüß "),
              delta(content="dich, 東京 🌧"), finish(), usage(12, 4))]  # fmt: skip
    pieces.insert(3, b"\n")
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=resplit(pieces, sizes), pause_s=0.001))
        provider = OpenAICompatProvider(server.url, "m", name="llama.cpp server")
        events = await collect(provider)
        await provider.aclose()
    assert text_of(events) == "Grüß dich, 東京 🌧"
    assert UsageReport(12, 4) in events
    reply = reply_of(events)
    assert reply.text == "Grüß dich, 東京 🌧" and reply.finish_reason == "stop"


async def test_crlf_line_endings() -> None:
    pieces = [
        b"data: " + json.dumps(delta(content="ok")).encode() + b"\r\n\r\n",
        b"data: [DONE]\r\n\r\n",
    ]
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=pieces))
        events = await collect(OpenAICompatProvider(server.url))
    assert text_of(events) == "ok"


async def test_request_body_in_the_openai_format() -> None:
    messages = [
        Message.system("sys"),
        Message.user("look", [Image.from_bytes(PNG)]),
        Message.assistant("", [ToolCall("c1", "get_weather", {"city": "Oslo"})]),
        Message.tool("c1", "get_weather", "cold"),
    ]
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(delta(content="x"), finish())))
        provider = OpenAICompatProvider(server.url + "/v1", "qwen", api_key="s3cret")
        async for _ in provider.stream(
            messages, [WEATHER], RequestOptions(temperature=0, seed=7, max_tokens=64)
        ):
            pass
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer s3cret"
    body = request.json()
    assert body["model"] == "qwen" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0, 7, 64)
    assert body["tools"] == [WEATHER.wire_definition()]
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "look"}
    assert body["messages"][1]["content"][1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert body["messages"][2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "content": "cold",
        "tool_call_id": "c1",
        "name": "get_weather",
    }


async def test_no_tools_key_when_no_tools() -> None:
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(delta(content="x"), finish())))
        await collect(OpenAICompatProvider(server.url))
    assert "tools" not in server.requests[0].json()


async def test_native_tool_call_fragments_are_assembled() -> None:
    """Edge case 26: name in chunk 1, arguments over N chunks, a null id, two indices."""
    pieces = sse(
        delta(content="Checking."),
        delta(
            tool_calls=[
                {
                    "index": 0,
                    "id": None,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"ci'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'ty": "Os'}}]),
        delta(
            tool_calls=[
                {
                    "index": 1,
                    "id": "call_b",
                    "function": {"name": "get_weather", "arguments": '{"city"'},
                }
            ]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'lo"}'}}]),
        delta(tool_calls=[{"index": 1, "function": {"arguments": ': "Rome"}'}}]),
        finish("tool_calls"),
    )
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=resplit(pieces, [50])))
        events = await collect(OpenAICompatProvider(server.url), tools=[WEATHER])
    reply = reply_of(events)
    assert reply.text == "Checking."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert reply.tool_calls[0].id.startswith("call_") and reply.tool_calls[1].id == "call_b"
    assert reply.finish_reason == "tool_calls"


async def test_invalid_json_arguments_become_a_broken_call() -> None:
    pieces = sse(
        delta(
            tool_calls=[
                {
                    "index": 0,
                    "id": "x",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                }
            ]
        ),
        finish("tool_calls"),
    )
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=pieces))
        reply = reply_of(await collect(OpenAICompatProvider(server.url), tools=[WEATHER]))
    assert reply.tool_calls == []
    assert (
        reply.broken_calls[0].name == "get_weather"
        and "not valid JSON" in reply.broken_calls[0].reason
    )


async def test_reasoning_streams_as_thinking() -> None:
    pieces = sse(
        delta(reasoning_content="hmm"), delta(reasoning="more"), delta(content="4"), finish()
    )
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=pieces))
        events = await collect(OpenAICompatProvider(server.url))
    assert [e.text for e in events if isinstance(e, ThinkingChunk)] == ["hmm", "more"]
    assert reply_of(events).text == "4"


async def test_http_error_body_becomes_a_readable_message() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size",
            "type": "exceed_context_size_error",
        }
    }
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned.json(body, status=400))
        with pytest.raises(ProviderError) as caught:
            await collect(OpenAICompatProvider(server.url, name="llama.cpp server"))
    assert str(caught.value) == (
        f"llama.cpp server at {server.url} answered HTTP 400: "
        "the request exceeds the available context size"
    )


LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


async def test_loading_model_503_is_retried_until_ready() -> None:
    """Safe to retry: a 503 comes before any token."""
    answers = [Canned.json(LOADING, status=503), Canned.json(LOADING, status=503)]

    def route(request: object) -> Canned:
        return answers.pop(0) if answers else Canned(pieces=sse(delta(content="ready"), finish()))

    async with ReplayServer() as server:
        server.route("POST", PATH, route)
        events = await collect(OpenAICompatProvider(server.url, loading_retries=(0.01, 0.01, 0.01)))
    assert text_of(events) == "ready" and len(server.requests) == 3


async def test_loading_model_503_gives_up_with_the_message() -> None:
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned.json(LOADING, status=503))
        provider = OpenAICompatProvider(server.url, loading_retries=(0.01,))
        with pytest.raises(ProviderError, match="answered HTTP 503: Loading model"):
            await collect(provider)
    assert len(server.requests) == 2


async def test_connection_refused_says_the_server_is_not_running() -> None:
    port = free_port()
    provider = OpenAICompatProvider(f"http://127.0.0.1:{port}", name="LM Studio")
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    assert (
        str(caught.value)
        == f"LM Studio is not running at http://127.0.0.1:{port} (connection refused)."
    )


async def test_a_stream_that_stops_mid_answer_keeps_the_partial_text() -> None:
    pieces = sse(delta(content="The answer is"), done=False)
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=pieces, cut=True))
        provider = OpenAICompatProvider(server.url)
        seen: list[ProviderEvent] = []
        with pytest.raises(ProviderError, match="mid-answer"):
            async for event in provider.stream([Message.user("q")], [], RequestOptions()):
                seen.append(event)
    assert text_of(seen) == "The answer is"


async def test_error_in_the_middle_of_the_stream() -> None:
    pieces = sse(
        delta(content="Par"),
        {"error": {"code": 500, "message": "slot crashed", "type": "server_error"}},
        done=False,
    )
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=pieces))
        with pytest.raises(ProviderError, match="failed mid-answer: slot crashed"):
            await collect(OpenAICompatProvider(server.url))


async def test_not_a_stream() -> None:
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(200, "text/html", [b"<html>proxy login</html>"]))
        with pytest.raises(ProviderError, match="did not answer with a stream"):
            await collect(OpenAICompatProvider(server.url))


async def test_cancelling_closes_the_connection() -> None:
    """Stop: the HTTP stream is closed, which is how llama.cpp learns to stop the slot."""
    async with ReplayServer() as server:
        server.route(
            "POST", PATH, Canned(pieces=sse(delta(content="thinking..."), done=False), hang=True)
        )
        provider = OpenAICompatProvider(server.url)

        async def consume() -> None:
            async for _ in provider.stream([Message.user("q")], [], RequestOptions()):
                pass

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.client_left.wait(), 2)
        await provider.aclose()


async def test_a_server_that_never_answers_times_out_with_a_message() -> None:
    import httpx

    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=[], hang=True))
        provider = OpenAICompatProvider(server.url, name="LM Studio", timeout=httpx.Timeout(0.3))
        with pytest.raises(
            ProviderError, match=r"LM Studio at .* did not answer in time \(ReadTimeout\)"
        ):
            await collect(provider)


async def test_proxy_settings_in_the_environment_are_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Requests go only to the configured backend, never through a proxy from the environment."""
    monkeypatch.setenv("HTTP_PROXY", "http://203.0.113.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://203.0.113.1:9")
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(delta(content="direct"), finish())))
        events = await collect(OpenAICompatProvider(server.url))
    assert text_of(events) == "direct"


async def test_json_schema_becomes_response_format() -> None:
    schema = {"type": "object", "properties": {"name": {"const": "x"}}}
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(delta(content="{}"), finish())))
        provider = OpenAICompatProvider(server.url)
        async for _ in provider.stream([Message.user("q")], [], RequestOptions(json_schema=schema)):
            pass
    assert server.requests[0].json()["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": schema},
    }  # fmt: skip


async def test_token_odds_are_asked_for_and_reported() -> None:
    """llama.cpp's streamed `logprobs`: one entry per token, its top alternatives as log
    probabilities; they come back as probabilities."""
    import math

    from desktop.core.events import TokenOdds

    top = [{"id": 90, "token": "{", "bytes": [123], "logprob": math.log(0.75)},
           {"id": 91, "token": "The", "bytes": [84, 104, 101], "logprob": math.log(0.25)}]  # fmt: skip
    chunk = delta(content="{")
    chunk["choices"][0]["logprobs"] = {"content": [{"token": "{", "logprob": math.log(0.75),
                                                    "top_logprobs": top}]}  # fmt: skip
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(chunk, finish("length"))))
        provider = OpenAICompatProvider(server.url)
        events = await collect(provider, options=RequestOptions(max_tokens=1, top_logprobs=2))
    body = server.requests[0].json()
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    odds = [e for e in events if isinstance(e, TokenOdds)]
    assert len(odds) == 1
    assert [(t, round(p, 6)) for t, p in odds[0].alternatives] == [("{", 0.75), ("The", 0.25)]
    assert odds[0].chosen is not None and odds[0].chosen[0] == "{"
    assert round(odds[0].chosen[1], 6) == 0.75
    assert text_of(events) == "{"


def test_token_odds_that_are_not_numbers_are_left_out() -> None:
    """A backend's bytes are untrusted: a log probability that is text, NaN or too large
    to exponentiate does not stop the answer."""
    import math

    from desktop.core.providers.openai_compat import token_odds

    entries = [
        {"token": "a", "logprob": "high", "top_logprobs": [{"token": "a", "logprob": None}]},
        {"token": "b", "logprob": 1e6, "top_logprobs": [{"token": "b", "logprob": float("nan")}]},
        {"token": 7, "logprob": -math.inf, "top_logprobs": [{"token": "c", "logprob": -1e9}]},
        "not an entry",
    ]
    odds = token_odds({"content": entries})
    assert [(o.alternatives, o.chosen) for o in odds] == [
        ((), None), ((), ("b", 1.0)), ((("c", 0.0),), None),
    ]  # fmt: skip


async def test_no_token_odds_unless_asked() -> None:
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=sse(delta(content="hi"), finish())))
        await collect(OpenAICompatProvider(server.url))
    assert "logprobs" not in server.requests[0].json()


@pytest.mark.parametrize("silences", [1, 2])
async def test_a_connection_dropped_before_any_answer_is_asked_once_more(silences: int) -> None:
    """llama.cpp closes an idle kept-alive connection after seconds: a request sent on it as
    it closes gets no answer at all ("Server disconnected without sending a response"),
    which failed a chat's first turn now and then. Nothing was done, so it is sent once
    more; twice in a row is the server's failure, said plainly."""
    answers = [Canned(silent=True)] * silences + [
        Canned(pieces=sse(delta(content="Hi."), finish()))
    ]
    async with ReplayServer() as server:
        server.route("POST", PATH, lambda _request: answers.pop(0))
        provider = OpenAICompatProvider(server.url, "m", name="llama.cpp server")
        try:
            if silences == 1:
                assert text_of(await collect(provider)) == "Hi."
            else:
                with pytest.raises(ProviderError, match="broke mid-answer"):
                    await collect(provider)
        finally:
            await provider.aclose()
    assert len(server.requests) == 2
