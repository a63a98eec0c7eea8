from desktop.core.events import Notice, Reply, TextChunk, ThinkingChunk
from desktop.core.messages import Image, Message, MessageMeta, ToolCall
from desktop.core.providers.base import RequestOptions
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.emulated import EmulatedTools
from desktop.core.tracks.prompt import emulated_history
from tests.core.tracks.samples import PNG, SEARCH
from tests.support.fakes import ScriptedProvider, Step

# --- the adapter ------------------------------------------------------------------------


async def run_adapter(
    chunks: list[str], tools: list[Tool]
) -> tuple[list[str], list[str], Reply, ScriptedProvider]:
    inner = ScriptedProvider([Step(chunks=chunks)])
    adapter = EmulatedTools(inner)
    text, thinking, reply = [], [], None
    async for event in adapter.stream([Message.user("hi")], tools, RequestOptions()):
        if isinstance(event, TextChunk):
            text.append(event.text)
        elif isinstance(event, ThinkingChunk):
            thinking.append(event.text)
        elif isinstance(event, Reply):
            reply = event
    assert reply is not None
    return text, thinking, reply, inner


async def test_adapter_streams_prose_and_reports_no_call() -> None:
    text, _, reply, inner = await run_adapter(["The answer ", "is 4."], [SEARCH])
    assert text == ["The answer ", "is 4."]
    assert reply.text == "The answer is 4." and reply.tool_calls == []
    # tools went into the system prompt, not to the backend's native tools
    assert inner.requests[0].tools == []
    assert inner.requests[0].messages[0].role == "system"
    assert "- search: Search the notes" in inner.requests[0].messages[0].text


async def test_adapter_hides_call_json_and_returns_the_call() -> None:
    chunks = ["Checking. ", '```json\n{"name": "sea', 'rch", "arguments": {"query": "x"}}\n```']
    text, _, reply, _ = await run_adapter(chunks, [SEARCH])
    assert "".join(text) == "Checking. "
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", {"query": "x"})]
    assert reply.tool_calls[0].id.startswith("call_")
    assert reply.raw == "".join(chunks)


async def test_adapter_releases_held_text_that_was_not_a_call() -> None:
    text, _, reply, _ = await run_adapter(["Use ", "{braces}", " freely."], [SEARCH])
    assert "".join(text) == "Use {braces} freely." == reply.text
    assert reply.tool_calls == []


async def test_adapter_moves_think_tags_to_thinking() -> None:
    text, thinking, reply, _ = await run_adapter(["<thi", "nk>hmm {x}</think>", "Four."], [SEARCH])
    assert "".join(thinking) == "hmm {x}"
    assert "".join(text) == "Four." == reply.text


async def test_adapter_turns_null_arguments_into_a_broken_call() -> None:
    """Edge case 8: `arguments: null` is rejected cleanly, never crashes."""
    _, _, reply, _ = await run_adapter(['{"name": "search", "arguments": null}'], [SEARCH])
    assert reply.tool_calls == []
    assert reply.broken_calls[0].reason == "Its arguments must be a JSON object, not null."


def test_history_rewrites_calls_and_results_as_plain_messages() -> None:
    """Tool results and prior calls stay visible to the model (the reference drops them)."""
    images = Message.user("[Images from the tool results: search]", [Image.from_bytes(PNG)])
    images.meta = MessageMeta(tool_images=1, sent_to_model=True)  # as the loop marks them
    history = [
        Message.system("You are terse."),
        Message.user("find rust notes"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "rust"})]),
        Message.tool("c1", "search", "3 notes"),
        images,
    ]
    out = emulated_history(history, [SEARCH])
    assert [m.role for m in out] == ["system", "user", "assistant", "user"]
    assert out[0].text.startswith("You are terse.\n\nYou can use tools.")
    assert out[2].text == '{"name": "search", "arguments": {"query": "rust"}}'
    assert "[Result of search]\n3 notes" in out[3].text
    assert len(out[3].images) == 1  # the image stays a real image part, after the result
    assert out[3].text.endswith("answer the user now in plain text.")


def test_history_without_tools_has_no_tool_prompt_and_says_so() -> None:
    history = [
        Message.user("q"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "q"})]),
        Message.tool("c1", "search", "r"),
    ]
    out = emulated_history(history, [])
    assert out[0].role == "user"
    assert out[1].text == '(I called search with {"query": "q"}.)'
    assert out[-1].text.endswith(
        "Now answer the user's request in plain text, using the results above."
    )


