import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.core.emulation import (
    EmulatedTools,
    NativeTools,
    ProseGate,
    emulated_history,
    match_json_end,
    parse_answer,
    render_tool_prompt,
)
from desktop.core.messages import Image, Message, ToolCall
from desktop.core.providers.base import Reply, RequestOptions, TextChunk, ThinkingChunk
from desktop.core.tools.toolbox import Example, Tool
from tests.fakes import ScriptedProvider, Step

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


async def noop(arguments: dict[str, Any]) -> str:
    return ""


SEARCH = Tool(
    "search",
    "Search the notes",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    noop,
    examples=(Example("find my notes on rust", {"query": "rust"}),),
)
CLOCK = Tool("current_time", "The time now", {"type": "object", "properties": {}}, noop)


# --- the prompt -----------------------------------------------------------------------


def test_prompt_shows_name_description_schema_required_and_examples() -> None:
    prompt = render_tool_prompt([SEARCH, CLOCK])
    assert "- search: Search the notes" in prompt
    assert '"query": {"type": "string"}' in prompt
    assert "required: query" in prompt  # the reference hid which arguments are required
    assert (
        'example: "find my notes on rust" -> {"name": "search", "arguments": {"query": "rust"}}'
        in prompt
    )
    assert "- current_time: The time now" in prompt
    assert "required: none" in prompt
    assert 'call shape: {"name": "current_time", "arguments": {}}' in prompt


# --- the parser -----------------------------------------------------------------------


def calls(text: str, known: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    return parse_answer(text, known).calls


def test_plain_prose_is_text() -> None:
    """Edge case 1."""
    parsed = parse_answer("Paris is the capital of France.")
    assert parsed.calls == [] and parsed.text == "Paris is the capital of France."


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "search", "arguments": {"query": "rust"}}',
        '```json\n{"name": "search", "arguments": {"query": "rust"}}\n```',
        'Sure! {"name": "search", "arguments": {"query": "rust"}} hope it helps',
        '  \n{"name":"search","arguments":{"query":"rust"}}',
    ],
)
def test_json_alone_fenced_or_after_prose_is_a_call(text: str) -> None:
    """Edge case 2."""
    assert calls(text) == [("search", {"query": "rust"})]


def test_fenced_json_with_a_closing_brace_inside_a_string() -> None:
    """Edge case 3: a `}` inside a string does not end the object."""
    text = '```json\n{"name": "search", "arguments": {"query": "fn main() { } and \\"}\\""}}\n```'
    parsed = parse_answer(text)
    assert parsed.calls == [("search", {"query": 'fn main() { } and "}"'})]
    assert parsed.text == ""


def test_prose_around_a_call_is_kept_without_the_json_or_fence() -> None:
    parsed = parse_answer(
        'Let me check.\n```json\n{"name": "search", "arguments": {"query": "a"}}\n```'
    )
    assert parsed.text == "Let me check."


@pytest.mark.parametrize(
    "text",
    ["According to the docs [1], it works.", "42", "true", "null", "0", "Answer: {}", "[1, 2]",
     '{"name": "Alice", "age": 3}', "use {braces} freely", '{"not": "a call"}'],
)  # fmt: skip
def test_citations_numbers_literals_and_other_json_are_text(text: str) -> None:
    """Edge cases 4 and 5: never a call, never thrown away, `null` stays the text "null"."""
    parsed = parse_answer(text)
    assert parsed.calls == [] and parsed.broken == []
    assert parsed.text == text


def test_two_objects_are_two_calls() -> None:
    """Edge case 6: the policy is to take both (run as parallel calls, each validated)."""
    text = '{"name": "search", "arguments": {"query": "a"}}\n{"name": "search", "arguments": {"query": "b"}}'
    assert calls(text) == [("search", {"query": "a"}), ("search", {"query": "b"})]


def test_an_array_of_calls() -> None:
    text = '[{"name": "search", "arguments": {"query": "a"}}, {"name": "current_time", "arguments": {}}]'
    assert calls(text) == [("search", {"query": "a"}), ("current_time", {})]


