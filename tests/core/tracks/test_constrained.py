import asyncio
from dataclasses import replace
from typing import Any

import pytest

from desktop.core.events import Notice, Reply, TextChunk
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Capabilities, RequestOptions
from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.gate import first_request_step
from desktop.core.tracks.prompt import render_tool_prompt
from tests.core.tracks.samples import CLOCK, SEARCH, noop
from tests.support.fakes import Script, ScriptedProvider, Step

# The gate's tests ask at temperature 0, as the benches do: a sampled answer first asks how
# the answer would open greedily (see the greedy opening's own tests).
GREEDY = RequestOptions(temperature=0)
SHORT = RequestOptions(max_tokens=50)


def gated(
    provider: ScriptedProvider,
    first: float = 0.0,
    later: float | None = None,
    arguments: float | None = None,
    source: str = "uncalibrated",
) -> ConstrainedTools:
    """The track under these bars (the later one, where not given, is the first's)."""
    return ConstrainedTools(
        provider, Bars(first, first if later is None else later, arguments, source)
    )


# --- two-phase constrained calls --------------------------------------------------------


async def constrained_run(
    provider: ScriptedProvider,
    tools: list[Tool],
    request: str = "search my notes on rust",
    options: RequestOptions = SHORT,
) -> tuple[list[str], Reply]:
    from desktop.core.tracks.constrained import ConstrainedTools

    text, reply = [], None
    async for event in ConstrainedTools(provider).stream([Message.user(request)], tools, options):
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
    from desktop.core.tracks.asking import CALL_TOKEN_BUDGET
    from desktop.core.tracks.step_calls import call_schema

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
    assert second.json_schema == call_schema([SEARCH, CLOCK], first="search")  # "serch" meant it
    assert second.max_tokens == CALL_TOKEN_BUDGET  # a limit meant for prose does not cut calls
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", {"query": "rust"})]
    assert reply.text == "Let me look." and reply.record is not None
    assert reply.record.verdict == "call"


async def test_calls_are_written_greedily_whatever_the_chats_temperature() -> None:
    """The free answer is sampled as the chat asks; the call's values, copied from the
    request, are written at temperature 0 (sampled, they came out wrong more often)."""
    from desktop.core.tracks.constrained import ConstrainedTools

    call = '{"name": "search", "arguments": {"query": "q"}}'
    provider = ScriptedProvider([Step(chunks=[call]), Step(chunks=[f"[{call}]"])],
                                constrains_json=True)  # fmt: skip
    options = RequestOptions(temperature=0.8, seed=3)
    events = [
        e
        async for e in ConstrainedTools(provider).stream(
            [Message.user("search for q")], [SEARCH], options
        )
    ]
    assert next(e for e in events if isinstance(e, Reply)).tool_calls[0].arguments == {"query": "q"}
    free, constrained = provider.requests
    assert free.options.temperature == 0.8 and constrained.options.phase == "constrained"
    assert constrained.options.temperature == 0.0


