from desktop.core.events import ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import RequestOptions
from desktop.core.tracks.text_answer import text_answer
from tests.support.fakes import ScriptedProvider, Step

PRODUCT = '{"expression": "1234 * 5678", "result": 7006652}'


def after_a_result(result: str = PRODUCT) -> list[Message]:
    call = ToolCall("c1", "calculator", {"expression": "1234 * 5678"})
    return [
        Message.user("Say hi."),
        Message.assistant("Hi!"),
        Message.user("What is 1234 * 5678?"),
        Message.assistant("", [call]),
        Message.tool("c1", "calculator", result),
    ]


async def answered(provider: ScriptedProvider, messages: list[Message]) -> list[ProviderEvent]:
    stream = text_answer(provider, messages, [], RequestOptions(temperature=0), form="json",
                         keep_tools=False, reason="the gate said words")  # fmt: skip
    return [event async for event in stream]


def shown(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_an_answer_that_states_the_result_is_shown_as_it_comes() -> None:
    provider = ScriptedProvider([Step(chunks=["The product ", "is 7,006,652", "."])])
    events = await answered(provider, after_a_result())
    chunks = [e.text for e in events if isinstance(e, TextChunk)]
    assert chunks == ["The product ", "is 7,006,652", "."]
    reply = events[-1]
    assert isinstance(reply, Reply) and reply.text == "The product is 7,006,652."
    assert len(provider.requests) == 1


async def test_an_answer_past_the_result_is_never_shown_and_asked_again_alone() -> None:
    provider = ScriptedProvider(
        [Step(chunks=["I'm sorry, ", "I can't tell the time."]), Step(chunks=["It is 7006652."])]
    )
    events = await answered(provider, after_a_result())
    assert shown(events) == "It is 7006652."
    reply = events[-1]
    assert isinstance(reply, Reply) and reply.text == "It is 7006652."
    again = provider.requests[-1]
    assert "Say hi." not in [m.text for m in again.messages]  # the request alone
    assert "7006652" in again.messages[-1].text  # with its result
    assert again.options.reason == (
        "the answer left out the tool's result: asked again, the request alone"
    )


async def test_asked_again_once_the_second_answer_is_shown_whatever_it_says() -> None:
    provider = ScriptedProvider([Step(chunks=["Hello!"]), Step(chunks=["Hello again!"])])
    events = await answered(provider, after_a_result())
    assert shown(events) == "Hello again!" and len(provider.requests) == 2


async def test_a_prose_result_holds_nothing_back() -> None:
    provider = ScriptedProvider([Step(chunks=["Here ", "it is."])])
    events = await answered(provider, after_a_result("Drew the chart with 4 points."))
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["Here ", "it is."]
    assert len(provider.requests) == 1
