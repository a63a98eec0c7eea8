"""The tool loop, driven by the scripted provider. Edge-case numbers refer to
docs/edge-cases.md."""

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest

from desktop.core.events import (
    BrokenCall,
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
)
from desktop.core.limits import parse_max_tool_calls
from desktop.core.loop import NOT_SEEN, LoopSettings, complete_turn, run_turn
from desktop.core.messages import Image, Message, ToolCall
from desktop.core.providers.base import Capabilities, Provider
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import Tool, Toolbox, ToolOutput
from desktop.core.tracks.emulated import EmulatedTools
from desktop.core.tracks.native import NativeTools
from desktop.core.tracks.repeats import NOTICE
from tests.support.fakes import Request, Script, ScriptedProvider, Step
from tests.support.images import JPEG, PNG


class Recorder:
    """A tool whose handler records its calls and answers what the test tells it to."""

    def __init__(self, name: str = "search", answer: Any = "found it", **flags: Any) -> None:
        self.calls: list[dict[str, Any]] = []
        self.answer = answer
        self.tool = Tool(
            name,
            f"{name} tool",
            {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            self.handle,
            **flags,
        )

    async def handle(self, arguments: dict[str, Any]) -> Any:
        self.calls.append(arguments)
        answer = self.answer
        if callable(answer):
            answer = answer(arguments)
            if asyncio.iscoroutine(answer):
                answer = await answer
        return answer


def call_json(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def native(name: str, call_id: str = "", **arguments: Any) -> Step:
    return Step(tool_calls=[ToolCall(call_id or f"id_{name}_{len(arguments)}", name, arguments)])


def emulated(*script: Any, vision: bool = False) -> tuple[EmulatedTools, ScriptedProvider]:
    inner = ScriptedProvider(list(script), capabilities=Capabilities(vision=vision))
    return EmulatedTools(inner), inner


async def turn(
    provider: Provider,
    tools: list[Tool],
    conversation: list[Message] | None = None,
    **kwargs: Any,
) -> tuple[list[Event], list[Message]]:
    conversation = conversation if conversation is not None else [Message.user("question")]
    events = await complete_turn(provider, Toolbox(tools), conversation, **kwargs)
    return events, conversation


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events if e.kind not in ("text_delta", "thinking_delta", "usage")]


# --- plain answers ----------------------------------------------------------------------


async def test_plain_text_answer_takes_one_request() -> None:
    """Edge case 1: prose is the final answer, with exactly one model call."""
    provider, inner = emulated(Step(chunks=["Par", "is."]))
    events, conversation = await turn(provider, [Recorder().tool])
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Par", "is."]
    assert events[-1] == TurnFinished(0, "Paris.")
    assert len(inner.requests) == 1
    assert conversation[-1] == Message.assistant("Paris.")


_LINE = "- Practise answering the common interview questions.\n"
_SENTENCE = "The gear shaft is connected to the gear seat housing. "


@pytest.mark.parametrize(
    ("looping", "answer"),
    [
        (["Try this:\n", *(_LINE for _ in range(40))], f"Try this:\n{_LINE}"),  # lines
        (["1234 * 5678 = ", *("77" for _ in range(300))], "1234 * 5678 = 7"),  # in a line
        (["A gear turns. ", *(_SENTENCE for _ in range(200))], f"A gear turns. {_SENTENCE}"),
    ],
)
async def test_an_answer_that_loops_ends_with_its_first_saying_and_its_request_closed(
    looping: list[str], answer: str
) -> None:
    """A model that says the same over and over would write until its budget ran out:
    the turn ends with it said once, a warning, and the request stopped, on both tracks."""
    natively = ScriptedProvider([Step(chunks=looping)])
    for provider, inner in (emulated(Step(chunks=looping)), (NativeTools(natively), natively)):
        events, conversation = await turn(provider, [Recorder().tool])
        assert events[-1] == TurnFinished(0, answer) and conversation[-1].text == answer
        assert [e.message for e in events if isinstance(e, TurnWarning)] == [NOTICE]
        assert inner.closed_early == 1


async def test_literal_null_answer_is_the_text_null() -> None:
    """Edge case 5."""
    provider, _ = emulated("null")
    events, _ = await turn(provider, [Recorder().tool])
    assert events[-1] == TurnFinished(0, "null")


async def test_no_tools_means_no_tool_prompt() -> None:
    provider, inner = emulated("hi")
    await turn(provider, [])
    assert [m.role for m in inner.requests[0].messages] == ["user"]


# --- the tool round trip ----------------------------------------------------------------


async def test_emulated_call_runs_and_its_result_reaches_the_next_step() -> None:
    search = Recorder(answer={"hits": 3})
    provider, inner = emulated(call_json("search", q="rust"), "There are 3 notes.")
    events, conversation = await turn(provider, [search.tool])
    assert search.calls == [{"q": "rust"}]
    assert kinds(events) == ["tool_call", "tool_started", "tool_result", "turn_finished"]
    assert [e.step for e in events if not isinstance(e, TextDelta)] == [0, 0, 0, 1]
    second = inner.requests[1].messages
    assert second[-2].text == '{"name": "search", "arguments": {"q": "rust"}}'
    assert '[Result of search]\n{"hits": 3}' in second[-1].text
    assert [m.role for m in conversation] == ["user", "assistant", "tool", "assistant"]
    assert conversation[2].text == '{"hits": 3}'
    assert conversation[1].tool_calls[0].id == conversation[2].tool_call_id


async def test_native_call_runs_and_the_tool_message_carries_the_id() -> None:
    search = Recorder()
    provider = ScriptedProvider([native("search", "abc", q="x"), "done"])
    events, _conversation = await turn(provider, [search.tool], settings=LoopSettings())
    started = next(e for e in events if isinstance(e, ToolStarted))
    assert started.id == "abc"
    assert provider.requests[0].tools == ["search"]
    last = provider.requests[1].messages
    assert last[-1].role == "tool" and last[-1].tool_call_id == "abc"
    assert last[-2].tool_calls == [ToolCall("abc", "search", {"q": "x"})]


async def test_preamble_before_a_native_call_stays_in_history() -> None:
    """Edge case 33: the text shown to the user is the text the model sees again."""
    step = native("search", q="x")
    step.chunks = ["Let me search."]
    provider = ScriptedProvider([step, "done"])
    events, conversation = await turn(provider, [Recorder().tool])
    assert next(e.text for e in events if isinstance(e, TextDelta)) == "Let me search."
    assert conversation[1].text == "Let me search." and conversation[1].tool_calls


async def test_unknown_tool_is_fed_back_and_counts_toward_the_limit() -> None:
    """Edge case 10."""
    search = Recorder()
    provider = ScriptedProvider([native("lookup", q="x"), native("search", q="x"), "ok"])
    events, conversation = await turn(
        provider, [search.tool], settings=LoopSettings(max_tool_calls=2)
    )
    rejected = next(e for e in events if isinstance(e, ToolRejected))
    assert rejected.reason == 'Function "lookup" not found. Available functions: search.'
    assert provider.requests[1].tools == ["search"]  # the model may still recover
    assert provider.requests[2].tools == []  # 2 calls spent: the limit
    assert conversation[2].text == rejected.reason
    assert search.calls == [{"q": "x"}]


# --- the depth limit --------------------------------------------------------------------


def always_calls(request: Request) -> Step:
    n = len(request.messages)
    return native("search", f"c{n}", q=f"query {n}")


async def test_limit_one_runs_one_tool_then_asks_without_tools() -> None:
    """Edge case 11 with N=1: one tool runs, then one tool-free completion."""
    search = Recorder()
    provider = ScriptedProvider([always_calls, "final"])
    events, _ = await turn(provider, [search.tool], settings=LoopSettings(max_tool_calls=1))
    assert len(search.calls) == 1
    assert [r.tools for r in provider.requests] == [["search"], []]
    assert events[-1] == TurnFinished(1, "final")


async def test_default_limit_runs_ten_tools() -> None:
    """Edge case 11 with the limit unset: 10."""
    search = Recorder()
    script: list[Script] = [*[always_calls] * 10, "final"]
    provider = ScriptedProvider(script)
    events, _ = await turn(provider, [search.tool])
    assert len(search.calls) == 10
    assert len(provider.requests) == 11 and provider.requests[-1].tools == []
    assert events[-1].kind == "turn_finished"


async def test_a_model_that_keeps_calling_after_the_limit_is_stopped() -> None:
    """Edge case 12: a hard stop, never a runaway loop."""
    search = Recorder()
    provider = ScriptedProvider([always_calls] * 3)
    events, conversation = await turn(
        provider, [search.tool], settings=LoopSettings(max_tool_calls=2)
    )
    assert len(search.calls) == 2 and len(provider.requests) == 3
    assert isinstance(events[-2], ToolRejected)
    assert events[-1] == TurnFailed(
        2, "Stopped: tools were withdrawn after 2 tool calls, and the model kept calling tools."
    )
    assert conversation[-1].role == "tool"  # the refused call was not added


async def test_emulated_model_calling_after_the_limit_is_stopped_too() -> None:
    provider, inner = emulated(call_json("search", q="1"), call_json("search", q="2"))
    events, _ = await turn(provider, [Recorder().tool], settings=LoopSettings(max_tool_calls=1))
    assert "Tools" not in inner.requests[1].messages[0].text  # no tool prompt on the last step
    assert events[-1].kind == "turn_failed"


async def test_a_parallel_step_beyond_the_limit_runs_only_what_fits() -> None:
    search = Recorder()
    step = Step(tool_calls=[ToolCall(f"c{i}", "search", {"q": str(i)}) for i in range(3)])
    provider = ScriptedProvider([step, "final"])
    events, _ = await turn(provider, [search.tool], settings=LoopSettings(max_tool_calls=2))
    assert len(search.calls) == 2
    rejected = [e for e in events if isinstance(e, ToolRejected)]
    assert [r.arguments for r in rejected] == [{"q": "2"}]
    assert "limit of 2 tool calls" in rejected[0].reason


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("10", 10), (" 3 ", 3)])
def test_max_tool_calls_parses_whole_numbers(text: str, value: int) -> None:
    assert parse_max_tool_calls(text) == value