async def sampled_call(
    opening: list[tuple[str, float]], bar: float, options: RequestOptions
) -> tuple[Reply, ScriptedProvider]:
    """A sampled answer that writes a call, after the one-token probe saw `opening`: the
    reply, and the provider that holds its requests."""

    call = '{"name": "search", "arguments": {"query": "q"}}'
    provider = ScriptedProvider(
        [Step(odds=opening), Step(chunks=[call]), Step(chunks=[f"[{call}]"])],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    track = gated(provider, bar, None, None, "calibrated")
    events = [e async for e in track.stream([Message.user("search for q")], [SEARCH], options)]
    return next(e for e in events if isinstance(e, Reply)), provider


async def test_a_sampled_answer_opens_a_call_where_the_greedy_one_would() -> None:
    """Sampled, the answer may open in prose where the model's likeliest first token opens
    a call: the opening is asked first, and the free answer is then greedy. The odds that
    one-token probe read judge the call; none are asked for twice."""
    options = RequestOptions(seed=3)  # no temperature: the server's own sampling
    reply, provider = await sampled_call([("[", 0.7), ("Mark", 0.3)], 0.6, options)
    assert [c.name for c in reply.tool_calls] == ["search"] and reply.gate is not None
    assert reply.gate.odds == 0.7 and reply.gate.passed
    probe, free, constrained = provider.requests
    assert probe.options.phase == "opening" and probe.options.max_tokens == 1
    assert free.options.temperature == 0 and free.options.phase is None
    assert constrained.options.phase == "constrained"


async def test_a_sampled_answer_whose_greedy_opening_is_prose_stays_sampled() -> None:
    from desktop.core.tracks.constrained import ConstrainedTools

    provider = ScriptedProvider(
        [Step(odds=[("Mark", 0.6), ("[", 0.4)]), Step(chunks=["Mark the axes."])],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    options = RequestOptions(temperature=0.8, seed=3)
    events = [
        e
        async for e in ConstrainedTools(provider).stream(
            [Message.user("search for q")], [SEARCH], options
        )
    ]
    assert next(e for e in events if isinstance(e, Reply)).text == "Mark the axes."
    probe, free = provider.requests
    assert probe.options.phase == "opening" and free.options.temperature == 0.8


async def test_a_sampled_prose_answer_goes_on_from_the_token_its_probe_sampled() -> None:
    """The probe samples the answer's first token as the answer would: a backend that
    continues an answer is asked for the rest of it, the token shown first and once (the
    server here repeats it, as llama.cpp does); one that cannot is asked the whole answer."""
    from desktop.core.tracks.constrained import ConstrainedTools

    for continues in (True, False):
        rest = Step(chunks=["Mark the", " axes."]) if continues else Step(chunks=["Mark it."])
        provider = ScriptedProvider(
            [Step(chunks=["Mark"], odds=[("Mark", 0.6), ("[", 0.4)]), rest],
            constrains_json=True, reports_token_odds=True, continues_answer=continues,
        )  # fmt: skip
        options = RequestOptions(temperature=0.8, seed=3)
        track = ConstrainedTools(provider)
        events = [e async for e in track.stream([Message.user("search for q")], [SEARCH], options)]
        shown = "".join(e.text for e in events if isinstance(e, TextChunk))
        reply = next(e for e in events if isinstance(e, Reply))
        probe, free = provider.requests
        assert free.options.temperature == 0.8 and free.options.seed == 3
        if continues:
            assert shown == reply.text == "Mark the axes."
            assert free.messages[-1].role == "assistant" and free.messages[-1].text == "Mark"
            assert free.messages[:-1] == probe.messages
        else:
            assert shown == reply.text == "Mark it." and free.messages == probe.messages


async def test_a_call_a_sampled_answer_opens_against_its_greedy_opening_is_probed_once() -> None:
    """The opening's odds judge the call the sampled answer opened anyway: the same prompt
    is not probed a second time."""
    options = RequestOptions(temperature=0.8, seed=3)
    reply, provider = await sampled_call([("Mark", 0.6), ("[", 0.4)], 0.3, options)
    assert [c.name for c in reply.tool_calls] == ["search"]
    assert reply.gate is not None and reply.gate.odds == 0.4 and reply.gate.passed
    probe, free, constrained = provider.requests
    assert probe.options.phase == "opening" and free.options.temperature == 0.8
    assert constrained.options.phase == "constrained"


async def test_no_opening_is_asked_first_at_temperature_0_or_without_odds() -> None:
    from desktop.core.tracks.constrained import ConstrainedTools

    for temperature, odds in ((0.0, True), (0.8, False)):
        provider = ScriptedProvider(["Hello."], constrains_json=True, reports_token_odds=odds)
        options = RequestOptions(temperature=temperature)
        track = ConstrainedTools(provider)
        assert [e async for e in track.stream([Message.user("search my notes")], [SEARCH], options)]
        (free,) = provider.requests
        assert free.options.phase is None and free.options.temperature == temperature


async def test_the_constrained_phase_starts_with_the_tool_the_free_answer_named() -> None:
    from desktop.core.tracks.step_calls import call_schema

    provider = ScriptedProvider(
        [
            Step(chunks=['{"na', 'me": "current', '_time", "arguments": {', "}}"]),
            Step(chunks=['[{"name": "current_time", "arguments": {}}]']),
        ],
        constrains_json=True,
    )
    _, reply = await constrained_run(provider, [SEARCH, CLOCK], "What time is it?")
    assert provider.closed_early == 1  # read up to the name, not to the end
    assert provider.requests[1].options.json_schema == call_schema(
        [SEARCH, CLOCK], first="current_time"
    )
    assert [c.name for c in reply.tool_calls] == ["current_time"]


async def test_without_constrained_decoding_the_tolerant_parser_is_used() -> None:
    provider = ScriptedProvider([Step(chunks=['{"name": "search", "arguments": {"query": "q"}}'])])
    _, reply = await constrained_run(provider, [SEARCH])
    assert len(provider.requests) == 1 and reply.tool_calls[0].arguments == {"query": "q"}


async def gated_run(
    script: list[Script], *, reports_token_odds: bool = True
) -> tuple[ScriptedProvider, Reply]:

    provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=reports_token_odds)
    reply = None
    async for event in gated(provider, 0.9).stream(
        [Message.user("Search: who won the World Cup in 2022?")],
        [SEARCH],
        RequestOptions(temperature=0, seed=3),
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
    assert reply.record is not None and reply.record.request is not None
    assert round(reply.record.request.odds, 2) == 0.7
    assert reply.gate is not None and not reply.gate.passed
    assert (round(reply.gate.odds, 2), reply.gate.bar) == (0.7, 0.9)


async def test_until_a_model_is_calibrated_its_own_first_choice_stands() -> None:
    """No bar tuned to some other model: uncalibrated, an opened call is made however
    unsure, and the reply still says how sure the model was."""
    from desktop.core.tracks.constrained import ConstrainedTools

    unsure = [("{", 0.3), ("Argentina", 0.7)]
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=unsure), Step(chunks=[CALL])],
        constrains_json=True,
        reports_token_odds=True,
    )
    replies = [
        e
        async for e in ConstrainedTools(provider).stream(
            [Message.user("Search: who won?")], [SEARCH], GREEDY
        )
        if isinstance(e, Reply)
    ]
    assert [c.name for c in replies[0].tool_calls] == ["search"]
    gate = replies[0].gate
    assert gate is not None and gate.passed and gate.source == "uncalibrated"
    assert (round(gate.odds, 2), gate.bar) == (0.3, 0.0)


async def plain_after_an_unsure_call(*answers: str) -> tuple[ScriptedProvider, list[Any]]:
    """A call the gate turns down, then the plain answers the model writes."""
    unsure = [("{", 0.6), ("Hi", 0.4)]
    provider = ScriptedProvider(
        [Step(chunks=["{"]), Step(odds=unsure), *(Step(chunks=[a]) for a in answers)],
        constrains_json=True,
        reports_token_odds=True,
    )
    messages = [Message.user("search my notes")]
    events = [e async for e in gated(provider, 0.9).stream(messages, [SEARCH], GREEDY)]
    return provider, events


async def test_a_call_written_out_as_the_answer_is_asked_again_alone() -> None:
    """Once the gate has turned a call down, a model that writes the call out anyway is
    not shown it: asked again, the request alone, without the tools or earlier turns."""
    call = '{"name": "search", "arguments": {}}'
    provider, events = await plain_after_an_unsure_call(call, "I found nothing.")
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    reply = events[-1]
    assert isinstance(reply, Reply) and reply.tool_calls == []
    assert shown == reply.text == "I found nothing."
    again = provider.requests[-1]
    assert [m.text for m in again.messages] == ["search my notes"] and again.tools == []
    assert (
        again.options.reason == "the answer was a call written out: asked again, the request alone"
    )


async def test_an_answer_that_is_only_a_format_twice_says_so() -> None:
    provider, events = await plain_after_an_unsure_call(
        "[Result of search]\nnothing", "User: search my notes"
    )
    assert len(provider.requests) == 4  # asked again once, no more
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices == ["The model answered with a transcript line instead of words."]
    reply = events[-1]
    assert isinstance(reply, Reply) and reply.text == "" and reply.tool_calls == []
    assert not any(isinstance(e, TextChunk) and e.text.strip() for e in events)


async def test_prose_before_a_format_is_the_answer() -> None:
    _, events = await plain_after_an_unsure_call("Nothing found.\nUser: thanks")
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    reply = events[-1]
    assert isinstance(reply, Reply) and shown == reply.text == "Nothing found.\n"


