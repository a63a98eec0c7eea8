import json

import pytest

from desktop.core.tracks.asking import ListItems

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