@pytest.mark.parametrize("text", ["0", "-3", "abc", "2.5", ""])
def test_max_tool_calls_refuses_invalid_values(text: str) -> None:
    """Edge case 11: 0, -3, abc and 2.5 are refused with a message (2.5 is not silently 2)."""
    with pytest.raises(ValueError, match="max tool calls"):
        parse_max_tool_calls(text)
    with pytest.raises(ValueError):
        LoopSettings(max_tool_calls=0)


# --- dedupe -----------------------------------------------------------------------------


async def test_exact_repeat_is_rejected_and_forces_a_final_answer() -> None:
    """Edge case 13, with the key order changed (edge case 14)."""
    search = Recorder()
    tool = Tool("find", "d", {"type": "object", "properties": {"a": {}, "b": {}}}, search.handle)
    provider, inner = emulated(
        '{"name": "find", "arguments": {"a": 1, "b": 2}}',
        '{"name": "find", "arguments": {"b": 2, "a": 1}}',
        "The answer.",
    )
    dedupe = Deduplicator()
    events, _ = await turn(provider, [tool], dedupe=dedupe)
    assert len(search.calls) == 1
    rejected = next(e for e in events if isinstance(e, ToolRejected))
    assert "already made in this turn" in rejected.reason
    last = inner.requests[2].messages[-1].text
    # The last step reads the result, not the refusal: its words were copied into answers.
    assert "found it" in last and rejected.reason not in last
    assert "You can use tools" not in inner.requests[2].messages[0].text
    assert events[-1] == TurnFinished(2, "The answer.")

    # the next turn may make the same call again
    provider2, _ = emulated('{"name": "find", "arguments": {"a": 1, "b": 2}}', "ok")
    await turn(provider2, [tool], dedupe=dedupe)
    assert len(search.calls) == 2