async def test_a_call_the_model_is_sure_of_is_made() -> None:
    sure = [("{", 0.9), ("[", 0.05), ("Argentina", 0.05)]
    provider, reply = await gated_run(
        [Step(chunks=['{"name": "search"']), Step(odds=sure), Step(chunks=[CALL])]
    )
    assert [c.name for c in reply.tool_calls] == ["search"]
    assert provider.requests[2].options.json_schema is not None
    assert reply.record is not None and reply.record.request is not None
    assert round(reply.record.request.odds, 2) == 0.95


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

    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.5), ("Hi", 0.5)]), "Hi."],
        constrains_json=True,
        reports_token_odds=True,
        takes_grammar=True,
    )
    replies = [
        e
        async for e in gated(provider, 0.9).stream(
            [Message.user("search my notes")], [SEARCH], GREEDY
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

    from desktop.core.tracks.text_answer import NO_CALL_GRAMMAR

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
    from desktop.core.loop import LoopSettings, run_turn
    from desktop.core.tools.toolbox import Toolbox
    from desktop.core.tracks.constrained import ConstrainedTools
    from desktop.core.tracks.prompt import NO_TOOLS_HINT
    from desktop.core.tracks.text_answer import NO_CALL_GRAMMAR

    call = '{"name": "search", "arguments": {"query": "q"}}'
    provider = ScriptedProvider(
        [Step(chunks=[call]), Step(chunks=[f"[{call}]"]), "Here is what I found."],
        constrains_json=True,
        takes_grammar=True,
    )
    conversation = [Message.user("search for q")]
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


@pytest.mark.parametrize("switch", ["on", "off"])
async def test_a_call_made_again_after_its_result_is_left_out_where_repeats_are_refused(
    switch: str,
) -> None:
    """Right after a result the model writes the same call again. With the cooldown switch
    on, the deduplicator would refuse it: the gate leaves it out before it is made (no
    refused call in the chat, no step spent on it) and the model answers in words, the
    reason in the step's record; switched off, the repeat runs (the limit bounds it)."""
    from desktop.core.loop import run_turn
    from desktop.core.tools.dedupe import Deduplicator
    from desktop.core.tools.toolbox import Toolbox
    from desktop.core.tracks.constrained import ConstrainedTools

    call = '{"name": "search", "arguments": {"query": "q"}}'
    provider = ScriptedProvider(
        [Step(chunks=[call]), Step(chunks=[f"[{call}]"]),
         Step(chunks=[call]), Step(chunks=[f"[{call}]"]), "It found 3 notes."],
        constrains_json=True, takes_grammar=True,
    )  # fmt: skip
    conversation = [Message.user("search for q")]
    dedupe = Deduplicator(cooldown_enabled=switch == "on")
    turn = run_turn(ConstrainedTools(provider), Toolbox([SEARCH]), conversation, dedupe=dedupe)
    events = [e async for e in turn]
    kinds = [e.kind for e in events]
    assert events[-1].kind == "turn_finished" and events[-1].text == "It found 3 notes."
    assert "tool_rejected" not in kinds
    if switch == "on":
        assert kinds.count("tool_result") == 1
        last = provider.requests[-1]
        assert last.options.phase == "plain"
        assert last.options.reason == (
            "this call to search was made in this turn already; its result is above"
        )
    else:
        assert kinds.count("tool_result") == 2


@pytest.mark.parametrize("allowed", [(), ("search",)])
async def test_a_repeat_beside_a_new_call_is_left_out_and_the_new_call_made(
    allowed: tuple[str, ...],
) -> None:
    """Where repeats are refused, only the new call of the step is made (the repeat would
    be refused and the turn's tools withdrawn after it); where they may run, both are."""
    from desktop.core.messages import ToolCall
    from desktop.core.tracks.constrained import ConstrainedTools

    ran = ToolCall("c1", "search", {"query": "q"})
    messages = [Message.user("search for q and r"), Message.assistant("", [ran]),
                Message.tool("c1", "search", "3 notes")]  # fmt: skip
    both = '[{"name": "search", "arguments": {"query": "q"}}, {"name": "search", "arguments": {"query": "r"}}]'
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(chunks=[both])], constrains_json=True
    )
    options = replace(GREEDY, repeats_allowed=allowed)
    events = [e async for e in ConstrainedTools(provider).stream(messages, [SEARCH], options)]
    reply = next(e for e in events if isinstance(e, Reply))
    made = [c.arguments["query"] for c in reply.tool_calls]
    assert made == (["q", "r"] if allowed else ["r"])


async def test_a_request_after_earlier_turns_is_judged_by_its_own_bar() -> None:
    """Odds of 0.7: below the first request's bar (0.9), above the later one's (0.6).
    (Under its bar the answer in words writes the call out: it is asked again, alone.)"""

    def run() -> list[Script]:
        return [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.7)]), Step(chunks=[CALL]),
                Step(chunks=["In words."])]  # fmt: skip

    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    judged = []
    for history in ([], earlier):
        provider = ScriptedProvider(run(), constrains_json=True, reports_token_odds=True)
        track = gated(provider, 0.9, 0.6, None, "calibrated 2026-12-01")
        messages = [*history, Message.user("Search: who won the World Cup in 2022?")]
        replies = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        reply = next(e for e in replies if isinstance(e, Reply))
        assert reply.gate is not None and track.bar_for(messages)[0] == reply.gate.bar
        judged.append((reply.gate.bar, reply.gate.passed, bool(reply.tool_calls)))
        if history:
            assert reply.gate.source == "calibrated 2026-12-01, after earlier turns"
    assert judged == [(0.9, False, False), (0.6, True, True)]
    # Uncalibrated, or calibrated before there were two bars: one bar for both.
    one = gated(ScriptedProvider([]), 0.8)
    assert one.bar_for([*earlier, Message.user("search?")]) == (0.8, "uncalibrated")


