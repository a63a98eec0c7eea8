"""The calibration questions, built from the offered tools themselves: a call due alone,
beside other tools, two at once, after earlier turns; and no call due: the request with its
tool withheld, chit-chat, a near-miss, the step after a call's result, a question the last
result answers."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import RequestOptions
from desktop.core.tool_spec import Example, ToolSpec
from desktop.core.tools.selection import SELECTED

CaseKind = Literal[
    "call",
    "calls",
    "distracted",
    "later",
    "unfit",
    "unfit-later",
    "chat",
    "near-miss",
    "result",
    "answered",
]
# The kinds asked after earlier turns: they set the bar for such requests (models open
# their calls less surely there), the rest the bar for a first request.
LATER_KINDS: frozenset[CaseKind] = frozenset({"later", "unfit-later", "answered"})
TrackName = Literal["constrained", "emulated", "native"]

# Questions read at their opening (a second or two each): enough to place a bar (half of
# them with a call due), few enough for a 0.5B model on two CPU cores in about two minutes.
MAX_CASES = 40
# The questions are made from this many examples (enough for every kind of question), and
# only their tools are offered beside them.
ASKED = 10
# Of those, this many due and as many not are answered in full, for the card and for the
# native track.
FULL_ANSWERS = 6
# At most this many tools beside a question: as many as a turn offers when tool selection
# picks, so that a few hundred tools still make short prompts.
OFFERED = SELECTED
# Requests no tool serves: the model should answer them in words.
CHIT_CHAT = (
    "Tell me a short joke.",
    "Hi! How are you today?",
    "Write a two-line poem about autumn.",
    "Thanks, that is all I needed.",
    "What does the word 'ephemeral' mean?",
    "Give me one tip for sleeping better.",
)
# Each calibration question runs with the same seed and temperature 0: a calibration is a
# measurement, the same on every run.
OPTIONS = RequestOptions(temperature=0, seed=11, max_tokens=256)
# The call gate may turn at most this share of right calls into text answers: a call
# that is due is what tools are for. Below that it turns down all the unwanted calls it can.
KEEP_RIGHT_CALLS = 0.9
# How deep the questions asked "after earlier turns" are: four turns, as in a chat that has
# already used a tool or two.
EARLIER_TURNS = 4
# Where no call is due and the track cannot stop at the answer's opening, this many tokens
# show whether it calls (a call cut short still counts as one).
QUIET_TOKENS = 48


@dataclass(frozen=True)
class Case:
    """One calibration question: the conversation, the tools offered, and the calls that
    answer it (none where the model should answer in words)."""

    kind: CaseKind
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    expected: tuple[tuple[str, dict[str, Any]], ...] = ()

    @property
    def due(self) -> bool:
        return bool(self.expected)


def cases_for(
    tools: Sequence[ToolSpec], seed: int = 0, *, examples_in_prompt: bool = True
) -> list[Case]:
    """Calibration questions built from `tools`: each example gives a call that is due
    (alone, with other tools beside it, two at once, after earlier turns) and a request no
    offered tool fits (its own tool withheld, first or after earlier turns); chit-chat, a
    near-miss about a tool, the step right after the call's result (where some forms of
    the tool prompt have a model write the same call again) and a question the last result
    answers need no call. Half the cases, at most, are due calls.

    `examples_in_prompt=False`: the questions still come from the examples, but the tools
    are offered without them, as the turns to be judged will offer them (shown other
    tools' examples, a small model was surer both ways, and its bars did not hold where no
    example is shown)."""
    rng = random.Random(seed)
    examples = [(tool, example) for tool in tools for example in tool.examples[:2]]
    rng.shuffle(examples)
    examples = examples[:ASKED]
    if not examples:
        return []  # nothing to measure a call against
    # The tools beside a question come from a few fixed groups of the asked tools, so that
    # many questions share their prompt's tool block and the server evaluates it once.
    asked = _in_order(tools, list({t.name: t for t, _ in examples}.values()))
    groups = [asked[i : i + OFFERED] for i in range(0, len(asked), OFFERED)]

    def group_of(tool: ToolSpec) -> list[ToolSpec]:
        return next(g for g in groups if tool in g)

    def beside(tool: ToolSpec) -> list[ToolSpec]:
        return [t for t in group_of(tool) if t.name != tool.name]

    def withheld(tool: ToolSpec) -> list[ToolSpec]:
        """A group without the tool: the next one, or its own without it."""
        at = groups.index(group_of(tool))
        return groups[(at + 1) % len(groups)] if len(groups) > 1 else beside(tool)

    due: list[Case] = []
    quiet: list[Case] = []
    for tool, example in examples:
        expected: tuple[tuple[str, dict[str, Any]], ...] = ((tool.name, dict(example.arguments)),)
        ask = (Message.user(example.prompt),)
        fresh = _without(tool, example)
        due.append(Case("call", ask, (fresh,), expected))
        if others := beside(tool):
            due.append(Case("distracted", ask, tuple(_in_order(tools, [fresh, *others])), expected))
        if unrelated := withheld(tool):
            quiet.append(Case("unfit", ask, tuple(unrelated), ()))
    for at, ((one, first), (two, second)) in enumerate(
        zip(examples[::2], examples[1::2], strict=False)
    ):
        # Deep in a conversation: asked after EARLIER_TURNS turns, every other one with a
        # call and its result, the rest chit-chat. Models open calls less surely the deeper
        # they are, so the later bar is placed as deep as chats get.
        before: list[Message] = []
        earlier: list[tuple[ToolSpec, Example]] = []
        for turn in range(EARLIER_TURNS):
            if turn % 2 == 0:
                used, example = _earlier_call(examples, at, turn, (one, first), (two, second))
                earlier.append((used, example))
                before += _a_turn_with_a_call(used, example)
            else:
                chat = CHIT_CHAT[(len(due) + turn) % len(CHIT_CHAT)]
                before += [Message.user(chat), Message.assistant("Sure, here you go.")]
        expected = ((one.name, dict(first.arguments)),)
        shown = {t.name: t for t, _ in earlier if t.name != one.name}
        offered = _in_order(tools, [_without(one, first), *shown.values()])
        later = (*before, Message.user(first.prompt))
        due.append(Case("later", later, tuple(offered), expected))
        if unrelated := withheld(one):
            quiet.append(Case("unfit-later", later, tuple(unrelated), ()))
        if one.name != two.name:
            both = Message.user(f"{first.prompt.rstrip('.?! ')}. Also: {second.prompt}")
            expected = ((one.name, dict(first.arguments)), (two.name, dict(second.arguments)))
            pair = [_without(one, first), _without(two, second)]
            due.append(Case("calls", (both,), tuple(_in_order(tools, pair)), expected))

    quiet += [
        Case("chat", (Message.user(text),), tuple(groups[at % len(groups)]))
        for at, text in enumerate(CHIT_CHAT)
    ]
    for tool, example in examples:
        about = tool.name.replace("_", " ").replace("-", " ")
        question = Message.user(f"In a sentence: what is {about} good for?")
        quiet.append(Case("near-miss", (question,), tuple(group_of(tool))))
        fresh_group = tuple(_without(tool, example) if t is tool else t for t in group_of(tool))
        quiet.append(Case("result", _a_call_and_its_result(tool, example), fresh_group))
        conversation = (*_a_turn_with_a_call(tool, example), Message.user("Thanks! Did it work?"))
        quiet.append(Case("answered", conversation, tuple(group_of(tool))))
    rng.shuffle(due)
    rng.shuffle(quiet)
    quiet_count = min(len(quiet), max(MAX_CASES // 2, MAX_CASES - len(due)))
    chosen = _by_kind(due, MAX_CASES - quiet_count) + _by_kind(quiet, quiet_count)
    rng.shuffle(chosen)
    if not examples_in_prompt:
        return [replace(c, tools=tuple(replace(t, examples=()) for t in c.tools)) for c in chosen]
    return chosen


def _earlier_call(
    examples: Sequence[tuple[ToolSpec, Example]],
    pair: int,
    turn: int,
    asked: tuple[ToolSpec, Example],
    paired: tuple[ToolSpec, Example],
) -> tuple[ToolSpec, Example]:
    """The tool and example of an earlier turn's call: the paired example first, then
    others in turn, never the question's own example (that would answer it already)."""
    if turn == 0:
        return paired
    other = examples[(2 * pair + 2 + turn) % len(examples)]
    return paired if other[1] == asked[1] else other


