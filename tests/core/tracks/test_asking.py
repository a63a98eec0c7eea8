import json

import pytest

from desktop.core.messages import Message
from desktop.core.providers.base import Constrained, RequestOptions
from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tracks.asking import ListItems, constrained_calls
from desktop.core.tracks.gate import ConstrainedCalls
from desktop.core.tracks.holdback import ProseGate
from desktop.core.tracks.licence import Licence, Reason
from tests.core.tracks.samples import CLOCK, SEARCH
from tests.support.fakes import ScriptedProvider, Step

CALLS = [
    {"name": "search", "arguments": {"query": 'a "quoted" {brace} [and] \\ slash'}},
    {"name": "chart", "arguments": {"data": [{"label": "Jan", "value": 1}], "nested": {"a": {}}}},
    {"name": "current_time", "arguments": {}},
]


@pytest.mark.parametrize("size", [1, 3, 10_000])
def test_each_call_of_a_streaming_list_is_given_once_complete(size: int) -> None:
    text = json.dumps(CALLS)
    items = ListItems()
    given: list[tuple[int, str]] = []
    for at in range(0, len(text), size):
        given += [(at + size, item) for item in items.feed(text[at : at + size])]
    assert [json.loads(item) for _, item in given] == CALLS
    # Each is given by the chunk that closes it, not later.
    for end, item in given:
        closing = text.index(item) + len(item)
        assert closing <= end < closing + size


def test_an_unfinished_call_is_not_given() -> None:
    items = ListItems()
    assert items.feed('[{"name": "search", "arguments": {"query": "}"}') == []
    assert items.feed("}") == ['{"name": "search", "arguments": {"query": "}"}}']


def test_a_call_nested_past_the_parsers_depth_is_left_to_validation() -> None:
    from desktop.core.tracks.asking import _judged

    deep = '{"name": "search", "arguments": {"q": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    from desktop.core.tracks.licence import Refusal

    accepted: list[str] = []
    refused: list[Refusal] = []
    licence = Licence([SEARCH], [Message.user("Hi")], {})
    assert not _judged([deep], licence, accepted, refused)
    assert accepted == [deep] and refused == []


def test_the_item_being_written_is_known_as_it_streams() -> None:
    items = ListItems()
    items.feed('[{"name": "calc')
    assert items.opening(300) == '{"name": "calc'
    assert items.opening(4) == '{"na'  # however long the item grows
    items.feed('ulator", "arguments": {}}, ')
    assert items.opening(300) == ""


async def write(request: str, chunks: list[str]) -> tuple[ScriptedProvider, ConstrainedCalls]:
    """The calls written under the grammar, weighed, judged by the licence of `request`."""
    tools = [CALCULATOR, CLOCK]
    provider = ScriptedProvider([Step(chunks=chunks, chosen=[(c, 0.99) for c in chunks])])
    licence = Licence.of(tools, [Message.user(request)])
    part = Constrained(None, weigh=True)
    written = await constrained_calls(
        provider, [], tools, RequestOptions(), part, [t.name for t in tools], licence
    )
    return provider, written


async def test_the_writing_stops_at_the_name_of_a_tool_no_call_to_which_could_be_theirs() -> None:
    """For "Who painted the Mona Lisa?" a calculator call holds only arithmetic: refused at
    its name, its arguments are never written, and nothing was weighed."""
    chunks = ['[{"name": ', '"calculator"', ', "arguments": {"expression": ', '"23 * 19"}}]']
    provider, written = await write("Who painted the Mona Lisa?", chunks)
    assert written.calls == [] and [r.name for r in written.refused] == ["calculator"]
    assert written.refused[0].reason == Reason("holds_nothing_said", "calculator")
    assert written.arguments is None
    assert provider.closed_early == 1 and written.raw == '[{"name": "calculator"'
    # A number said: the call could be theirs, and is written and weighed whole.
    provider, written = await write("Is 23 * 19 more than 400?", chunks)
    assert [c.name for c in written.calls] == ["calculator"] and written.arguments == 0.99


async def test_calls_before_one_refused_by_its_name_are_kept_and_weighed() -> None:
    chunks = ['[{"name": "calculator", "arguments": {"expression": "3 * 4"}}, ',
              '{"name": "current_time"', ', "arguments": {}}]']  # fmt: skip
    provider, written = await write("What is 3 * 4?", chunks)
    assert [c.name for c in written.calls] == ["calculator"]
    assert [r.name for r in written.refused] == ["current_time"]
    assert written.arguments == 0.99 and provider.closed_early == 1


def _expression_call(expression: str, piece: int = 7) -> list[str]:
    text = json.dumps([{"name": "calculator", "arguments": {"expression": expression}}])
    return [text[at : at + piece] for at in range(0, len(text), piece)]


async def _written(
    chunks: list[str], history: list[Message]
) -> tuple[ScriptedProvider, ConstrainedCalls]:
    provider = ScriptedProvider([Step(chunks=chunks)])
    part = Constrained(None)
    written = await constrained_calls(
        provider, history, [CALCULATOR], RequestOptions(), part, ["calculator"]
    )
    return provider, written


