"""Splitting Markdown for display: code blocks apart, long prose in chunks."""

from desktop.ui.markdown_view import PROSE_CHUNK_CHARS, MarkdownView, split_markdown


def test_code_blocks_and_prose() -> None:
    text = "Intro.\n\n```python\nx = 1\n```\nAfter."
    assert split_markdown(text) == [
        ("prose", "", "Intro."),
        ("code", "python", "x = 1"),
        ("prose", "", "After."),
    ]


def test_an_unclosed_fence_while_streaming_is_code() -> None:
    assert split_markdown("See:\n```js\nlet a") == [("prose", "", "See:"), ("code", "js", "let a")]


def test_long_prose_is_cut_at_blank_lines() -> None:
    paragraph = "word " * 60
    chunks = split_markdown("\n\n".join([paragraph] * 20))
    assert len(chunks) > 3
    assert all(kind == "prose" for kind, _, _ in chunks)
    assert all(len(text) <= PROSE_CHUNK_CHARS + len(paragraph) for _, _, text in chunks)
    assert "\n\n".join(text for _, _, text in chunks) == "\n\n".join([paragraph] * 20)


def test_streaming_reuses_the_earlier_widgets(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = MarkdownView()
    qtbot.addWidget(view)
    text = "\n\n".join(["para " * 50] * 10)
    view.set_text(text)
    first = view._widgets[0][2]
    view.set_text(text + " more")
    assert view._widgets[0][2] is first