def test_truncated_call_is_broken_not_run() -> None:
    """Edge case 7: max_tokens hit mid-call; no repair, the partial call is flagged."""
    parsed = parse_answer('{"name": "search", "arguments": {"query": "ru')
    assert parsed.calls == []
    assert parsed.broken[0].name == "search"
    assert "cut off" in parsed.broken[0].reason
    assert parsed.text == ""


@pytest.mark.parametrize("arguments", ["null", '"rust"', "[1]"])
def test_null_or_string_arguments_are_parsed_for_validation_to_reject(arguments: str) -> None:
    """Edge case 8: the parser passes them on; the adapter turns them into broken calls."""
    assert calls(f'{{"name": "search", "arguments": {arguments}}}') == [
        ("search", json.loads(arguments))
    ]


def test_parameters_key_and_bare_name_of_a_known_tool() -> None:
    assert calls('{"name": "search", "parameters": {"query": "a"}}') == [("search", {"query": "a"})]
    assert calls('{"name": "current_time"}', ("current_time",)) == [("current_time", {})]
    assert calls('{"name": "current_time"}') == []


def test_think_blocks_are_ignored() -> None:
    """Edge case 32: `<think>{x}</think>{call}`."""
    parsed = parse_answer(
        '<think>maybe {"name": "x", "arguments": {}}</think>{"name": "search", "arguments": {"query": "q"}}'
    )
    assert parsed.calls == [("search", {"query": "q"})]


def test_match_json_end_handles_escapes() -> None:
    text = '{"a": "\\\\"} tail'
    assert match_json_end(text, 0) == len('{"a": "\\\\"}')
    assert match_json_end('{"a": "}', 0) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parser_never_raises_on_any_text(text: str) -> None:
    parsed = parse_answer(text)
    assert isinstance(parsed.text, str)


@settings(max_examples=300, deadline=None)
@given(
    prose=st.text(max_size=40),
    name=st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True),
    arguments=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    cut=st.integers(min_value=0, max_value=400),
    noise=st.sampled_from(["", "```json\n", "<think>", "}", "]", '"', "\\", "{", "["]),
)
def test_parser_survives_mutated_calls(
    prose: str, name: str, arguments: dict[str, Any], cut: int, noise: str
) -> None:
    """Random model output: real calls, cut short, with stray fences, quotes and brackets."""
    call = json.dumps({"name": name, "arguments": arguments})
    whole = prose + " " + call
    parse_answer(whole[:cut] + noise + whole[cut:])
    mutated = parse_answer(whole[: max(cut, 1)])
    assert isinstance(mutated.calls, list)
    clean_prose = "".join(c for c in prose if c not in "{[<")
    intact = parse_answer(f"{clean_prose} {call}")
    assert (name, arguments) in intact.calls


# --- hostile answers: bounded depth, linear time, never a raise --------------------------


def seconds(work: Any) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_deep_nesting_is_text_and_never_raises(levels: int) -> None:
    for opening, closing in (("[", "]"), ('{"a":', "}")):
        text = opening * levels + "1" + closing * levels
        parsed = parse_answer(text)  # a RecursionError at ~1,000 levels before
        assert parsed.calls == [] and parsed.text == text
    deep_call = '{"name": "search", "arguments": {"query": ' + "[" * 5000 + "]" * 5000 + "}}"
    assert parse_answer(deep_call, ["search"]).calls == []


HOSTILE_SHAPES = {
    "unclosed [": "[",
    "unclosed {": "{",
    "unclosed [{": "[{",
    "unclosed call start": '{"name": "x", "arguments": [',
    "quotes and brackets": '"[{',
    "escapes": '\\"[',
    "closed arrays": "[1]",
    "closed non-calls": '{"a": 1} ',
}


