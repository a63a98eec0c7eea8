import pytest

from desktop.core.tracks.holdback import ProseGate, ThinkSplitter, strip_thinking


def split_all(chunks: list[str]) -> list[tuple[bool, str]]:
    splitter = ThinkSplitter()
    pieces = [p for c in chunks for p in splitter.feed(c)] + splitter.flush()
    merged: list[tuple[bool, str]] = []
    for thinking, text in pieces:
        if merged and merged[-1][0] == thinking:
            merged[-1] = (thinking, merged[-1][1] + text)
        else:
            merged.append((thinking, text))
    return merged


@pytest.mark.parametrize(
    "chunks",
    [
        ["<think>plan</think>answer"],
        ["<th", "ink>pl", "an</th", "ink>answer"],
        ["<", "t", "h", "i", "n", "k", ">", "plan", "<", "/", "think", ">", "answer"],
    ],
)
def test_think_tags_split_across_chunks(chunks: list[str]) -> None:
    assert split_all(chunks) == [(True, "plan"), (False, "answer")]


def test_a_lone_angle_bracket_is_text() -> None:
    assert split_all(["a <", "b"]) == [(False, "a <b")]
    assert split_all(["x <th"]) == [(False, "x <th")]


def test_strip_thinking_keeps_json_after_the_block() -> None:
    visible, thought = strip_thinking('<think>{x}</think>{"name": "a"}')
    assert visible == '{"name": "a"}' and thought == "{x}"


def test_a_think_tag_after_the_answer_began_is_text() -> None:
    """A file the model writes may contain `<think>`: only a leading block is reasoning."""
    assert split_all(["Here: <think>x</think> done"]) == [(False, "Here: <think>x</think> done")]
    assert split_all(["<think>a</think>Answer ", "<think>b</think>"]) == [
        (True, "a"),
        (False, "Answer <think>b</think>"),
    ]


# --- streaming hold-back ----------------------------------------------------------------


def feed_all(chunks: list[str]) -> tuple[str, ProseGate]:
    gate = ProseGate()
    return "".join(gate.feed(c) for c in chunks), gate


def test_prose_streams_through() -> None:
    shown, gate = feed_all(["Hello ", "there, see [1] ", "and `code`."])
    assert shown == "Hello there, see [1] and `code`."
    assert not gate.holding


def test_gate_holds_from_a_brace_or_fence() -> None:
    shown, gate = feed_all(["Let me look. ", '{"na', 'me": 1}'])
    assert shown == "Let me look. " and gate.holding
    shown, gate = feed_all(["Sure. `", "``json\n{"])
    assert shown == "Sure. "
    shown, gate = feed_all(["[", "  {"])
    assert shown == "" and gate.holding
    shown, gate = feed_all(["[", "1] says"])
    assert shown == "[1] says" and not gate.holding
