from desktop.core.messages import Image, Message, MessageMeta, ToolCall
from desktop.core.tracks.prompt import emulated_history, in_words, render_tool_prompt
from tests.core.tracks.samples import CLOCK, PNG, SEARCH

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
    # No made-up call for a tool without examples: its filler values were copied.
    assert prompt.count("example:") == 1 and 'current_time"' not in prompt


# --- earlier turns ----------------------------------------------------------------------


def _turn_with_a_call(question: str, call_id: str, answer: str) -> list[Message]:
    notes = Message.user("Your call to search was not run: no such tool.")
    notes.meta = MessageMeta(step_notes=1)
    images = Message.user("[Images from the tool results: search]", [Image.from_bytes(PNG)])
    images.meta = MessageMeta(tool_images=1, sent_to_model=True)
    return [
        Message.user(question),
        Message.assistant("Let me look.", [ToolCall(call_id, "search", {"query": question})]),
        Message.tool(call_id, "search", f"results for {question}"),
        notes,
        images,
        *([Message.assistant(answer)] if answer else []),
    ]


def test_earlier_turns_keep_their_words_and_drop_their_calls() -> None:
    """A small model shown an earlier call writes it again for the next request."""
    history = [
        Message.system("Be brief."),
        *_turn_with_a_call("rust", "c1", "Three notes on rust."),
        *_turn_with_a_call("go", "c2", ""),  # stopped before it answered
        *_turn_with_a_call("zig", "c3", "Two on zig."),
        Message.user("And python?"),
    ]
    shown = in_words(history)
    assert [(m.role, m.text) for m in shown] == [
        ("system", "Be brief."),
        ("user", "rust"),
        ("assistant", "Let me look."),
        ("assistant", "Three notes on rust."),
        ("user", "go"),
        ("assistant", "Let me look."),
        ("user", "zig"),
        ("assistant", "Let me look."),
        ("assistant", "Two on zig."),
        ("user", "And python?"),
    ]
    assert all(not m.tool_calls and not m.images for m in shown)
    rendered = emulated_history(history, [SEARCH])
    assert '"name": "search"' not in "".join(m.text for m in rendered[1:])


def test_an_earlier_turn_with_no_words_says_what_it_called() -> None:
    history = [
        Message.user("rust"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "rust"})]),
        Message.tool("c1", "search", "3 notes"),
        Message.user("thanks"),
    ]
    assert [m.text for m in in_words(history)] == [
        "rust",
        '(I called search with {"query": "rust"}.)',
        "thanks",
    ]


def test_the_current_turn_stays_whole() -> None:
    """Its calls, results, notes and images are what the model works from."""
    history = [
        *_turn_with_a_call("rust", "c1", "Three notes on rust."),
        *_turn_with_a_call("go", "c2", ""),
    ]
    shown = in_words(history)
    assert shown[3:] == history[6:]
    assert [m.text for m in shown[:3]] == ["rust", "Let me look.", "Three notes on rust."]


def test_while_tools_are_offered_earlier_turns_are_a_transcript_in_the_system_prompt() -> None:
    """A small model imitates its own earlier turns (their calls, or their lack of any):
    shown as a transcript, the request reads as the first."""
    photo = Message.user("What is in this photo?", [Image.from_bytes(PNG)])
    history = [
        Message.system("Be brief."),
        photo,
        Message.assistant("A cat."),
        *_turn_with_a_call("rust", "c1", "Three notes on rust."),
        Message.user("And python?"),
    ]
    rendered = emulated_history(history, [SEARCH])
    assert [m.role for m in rendered] == ["system", "user"]
    system = rendered[0].text
    assert system.startswith(
        "Be brief.\n\n"
        "Earlier in this conversation:\n"
        "User: What is in this photo? [1 image(s) attached]\n"
        "You: A cat.\n"
        "User: rust\n"
        "You: Let me look. Three notes on rust.\n\n"
    )
    assert system.endswith(render_tool_prompt([SEARCH]))  # the tools nearest the request
    request = rendered[1]
    assert request.text.endswith("And python?")  # the person's words come last
    assert len(request.images) == 1  # the photo stays a real image, for a model that sees


def test_the_transcript_grows_at_its_end_so_the_prompt_cache_keeps_it() -> None:
    """Only the last turn's lines and the tool prompt after them are read again."""
    first = [Message.user("rust"), Message.assistant("Three notes.")]
    second = [*first, Message.user("go"), Message.assistant("None.")]
    tools = render_tool_prompt([SEARCH])
    before = emulated_history([*first, Message.user("go")], [SEARCH])[0].text
    after = emulated_history([*second, Message.user("zig")], [SEARCH])[0].text
    assert before.endswith(tools) and after.endswith(tools)
    assert after.startswith(before.removesuffix(tools).rstrip())
    assert "User: go\nYou: None." in after.removeprefix(before.removesuffix(tools))


def test_without_tools_earlier_turns_stay_chat_turns() -> None:
    history = [Message.user("rust"), Message.assistant("Three notes."), Message.user("go")]
    assert emulated_history(history, []) == history


def test_without_tools_earlier_calls_and_results_are_left_out_and_the_current_ones_stay() -> None:
    """A model shown its earlier calls and results as chat turns wrote them back as its
    answer ("[Result of calculator] ..."); the current turn's results it needs."""
    history = [
        *_turn_with_a_call("rust", "c1", "Three notes on rust."),
        Message.user("And go?"),
        Message.assistant("", [ToolCall("c2", "search", {"query": "go"})]),
        Message.tool("c2", "search", "results for go"),
    ]
    sent = emulated_history(history, [])
    earlier = " ".join(m.text for m in sent[:2])
    assert earlier == "rust Let me look.\n\nThree notes on rust."
    assert "[Result of search]\nresults for go" in sent[-1].text
    assert "results for rust" not in " ".join(m.text for m in sent)