@pytest.mark.parametrize("unit", HOSTILE_SHAPES.values(), ids=HOSTILE_SHAPES.keys())
def test_parse_time_is_linear_in_the_answer(unit: str) -> None:
    """20,000 unclosed `[` took 17 s (quadratic). Sixteen times the text must take far
    less than 256 times as long; and the large case well under a second."""
    small = unit * (12_000 // len(unit))
    large = unit * (16 * 12_000 // len(unit))
    parse_answer(small)  # warm up
    t_small = min(seconds(lambda: parse_answer(small)) for _ in range(3))
    t_large = min(seconds(lambda: parse_answer(large)) for _ in range(3))
    assert t_large < 2.0
    assert t_large / max(t_small, 1e-4) < 48


def test_twenty_thousand_brackets_stream_through_the_gate_fast() -> None:
    gate = ProseGate()
    took = seconds(lambda: [gate.feed("[") for _ in range(20_000)])
    assert took < 1.0
    took = seconds(lambda: [ProseGate().feed("`" * 20_000 + "[" * 20_000)])
    assert took < 1.0


# --- streaming hold-back ----------------------------------------------------------------


def feed_all(chunks: list[str]) -> tuple[str, ProseGate]:
    gate = ProseGate()
    return "".join(gate.feed(c) for c in chunks), gate


def test_prose_streams_through() -> None:
    shown, gate = feed_all(["Hello ", "there, see [1] ", "and `code`."])
    assert shown == "Hello there, see [1] and `code`."
    assert not gate.holding


def test_gate_holds_from_a_brace_or_fence() -> None:
    shown, gate = feed_all(["Let me look. ", '{"na', 'me": 1}'])
    assert shown == "Let me look. " and gate.holding
    shown, gate = feed_all(["Sure. `", "``json\n{"])
    assert shown == "Sure. "
    shown, gate = feed_all(["[", "  {"])
    assert shown == "" and gate.holding
    shown, gate = feed_all(["[", "1] says"])
    assert shown == "[1] says" and not gate.holding


# --- the adapter ------------------------------------------------------------------------


async def run_adapter(
    chunks: list[str], tools: list[Tool]
) -> tuple[list[str], list[str], Reply, ScriptedProvider]:
    inner = ScriptedProvider([Step(chunks=chunks)])
    adapter = EmulatedTools(inner)
    text, thinking, reply = [], [], None
    async for event in adapter.stream([Message.user("hi")], tools, RequestOptions()):
        if isinstance(event, TextChunk):
            text.append(event.text)
        elif isinstance(event, ThinkingChunk):
            thinking.append(event.text)
        elif isinstance(event, Reply):
            reply = event
    assert reply is not None
    return text, thinking, reply, inner


async def test_adapter_streams_prose_and_reports_no_call() -> None:
    text, _, reply, inner = await run_adapter(["The answer ", "is 4."], [SEARCH])
    assert text == ["The answer ", "is 4."]
    assert reply.text == "The answer is 4." and reply.tool_calls == []
    # tools went into the system prompt, not to the backend's native tools
    assert inner.requests[0].tools == []
    assert inner.requests[0].messages[0].role == "system"
    assert "- search: Search the notes" in inner.requests[0].messages[0].text


async def test_adapter_hides_call_json_and_returns_the_call() -> None:
    chunks = ["Checking. ", '```json\n{"name": "sea', 'rch", "arguments": {"query": "x"}}\n```']
    text, _, reply, _ = await run_adapter(chunks, [SEARCH])
    assert "".join(text) == "Checking. "
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", {"query": "x"})]
    assert reply.tool_calls[0].id.startswith("call_")
    assert reply.raw == "".join(chunks)


async def test_adapter_releases_held_text_that_was_not_a_call() -> None:
    text, _, reply, _ = await run_adapter(["Use ", "{braces}", " freely."], [SEARCH])
    assert "".join(text) == "Use {braces} freely." == reply.text
    assert reply.tool_calls == []


async def test_adapter_moves_think_tags_to_thinking() -> None:
    text, thinking, reply, _ = await run_adapter(["<thi", "nk>hmm {x}</think>", "Four."], [SEARCH])
    assert "".join(thinking) == "hmm {x}"
    assert "".join(text) == "Four." == reply.text


async def test_adapter_turns_null_arguments_into_a_broken_call() -> None:
    """Edge case 8: `arguments: null` is rejected cleanly, never crashes."""
    _, _, reply, _ = await run_adapter(['{"name": "search", "arguments": null}'], [SEARCH])
    assert reply.tool_calls == []
    assert reply.broken_calls[0].reason == "Its arguments must be a JSON object, not null."


def test_history_rewrites_calls_and_results_as_plain_messages() -> None:
    """Tool results and prior calls stay visible to the model (the reference drops them)."""
    history = [
        Message.system("You are terse."),
        Message.user("find rust notes"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "rust"})]),
        Message.tool("c1", "search", "3 notes"),
        Message.user("[Images from the tool results: search]", [Image.from_bytes(PNG)]),
    ]
    out = emulated_history(history, [SEARCH])
    assert [m.role for m in out] == ["system", "user", "assistant", "user"]
    assert out[0].text.startswith("You are terse.\n\nYou can use tools.")
    assert out[2].text == '{"name": "search", "arguments": {"query": "rust"}}'
    assert "[Result of search]\n3 notes" in out[3].text
    assert len(out[3].images) == 1  # the image stays a real image part, after the result
    assert out[3].text.endswith("answer the user now in plain text.")


