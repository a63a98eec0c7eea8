import json
from decimal import Decimal

import pytest

from desktop.core.messages import Message, MessageMeta, ToolCall
from desktop.core.tracks.result_values import MAX_STATED_RESULT_CHARS, result_values


def turn(arguments: dict[str, object], result: str, **tool: object) -> list[Message]:
    call = ToolCall("c1", "tool", arguments)
    return [
        Message.system("You are helpful."),
        Message.user("an earlier request"),
        Message.assistant("It was 41."),
        Message.user("the request"),
        Message.assistant("", [call]),
        Message.tool("c1", "tool", result, **tool),  # type: ignore[arg-type]
    ]


PRODUCT = json.dumps({"expression": "1234 * 5678", "result": 7006652})
CLOCK = json.dumps({"iso": "2026-12-06T20:00:00+00:00", "date": "2026-12-06",
                    "time": "20:00:00", "weekday": "Sunday", "utc_offset": "+0000"})  # fmt: skip


def test_the_values_are_the_results_not_the_calls() -> None:
    values = result_values(turn({"expression": "1234 * 5678"}, PRODUCT))
    assert values.numbers == {Decimal(7006652)}
    assert values.words == set()  # the expression was the call's


@pytest.mark.parametrize(
    "answer",
    ["1234 times 5678 is 7,006,652.", "The product is 7006652", "It is 7006652.0.",
     "Result: 7006652!"],
)  # fmt: skip
def test_a_number_is_stated_in_its_usual_forms(answer: str) -> None:
    assert result_values(turn({"expression": "1234 * 5678"}, PRODUCT)).stated_in(answer)


@pytest.mark.parametrize(
    "answer",
    ["Hello! How can I assist you today?", "I'm sorry, I can't tell the time.",
     "1234 * 5678 is a big number.", "It is 7006653."],
)  # fmt: skip
def test_an_answer_past_the_result_states_none_of_it(answer: str) -> None:
    assert not result_values(turn({"expression": "1234 * 5678"}, PRODUCT)).stated_in(answer)


def test_a_rounded_number_and_a_word_value_count() -> None:
    pi = result_values(turn({"expression": "pi"}, json.dumps({"result": 3.14159})))
    assert pi.stated_in("About 3.14.") and pi.stated_in("Roughly 3.")
    assert not pi.stated_in("About 3.15.")
    clock = result_values(turn({}, CLOCK))
    assert clock.stated_in("Today is sunday.") and clock.stated_in("It is 20:00.")
    assert not clock.stated_in("Sundays are quiet.") and not clock.stated_in("It is late.")


@pytest.mark.parametrize(
    ("result", "tool"),
    [
        ("Created a bar chart titled 'Sales' with 4 data points.", {}),  # prose: read only
        (PRODUCT, {"rejected": True}),
        (PRODUCT, {"meta": MessageMeta(error="boom")}),
        (json.dumps({"text": "x" * MAX_STATED_RESULT_CHARS}), {}),  # a document
        ("[" * 150 + "]" * 150, {}),  # nothing but nesting
        ('{"big": 1e999, "nan": NaN}', {}),  # past a float's range
    ],
)
def test_nothing_to_state_asks_for_nothing(result: str, tool: dict[str, object]) -> None:
    assert not result_values(turn({}, result, **tool))


def test_a_huge_integer_is_a_value_and_matching_it_does_not_fail() -> None:
    values = result_values(turn({}, json.dumps({"result": 10**300})))
    assert values.numbers == {Decimal(10**300)}
    assert values.stated_in(str(10**300)) and not values.stated_in("About 1.5 or 2.")


def test_only_the_current_turns_results_count() -> None:
    earlier = turn({"expression": "1234 * 5678"}, PRODUCT)
    assert not result_values([*earlier, Message.assistant("7006652"), Message.user("Hi")])
