from pathlib import Path

from desktop.core.messages import Message, ToolCall
from desktop.core.tool_spec import ToolSpec
from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tools.builtin.charts import CREATE_CHART
from desktop.core.tools.builtin.clock import CURRENT_TIME
from desktop.core.tracks.licence import (
    Reason,
    Refusal,
    content,
    licensed,
    refusal,
    refused_by_name,
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
    assert why == Reason("prompt_numbers", "calculator")
    why = refusal(call("calculator", expression="2 + 2"), CALCULATOR, hi)
    assert why == Reason("not_the_persons", "calculator")
    assert str(why) == (
        "the request is not about calculator, and the call's values are not the person's"
    )


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
    assert why == Reason("not_the_persons", "create_chart")


def test_a_call_made_again_after_its_result_is_left_out_unless_repeats_may_run() -> None:
    """Small models write the call they have just read the result of again; the
    deduplicator would refuse it, so it is left out before it is made, but for a tool
    whose repeats the person lets run. Another turn may make it again."""
    made = ToolCall("c1", "current_time", {"timezone": "Asia/Tokyo"})
    turn = [Message.user("What time is it in Tokyo?"), Message.assistant("", [made]),
            Message.tool("c1", "current_time", "2026-12-06T20:00:00+09:00")]  # fmt: skip
    again = call("current_time", timezone="Asia/Tokyo")
    why = refusal(again, CURRENT_TIME, turn)
    assert why == Reason("made_before", "current_time")
    assert str(why) == (
        "this call to current_time was made in this turn already; its result is above"
    )
    assert refusal(again, CURRENT_TIME, turn, repeats_allowed=("current_time",)) is None
    other = call("current_time", timezone="Asia/Seoul")
    assert refusal(other, CURRENT_TIME, turn) is None
    later = [
        *turn,
        Message.assistant("It is 20:00 in Tokyo."),
        Message.user("And the time in Tokyo now?"),
    ]
    assert refusal(again, CURRENT_TIME, later) is None
    kept, refused = licensed([again, other], [CURRENT_TIME], turn)
    assert kept == [other] and refused == [Refusal(Reason("made_before", "current_time"))]
    # One the loop refused (invalid, say) has no result to answer from: not made.
    refused_turn = [*turn[:2], Message.tool("c1", "current_time", "Invalid: ...", rejected=True)]
    assert refusal(again, CURRENT_TIME, refused_turn) is None


def test_a_call_with_no_values_needs_a_request_about_its_tool() -> None:
    clock = call("current_time")
    assert refusal(clock, CURRENT_TIME, [Message.user("What day of the week is it?")]) is None
    why = refusal(clock, CURRENT_TIME, [Message.user("Say hello in five words.")])
    assert why == Reason("not_about", "current_time")


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
    assert refused == [Refusal(Reason("not_about", "current_time"))]


def test_an_optional_argument_copied_from_an_example_is_left_out() -> None:
    clock = call("current_time", timezone="Asia/Tokyo")
    kept, refused = licensed([clock], [CURRENT_TIME], [Message.user("What time is it?")])
    assert [(c.name, c.arguments) for c in kept] == [("current_time", {})] and refused == []
    kept, _ = licensed([clock], [CURRENT_TIME], [Message.user("And in Tokyo?")])
    assert kept == [clock]
    # A required one stays: the call is judged whole.
    copied = call("calculator", expression="23 * 19")
    assert trimmed(copied, CALCULATOR, [Message.user("Hi")]) == copied


def test_an_optional_argument_written_as_its_described_default_is_left_out() -> None:
    standings = ToolSpec(
        "league_standings",
        "The standings of a team in a football league.",
        {
            "type": "object",
            "properties": {
                "team": {"type": "string", "description": "The team's name."},
                "season": {"type": "string", "description": "Default is 2023-2024."},
            },
            "required": ["team"],
        },
    )
    asked = [Message.user("Where does Liverpool stand in the league?")]
    written = call("league_standings", team="Liverpool", season="2023-2024")
    kept, refused = licensed([written], [standings], asked)
    assert refused == []
    assert [c.arguments for c in kept] == [{"team": "Liverpool"}]
    # Said by the person, the same season is theirs and stays.
    said = [Message.user("Where did Liverpool stand in 2023-2024?")]
    assert trimmed(written, standings, said) == written


def test_a_call_copying_a_tools_example_is_made_up_even_on_its_subject() -> None:
    clock = call("current_time", timezone="Asia/Tokyo")  # the tool's own example
    messages = [Message.user("Which day was the warmest?")]
    assert refusal(clock, CURRENT_TIME, messages) == Reason("copies_an_example", "current_time")
    asked = [Message.user("What day is it in Tokyo?")]
    assert refusal(clock, CURRENT_TIME, asked) is None


def test_words_any_request_may_use_do_not_make_it_about_a_tool() -> None:
    # "one" (in "a given one") and "instead" (in "instead of calculating yourself")
    why = refusal(call("current_time"), CURRENT_TIME, [Message.user("Ha, good one. Bye!")])
    assert why == Reason("not_about", "current_time")
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


def test_a_tool_whose_arguments_could_hold_nothing_said_is_refused_by_name() -> None:
    """The calculator's expression holds only arithmetic: for a request with no number
    that is about no offered tool, no call to it could be the person's. The clock's time
    zone and the chart's title are free text, which could hold what was said."""
    tools = [CALCULATOR, CURRENT_TIME, CREATE_CHART]
    mona_lisa = [Message.user("Who painted the Mona Lisa?")]
    refused = refused_by_name(tools, mona_lisa)
    assert list(refused) == ["calculator"]
    assert refused["calculator"] == Reason("holds_nothing_said", "calculator")
    # Every call to it the writing would make is one the last rule leaves out.
    for expression in ("23 * 19", "1 + 1", "eee"):
        assert refusal(call("calculator", expression=expression), CALCULATOR, mona_lisa)


def test_a_number_said_a_request_about_the_tool_or_a_result_lets_a_call_be_theirs() -> None:
    tools = [CALCULATOR, CURRENT_TIME, CREATE_CHART]
    assert refused_by_name(tools, [Message.user("And if I divide that by 2?")]) == {}
    # About a tool (the chart's "bar"): its calls are judged whole, and so are the others'.
    assert refused_by_name(tools, [Message.user("Which bar sold best?")]) == {}
    read = call("read_file", path="data.txt")
    after = [
        Message.user("Who wrote data.txt?"),
        Message.assistant("", [read]),
        Message.tool(read.id, "read_file", "6 and 7"),
    ]
    assert refused_by_name(tools, after) == {}


def test_only_a_schema_read_plainly_can_refuse_a_tool_by_name() -> None:
    from desktop.core.tool_spec import ToolSpec

    def tool(spec: dict[str, object], **more: object) -> ToolSpec:
        return ToolSpec("tally", "Add up", {"type": "object", "properties": {"x": spec}, **more})

    said = [Message.user("Who painted the Mona Lisa?")]
    never = [
        tool({"type": "integer"}),
        tool({"type": "array", "items": {"type": "number"}}),
        tool({"type": ["number", "null"]}),
        tool({"type": "boolean"}),
        tool({"type": "string", "pattern": "^[0-9.eE+-]+$"}),  # words of "e" alone
        tool({"enum": ["red", "blue"]}),
    ]
    for spec in never:
        assert list(refused_by_name([spec], said)) == ["tally"], spec.parameters
    could = [
        tool({"type": "string"}),
        tool({"type": "string", "pattern": "^[a-z ]+$"}),  # "paint" fits
        tool({"type": "string", "pattern": "^(?:mona|lisa)$"}),  # not read: it could
        tool({"type": "object"}),
        tool({"anyOf": [{"type": "integer"}]}),
        tool({"type": "array", "items": {"type": "string"}}),
        tool({"enum": ["Lisa", "Mona"]}),
        tool({"type": "integer"}, additionalProperties=True),
        tool({"type": "array", "items": _nested(20)}),
    ]
    for spec in could:
        assert refused_by_name([spec], said) == {}, spec.parameters
    # Patterns the tool's own check would refuse or warn of are not read either.
    from desktop.core.tracks.licence import _string_could_hold

    for pattern in ("^[[]+$", "^[a--z]+$", "^[z-a]+$"):
        assert _string_could_hold(pattern, set(), {"paint"}), pattern
    # Two letters may spell a word whose stem was said; one spells only itself.
    assert _string_could_hold("^[ab]+$", set(), {"paint"})
    assert _string_could_hold("^[0-9e]+$", set(), {"eee"})
    assert not _string_could_hold("^[0-9e]+$", set(), {"paint"})
    assert _string_could_hold("^[0-9e]+$", {"7"}, {"paint"})


def _nested(depth: int) -> dict[str, object]:
    """An array schema nested `depth` deep, of integers at the bottom: past the depth read,
    it could hold anything."""
    schema: dict[str, object] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def test_a_follow_up_adds_its_value_to_the_earlier_ones() -> None:
    earlier = [Message.user("What is 1234 * 5678?"), Message.assistant("It is 7006652.")]
    divide = call("calculator", expression="1234 * 5678 / 2")
    assert (
        refusal(divide, CALCULATOR, [*earlier, Message.user("And if I divide that by 2?")]) is None
    )
    # A value nobody said is still made up, and so is a call the request adds nothing to.
    made_up = call("calculator", expression="1234 * 5678 / 3 + 2")
    assert refusal(made_up, CALCULATOR, [*earlier, Message.user("And divided by 2?")]) is not None
    thanks = [*earlier, Message.user("Thanks, 2 thumbs up!")]
    assert refusal(call("calculator", expression="1234 * 5678"), CALCULATOR, thanks) is not None


def test_a_word_of_the_request_is_no_follow_up_of_earlier_values() -> None:
    """ "What were the total sales?" got a chart of the earlier sales titled "Sales":
    every value said, one word the request's, and still not what it asked."""
    messages = [
        Message.user("Our sales: Jan 120, Feb 95."),
        Message.assistant("Noted."),
        Message.user("Make a bar chart of those sales."),
        Message.assistant("Here it is."),
        Message.user("What were the total sales?"),
    ]
    chart = call("create_chart", type="bar", title="Sales", labels=["Jan", "Feb"], values=[120, 95])
    why = refusal(chart, CREATE_CHART, messages)
    assert why == Reason("not_the_persons", "create_chart")
