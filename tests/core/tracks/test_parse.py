import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.core.tracks.holdback import ProseGate
from desktop.core.tracks.parse import match_json_end, parse_answer
from tests.core.tracks.samples import calls

# --- the parser -----------------------------------------------------------------------


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