async def test_a_later_call_under_its_bar_gets_a_second_look_at_the_turn_alone() -> None:
    """In context the odds are 0.5 (under the later bar, 0.6); the turn asked alone gives
    0.95 (over the first bar, 0.9): the call is made, and the gate says why. Alone at 0.7
    it is not."""
    from desktop.core.tracks.prompt import EARLIER_HEAD

    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    messages = [*earlier, Message.user("Search for rust")]
    outcomes = []
    for alone in (0.95, 0.7):
        script: list[Script] = [
            Step(chunks=['{"name": "search"']),
            Step(odds=[("{", 0.5)]),
            Step(odds=[("{", alone)]),
            Step(chunks=[CALL]) if alone > 0.9 else "Rust is a language.",
        ]
        provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=True)
        track = gated(provider, 0.9, 0.6, None, "calibrated 2026-12-01")  # fmt: skip
        events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        reply = next(e for e in events if isinstance(e, Reply))
        looked = provider.requests[2]
        assert EARLIER_HEAD in provider.requests[1].messages[0].text
        assert EARLIER_HEAD not in looked.messages[0].text  # the turn alone, no transcript
        assert looked.messages[-1].text.endswith("Search for rust")
        # The turn alone is an aside, and so is an answer without the tools: the
        # conversation's prompt keeps its slot.
        last = "in words" if alone <= 0.9 else None
        asides = [r.options.aside for r in provider.requests]
        assert asides == [None, None, "turn alone", last]
        assert reply.record is not None and reply.record.alone is not None
        assert reply.record.alone.odds == alone
        assert reply.gate is not None
        outcomes.append(
            (reply.gate.odds, reply.gate.bar, reply.gate.source, bool(reply.tool_calls))
        )
    assert outcomes == [
        (0.95, 0.9, "calibrated 2026-12-01, the turn alone", True),
        (0.5, 0.6, "calibrated 2026-12-01, after earlier turns", False),
    ]


async def test_a_first_request_gets_no_second_look() -> None:

    script: list[Script] = [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.5)]), "Words."]
    provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=True)
    track = gated(provider, 0.9, 0.6)
    events = [e async for e in track.stream([Message.user("Search rust")], [SEARCH], GREEDY)]
    reply = next(e for e in events if isinstance(e, Reply))
    assert reply.record is not None and reply.record.alone is None
    assert len(provider.requests) == 3 and not reply.tool_calls


async def test_prose_after_earlier_turns_gets_a_second_look_before_it_is_shown() -> None:
    """Deep in a chat the model opens in prose where a call is due. Its prose is held and
    the turn asked alone: at 0.95 (over the first bar, 0.9) the call is made and none of
    the prose shows (the paused answer is closed before the call is written); at 0.7 the
    paused answer goes on, its held first word first, and nothing is asked again."""
    from desktop.core.tracks.prompt import EARLIER_HEAD

    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    messages = [*earlier, Message.user("Search for rust")]
    outcomes = []
    for alone in (0.95, 0.7):
        script: list[Script] = [
            Step(chunks=["I think", " Rust is", " a language."]),
            Step(odds=[("{", alone), ("I", 1 - alone)]),
            *([Step(chunks=[CALL])] if alone > 0.9 else []),
        ]
        provider = ScriptedProvider(
            script, constrains_json=True, reports_token_odds=True, takes_grammar=True
        )
        track = gated(provider, 0.9, 0.6, None, "calibrated 2026-12-02")  # fmt: skip
        events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        shown = "".join(e.text for e in events if isinstance(e, TextChunk))
        reply = next(e for e in events if isinstance(e, Reply))
        _, looked, *last = provider.requests
        assert EARLIER_HEAD not in looked.messages[0].text  # the turn alone
        assert looked.options.phase == "call-odds"
        assert reply.record is not None and reply.record.alone is not None
        assert reply.record.alone.odds == alone and reply.record.request is None
        assert reply.gate is not None and reply.gate.source.endswith("the turn alone")
        if alone > 0.9:
            assert last[0].options.json_schema is not None and shown == ""
            assert provider.closed_early == 1
        else:
            assert last == [] and provider.closed_early == 0
            assert shown == "I think Rust is a language." == reply.text
            assert reply.record.verdict == "prose"
        outcomes.append((reply.gate.odds, reply.gate.bar, bool(reply.tool_calls)))
    assert outcomes == [(0.95, 0.9, True), (0.7, 0.9, False)]


async def test_prose_gets_no_second_look_first_uncalibrated_after_a_tool_or_thought() -> None:
    """A first request, an uncalibrated model (its own choice stands), a step after a
    tool's result and a model that thought before its prose stream at once, asking
    nothing more."""
    from desktop.core.messages import ToolCall

    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    later = [*earlier, Message.user("Search for rust")]
    call = ToolCall("c1", "search", {"query": "rust"})
    after_a_tool = [
        *later, Message.assistant("", [call]), Message.tool("c1", "search", "Rust is a language."),
    ]  # fmt: skip
    prose = ["Rust", " is a language."]
    for messages, bar, chunks in (
        ([Message.user("Search for rust")], 0.9, prose),
        (later, 0.0, prose),
        (after_a_tool, 0.9, prose),
        (later, 0.9, ["<think>No tool needed.</think>", *prose]),
    ):
        provider = ScriptedProvider(
            [Step(chunks=chunks)], constrains_json=True, reports_token_odds=True
        )
        track = gated(provider, bar, 0.6)
        events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Rust is a language."
        assert len(provider.requests) == 1


# --- a call to a tool that is not there ------------------------------------------------


async def test_a_call_to_a_tool_that_is_not_offered_becomes_a_plain_answer() -> None:
    """ "Tell me a short joke." opened `{"name": "joke"`: no tool fits, so the model answers
    in words, without the tool prompt; it is not asked for a call to some real tool, and
    no odds are probed (even under a bar the model would have passed)."""

    provider = ScriptedProvider(
        [Step(chunks=['{"name": "joke", "arguments": {}}']), Step(chunks=["Why did", " it?"])],
        constrains_json=True,
        reports_token_odds=True,
        takes_grammar=True,
    )
    track = gated(provider, 0.5)
    events = [
        e
        async for e in track.stream([Message.user("Tell me a joke.")], [SEARCH, CLOCK],
                                    GREEDY)
    ]  # fmt: skip
    reply = next(e for e in events if isinstance(e, Reply))
    assert reply.tool_calls == [] and reply.text == "Why did it?"
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Why did it?"
    _free, plain = provider.requests
    assert "You can use tools" not in plain.messages[0].text and plain.options.grammar is None
    assert plain.options.phase == "plain" and plain.options.json_schema is None
    assert plain.options.reason == "the call named 'joke', which is not an offered tool"
    assert reply.record is not None
    assert reply.record.reason == "the call named 'joke', which is not an offered tool"
    assert reply.gate is None