def test_history_without_tools_has_no_tool_prompt_and_says_so() -> None:
    history = [
        Message.user("q"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "q"})]),
        Message.tool("c1", "search", "r"),
    ]
    out = emulated_history(history, [])
    assert out[0].role == "user"
    assert out[1].text == '(I called search with {"query": "q"}.)'
    assert out[-1].text.endswith(
        "Now answer the user's request in plain text, using the results above."
    )


def test_a_new_user_question_gets_no_hint() -> None:
    history = [
        Message.user("q"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "q"})]),
        Message.tool("c1", "search", "r"),
        Message.assistant("done"),
        Message.user("next question"),
    ]
    assert emulated_history(history, [SEARCH])[-1].text == "next question"


def test_refused_calls_leave_the_history_once_tools_are_withdrawn() -> None:
    """A refused repeat would prime a small model to call again; its reason stays visible."""
    history = [
        Message.user("weather?"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "w"})]),
        Message.tool("c1", "search", "rain"),
        Message.assistant("", [ToolCall("c2", "search", {"query": "w"})]),
        Message.tool("c2", "search", "Rejected: a repeat.", rejected=True),
    ]
    withdrawn = emulated_history(history, [])
    assert [m.role for m in withdrawn] == ["user", "assistant", "user"]
    assert withdrawn[-1].text.startswith("[Result of search]\nrain")
    assert "(Rejected: a repeat.)" in withdrawn[-1].text
    offered = emulated_history(history, [SEARCH])
    assert "Rejected: a repeat." in offered[-1].text
    assert len(offered) == 6


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


# --- two-phase constrained calls --------------------------------------------------------


async def constrained_run(provider: ScriptedProvider, tools: list[Tool]) -> tuple[list[str], Reply]:
    from desktop.core.emulation import ConstrainedTools

    text, reply = [], None
    async for event in ConstrainedTools(provider).stream(
        [Message.user("hi")], tools, RequestOptions(max_tokens=50)
    ):
        if isinstance(event, TextChunk):
            text.append(event.text)
        elif isinstance(event, Reply):
            reply = event
    assert reply is not None
    return text, reply


async def test_a_plain_answer_is_never_constrained() -> None:
    provider = ScriptedProvider([Step(chunks=["Four", "."])], constrains_json=True)
    text, reply = await constrained_run(provider, [SEARCH])
    assert text == ["Four", "."] and reply.text == "Four." and reply.tool_calls == []
    assert len(provider.requests) == 1 and provider.requests[0].options.json_schema is None


async def test_a_call_is_generated_again_under_the_schema() -> None:
    from desktop.core.emulation import CALL_TOKEN_BUDGET, call_schema

    provider = ScriptedProvider(
        [
            Step(chunks=["Let me look. ", '{"name": "serch", "argu', "ments"]),  # broken, dropped
            Step(chunks=['{"name": "search", "arguments": {"query": "rust"}}']),
        ],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [SEARCH, CLOCK])
    assert "".join(text) == "Let me look. "
    assert provider.closed_early == 1  # the free generation was stopped at the call
    second = provider.requests[1].options
    assert second.json_schema == call_schema([SEARCH, CLOCK])
    assert second.max_tokens == CALL_TOKEN_BUDGET  # a limit meant for prose does not cut calls
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", {"query": "rust"})]
    assert reply.text == "Let me look." and "[constrained]" in reply.raw


