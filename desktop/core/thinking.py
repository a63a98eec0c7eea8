"""Splits `<think>...</think>` reasoning out of streamed text, tags split across chunks included.

Reasoning models think first, then answer; so a `<think>` block is recognised only before
the answer starts. Later, `<think>` is just text (a file the model writes may contain it).
"""

from __future__ import annotations

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class ThinkSplitter:
    """Feed text chunks; get back (is_thinking, text) pieces in order.

    A chunk that ends with the first characters of a tag is held back until the next
    chunk tells whether the tag is really there, so `<th` + `ink>` still counts.
    """

    def __init__(self) -> None:
        self.thinking = False
        self.answering = False  # visible text has begun: no more think blocks
        self._pending = ""

    def feed(self, chunk: str) -> list[tuple[bool, str]]:
        text = self._pending + chunk
        self._pending = ""
        pieces: list[tuple[bool, str]] = []
        while text:
            if self.answering:
                pieces.append((False, text))
                break
            tag = CLOSE_TAG if self.thinking else OPEN_TAG
            at = text.find(tag)
            if not self.thinking and at != 0 and text[: max(at, 0)].strip():
                at = -1  # answer text before the tag: the answer has begun
            if at >= 0:
                if at:
                    pieces.append((self.thinking, text[:at]))
                self.thinking = not self.thinking
                text = text[at + len(tag) :]
                continue
            keep = _partial_tag_suffix(text, tag)
            if keep:
                self._pending = text[-keep:]
                text = text[:-keep]
            if text:
                pieces.append((self.thinking, text))
                self.answering = self.answering or (not self.thinking and bool(text.strip()))
            break
        return pieces

    def flush(self) -> list[tuple[bool, str]]:
        """What was held back at the end of the stream: it was text after all."""
        pending, self._pending = self._pending, ""
        return [(self.thinking, pending)] if pending else []


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper start of `tag`."""
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:length]):
            return length
    return 0


def strip_thinking(text: str) -> tuple[str, str]:
    """(visible text, thinking) of a whole answer."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    visible = "".join(t for thinking, t in pieces if not thinking)
    thought = "".join(t for thinking, t in pieces if thinking)
    return visible, thought
