from desktop.core.events import Reply, TextChunk
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import RequestOptions
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.native import NativeTools
from desktop.core.tracks.parse import parse_answer
from tests.core.tracks.samples import SEARCH, calls
from tests.support.fakes import ScriptedProvider, Step

# --- the native track's text fallback ---------------------------------------------------


async def native_run(
    step: Step, tools: list[Tool], messages: list[Message] | None = None
) -> tuple[list[str], Reply, ScriptedProvider]:
    inner = ScriptedProvider([step])
    text, reply = [], None
    async for event in NativeTools(inner).stream(
        messages or [Message.user("hi")], tools, RequestOptions()
    ):
        if isinstance(event, TextChunk):
            text.append(event.text)
        elif isinstance(event, Reply):
            reply = event
    assert reply is not None
    return text, reply, inner


async def test_native_sends_tools_natively_and_keeps_structured_calls() -> None:
    step = Step(chunks=["Let me check."], tool_calls=[ToolCall("n1", "search", {"query": "q"})])
    text, reply, inner = await native_run(step, [SEARCH])
    assert inner.requests[0].tools == ["search"]
    assert inner.requests[0].messages == [Message.user("hi")]  # no prompt rewriting
    assert "".join(text) == "Let me check." == reply.text
    assert reply.tool_calls == [ToolCall("n1", "search", {"query": "q"})]


async def test_native_finds_a_call_written_as_text() -> None:
    """The server missed it (fenced JSON instead of the template's tags): we do not."""
    step = Step(chunks=['```json\n{"name": "search", "arguments": {"query": "q"}}\n```'])
    text, reply, _ = await native_run(step, [SEARCH])
    assert text == [] and reply.text == ""
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", {"query": "q"})]


async def test_native_without_tools_sends_the_history_as_plain_messages() -> None:
    history = [
        Message.user("q"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "q"})]),
        Message.tool("c1", "search", "r"),
    ]
    _, reply, inner = await native_run(Step(chunks=["Answer."]), [], history)
    sent = inner.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert sent[1].text.startswith("(I called search")
    assert reply.text == "Answer."


def test_an_answer_in_the_shape_of_a_call_is_text() -> None:
    """A small model sometimes answers with {"name": "<the answer>", ...}: no tool has
    such a name, and no identifier looks like that."""
    text = '{"name": "The Godfather", "arguments": {"year": 1972}}'
    assert parse_answer(text, ["movies_search"]).calls == []
    assert calls('{"name": "calculate_sin", "arguments": {"x": 45}}') == [
        ("calculate_sin", {"x": 45})
    ]
    assert calls('{"name": "math.factorial", "arguments": {"n": 5}}') == [
        ("math.factorial", {"n": 5})
    ]