@pytest.mark.parametrize("switch", ["on", "off for the tool", "off"])
async def test_the_cooldown_switch_decides_whether_an_exact_repeat_runs(switch: str) -> None:
    """The reference's MCP_NO_COOLDOWN: "create 3 tickets" with the same arguments. Off
    (for all, or for the tool), the repeats run, the same call listed twice included, and
    the limit bounds them; on, the deduplicator refuses them."""
    tickets = Recorder()
    tool = Tool("ticket", "d", {"type": "object", "properties": {"t": {}}}, tickets.handle)
    call = ToolCall("c", "ticket", {"t": "x"})
    provider = ScriptedProvider(
        [Step(tool_calls=[replace(call, id="c1"), replace(call, id="c2")]),
         Step(tool_calls=[replace(call, id="c3")]), "Three tickets."]
    )  # fmt: skip
    dedupe = {
        "on": Deduplicator(),
        "off for the tool": Deduplicator(cooldown_overrides={"ticket": False}),
        "off": Deduplicator(cooldown_enabled=False),
    }[switch]
    events = await complete_turn(provider, Toolbox([tool]), [Message.user("3 tickets")],
                                 dedupe=dedupe, settings=LoopSettings(max_tool_calls=5))  # fmt: skip
    rejected = [e for e in events if isinstance(e, ToolRejected)]
    if switch == "on":
        assert len(tickets.calls) == 1  # the list's twin is one call; the next step's refused
        assert [r.stage for r in rejected] == ["repeat"]
    else:
        assert len(tickets.calls) == 3 and rejected == []
    assert isinstance(events[-1], TurnFinished)