def test_the_call_schema_can_pin_the_first_call_to_a_tool() -> None:
    """The free answer opened a call to current_time: the list starts with it, then any."""
    import jsonschema

    from desktop.core.emulation import MAX_CALLS_PER_STEP, call_schema

    schema = call_schema([SEARCH, CLOCK], first="current_time")
    clock = {"name": "current_time", "arguments": {}}
    search = {"name": "search", "arguments": {"query": "x"}}
    for good in ([clock], [clock, search], [clock, clock, search], [clock] * MAX_CALLS_PER_STEP):
        jsonschema.validate(good, schema)
    for bad in ([search], [search, clock], [], [clock] * (MAX_CALLS_PER_STEP + 1), clock):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert call_schema([SEARCH, CLOCK], first="no_such_tool") == call_schema([SEARCH, CLOCK])


async def test_the_constrained_phase_starts_with_the_tool_the_free_answer_named() -> None:
    from desktop.core.emulation import call_schema

    provider = ScriptedProvider(
        [
            Step(chunks=['{"na', 'me": "current', '_time", "arguments": {', "}}"]),
            Step(chunks=['[{"name": "current_time", "arguments": {}}]']),
        ],
        constrains_json=True,
    )
    _, reply = await constrained_run(provider, [SEARCH, CLOCK])
    assert provider.closed_early == 1  # read up to the name, not to the end
    assert provider.requests[1].options.json_schema == call_schema(
        [SEARCH, CLOCK], first="current_time"
    )
    assert [c.name for c in reply.tool_calls] == ["current_time"]


def test_the_call_schema_admits_only_lists_of_real_calls() -> None:
    import jsonschema

    from desktop.core.emulation import MAX_CALLS_PER_STEP, call_schema

    schema = call_schema([SEARCH, CLOCK])
    jsonschema.validate([{"name": "search", "arguments": {"query": "x"}}], schema)
    jsonschema.validate(
        [
            {"name": "current_time", "arguments": {}},
            {"name": "search", "arguments": {"query": "y"}},
        ],
        schema,
    )
    one = {"name": "search", "arguments": {"query": "x"}}
    for bad in ([{"name": "serch", "arguments": {"query": "x"}}], [{"name": "search", "arguments": {}}],
                [{"name": "search"}], [{**one, "id": 1}], [], one,
                [one] * (MAX_CALLS_PER_STEP + 1)):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


async def test_without_constrained_decoding_the_tolerant_parser_is_used() -> None:
    provider = ScriptedProvider([Step(chunks=['{"name": "search", "arguments": {"query": "q"}}'])])
    _, reply = await constrained_run(provider, [SEARCH])
    assert len(provider.requests) == 1 and reply.tool_calls[0].arguments == {"query": "q"}


async def gated_run(
    script: list[Step], *, reports_token_odds: bool = True
) -> tuple[ScriptedProvider, Reply]:
    from desktop.core.emulation import ConstrainedTools

    provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=reports_token_odds)
    reply = None
    async for event in ConstrainedTools(provider, min_call_odds=0.9).stream(
        [Message.user("Who won the World Cup in 2022?")], [SEARCH], RequestOptions(seed=3)
    ):
        if isinstance(event, Reply):
            reply = event
    assert reply is not None
    return provider, reply


CALL = '[{"name": "search", "arguments": {"query": "q"}}]'


