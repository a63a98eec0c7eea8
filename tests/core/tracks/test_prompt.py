from desktop.core.tracks.prompt import render_tool_prompt
from tests.core.tracks.samples import CLOCK, SEARCH

# --- the prompt -----------------------------------------------------------------------


def test_prompt_shows_name_description_schema_required_and_examples() -> None:
    prompt = render_tool_prompt([SEARCH, CLOCK])
    assert "- search: Search the notes" in prompt
    assert '"query": {"type": "string"}' in prompt
    assert "required: query" in prompt  # the reference hid which arguments are required
    assert (
        'example: "find my notes on rust" -> {"name": "search", "arguments": {"query": "rust"}}'
        in prompt
    )
    assert "- current_time: The time now" in prompt
    assert "required: none" in prompt
    assert 'call shape: {"name": "current_time", "arguments": {}}' in prompt
