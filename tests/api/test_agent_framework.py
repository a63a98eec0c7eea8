"""An agent framework's own client against the local API, as a developer would use it:
smolagents' `ToolCallingAgent` over its `OpenAIServerModel`, with a tool of its own, until
its final answer. The model behind the API is the scripted fake; the framework, its client
and the API are real, over a real socket."""

from __future__ import annotations

import asyncio
from typing import Any

from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from desktop.api.server import ApiServer, Backend, ChatApi
from desktop.core.messages import ToolCall
from tests.support.fakes import ScriptedProvider, Step

TOKEN = "agent-token"


@tool  # type: ignore[untyped-decorator]
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers exactly.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


async def test_a_smolagents_agent_runs_its_tool_and_gives_its_final_answer() -> None:
    provider = ScriptedProvider([
        Step(tool_calls=[ToolCall("call_1", "multiply", {"a": 6, "b": 7})]),
        Step(tool_calls=[ToolCall("call_2", "final_answer", {"answer": "6 × 7 = 42"})]),
    ])  # fmt: skip
    server = ApiServer(ChatApi(Backend.fixed(provider, "local"), TOKEN))
    await server.start()
    try:
        model = OpenAIServerModel("local", api_base=server.url, api_key=TOKEN)
        agent = ToolCallingAgent(tools=[multiply], model=model, max_steps=4, verbosity_level=0)
        answer: Any = await asyncio.to_thread(agent.run, "What is 6 times 7?")
    finally:
        await server.stop()
    assert str(answer) == "6 × 7 = 42"
    first, second = provider.requests
    assert set(first.tools) == {"multiply", "final_answer"}
    # the framework ran the tool and sent its result back, in its own words
    assert second.messages[-1].role == "user" and "42" in second.messages[-1].text
