import pytest

from tests.core.tracks.samples import CLOCK, SEARCH


def test_the_call_schema_can_pin_the_first_call_to_a_tool() -> None:
    """The free answer opened a call to current_time: the list starts with it, then any."""
    import jsonschema

    from desktop.core.tracks.step_calls import MAX_CALLS_PER_STEP, call_schema

    schema = call_schema([SEARCH, CLOCK], first="current_time")
    clock = {"name": "current_time", "arguments": {}}
    search = {"name": "search", "arguments": {"query": "x"}}
    for good in ([clock], [clock, search], [clock, clock, search], [clock] * MAX_CALLS_PER_STEP):
        jsonschema.validate(good, schema)
    for bad in ([search], [search, clock], [], [clock] * (MAX_CALLS_PER_STEP + 1), clock):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert call_schema([SEARCH, CLOCK], first="no_such_tool") == call_schema([SEARCH, CLOCK])


def test_the_call_schema_admits_only_lists_of_real_calls() -> None:
    import jsonschema

    from desktop.core.tracks.step_calls import MAX_CALLS_PER_STEP, call_schema

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


def test_a_name_means_the_offered_tool_it_is_a_separator_case_or_letter_away_from() -> None:
    from desktop.core.tracks.step_calls import offered_tool

    tools = [SEARCH, CLOCK]
    for written, meant in [
        ("current_time", "current_time"),
        ("Current-Time", "current_time"),
        ("current.time", "current_time"),
        ("get_current_time", "current_time"),
        ("serch", "search"),
        ("searches", "search"),
    ]:
        assert offered_tool(written, tools) == meant, written
    for made_up in ["joke", "tell_joke", "The Godfather", "calculate_sin", "", "time"]:
        assert offered_tool(made_up, tools) is None, made_up
