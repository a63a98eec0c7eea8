from pathlib import Path

from desktop.core.messages import Message, ToolCall
from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tools.builtin.charts import CREATE_CHART
from desktop.core.tools.builtin.clock import CURRENT_TIME
from desktop.core.tracks.licence import (
    Refusal,
    content,
    licensed,
    refusal,
    tool_words,
    trimmed,
    values_of,
)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("c1", name, dict(arguments))


def test_numbers_are_read_as_values_whatever_their_spelling() -> None:
    assert content("1,234 apples and 5.50") == {"1234", "5.5", "appl"}
    assert values_of({"expression": "1234 * 5678"}) == {"1234", "5678"}


def test_examples_inside_a_description_say_nothing_of_what_a_tool_is_for() -> None:
    words = tool_words(CREATE_CHART)
    assert "chart" in words and "label" in words
    assert "month" not in words  # "one label per value, e.g. months"


def test_a_call_copying_the_prompts_example_for_a_greeting_is_made_up() -> None:
    hi = [Message.user("Hi there!")]
    why = refusal(call("calculator", expression="23 * 19"), CALCULATOR, hi)
    assert why == "the call copies an example of calculator"
    why = refusal(call("calculator", expression="2 + 2"), CALCULATOR, hi)
    assert why == "the request is not about calculator, and the call's values are not the person's"


def test_a_call_with_the_persons_own_values_is_theirs() -> None:
    messages = [Message.user("What is 1234 * 5678?")]
    assert refusal(call("calculator", expression="1234*5678"), CALCULATOR, messages) is None


def test_a_request_about_the_tool_licenses_values_from_earlier_turns() -> None:
    messages = [
        Message.user("Our sales: Jan 120, Feb 95."),
        Message.assistant("Noted."),
        Message.user("What were the total sales?"),
    ]
    assert refusal(call("calculator", expression="120 + 95"), CALCULATOR, messages) is None
    # The same values for a request that is not about arithmetic are made up.
    follow_up = [*messages[:2], Message.user("Thanks! Which month was best?")]
    why = refusal(call("create_chart", type="bar", title="Sales", labels=["Jan", "Feb"],
                       values=[120, 95]), CREATE_CHART, follow_up)  # fmt: skip
    assert why is not None and "not about create_chart" in why


def test_a_call_with_no_values_needs_a_request_about_its_tool() -> None:
    clock = call("current_time")
    assert refusal(clock, CURRENT_TIME, [Message.user("What day of the week is it?")]) is None
    why = refusal(clock, CURRENT_TIME, [Message.user("Say hello in five words.")])
    assert why == "the request is not about current_time"


def test_after_a_result_a_call_may_chain_on_what_the_results_said() -> None:
    read = call("read_file", path="data.txt")
    messages = [
        Message.user("Multiply the two values in data.txt"),
        Message.assistant("", [read]),
        Message.tool(read.id, "read_file", "6 and 7"),
    ]
    assert refusal(call("calculator", expression="6 * 7"), CALCULATOR, messages) is None
    made_up = call("calculator", expression="6 * 7 + 12 / 5 - 3")
    assert refusal(made_up, CALCULATOR, messages) is not None
    # Before any result, the same call's values are not the person's.
    assert refusal(call("calculator", expression="6 * 7"), CALCULATOR, messages[:1]) is not None


def test_only_the_persons_calls_are_kept() -> None:
    messages = [Message.user("What is 3 * 4?")]
    kept, refused = licensed(
        [call("calculator", expression="3 * 4"), call("current_time")],
        [CALCULATOR, CURRENT_TIME],
        messages,
    )
    assert [c.name for c in kept] == ["calculator"]
    assert refused == [Refusal("current_time", "the request is not about current_time")]


def test_an_optional_argument_copied_from_an_example_is_left_out() -> None:
    clock = call("current_time", timezone="Asia/Tokyo")
    kept, refused = licensed([clock], [CURRENT_TIME], [Message.user("What time is it?")])
    assert [(c.name, c.arguments) for c in kept] == [("current_time", {})] and refused == []
    kept, _ = licensed([clock], [CURRENT_TIME], [Message.user("And in Tokyo?")])
    assert kept == [clock]
    # A required one stays: the call is judged whole.
    copied = call("calculator", expression="23 * 19")
    assert trimmed(copied, CALCULATOR, [Message.user("Hi")]) == copied


def test_a_call_copying_a_tools_example_is_made_up_even_on_its_subject() -> None:
    clock = call("current_time", timezone="Asia/Tokyo")  # the tool's own example
    messages = [Message.user("Which day was the warmest?")]
    assert refusal(clock, CURRENT_TIME, messages) == "the call copies an example of current_time"
    asked = [Message.user("What day is it in Tokyo?")]
    assert refusal(clock, CURRENT_TIME, asked) is None


def test_words_any_request_may_use_do_not_make_it_about_a_tool() -> None:
    # "one" (in "a given one") and "instead" (in "instead of calculating yourself")
    why = refusal(call("current_time"), CURRENT_TIME, [Message.user("Ha, good one. Bye!")])
    assert why == "the request is not about current_time"
    sum_ = call("calculator", expression="3 + 4")
    assert refusal(sum_, CALCULATOR, [Message.user("Make it about winter instead.")]) is not None


def test_a_value_shared_with_an_example_by_chance_is_no_copy(tmp_path: Path) -> None:
    from desktop.core.tools.builtin.workspace import Workspace, workspace_tools

    write = next(t for t in workspace_tools(Workspace(tmp_path)) if t.name == "write_file")
    # The example writes "buy milk" to todo.txt; this call shares only "txt" with it.
    saved = call("write_file", path="a.txt", content="x")
    assert refusal(saved, write, [Message.user("Save")]) is None


def test_arguments_nested_however_deep_are_read_without_recursion() -> None:
    from desktop.core.tracks.licence import values_of

    nested: object = ["Paris"]
    for _ in range(100_000):
        nested = [nested]
    assert values_of({"city": nested, "days": {"n": 3}}) == {"pari", "3"}