async def test_a_call_the_model_is_unsure_of_becomes_a_plain_answer() -> None:
    """The probe's odds of `{` (0.5 + 0.2 for a fence) are below the bar: no call."""
    unsure = [("{", 0.5), ("```", 0.2), ("Argentina", 0.3)]
    provider, reply = await gated_run(
        [Step(chunks=['{"name": "search"']), Step(odds=unsure), Step(chunks=["Argentina."])]
    )
    assert reply.tool_calls == [] and reply.text == "Argentina."
    probe = provider.requests[1]
    assert probe.options.max_tokens == 1 and probe.options.top_logprobs == 10
    assert probe.options.seed == 3 and probe.messages == provider.requests[0].messages
    assert "You can use tools" not in provider.requests[2].messages[0].text  # tools withdrawn
    assert "[odds of a call: 0.70]" in reply.raw
    assert reply.gate is not None and not reply.gate.passed
    assert (round(reply.gate.odds, 2), reply.gate.bar) == (0.7, 0.9)


async def test_until_a_model_is_calibrated_its_own_first_choice_stands() -> None:
    """No bar tuned to some other model: uncalibrated, an opened call is made however
    unsure, and the reply still says how sure the model was."""
    from desktop.core.emulation import ConstrainedTools

    unsure = [("{", 0.3), ("Argentina", 0.7)]
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=unsure), Step(chunks=[CALL])],
        constrains_json=True,
        reports_token_odds=True,
    )
    replies = [
        e
        async for e in ConstrainedTools(provider).stream(
            [Message.user("Who won?")], [SEARCH], RequestOptions()
        )
        if isinstance(e, Reply)
    ]
    assert [c.name for c in replies[0].tool_calls] == ["search"]
    gate = replies[0].gate
    assert gate is not None and gate.passed and gate.source == "uncalibrated"
    assert (round(gate.odds, 2), gate.bar) == (0.3, 0.0)


async def test_the_plain_answer_is_all_text_even_json() -> None:
    """Once the gate has turned a call down, nothing in the answer is a call: a model that
    writes JSON anyway is shown it, not an empty answer."""
    from desktop.core.emulation import ConstrainedTools

    unsure = [("{", 0.6), ("Hi", 0.4)]
    provider = ScriptedProvider(
        [
            Step(chunks=["{"]),
            Step(odds=unsure),
            Step(chunks=['{"name": "search", ', '"arguments": {}}']),
        ],
        constrains_json=True,
        reports_token_odds=True,
    )
    shown, reply = [], None
    async for event in ConstrainedTools(provider, min_call_odds=0.9).stream(
        [Message.user("hi")], [SEARCH], RequestOptions()
    ):
        if isinstance(event, TextChunk):
            shown.append(event.text)
        elif isinstance(event, Reply):
            reply = event
    assert reply is not None and reply.tool_calls == []
    assert "".join(shown) == reply.text == '{"name": "search", "arguments": {}}'


async def test_a_call_the_model_is_sure_of_is_made() -> None:
    sure = [("{", 0.9), ("[", 0.05), ("Argentina", 0.05)]
    provider, reply = await gated_run(
        [Step(chunks=['{"name": "search"']), Step(odds=sure), Step(chunks=[CALL])]
    )
    assert [c.name for c in reply.tool_calls] == ["search"]
    assert provider.requests[2].options.json_schema is not None
    assert "[odds of a call: 0.95]" in reply.raw


async def test_no_probe_after_prose_or_without_token_odds() -> None:
    """Prose before the call shows the model means it; a backend without odds is trusted."""
    after_prose, reply = await gated_run([Step(chunks=["Let me search. {"]), Step(chunks=[CALL])])
    assert len(after_prose.requests) == 2 and reply.tool_calls
    assert after_prose.requests[1].options.top_logprobs is None
    no_odds, reply = await gated_run(
        [Step(chunks=["{"]), Step(chunks=[CALL])], reports_token_odds=False
    )
    assert len(no_odds.requests) == 2 and reply.tool_calls


