from desktop.core.events import Reply
from desktop.core.messages import Message, estimated_tokens
from desktop.core.providers.base import RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.fitting import MAX_ANSWER_TOKENS, FittedHistory, answer_budget, fitted
from tests.support.fakes import ScriptedProvider


def conversation(turns: int, words: int = 200) -> list[Message]:
    messages = [Message.system("Be brief.")]
    for turn in range(turns):
        messages += [Message.user(f"question {turn} " + "word " * words),
                     Message.assistant(f"answer {turn} " + "word " * words)]  # fmt: skip
    return messages


def test_an_answer_takes_a_quarter_of_the_context_and_never_more_than_the_cap() -> None:
    assert answer_budget(4096) == 1024
    assert answer_budget(32768) == MAX_ANSWER_TOKENS
    assert answer_budget(512) == 256  # a tiny context still leaves room for an answer


def test_what_fits_is_sent_whole() -> None:
    messages = conversation(3)
    assert fitted(messages, estimated_tokens(messages)) == messages


def test_the_oldest_turns_go_first_whole_and_the_system_prompt_and_request_stay() -> None:
    messages = [*conversation(6), Message.user("the request")]
    room = estimated_tokens(messages) // 2
    kept = fitted(messages, room)
    assert estimated_tokens(kept) <= room
    assert kept[0].text == "Be brief." and kept[-1].text == "the request"
    assert kept[1].role == "user"  # a turn starts with its question, not a stray answer
    first_kept = int(kept[1].text.split()[1])
    assert [m.text.split()[1] for m in kept[1:-1]] == [
        str(t) for t in range(first_kept, 6) for _ in ("question", "answer")
    ]
    assert first_kept > 0


def test_a_current_turn_larger_than_the_room_is_sent_and_the_server_says_so() -> None:
    messages = [Message.system("s"), Message.user("old"), Message.user("x " * 4000)]
    assert fitted(messages, 10) == [messages[0], messages[2]]


async def test_the_wrapper_bounds_the_answer_and_trims_to_the_room_left() -> None:
    inner = ScriptedProvider(["fine"])
    long_chat = [*conversation(40), Message.user("and now?")]
    tool = ToolSpec("calculator", "Compute.", {"type": "object", "properties": {}})
    events = [
        e async for e in FittedHistory(inner, 4096).stream(long_chat, [tool], RequestOptions())
    ]
    assert isinstance(events[-1], Reply) and events[-1].text == "fine"
    sent = inner.requests[0]
    assert sent.options.max_tokens == 1024
    assert estimated_tokens(sent.messages) < 4096 - 1024
    assert sent.messages[-1].text == "and now?" and len(sent.messages) < len(long_chat)


async def test_an_answer_length_asked_for_is_kept() -> None:
    inner = ScriptedProvider(["fine"])
    asked = RequestOptions(max_tokens=50)
    _ = [e async for e in FittedHistory(inner, 4096).stream([Message.user("hi")], [], asked)]
    assert inner.requests[0].options.max_tokens == 50