async def test_prose_before_a_call_to_no_offered_tool_stays_in_the_answer() -> None:
    """What was shown before the made-up call is part of the answer that goes on from it."""
    provider = ScriptedProvider(
        [Step(chunks=["Sure! ", '{"name": "joke"}']), Step(chunks=["Here is one."])],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [SEARCH])
    assert "".join(text) == "Sure! Here is one." == reply.text and reply.tool_calls == []


def sure_of(*values: float) -> list[tuple[str, float]]:
    """Tokens of a call whose argument values have these probabilities."""
    return [('[{"name":"search","arguments":{"', 1.0), ("query", 1.0),
            *((f"v{i}", p) for i, p in enumerate(values)), ('"}}]', 1.0)]  # fmt: skip


async def arguments_run(arguments: float) -> tuple[ScriptedProvider, Reply]:
    """Odds of a call 0.8 under the bar of 0.9; the arguments' bar is 0.95."""

    plain = "Argentina won."
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.8), ("Arg", 0.2)]),
         Step(chunks=[CALL], chosen=sure_of(arguments)), plain],
        constrains_json=True, reports_token_odds=True, takes_grammar=True,
    )  # fmt: skip
    track = gated(provider, 0.9, None, 0.95)
    events = [e async for e in track.stream([Message.user("Search: who won?")], [SEARCH], GREEDY)]
    return provider, next(e for e in events if isinstance(e, Reply))


async def test_a_call_under_the_bar_is_made_if_the_model_was_sure_of_its_arguments() -> None:
    provider, reply = await arguments_run(arguments=0.998)
    assert [c.name for c in reply.tool_calls] == ["search"]
    constrained = provider.requests[2].options
    assert constrained.json_schema is not None and constrained.top_logprobs == 1
    gate = reply.gate
    assert gate is not None and gate.passed and gate.arguments_sure
    assert gate.arguments_bar == 0.95 and gate.arguments is not None and gate.arguments > 0.99
    assert len(provider.requests) == 3


async def test_a_call_under_the_bar_with_unsure_arguments_is_answered_in_text() -> None:
    provider, reply = await arguments_run(arguments=0.5)
    assert reply.tool_calls == [] and reply.text == "Argentina won."
    plain = provider.requests[3]
    assert "You can use tools" not in plain.messages[0].text and plain.options.phase == "plain"
    assert plain.options.reason == "the call gate said no call, nor were its arguments sure"
    assert reply.gate is not None and not reply.gate.passed and not reply.gate.arguments_sure
    assert reply.record is not None and reply.record.request is not None
    assert round(reply.record.request.arguments or 0, 2) == 0.71


async def test_arguments_are_weighed_only_under_the_bar_and_with_a_bar_for_them() -> None:
    """Over the bar the call is made as before, no token odds asked; without an arguments'
    bar (uncalibrated, or a card from before) a call under the bar is text at once."""

    sure = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.95)]), Step(chunks=[CALL])],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    track = gated(sure, 0.9, None, 0.95)
    reply = [e async for e in track.stream([Message.user("search?")], [SEARCH], GREEDY)][-1]
    assert isinstance(reply, Reply) and reply.tool_calls
    assert sure.requests[2].options.top_logprobs is None
    assert reply.gate is not None and reply.gate.arguments is None
    unsure = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.8)]), "Words."],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    track = gated(unsure, 0.9)
    reply = [e async for e in track.stream([Message.user("search?")], [SEARCH], GREEDY)][-1]
    assert isinstance(reply, Reply) and reply.text == "Words." and len(unsure.requests) == 3
    assert unsure.requests[2].options.json_schema is None


async def test_after_earlier_turns_the_arguments_weighed_are_the_turn_alones() -> None:
    """Values copied from an earlier turn are as sure as values from the request ("Did it
    work?" after a call got that call again): so after earlier turns the arguments are not
    weighed in context. The turn asked alone has no earlier values to copy: it is a first
    request, and a call it opens under the first bar is written and its arguments weighed.
    Sure of them, the turn alone's call is made; unsure, the answer is text."""
    from desktop.core.tracks.prompt import EARLIER_HEAD

    earlier = [Message.user("Search for rust"), Message.assistant("Found 3 notes.")]
    messages = [*earlier, Message.user("Did the search work?")]
    outcomes = []
    for arguments in (0.5, 0.998):
        script: list[Script] = [
            Step(chunks=['{"name": "search"']),
            Step(odds=[("{", 0.5)]),
            Step(odds=[("{", 0.7), ("Yes", 0.3)]),
            Step(chunks=[CALL], chosen=sure_of(arguments)),
            "Yes, it found three notes.",
        ]
        provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=True)
        track = gated(provider, 0.9, 0.6, 0.95, "calibrated")  # fmt: skip
        assert not first_request_step(messages) and first_request_step(messages[-1:])
        events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        reply = next(e for e in events if isinstance(e, Reply))
        phases = [r.options.phase for r in provider.requests]
        assert phases[:4] == [None, "call-odds", "call-odds", "constrained"]
        written = provider.requests[3]
        assert EARLIER_HEAD not in written.messages[0].text and written.options.top_logprobs == 1
        assert reply.record is not None and reply.record.alone is not None
        assert reply.record.alone.arguments is not None
        assert reply.gate is not None
        gate = (reply.gate.source, reply.gate.arguments_bar)
        outcomes.append((len(phases), [c.name for c in reply.tool_calls], gate))
    assert outcomes == [
        # Unsure: answered in text; the gate in context (under its bar) said no.
        (5, [], ("calibrated, after earlier turns", None)),
        # Sure: the call the turn alone wrote, carried by its arguments.
        (4, ["search"], ("calibrated, the turn alone", 0.95)),
    ]


async def test_a_turn_alone_that_would_answer_in_words_is_not_weighed() -> None:
    """Its likeliest first token is prose: as a first request it would not have called, so
    no call is written to weigh."""

    earlier = [Message.user("Search for rust"), Message.assistant("Found 3 notes.")]
    script: list[Script] = [
        Step(chunks=['{"name": "search"']),
        Step(odds=[("{", 0.5)]),
        Step(odds=[("{", 0.4), ("Yes", 0.6)]),
        "Yes, it found three notes.",
    ]
    provider = ScriptedProvider(script, constrains_json=True, reports_token_odds=True)
    track = gated(provider, 0.9, 0.6, 0.95)
    messages = [*earlier, Message.user("Did the search work?")]
    events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
    reply = next(e for e in events if isinstance(e, Reply))
    assert [r.options.phase for r in provider.requests] == [None, "call-odds", "call-odds", "plain"]
    assert reply.tool_calls == [] and reply.gate is not None and reply.gate.arguments is None