def test_a_question_is_asked_again_after_its_results_and_nothing_else_is() -> None:
    """What a small model reads last is what it answers: a question, asked again; an
    instruction the tool carried out, or a pasted text, is not said again."""
    from desktop.core.tracks.prompt import MAX_RESTATED_CHARS, NO_TOOLS_HINT, QUESTION_HINT

    def last_of(request: str) -> str:
        history = [
            Message.user(request),
            Message.assistant("", [ToolCall("c1", "calculator", {"expression": "2*3"})]),
            Message.tool("c1", "calculator", "6"),
        ]
        return emulated_history(history, [])[-1].text

    assert last_of("What is 2 * 3?").endswith(f"{QUESTION_HINT} What is 2 * 3?")
    assert last_of("Make a chart of 2 and 3.").endswith(NO_TOOLS_HINT)
    pasted = "Summarise this? " + "word " * MAX_RESTATED_CHARS + "?"
    assert "word word" not in last_of(pasted) and last_of(pasted).endswith(NO_TOOLS_HINT)


def test_a_new_user_question_gets_no_hint() -> None:
    history = [
        Message.user("q"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "q"})]),
        Message.tool("c1", "search", "r"),
        Message.assistant("done"),
        Message.user("next question"),
    ]
    assert emulated_history(history, [SEARCH])[-1].text == "next question"


def test_refused_calls_leave_the_history_once_tools_are_withdrawn() -> None:
    """A refused repeat would prime a small model to call again; its reason stays visible."""
    history = [
        Message.user("weather?"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "w"})]),
        Message.tool("c1", "search", "rain"),
        Message.assistant("", [ToolCall("c2", "search", {"query": "w"})]),
        Message.tool("c2", "search", "Rejected: a repeat.", rejected=True),
    ]
    withdrawn = emulated_history(history, [])
    assert [m.role for m in withdrawn] == ["user", "assistant", "user"]
    assert withdrawn[-1].text.startswith("[Result of search]\nrain")
    assert "(Rejected: a repeat.)" in withdrawn[-1].text
    offered = emulated_history(history, [SEARCH])
    assert "Rejected: a repeat." in offered[-1].text
    assert len(offered) == 6


def test_the_last_step_hears_only_refusals_its_answer_should_account_for() -> None:
    """A refused repeat's reason was copied into answers; a declined call must be told."""

    def refused(call_id: str, reason: str, stage: str) -> Message:
        return Message.tool(call_id, "search", reason, rejected=True, meta=MessageMeta(stage=stage))

    history = [
        Message.user("weather?"),
        Message.assistant("", [ToolCall("c1", "search", {"query": "w"})]),
        Message.tool("c1", "search", "rain"),
        Message.assistant("", [ToolCall(f"c{i}", "search", {"query": str(i)}) for i in (2, 3, 4)]),
        refused("c2", "Rejected: this exact call was already made.", "repeat"),
        refused("c3", "Rejected: search is on cooldown.", "cooldown"),
        refused("c4", "The user declined this call to search.", "denied"),
    ]
    hint = emulated_history(history, [])[-1].text
    assert "(The user declined this call to search.)" in hint
    assert "already made" not in hint and "cooldown" not in hint


async def test_an_answer_ends_where_loomchats_format_begins_and_still_replies() -> None:
    """The guard stops the stream before the backend's own reply: the answer up to the
    format is the reply, so the turn finishes instead of failing."""
    text, _, reply, _ = await run_adapter(["The answer is 4.", "\nUser: thanks"], [SEARCH])
    assert "".join(text) == reply.text == "The answer is 4.\n" and reply.tool_calls == []


async def test_an_answer_that_is_only_a_format_says_so() -> None:
    inner = ScriptedProvider([Step(chunks=["[Result of search]\n", "nothing"])])
    events = [e async for e in EmulatedTools(inner).stream([Message.user("hi")], [SEARCH],
                                                          RequestOptions())]  # fmt: skip
    assert [e.message for e in events if isinstance(e, Notice)] == [
        "The model answered with a tool result's header instead of words."
    ]
    reply = events[-1]
    assert isinstance(reply, Reply) and reply.text == "" and reply.tool_calls == []
