"""The local API through the `openai` client itself, over a real socket: its tool-calling
loop (plain and with its streaming helper), the token, calls the caller's schemas refuse,
requests that cannot be answered, and one request at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from desktop.api.server import ApiServer, Backend, ChatApi
from desktop.core.messages import ToolCall
from desktop.core.providers.base import Provider
from tests.support.fakes import Script, ScriptedProvider, Step

TOKEN = "test-token-123"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}  # fmt: skip


class Running:
    def __init__(self, api: ChatApi, server: ApiServer, provider: ScriptedProvider) -> None:
        self.api, self.server, self.provider = api, server, provider
        self.clients: list[openai.AsyncOpenAI] = []

    def client(self, token: str = TOKEN) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(api_key=token, base_url=self.server.url, max_retries=0)
        self.clients.append(client)
        return client


async def running(script: list[Script], connected: bool = True) -> AsyncIterator[Running]:
    provider = ScriptedProvider(script)
    chosen: Provider | None = provider if connected else None
    api = ChatApi(Backend.fixed(chosen, "qwen-test"), TOKEN)
    server = ApiServer(api)
    await server.start()
    running = Running(api, server, provider)
    try:
        yield running
    finally:
        for client in running.clients:
            await client.close()
        await server.stop()


@pytest.fixture
def serve():  # type: ignore[no-untyped-def]
    """Start the API over a script: `async with serve(script) as api: ...`."""
    from contextlib import asynccontextmanager

    return asynccontextmanager(running)


def run_tool(arguments: str) -> str:
    return f"18 °C and sunny in {json.loads(arguments)['city']}"


async def test_the_openai_clients_tool_loop_completes(serve: Any) -> None:
    call = ToolCall("call_1", "get_weather", {"city": "Paris"})
    async with serve([Step(tool_calls=[call], usage=(50, 9)), "It is 18 °C in Paris."]) as api:
        client = api.client()
        models = await client.models.list()
        assert [m.id for m in models.data] == ["qwen-test"]
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = await client.chat.completions.create(
            model="qwen-test", messages=messages, tools=[WEATHER]
        )
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        (called,) = choice.message.tool_calls or []
        assert called.id == "call_1" and called.function.name == "get_weather"
        assert json.loads(called.function.arguments) == {"city": "Paris"}
        assert first.usage is not None and first.usage.total_tokens == 59
        messages += [choice.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": called.id,
                      "content": run_tool(called.function.arguments)}]  # fmt: skip
        second = await client.chat.completions.create(
            model="qwen-test", messages=messages, tools=[WEATHER]
        )
        assert second.choices[0].message.content == "It is 18 °C in Paris."
        assert second.choices[0].finish_reason == "stop"
        sent = api.provider.requests[1]
        assert sent.tools == ["get_weather"]
        assert sent.messages[1].tool_calls == [call]
        assert sent.messages[2].tool_call_id == "call_1" and "sunny" in sent.messages[2].text
        assert [e.calls for e in api.api.exchanges] == [[call], []]


async def test_the_streaming_helper_assembles_the_calls_and_the_text(serve: Any) -> None:
    calls = [ToolCall("call_a", "get_weather", {"city": "Oslo"}),
             ToolCall("call_b", "get_weather", {"city": "Rome"})]  # fmt: skip
    script: list[Script] = [Step(tool_calls=calls, usage=(40, 12)),
                            Step(chunks=["Oslo is cold, ", "Rome is warm."], usage=(80, 6))]  # fmt: skip
    async with serve(script) as api:
        client = api.client()
        messages: list[Any] = [{"role": "user", "content": "Oslo and Rome?"}]
        async with client.chat.completions.stream(
            model="m", messages=messages, tools=[WEATHER],
            stream_options={"include_usage": True},
        ) as stream:  # fmt: skip
            done = [e.name async for e in stream if e.type == "tool_calls.function.arguments.done"]
            final = await stream.get_final_completion()
        assert done == ["get_weather", "get_weather"]
        message = final.choices[0].message
        assert final.choices[0].finish_reason == "tool_calls"
        assert [(c.id, json.loads(c.function.arguments)["city"]) for c in message.tool_calls or []] \
            == [("call_a", "Oslo"), ("call_b", "Rome")]  # fmt: skip
        assert final.usage is not None and final.usage.prompt_tokens == 40
        messages.append(message.model_dump(exclude_none=True))
        for c in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": c.id,
                             "content": run_tool(c.function.arguments)})  # fmt: skip
        pieces = []
        stream2 = await client.chat.completions.create(
            model="m", messages=messages, tools=[WEATHER], stream=True
        )
        async for chunk in stream2:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        assert pieces == ["Oslo is cold, ", "Rome is warm."]


async def test_a_wrong_token_is_refused(serve: Any) -> None:
    async with serve([]) as api:
        with pytest.raises(openai.AuthenticationError, match="bearer token"):
            await api.client("wrong").models.list()
        import httpx

        async with httpx.AsyncClient() as http:  # no token at all
            answer = await http.post(f"{api.server.url}/chat/completions",
                                     json={"messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        assert api.provider.requests == []


async def test_calls_the_callers_schemas_refuse_are_not_returned(serve: Any) -> None:
    wrong = ToolCall("call_1", "get_weather", {"city": 5})
    unknown = ToolCall("call_2", "delete_everything", {})
    async with serve([Step(chunks=["Let me see."], tool_calls=[wrong, unknown])]) as api:
        answer = await api.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Weather?"}], tools=[WEATHER]
        )
        assert answer.choices[0].message.tool_calls is None
        assert answer.choices[0].finish_reason == "stop"
        assert answer.choices[0].message.content == "Let me see."
        (exchange,) = api.api.exchanges
        assert any("not of type 'string'" in d for d in exchange.dropped)
        assert any(d.startswith("delete_everything: not offered") for d in exchange.dropped)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/x.png"}}]}]},
         "data URLs"),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
          "function": {"name": "f", "parameters": {"type": "object", "properties": {
              "x": {"$ref": "https://example.org/schema.json"}}}}}]}, "tools"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "tool_call_id"),
        ({"messages": [{"role": "user", "content": "hi"}],
          "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "no tool named"),
    ],
)  # fmt: skip
async def test_requests_that_cannot_be_answered_say_why(
    serve: Any, body: Any, message: str
) -> None:
    async with serve([]) as api:
        with pytest.raises(openai.BadRequestError, match=message):
            await api.client().chat.completions.create(model="m", **body)
        assert api.provider.requests == []


async def test_a_body_past_the_cap_is_refused_before_it_is_read_whole(serve: Any) -> None:
    import httpx

    async with serve([]) as api:
        big = b'{"messages": [{"role": "user", "content": "' + b"x" * (33 * 2**20) + b'"}]}'
        async with httpx.AsyncClient() as http:
            answer = await http.post(f"{api.server.url}/chat/completions", content=big,
                                     headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert answer.status_code == 400 and "larger than 32 MB" in answer.text


async def test_without_a_model_the_api_says_so(serve: Any) -> None:
    async with serve([], connected=False) as api:
        with pytest.raises(openai.InternalServerError, match="No model is connected"):
            await api.client().chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )


async def test_requests_are_answered_one_at_a_time(serve: Any) -> None:
    async with serve(["first", "second"]) as api:
        client = api.client()
        inner, at_once, most = api.provider.stream, [0], [0]

        async def counted(*args: Any) -> Any:
            at_once[0] += 1
            most[0] = max(most[0], at_once[0])
            try:
                await asyncio.sleep(0.2)  # long enough for the other request to arrive
                async for event in inner(*args):
                    yield event
            finally:
                at_once[0] -= 1

        api.provider.stream = counted

        async def ask(text: str) -> Any:
            return await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}]
            )

        answers = await asyncio.gather(ask("a"), ask("b"))
        assert sorted(a.choices[0].message.content or "" for a in answers) == ["first", "second"]
        assert len(api.provider.requests) == 2 and most == [1]


async def test_a_call_made_before_is_not_returned_again_the_model_answers_instead(
    serve: Any,
) -> None:
    call = ToolCall("call_9", "get_weather", {"city": "Paris"})
    again = ToolCall("call_10", "get_weather", {"city": "Paris"})
    async with serve([Step(tool_calls=[again], usage=(30, 5)),
                      Step(chunks=["It is sunny in Paris."], usage=(35, 6))]) as api:  # fmt: skip
        messages: list[Any] = [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_9",
             "type": "function", "function": {"name": "get_weather",
                                              "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_9", "content": "sunny, 18 °C"},
        ]  # fmt: skip
        answer = await api.client().chat.completions.create(
            model="m", messages=messages, tools=[WEATHER]
        )
        assert answer.choices[0].message.content == "It is sunny in Paris."
        assert answer.choices[0].message.tool_calls is None
        assert answer.usage is not None and answer.usage.prompt_tokens == 65
        retry = api.provider.requests[1]
        assert retry.tools == [] and [t.name for t in retry.options.withdrawn_tools] == [
            "get_weather"
        ]
        assert api.provider.requests[0].messages[1].tool_calls == [call]


async def test_a_taken_port_is_an_error_not_an_exit() -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        server = ApiServer(ChatApi(Backend.fixed(None, "m"), TOKEN), "127.0.0.1",
                           taken.getsockname()[1])  # fmt: skip
        with pytest.raises(OSError, match="cannot listen"):
            await server.start()
        await server.stop()  # safe after a failed start
    finally:
        taken.close()