async def test_cooldown_rejects_other_arguments_and_the_toggle_lifts_it() -> None:
    """Edge case 15: the cooldown is per tool and can be switched off."""

    def script() -> list[Any]:
        return [
            Step(
                tool_calls=[
                    ToolCall("a", "tickets", {"q": "one"}),
                    ToolCall("b", "tickets", {"q": "two"}),
                ]
            ),
            "done",
        ]

    tickets = Recorder("tickets", cooldown_s=30)
    await turn(ScriptedProvider(script()), [tickets.tool], dedupe=Deduplicator())
    assert tickets.calls == [{"q": "one"}]

    tickets = Recorder("tickets", cooldown_s=30)
    await turn(
        ScriptedProvider(script()), [tickets.tool], dedupe=Deduplicator(cooldown_enabled=False)
    )
    assert sorted(c["q"] for c in tickets.calls) == ["one", "two"]


# --- validation -------------------------------------------------------------------------


async def test_invalid_arguments_are_explained_once_then_tools_are_withdrawn() -> None:
    """Edge case 9: unknown key and missing required key, each rejected with a reason."""
    search = Recorder()
    provider, inner = emulated(
        call_json("search", query="x"),
        call_json("search", q="x", extra=1),
        "I could not search.",
    )
    events, _ = await turn(provider, [search.tool])
    reasons = [e.reason for e in events if isinstance(e, ToolRejected)]
    assert (
        "unknown argument 'query'" in reasons[0] and "missing required argument 'q'" in reasons[0]
    )
    assert "unknown argument 'extra'" in reasons[1]
    assert search.calls == []
    assert "You can use tools" in inner.requests[1].messages[0].text
    assert "You can use tools" not in inner.requests[2].messages[0].text
    assert events[-1] == TurnFinished(2, "I could not search.")


