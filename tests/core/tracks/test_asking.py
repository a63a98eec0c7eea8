import json

import pytest

from desktop.core.tracks.asking import ListItems
from desktop.core.tracks.holdback import ProseGate

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
    assert not _judged([deep], lambda call: "never asked", accepted, refused)
    assert accepted == [deep] and refused == []


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