async def test_a_call_going_round_in_circles_under_the_grammar_is_stopped() -> None:
    """Greedy under the grammar, a model cycling through the numbers it may write never
    leaves the circle: it is stopped soon after its floor, broken, as the budget would."""
    from desktop.core.tracks.asking import CIRCLING, CIRCLING_LENGTH

    circle = "120 * 95 + 120 * 180 + 180 * 140 + 180 * 95 + 180 * 120 + "
    chunks = _expression_call("2 * 120 + 7 * 95 + " + circle * 80)
    provider, written = await _written(chunks, [Message.user("What were the total sales?")])
    assert written.calls == [] and [b.name for b in written.broken] == ["calculator"]
    assert written.broken[0].reason == CIRCLING and written.finish_reason == "length"
    assert provider.closed_early == 1
    assert CIRCLING_LENGTH <= len(written.raw) < CIRCLING_LENGTH + 2 * len(circle)


@pytest.mark.parametrize(
    ("expression", "asked"),
    [
        ("1 + " * 200 + "1", "Add 1 two hundred and one times."),  # under the floor
        ("1.5 + " * 400 + "1", "What is " + "1.5 + " * 400 + "1?"),  # the person's own
    ],
)
async def test_a_long_call_repeating_what_is_meant_is_written_to_its_end(
    expression: str, asked: str
) -> None:
    chunks = _expression_call(expression)
    provider, written = await _written(chunks, [Message.user(asked)])
    assert [c.arguments for c in written.calls] == [{"expression": expression}]
    assert written.broken == [] and provider.closed_early == 0


def test_the_grammar_writes_only_arguments_its_schema_allows() -> None:
    from desktop.core.tracks.asking import grammar_writes
    from tests.core.tracks.samples import SEARCH

    assert grammar_writes(SEARCH, {"query": "rust", "limit": 3})
    assert not grammar_writes(SEARCH, {"query": "rust", "result": 3})  # outside the schema
    assert not grammar_writes(SEARCH, {"query": 7})  # another type
    assert not grammar_writes(SEARCH, {})  # its required argument missing
    assert not grammar_writes(SEARCH, ["rust"])


def _held(text: str) -> ProseGate:
    gate = ProseGate()
    gate.feed(text)
    assert gate.holding
    return gate


def test_a_call_going_round_in_circles_is_not_read_to_the_lookahead() -> None:
    """A model that repeats made-up arguments would otherwise be read for the whole
    lookahead before its call is written under the grammar."""
    from desktop.core.tools.builtin.calculator import CALCULATOR
    from desktop.core.tracks.asking import WHOLE_CALL_LOOKAHEAD, whole_call

    start = '{"name": "calculator", "arguments": {"expression": "capital of Italy", '
    circle = '"pattern": "^[A-Z]+", "description": "e.g. Rome", '
    stream = start + circle * (WHOLE_CALL_LOOKAHEAD // len(circle) + 1)
    read = len(start)
    while not whole_call(_held(stream[:read]), CALCULATOR)[0]:
        read += read % 7 + 1  # streamed in uneven pieces
    assert read < len(start) + 4 * len(circle)
    text = stream[:read]
    assert whole_call(_held(text), CALCULATOR) == (True, None)


@pytest.mark.parametrize(
    "arguments",
    [
        {"expression": "(12.5 * 4) + (12.5 * 4) + (12.5 * 4) + (12.5 * 4) - 7"},
        {"expression": "1234.5678 * 1234.5678 - 1234.5678 / 1234.5678 + 1234.5678 * 2"},
    ],
)
def test_a_call_with_repeated_pieces_is_still_read_to_its_end(arguments: dict[str, str]) -> None:
    """(A value repeating one short piece for longer, "1 + 1 + 1 + ...", is written under
    the grammar instead: one request more.)"""
    from desktop.core.messages import ToolCall
    from desktop.core.tools.builtin.calculator import CALCULATOR
    from desktop.core.tracks.asking import whole_call

    text = json.dumps({"name": "calculator", "arguments": arguments})
    for end in range(len(text) - 1):  # every point it could be read at, unfinished
        assert whole_call(_held(text[: end + 1]), CALCULATOR) == (False, None)
    assert whole_call(_held(text), CALCULATOR) == (True, ToolCall("", "calculator", arguments))


def test_repetition_is_the_tail_written_twice_before() -> None:
    from desktop.core.tracks.asking import REPEATED_STRETCH, repeats_itself

    piece = "x" * (REPEATED_STRETCH - 1) + "|"
    assert not repeats_itself(piece)
    assert not repeats_itself(piece * 2)  # once before: a value copied twice
    assert repeats_itself(piece * 3)
    assert not repeats_itself("a" * (REPEATED_STRETCH - 1))
    assert repeats_itself("a" * (REPEATED_STRETCH + 2))