async def test_a_number_written_as_a_string_is_repaired_before_it_runs() -> None:
    """ "5" for an integer has one reading: the tool gets 5, and so do the event and the
    history; "five" has none, and is explained to the model."""
    seen: list[Any] = []

    async def repeat(arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        return "ok"

    schema = {"type": "object", "properties": {"times": {"type": "integer"}},
              "required": ["times"]}  # fmt: skip
    tool = Tool("repeat", "Repeats.", schema, repeat)
    provider, _ = emulated(call_json("repeat", times="5"), "Done.")
    events, conversation = await turn(provider, [tool])
    assert seen == [{"times": 5}]
    parsed = next(e for e in events if isinstance(e, ToolCallParsed))
    assert parsed.arguments == {"times": 5}
    assert conversation[1].tool_calls[0].arguments == {"times": 5}

    provider, _ = emulated(call_json("repeat", times="five"), "Sorry.")
    events, _ = await turn(provider, [tool])
    rejected = next(e for e in events if isinstance(e, ToolRejected))
    assert "'times'" in rejected.reason and "'five' is not of type 'integer'" in rejected.reason


async def test_truncated_call_is_rejected_and_never_runs() -> None:
    """Edge case 7."""
    search = Recorder()
    provider, inner = emulated(
        Step(chunks=['{"name": "search", "arguments": {"q": "ru'], finish_reason="length"),
        "Sorry.",
    )
    events, _ = await turn(provider, [search.tool])
    assert search.calls == []
    rejected = next(e for e in events if isinstance(e, ToolRejected))
    assert rejected.name == "search" and "cut off" in rejected.reason
    assert "was not run" in inner.requests[1].messages[-1].text


async def test_native_call_with_unparsable_arguments_is_rejected() -> None:
    """Edge case 26: invalid JSON arguments are not silently `{}`."""
    search = Recorder()
    step = Step(broken_calls=[BrokenCall("search", '{"q": ', "Its arguments were not valid JSON.")])
    provider = ScriptedProvider([step, "sorry"])
    events, _ = await turn(provider, [search.tool])
    assert search.calls == []
    assert any(isinstance(e, ToolRejected) and "not valid JSON" in e.reason for e in events)


# --- tool failures ----------------------------------------------------------------------


async def test_a_tool_that_raises_feeds_its_error_back_and_the_turn_goes_on() -> None:
    """Edge case 17."""

    def fail(arguments: dict[str, Any]) -> Any:
        raise ConnectionError("index offline")

    search = Recorder(answer=fail)
    provider = ScriptedProvider([native("search", q="x"), "The index is offline."])
    events, _conversation = await turn(provider, [search.tool])
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.error == "ConnectionError: index offline"
    assert provider.requests[1].messages[-1].text == "Error: ConnectionError: index offline"
    assert events[-1] == TurnFinished(1, "The index is offline.")


async def test_a_hanging_tool_times_out() -> None:
    """Edge case 18."""

    async def hang(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(60)
        return ""

    search = Recorder(answer=hang, timeout_s=0.05)
    provider = ScriptedProvider([native("search", q="x"), "gave up"])
    events, _ = await turn(provider, [search.tool])
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.error == "Tool search timed out after 0.05 s."


async def test_parallel_calls_run_concurrently() -> None:
    running = 0
    peak = 0

    async def slow(arguments: dict[str, Any]) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        return str(arguments["q"])

    search = Recorder(answer=slow)
    step = Step(
        tool_calls=[ToolCall("a", "search", {"q": "1"}), ToolCall("b", "search", {"q": "2"})]
    )
    provider = ScriptedProvider([step, "both"])
    _events, conversation = await turn(provider, [search.tool])
    assert peak == 2
    assert [m.tool_call_id for m in conversation if m.role == "tool"] == ["a", "b"]


# --- stop -------------------------------------------------------------------------------


async def test_stop_while_a_call_streams_runs_nothing_and_keeps_the_conversation() -> None:
    """Edge case 19: a half-received call never runs; no further request is made."""
    search = Recorder()
    provider, inner = emulated(Step(chunks=['{"name": "search", "argum'], hang=True))
    conversation = [Message.user("q")]
    seen: list[Event] = []

    async def consume() -> None:
        async for event in run_turn(provider, Toolbox([search.tool]), conversation):
            seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert inner.cancelled
    assert search.calls == [] and len(inner.requests) == 1
    assert conversation == [Message.user("q")]


async def test_stop_while_a_tool_runs_cancels_it_and_discards_the_step() -> None:
    """Edge case 20."""
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def long_job(arguments: dict[str, Any]) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    search = Recorder(answer=long_job)
    provider = ScriptedProvider([native("search", q="x")])
    conversation = [Message.user("q")]

    async def consume() -> None:
        async for _ in run_turn(provider, Toolbox([search.tool]), conversation):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    assert len(provider.requests) == 1
    assert conversation == [Message.user("q")]


# --- direct output ----------------------------------------------------------------------


async def test_direct_output_ends_the_turn_verbatim_and_the_next_turn_is_normal() -> None:
    """Edge case 21."""
    show = Recorder("show_file", answer="line 1\nline 2", direct_output=True)
    search = Recorder()
    provider = ScriptedProvider([native("show_file", q="a.txt")])
    events, conversation = await turn(provider, [show.tool, search.tool])
    assert events[-1] == TurnFinished(0, "line 1\nline 2")
    assert len(provider.requests) == 1
    assert conversation[-1] == Message.assistant("line 1\nline 2")

    conversation.append(Message.user("now search"))
    provider2 = ScriptedProvider([native("search", q="x"), "found"])
    events2, _ = await turn(provider2, [show.tool, search.tool], conversation)
    assert events2[-1] == TurnFinished(1, "found")
    assert search.calls == [{"q": "x"}]


async def test_a_direct_output_tool_that_raises_does_not_end_the_turn() -> None:
    """Edge case 21: nothing leaks from a failed direct-output call."""

    def fail(arguments: dict[str, Any]) -> Any:
        raise FileNotFoundError("a.txt")

    show = Recorder("show_file", answer=fail, direct_output=True)
    provider = ScriptedProvider([native("show_file", q="a.txt"), "That file does not exist."])
    events, _ = await turn(provider, [show.tool])
    assert events[-1] == TurnFinished(1, "That file does not exist.")


# --- images -----------------------------------------------------------------------------


async def test_tool_images_follow_the_results_as_one_user_message() -> None:
    """Edge cases 22 and 23: after the tool message, one user message with the images in order."""
    chart = Recorder(
        "chart", answer=ToolOutput("2 charts", [Image.from_bytes(PNG), Image.from_bytes(JPEG)])
    )
    provider = ScriptedProvider(
        [native("chart", q="sales"), "Sales rise."], capabilities=Capabilities(vision=True)
    )
    events, _conversation = await turn(provider, [chart.tool])
    result = next(e for e in events if isinstance(e, ToolResult))
    assert [i.mime for i in result.images] == ["image/png", "image/jpeg"]
    sent = provider.requests[1].messages
    assert [m.role for m in sent[-3:]] == ["assistant", "tool", "user"]
    assert [i.data for i in sent[-1].images] == [PNG, JPEG]
    assert sent[-1].text == "[Images from the tool results: chart]"


async def test_tool_images_become_a_note_for_a_model_without_vision() -> None:
    """Edge case 24: never send images to a model that cannot see them. The result says
    where the image went, in its own words: a separate note ("this model cannot see
    images") was copied into the answer word for word."""
    chart = Recorder("chart", answer=ToolOutput("a chart", [Image.from_bytes(PNG)]))
    provider = ScriptedProvider([native("chart", q="x"), "ok"])
    events, _conversation = await turn(provider, [chart.tool])
    result = provider.requests[1].messages[-1]
    assert result.role == "tool" and result.images == []
    assert result.text == f"a chart\n{NOT_SEEN}" and "user's screen" in NOT_SEEN
    assert result.meta.sent_to_model is False and len(result.meta.images) == 1
    assert not any("cannot see" in m.text for m in provider.requests[1].messages)
    shown = next(e for e in events if isinstance(e, ToolResult))
    assert shown.content == "a chart" and len(shown.images) == 1  # the card shows it all


async def test_emulated_images_stay_image_parts_and_the_user_image_survives() -> None:
    """Edge case 25: multimodal content is never string-concatenated."""
    chart = Recorder("chart", answer=ToolOutput("a chart", [Image.from_bytes(PNG)]))
    provider, inner = emulated(call_json("chart", q="x"), "done", vision=True)
    conversation = [Message.user("what is in this photo?", [Image.from_bytes(JPEG)])]
    await turn(provider, [chart.tool], conversation)
    final = inner.requests[1].messages
    assert final[1].text == "what is in this photo?" and final[1].images[0].data == JPEG
    assert final[-1].images[0].data == PNG and "[Result of chart]" in final[-1].text


# --- the rest ---------------------------------------------------------------------------


async def test_provider_failure_ends_the_turn_with_its_message_after_the_partial_text() -> None:
    provider = ScriptedProvider(
        [Step(chunks=["Partial "], error="llama.cpp server stopped mid-answer")]
    )
    events, conversation = await turn(provider, [])
    assert events == [
        TextDelta(0, "Partial "),
        TurnFailed(0, "llama.cpp server stopped mid-answer"),
    ]
    assert conversation == [Message.user("question")]


async def test_usage_and_thinking_events_carry_the_step() -> None:
    provider, _ = emulated(
        Step(chunks=["<think>plan</think>", call_json("search", q="x")], usage=(10, 5)),
        Step(chunks=["done"], usage=(20, 2)),
    )
    events, _ = await turn(provider, [Recorder().tool])
    assert [e for e in events if isinstance(e, Usage)] == [Usage(0, 10, 5), Usage(1, 20, 2)]
    assert [e for e in events if isinstance(e, ThinkingDelta)] == [ThinkingDelta(0, "plan")]
    assert not any(isinstance(e, TextDelta) and "search" in e.text for e in events)


async def test_a_tool_switched_off_is_not_offered_and_a_late_call_is_not_found() -> None:
    """Edge case 36."""
    search, clock = Recorder(), Recorder("clock")
    box = Toolbox([search.tool, clock.tool])
    conversation = [Message.user("q")]
    box.remove("clock")
    provider = ScriptedProvider([native("clock", q="now"), "ok"])
    events = await complete_turn(provider, box, conversation)
    assert provider.requests[0].tools == ["search"]
    assert any(isinstance(e, ToolRejected) and "not found" in e.reason for e in events)
    assert clock.calls == []


async def test_streaming_and_collected_forms_give_the_same_events() -> None:
    def script() -> ScriptedProvider:
        return ScriptedProvider([native("search", "c", q="x"), "done"])

    collected, _ = await turn(script(), [Recorder().tool])
    streamed = [
        e async for e in run_turn(script(), Toolbox([Recorder().tool]), [Message.user("question")])
    ]

    def strip(events: list[Event]) -> list[Any]:
        return [(e.kind, e.step) for e in events]

    assert strip(collected) == strip(streamed)
    assert isinstance(collected[1], ToolStarted) and isinstance(collected[0], ToolCallParsed)


async def test_each_rejection_says_which_check_refused_it() -> None:
    tickets = Recorder("tickets", cooldown_s=30)
    search = Recorder()
    step0 = Step(
        tool_calls=[
            ToolCall("a", "tickets", {"q": "one"}),
            ToolCall("b", "tickets", {"q": "two"}),  # cooldown
            ToolCall("c", "search", {"nope": 1}),  # validation
            ToolCall("d", "lookup", {"q": "x"}),  # unknown name: validation
        ],
        broken_calls=[BrokenCall("search", '{"q": ', "Its arguments were not valid JSON.")],
    )
    step1 = Step(tool_calls=[ToolCall("e", "tickets", {"q": "one"})])  # repeat
    provider = ScriptedProvider([step0, step1, "done"])
    events, conversation = await turn(provider, [tickets.tool, search.tool], dedupe=Deduplicator())
    stages = [(e.id, e.stage) for e in events if isinstance(e, ToolRejected)]
    assert stages == [
        ("b", "cooldown"),
        ("c", "validation"),
        ("d", "validation"),
        (None, "parse"),
        ("e", "repeat"),
    ]
    stored = {m.tool_call_id: m.meta.stage for m in conversation if m.role == "tool" and m.rejected}
    assert stored == {"b": "cooldown", "c": "validation", "d": "validation", "e": "repeat"}


async def test_a_cooldown_refusal_keeps_the_tools_offered() -> None:
    """Unlike a repeat, a cooldown says nothing about the model looping: it may pick another tool."""
    tickets = Recorder("tickets", cooldown_s=30)
    search = Recorder()
    step0 = Step(
        tool_calls=[ToolCall("a", "tickets", {"q": "1"}), ToolCall("b", "tickets", {"q": "2"})]
    )
    provider = ScriptedProvider([step0, native("search", q="x"), "done"])
    await turn(provider, [tickets.tool, search.tool], dedupe=Deduplicator())
    assert provider.requests[1].tools == ["tickets", "search"]
    assert search.calls == [{"q": "x"}]


async def test_a_tool_that_changes_things_runs_only_when_approved() -> None:
    """Edge case 38: a denial reaches the model as the tool result; it can go on."""
    writer = Recorder("write_note", answer="written", needs_approval=True)
    asked: list[str] = []

    async def deny(call: ToolCall, tool: Tool) -> bool:
        asked.append(f"{tool.name}:{call.arguments['q']}")
        return False

    provider = ScriptedProvider([native("write_note", q="x"), "I did not write it."])
    events, _conversation = await turn(provider, [writer.tool], approver=deny)
    assert asked == ["write_note:x"] and writer.calls == []
    rejected = next(e for e in events if isinstance(e, ToolRejected))
    assert (rejected.stage, rejected.reason) == (
        "denied",
        "The user declined this call to write_note.",
    )
    assert provider.requests[1].messages[-1].text == rejected.reason

    async def allow(call: ToolCall, tool: Tool) -> bool:
        return True

    provider = ScriptedProvider([native("write_note", q="y"), "Written."])
    await turn(provider, [writer.tool], approver=allow)
    assert writer.calls == [{"q": "y"}]

    provider = ScriptedProvider([native("write_note", q="z"), "ok"])
    events, _ = await turn(provider, [writer.tool])  # no one to ask: declined
    assert writer.calls == [{"q": "y"}]


async def test_stop_while_waiting_for_approval_runs_nothing() -> None:
    """Edge case 20: a pending approval resolves as aborted."""
    writer = Recorder("write_note", needs_approval=True)
    waiting = asyncio.Event()

    async def slow_user(call: ToolCall, tool: Tool) -> bool:
        waiting.set()
        await asyncio.sleep(60)
        return True

    provider = ScriptedProvider([native("write_note", q="x")])
    conversation = [Message.user("q")]

    async def consume() -> None:
        async for _ in run_turn(provider, Toolbox([writer.tool]), conversation, approver=slow_user):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(waiting.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert writer.calls == [] and conversation == [Message.user("q")]


async def test_long_results_are_truncated_with_a_note() -> None:
    talker = Recorder(answer="x" * 20_000)
    provider = ScriptedProvider([native("search", q="x"), "ok"])
    events, _ = await turn(provider, [talker.tool])
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.content.startswith("x" * 16_000)
    assert result.content.endswith("[Truncated: 4000 more characters not shown.]")


async def test_create_chart_end_to_end_the_png_goes_back_as_a_user_image() -> None:
    from desktop.core.tools.builtin.charts import CREATE_CHART

    call = '{"name": "create_chart", "arguments": {"type": "line", "title": "Temp", "labels": ["Mon", "Tue"], "values": [3, 5]}}'
    provider, inner = emulated(call, "It warms up.", vision=True)
    events, _ = await turn(provider, [CREATE_CHART])
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.error is None and result.images[0].data.startswith(b"\x89PNG")
    sent = inner.requests[1].messages[-1]
    assert sent.role == "user"
    assert [i.data for i in sent.images] == [result.images[0].data]
    assert events[-1] == TurnFinished(1, "It warms up.")


# --- nothing a model sends escapes the loop ------------------------------------------------


async def test_a_huge_number_as_an_argument_is_refused_and_the_turn_goes_on() -> None:
    tool = Tool(
        "repeat",
        "repeat",
        {"type": "object", "properties": {"times": {"type": "integer"}}, "required": ["times"]},
        Recorder().handle,
    )
    provider = ScriptedProvider([native("repeat", times="1" + "0" * 400), "Sorry."])
    events, _ = await turn(provider, [tool])
    assert kinds(events) == ["tool_call", "tool_rejected", "turn_finished"]


async def test_an_unexpected_error_ends_the_turn_with_a_message() -> None:
    async def approver(call: ToolCall, tool: Tool) -> bool:
        raise OverflowError("cannot convert float infinity to integer")

    recorder = Recorder(needs_approval=True)
    provider = ScriptedProvider([native("search", q="x")])
    events, conversation = await turn(provider, [recorder.tool], approver=approver)
    assert kinds(events) == ["tool_call", "turn_failed"]
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert "OverflowError: cannot convert float infinity to integer" in failed.message
    assert [m.role for m in conversation] == ["user"]  # the half step was not kept


@pytest.mark.parametrize("vision", [True, False])
async def test_the_persons_images_go_only_to_a_model_that_sees(vision: bool) -> None:
    provider = ScriptedProvider(["Nice."], capabilities=Capabilities(vision=vision))
    conversation = [Message.user("What is this?", [Image(PNG, "image/png")])]
    await complete_turn(provider, Toolbox([]), conversation)
    (sent,) = provider.requests[0].messages
    assert sent.text == "What is this?" and len(sent.images) == (1 if vision else 0)
    assert conversation[0].images == [Image(PNG, "image/png")]  # still shown in the chat