async def test_after_a_tools_result_the_arguments_are_not_weighed() -> None:
    """Right after a result a model writes the call that produced it again, surely (the
    values are in front of it): the app's own screenshot showed current_time asked twice.
    So only a turn's first step weighs arguments; later steps stand by the bar alone."""
    from desktop.core.messages import ToolCall

    call = ToolCall("c1", "search", {"query": "rust"})
    messages = [Message.user("Search for rust"), Message.assistant("", [call]),
                Message.tool("c1", "search", "Found 3 notes.")]  # fmt: skip
    images_after = [*messages, Message.user("(images from the tools)")]
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.8)]), "It found 3 notes."],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    track = gated(provider, 0.9, None, 0.95)
    assert first_request_step(messages[:1])
    assert not first_request_step(messages) and not first_request_step(images_after)
    events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
    reply = next(e for e in events if isinstance(e, Reply))
    assert [r.options.phase for r in provider.requests] == [None, "call-odds", "plain"]
    assert reply.tool_calls == [] and reply.text == "It found 3 notes."


async def test_after_a_result_the_turn_alones_arguments_are_not_weighed_either() -> None:
    """Deep in a chat, a step after a result: the turn alone holds that call and its
    result, and the model would copy the call surely (the app's own Tokyo question got
    `current_time` asked twice). Its odds alone judge."""
    from desktop.core.messages import ToolCall

    call = ToolCall("c1", "search", {"query": "rust"})
    messages = [Message.user("Hi!"), Message.assistant("Hello!"), Message.user("Search rust"),
                Message.assistant("", [call]), Message.tool("c1", "search", "3 notes")]  # fmt: skip
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.5)]),
         Step(odds=[("{", 0.7), ("It", 0.3)]), "It found 3 notes."],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    track = gated(provider, 0.9, 0.6, 0.95)  # fmt: skip
    events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
    reply = next(e for e in events if isinstance(e, Reply))
    assert [r.options.phase for r in provider.requests] == [None, "call-odds", "call-odds", "plain"]
    assert reply.tool_calls == [] and reply.record is not None and reply.record.alone is not None
    assert reply.record.alone.arguments is None  # the turn alone's odds only


async def test_a_call_not_made_of_the_persons_request_becomes_a_plain_answer() -> None:
    """Thanks answered with the tool prompt's own example call is made up: the model
    is asked again without tools, and the record says why."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    made_up = '[{"name": "calculator", "arguments": {"expression": "23 * 19"}}]'
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "calculator"']), Step(chunks=[made_up]), Step(chunks=["Hi!"])],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [CALCULATOR], "Thanks, my essay is done!")
    assert reply.tool_calls == [] and reply.text == "Hi!" and "".join(text) == "Hi!"
    plain = provider.requests[2]
    assert plain.tools == [] and "You can use tools" not in plain.messages[0].text
    assert reply.record is not None and reply.record.verdict == "plain"
    assert (
        reply.record.reason
        == "the call's numbers are the tool prompt's examples', not said (calculator)"
    )


async def test_a_greeting_is_answered_in_words_without_asking_for_a_call() -> None:
    """ "Hi there!" has nothing a call could take: one request, without the tool prompt."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    provider = ScriptedProvider([Step(chunks=["Hello!"])], constrains_json=True)
    text, reply = await constrained_run(provider, [CALCULATOR], "Hi there!")
    assert "".join(text) == "Hello!" and reply.tool_calls == []
    [plain] = provider.requests
    assert plain.options.json_schema is None and "You can use tools" not in plain.messages[0].text
    assert reply.record is not None and reply.record.verdict == "plain"
    assert reply.record.reason == "the request says nothing a call could take"


# A number said: a calculator call could hold it, so the free answer's is read whole.
THANKS = "Thanks for the 3 tips!"


async def test_a_made_up_call_is_judged_as_the_free_answer_wrote_it() -> None:
    """The free answer's call to a tool the request is not about is read to its end and
    judged there: no call is written under the grammar to be left out after."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    made_up = ['[{"name": "calculator", "arguments": ', '{"expression": "23 * 19"}}', "]"]
    provider = ScriptedProvider(
        [Step(chunks=made_up), Step(chunks=["You're welcome!"])], constrains_json=True
    )
    text, reply = await constrained_run(provider, [CALCULATOR, CLOCK], THANKS, GREEDY)
    assert "".join(text) == "You're welcome!" and reply.tool_calls == []
    assert [r.options.json_schema for r in provider.requests] == [None, None]
    assert provider.closed_early == 1  # at the call's end, before the list closed
    assert reply.record is not None and reply.record.verdict == "plain"
    assert (
        reply.record.reason
        == "the call's numbers are the tool prompt's examples', not said (calculator) (as the answer wrote it)"
    )


async def test_a_call_the_grammar_would_write_otherwise_is_written_under_it() -> None:
    """An argument outside the schema: the grammar would write another call, and that
    one is judged."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    free = '[{"name": "calculator", "arguments": {"expression": "23 * 19", "result": 437}}]'
    made_up = '[{"name": "calculator", "arguments": {"expression": "23 * 19"}}]'
    provider = ScriptedProvider(
        [Step(chunks=[free]), Step(chunks=[made_up]), Step(chunks=["You're welcome!"])],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [CALCULATOR], THANKS, GREEDY)
    assert "".join(text) == "You're welcome!" and reply.tool_calls == []
    assert provider.requests[1].options.json_schema is not None
    assert reply.record is not None
    assert (
        reply.record.reason
        == "the call's numbers are the tool prompt's examples', not said (calculator)"
    )