def _a_call_and_its_result(tool: ToolSpec, example: Example) -> tuple[Message, ...]:
    """The example's request, its call and a result: the answer in words is next."""
    call = ToolCall("earlier", tool.name, dict(example.arguments))
    return (
        Message.user(example.prompt),
        Message.assistant("", [call]),
        Message.tool(call.id, tool.name, '{"ok": true, "result": "done"}'),
    )


def _a_turn_with_a_call(tool: ToolSpec, example: Example) -> tuple[Message, ...]:
    """An earlier turn: the example's request, its call, a result, a short answer."""
    return (*_a_call_and_its_result(tool, example), Message.assistant("Done."))


def _by_kind(cases: list[Case], count: int) -> list[Case]:
    """`count` cases taken in turn from each kind: every kind as often as it can be (a
    bar set mostly by one kind of question would fit that kind only)."""
    kinds: dict[CaseKind, list[Case]] = {}
    for case in cases:
        kinds.setdefault(case.kind, []).append(case)
    chosen: list[Case] = []
    while len(chosen) < count and any(kinds.values()):
        for pool in kinds.values():
            if pool and len(chosen) < count:
                chosen.append(pool.pop(0))
    return chosen


def _in_order(tools: Sequence[ToolSpec], chosen: Sequence[ToolSpec]) -> list[ToolSpec]:
    """`chosen` in the toolbox's order (as a turn offers them)."""
    order = {t.name: i for i, t in enumerate(tools)}
    return sorted(chosen, key=lambda t: order[t.name])


def _without(tool: ToolSpec, example: Example) -> ToolSpec:
    """The tool as offered for a question made from one of its examples: without that
    example in its prompt. Shown its own question and call, a model is surer than any
    real request makes it."""
    return replace(tool, examples=tuple(e for e in tool.examples if e != example))