def test_the_prompt_leaves_out_bounds_and_extra_examples_but_no_parameter() -> None:
    """Bounds are validation's to enforce and explain; a parameter named like a keyword
    is still a parameter."""
    values = {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 500,
              "description": "the numbers"}  # fmt: skip
    schema = {
        "type": "object",
        "properties": {"values": values, "maxLength": {"type": "integer", "minimum": 1}},
        "required": ["values"],
        "additionalProperties": False,
    }
    examples = (Example("plot 1 2", {"values": [1, 2]}), Example("plot 3", {"values": [3]}))
    prompt = render_tool_prompt([Tool("plot", "Plot", schema, noop, examples=examples)])
    shown = '"values": {"type": "array", "items": {"type": "number"}, "description": "the numbers"}'
    assert shown in prompt
    assert '"maxLength": {"type": "integer", "minimum": 1}' in prompt
    assert "minItems" not in prompt and "maxItems" not in prompt
    assert prompt.count("example:") == 1 and '"plot 1 2"' in prompt


async def test_the_plain_answer_after_an_unsure_call_leaves_the_tools_out() -> None:
    """Even where a grammar could forbid the call: kept in the prompt, the tools made the
    model echo the request or explain how to call one instead of answering."""
    from desktop.core.emulation import ConstrainedTools

    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.5), ("Hi", 0.5)]), "Hi."],
        constrains_json=True,
        reports_token_odds=True,
        takes_grammar=True,
    )
    replies = [
        e
        async for e in ConstrainedTools(provider, min_call_odds=0.9).stream(
            [Message.user("hi")], [SEARCH], RequestOptions()
        )
        if isinstance(e, Reply)
    ]
    _free, _probe, plain = provider.requests
    assert replies[0].text == "Hi." and not replies[0].tool_calls
    assert "You can use tools" not in plain.messages[0].text and plain.options.grammar is None


def test_the_no_call_grammar_forbids_every_shape_of_a_call() -> None:
    """The GBNF grammar, read as the regular language it is: no call opens the answer or
    hides in it; prose and code with braces pass."""
    import re

    from desktop.core.emulation import NO_CALL_GRAMMAR

    rules = dict(line.split(" ::= ") for line in NO_CALL_GRAMMAR.strip().splitlines())
    assert rules["root"] == "first rest"
    # The two rules, transcribed to Python's regex syntax one for one.
    first = r"[^{\[` \t\n]"
    rest = r'(?:[^{]|\{[ \t\n]*[^" \t\n])*(?:\{[ \t\n]*)?'
    assert rules["first"] == first
    assert rules["rest"] == r'([^{] | "{" [ \t\n]* [^" \t\n])* ("{" [ \t\n]*)?'
    answer = re.compile(first + rest, re.DOTALL)
    for call in [
        '{"name": "x"}',
        '[{"name": "x"}]',
        "```json\n{}```",
        ' {"a": 1}',
        'Here it is: {"name": "search", "arguments": {}}',
        'ok {\n  "name": 1}',
    ]:
        assert not answer.fullmatch(call), call
    for prose in ["Hello!", "Use `f(x)` here.", "int f() { return 1; }", "a {b} c {"]:
        assert answer.fullmatch(prose), prose


async def test_the_last_step_keeps_the_tool_prompt_and_forbids_calls() -> None:
    from desktop.core.emulation import NO_CALL_GRAMMAR, NO_TOOLS_HINT, ConstrainedTools
    from desktop.core.loop import LoopSettings, run_turn
    from desktop.core.tools.toolbox import Toolbox

    call = '{"name": "search", "arguments": {"query": "q"}}'
    provider = ScriptedProvider(
        [Step(chunks=[call]), Step(chunks=[f"[{call}]"]), "Here is what I found."],
        constrains_json=True,
        takes_grammar=True,
    )
    conversation = [Message.user("find q")]
    settings = LoopSettings(max_tool_calls=1)
    events = [
        e
        async for e in run_turn(
            ConstrainedTools(provider), Toolbox([SEARCH]), conversation, settings=settings
        )
    ]
    assert events[-1].kind == "turn_finished" and events[-1].text == "Here is what I found."
    first, _constrained, last = provider.requests
    assert last.messages[0] == first.messages[0]  # the same system prompt, tools and all
    assert last.options.grammar == NO_CALL_GRAMMAR and last.options.phase is None
    assert NO_TOOLS_HINT in last.messages[-1].text
