import pytest

from desktop.core.tracks.leaks import LeakGuard, leak_in
from desktop.core.tracks.prompt import NO_TOOLS_HINT


def streamed(text: str, *, calls: bool = True, size: int = 1) -> tuple[str, LeakGuard]:
    """`text` fed in chunks of `size`: what was let through, and the guard."""
    guard = LeakGuard(calls=calls)
    out = "".join(guard.feed(text[i : i + size]) for i in range(0, len(text), size))
    return out + guard.flush(), guard


@pytest.mark.parametrize(
    ("answer", "shown", "name"),
    [
        ("[Result of calculator]\nError: bad", "", "a tool result's header"),
        ("Sure.\nUser: and then?", "Sure.\n", "a transcript line"),
        ('I called translate with {"input": "hi"}', "", "an earlier call"),
        ("(I called current_time with {}.)", "", "an earlier call in words"),
        ('To find it, I will call: ```json\n{"name": "calculator"', "To find it, I will call: ",
         "a call written out"),
        ('[{"name": "search", "arguments": {}}]', "", "a call written out"),
        ('See [1] and [ {"name": "search"', "See [1] and ", "a call written out"),
        (f"  {NO_TOOLS_HINT}", "  ", "a step hint"),
    ],
)  # fmt: skip
def test_an_answer_ends_where_a_format_begins(answer: str, shown: str, name: str) -> None:
    for size in (1, 3, len(answer)):
        out, guard = streamed(answer, size=size)
        assert out == shown == guard.shown
        assert guard.leak is not None and guard.leak.name == name


@pytest.mark.parametrize(
    "answer",
    [
        "Hello there!",
        "I called my mother yesterday.",
        "The user: a person. You: the assistant.",  # not at a line's start
        "x = {1: 2}\nprint(x)",
        'Use {name} in templates, or {"id": 3}.',
        "```python\nprint(1)\n```",
        "Results of the vote: [1, 2]",
    ],
)
def test_ordinary_answers_pass_whole(answer: str) -> None:
    for size in (1, 4, len(answer)):
        out, guard = streamed(answer, size=size)
        assert out == answer and guard.leak is None


def test_a_possible_format_is_held_only_until_it_cannot_be_one() -> None:
    guard = LeakGuard(calls=True)
    assert guard.feed("Fine.\nUs") == "Fine.\n"  # "Us" may begin "User: "
    assert guard.feed("ually, yes.") == "Usually, yes."
    assert guard.feed(" {") == " "
    assert guard.feed("x}") == "{x}"


def test_where_calls_are_read_a_call_is_not_a_leak() -> None:
    assert leak_in('{"name": "search", "arguments": {}}', calls=False) is None
    assert leak_in('{"name": "search", "arguments": {}}', calls=True) is not None