@pytest.mark.parametrize(
    "hostile",
    [
        ['[{"name": "calculator", "arguments": {"expression": "', "1" * 1000, "2" * 1000, "3"],
        ['[{"name": "calculator", "arguments": {"expression": ', "[" * 5000, "]" * 5000, "}}]"],
    ],
    ids=["never closes", "nested past the parser's depth"],
)
async def test_a_call_read_whole_is_bounded_and_a_bad_one_goes_the_usual_way(
    hostile: list[str],
) -> None:
    """A call that never ends is read no further than the lookahead; one too deep to be
    a call is not judged as written: either way the calls are written under the grammar."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    made_up = '[{"name": "calculator", "arguments": {"expression": "23 * 19"}}]'
    provider = ScriptedProvider(
        [Step(chunks=hostile), Step(chunks=[made_up]), Step(chunks=["You're welcome!"])],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [CALCULATOR], THANKS, GREEDY)
    assert "".join(text) == "You're welcome!" and reply.tool_calls == []
    assert provider.requests[1].options.json_schema is not None
    assert provider.closed_early == 2  # the free answer at the lookahead, the calls at the first
    assert reply.record is not None
    assert (
        reply.record.reason
        == "the call's numbers are the tool prompt's examples', not said (calculator)"
    )


async def test_a_call_no_call_to_which_could_be_theirs_is_not_read_past_its_name() -> None:
    """ "Who painted the Mona Lisa?" holds nothing the calculator's arithmetic could: its
    call is left out at its name; the rest of it, which never comes here, is not awaited."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    provider = ScriptedProvider(
        [Step(chunks=['[{"name": "calculator"'], hang=True), Step(chunks=["Leonardo."])],
        constrains_json=True,
    )
    run = constrained_run(provider, [CALCULATOR], "Who painted the Mona Lisa?", GREEDY)
    text, reply = await asyncio.wait_for(run, 10)
    assert "".join(text) == "Leonardo." and reply.tool_calls == []
    assert [r.options.json_schema for r in provider.requests] == [None, None]
    assert reply.record is not None and reply.record.reason == (
        "the request is not about calculator, and its arguments could hold nothing the "
        "person said (as the answer named it)"
    )


async def test_a_call_about_its_tool_is_not_read_past_its_name() -> None:
    from desktop.core.tools.builtin.calculator import CALCULATOR

    written = '[{"name": "calculator", "arguments": {"expression": "2 + 2"}}]'
    provider = ScriptedProvider(
        [Step(chunks=['[{"name": "calculator", ', '"arguments": {"expression": "2 + 2"}}]']),
         Step(chunks=[written])],
        constrains_json=True,
    )  # fmt: skip
    _, reply = await constrained_run(provider, [CALCULATOR], "Calculate 2 + 2", GREEDY)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", {"expression": "2 + 2"})
    ]
    assert provider.requests[1].options.json_schema is not None  # written under the grammar


async def test_of_several_calls_only_the_persons_are_made() -> None:
    from desktop.core.tools.builtin.calculator import CALCULATOR

    both = (
        '[{"name": "calculator", "arguments": {"expression": "3 * 4"}},'
        ' {"name": "current_time", "arguments": {}}]'
    )
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "calculator"']), Step(chunks=[both])], constrains_json=True
    )
    _, reply = await constrained_run(provider, [CALCULATOR, CLOCK], "What is 3 * 4?")
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", {"expression": "3 * 4"})
    ]
    assert reply.record is not None and reply.record.verdict == "call"
    assert reply.record.reason.endswith("left out: the request is not about current_time")


async def test_the_calls_stop_being_written_at_the_first_made_up_one() -> None:
    """A model that lists made-up calls lists several: the writing stops at the first one
    that is not the person's, and its answer is asked for in words."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    made_up = '[{"name": "calculator", "arguments": {"expression": "23 * 19"}}'
    more = ', {"name": "current_time", "arguments": {"timezone": "Asia/Tokyo"}}]'
    provider = ScriptedProvider(
        [
            Step(chunks=['{"name": "calculator"']),
            Step(chunks=[made_up, more]),
            Step(chunks=["You're welcome!"]),
        ],
        constrains_json=True,
    )
    text, reply = await constrained_run(provider, [CALCULATOR, CLOCK], "Thanks, my essay is done!")
    assert provider.closed_early == 2  # the free answer at its call, the calls at the first
    assert reply.tool_calls == [] and "".join(text) == "You're welcome!"
    assert reply.record is not None and reply.record.verdict == "plain"
    assert (
        reply.record.reason
        == "the call's numbers are the tool prompt's examples', not said (calculator)"
    )


async def test_calls_before_a_made_up_one_are_made() -> None:
    from desktop.core.tools.builtin.calculator import CALCULATOR

    mine = '[{"name": "calculator", "arguments": {"expression": "3 * 4"}}'
    made_up = ', {"name": "current_time", "arguments": {}}'
    provider = ScriptedProvider(
        [Step(chunks=['{"name": "calculator"']), Step(chunks=[mine, made_up, ", {"])],
        constrains_json=True,
    )
    _, reply = await constrained_run(provider, [CALCULATOR, CLOCK], "What is 3 * 4?")
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", {"expression": "3 * 4"})
    ]
    assert provider.closed_early == 2
    assert reply.record is not None and reply.record.verdict == "call"
    assert reply.record.reason.endswith("left out: the request is not about current_time")


async def test_a_held_answer_that_goes_on_into_a_call_ends_before_it() -> None:
    """The second look said no call: a call the paused answer opens after its prose is not
    made, and not shown."""
    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    messages = [*earlier, Message.user("Tell me about rust")]
    provider = ScriptedProvider(
        [
            Step(chunks=["Rust", " is a language.", "\n" + CALL, " more"]),
            Step(odds=[("{", 0.5), ("I", 0.5)]),
        ],
        constrains_json=True, reports_token_odds=True, takes_grammar=True,
    )  # fmt: skip
    track = gated(provider, 0.9, 0.6, None, "calibrated 2026-12-02")
    events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    reply = next(e for e in events if isinstance(e, Reply))
    assert shown.strip() == "Rust is a language." == reply.text.strip()
    assert reply.tool_calls == [] and len(provider.requests) == 2
    assert provider.closed_early == 1


async def test_the_track_lists_the_tools_in_its_calibrated_form() -> None:
    from dataclasses import replace

    from desktop.core.tracks.choice import on_track
    from tests.core.calibration.test_card import calibrated

    card = replace(calibrated("constrained", 9, 10), tool_form="tools tag")
    provider = ScriptedProvider([Step(chunks=["Rust."])], constrains_json=True)
    track, name = on_track(provider, "emulated", card)
    assert name == "emulated" and isinstance(track, ConstrainedTools)
    [e async for e in track.stream([Message.user("Search for rust")], [SEARCH], GREEDY)]
    system = provider.requests[0].messages[0].text
    assert "<tools>" in system and '"name": "search"' in system


# --- the next turn's prompts, read ahead ---------------------------------------------------

EARLIER = [
    Message.system("Be brief."),
    Message.user("What time is it?"),
    Message.assistant("", [ToolCall("c1", "clock", {})]),
    Message.tool("c1", "clock", "12:30"),
    Message.assistant("It is 12:30."),
]


async def read_ahead(slots: int) -> ScriptedProvider:
    provider = ScriptedProvider(
        ["x", "x", "x"], capabilities=Capabilities(slots=slots), constrains_json=True,
        reports_token_odds=True, takes_grammar=True,
    )  # fmt: skip
    asked = RequestOptions(max_tokens=1, temperature=0, warm_up=True)
    events = [e async for e in gated(provider).stream([*EARLIER, Message.user("")],
                                                        [SEARCH, CLOCK], asked)]  # fmt: skip
    assert not [e for e in events if isinstance(e, TextChunk) and e.text != "x"]
    return provider


async def test_the_warm_up_reads_the_prompts_a_turns_first_step_reads() -> None:
    """The conversation's prompt with the tools (the free answer's), the one in words
    (an answer without the tools) and the turn alone's (the second look's), each in a
    slot of its own: equal to what the next turn sends up to its request, so the server
    reads only that."""
    provider = await read_ahead(slots=3)
    main, in_words, alone = provider.requests
    assert [r.options.aside for r in provider.requests] == [None, "in words", "turn alone"]
    assert main.tools == in_words.tools == alone.tools == []  # the prompts carry the tools
    assert "It is 12:30." in main.messages[0].text  # the ended turn is in the transcript
    # The next turn: its free answer names no offered tool, and is answered in words.
    after = ScriptedProvider(
        [Step(chunks=['{"name": "joke", "arguments": {}}']), "Why did it?"],
        capabilities=Capabilities(slots=3), constrains_json=True, reports_token_odds=True,
        takes_grammar=True,
    )  # fmt: skip
    request = [*EARLIER, Message.user("Tell me a joke.")]
    [e async for e in gated(after).stream(request, [SEARCH, CLOCK], GREEDY)]
    free, plain = after.requests
    assert plain.options.aside == "in words"
    for warm, asked in ((main, free), (in_words, plain)):
        assert warm.messages[:-1] == asked.messages[:-1]
        assert (warm.messages[-1].text, asked.messages[-1].text) == ("", "Tell me a joke.")
    # A turn whose call is under its bar in context, so the turn is asked alone.
    script: list[Script] = [
        Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.5)]), Step(odds=[("{", 0.95)]),
        Step(chunks=[CALL]),
    ]  # fmt: skip
    looking = ScriptedProvider(script, capabilities=Capabilities(slots=3),
                               constrains_json=True, reports_token_odds=True)  # fmt: skip
    request = [*EARLIER, Message.user("Search for rust")]
    [e async for e in gated(looking, 0.9, 0.6).stream(request, [SEARCH, CLOCK], GREEDY)]
    looked = looking.requests[2]
    assert looked.options.aside == "turn alone"
    assert alone.messages[:-1] == looked.messages[:-1]
    assert (alone.messages[-1].text, looked.messages[-1].text) == ("", "Search for rust")
    assert "It is 12:30." not in alone.messages[0].text  # no transcript: the turn alone


async def test_with_two_slots_the_turn_alone_is_not_read_ahead() -> None:
    """Its aside shares the second slot with the answer in words, which every turn may
    read; reading both ahead, the second would push the first out."""
    provider = await read_ahead(slots=2)
    assert [r.options.aside for r in provider.requests] == [None, "in words"]


async def test_with_one_slot_only_the_conversations_prompt_is_read_ahead() -> None:
    """The answer in words would take the one slot from the prompt every turn starts with."""
    provider = await read_ahead(slots=1)
    (main,) = provider.requests
    assert main.options.aside is None and "You can use tools" in main.messages[0].text


async def test_an_answer_that_loops_ends_after_its_first_saying_and_says_why() -> None:
    """A sampled answer fell into a loop: held for a second look, it goes on, and ends once
    its item has been said over and over, the request closed and the repeats never shown.
    The answer in words after a call turned down ends likewise."""
    from desktop.core.tracks.repeats import NOTICE

    item = "**Prepare for the interview**: practise common questions."
    head = "To prepare:\n1. Review the job description.\n"
    looping = [head, *(f"{n}. {item}\n" for n in range(2, 60))]
    earlier = [Message.user("Hi!"), Message.assistant("Hello!")]
    messages = [*earlier, Message.user("What should I prepare for a job interview?")]
    held = [Step(chunks=looping), Step(odds=[("{", 0.1), ("To", 0.9)])]
    turned_down = [Step(chunks=[CALL]), Step(odds=[("{", 0.2), ("To", 0.8)]),
                   Step(odds=[("{", 0.3), ("To", 0.7)]), Step(chunks=looping)]  # fmt: skip
    for script in (held, turned_down):
        provider = ScriptedProvider(
            list(script), constrains_json=True, reports_token_odds=True, takes_grammar=True
        )
        track = gated(provider, 0.9, 0.6, None, "calibrated 2026-12-06")
        events = [e async for e in track.stream(messages, [SEARCH], GREEDY)]
        shown = "".join(e.text for e in events if isinstance(e, TextChunk))
        reply = next(e for e in events if isinstance(e, Reply))
        assert shown == reply.text == f"{head}2. {item}\n"
        assert [e.message for e in events if isinstance(e, Notice)] == [NOTICE]
        assert provider.closed_early >= 1 and provider.script == []


async def test_a_loop_the_model_ends_by_itself_is_left_out_of_the_answer() -> None:
    """Its repeats were held, never shown: they stay out of the reply too, and nothing was
    cut short, so nothing is said of it."""
    item = "Practise the interview process with a friend, out loud."
    head = "1. Research the job description carefully.\n"
    answer = head + "\n".join(f"{n}. {item}" for n in range(2, 6))
    provider = ScriptedProvider([Step(chunks=[answer])], constrains_json=True)
    events = [e async for e in ConstrainedTools(provider).stream(
        [Message.user("What should I prepare?")], [SEARCH], GREEDY)]  # fmt: skip
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    reply = next(e for e in events if isinstance(e, Reply))
    assert shown == reply.text == f"{head}2. {item}\n"
    assert not [e for e in events if isinstance(e, Notice)] and provider.closed_early == 0
