"""What of a streamed answer may be shown as it arrives: thinking split out of `<think>`
blocks, and prose let through until the point where a call may begin, which is held back
until the answer is parsed.

Reasoning models think first, then answer; so a `<think>` block is recognised only before
the answer starts. Later, `<think>` is just text (a file the model writes may contain it).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import assert_never

from desktop.core.events import (
    Notice,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    UsageReport,
)
from desktop.core.tracks.leaks import Leak, LeakGuard
from desktop.core.tracks.repeats import NOTICE, RepeatGuard

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


_NEXT_VISIBLE = re.compile(r"\s*(\S)")


class ProseGate:
    """Lets prose through as it streams, and holds back from where a call may begin.

    A call may begin at `{`, at a code fence, or at `[` followed by `{`; from that point
    the text is held until the answer is complete and parsed.
    """

    def __init__(self) -> None:
        self.buffer = ""
        self.released = 0
        self.holding = False

    def feed(self, text: str) -> str:
        self.buffer += text
        if self.holding:
            return ""
        safe = self._safe_end()
        out = self.buffer[self.released : safe]
        self.released = safe
        return out

    def _safe_end(self) -> int:
        buf = self.buffer
        for i in range(self.released, len(buf)):
            ch = buf[i]
            if ch == "{" or buf.startswith("```", i):
                self.holding = True
                return i
            if ch == "[":
                after = _NEXT_VISIBLE.match(buf, i + 1)
                if after is None:
                    return i  # undecided until the next chunk
                if after.group(1) == "{":
                    self.holding = True
                    return i
            if ch == "`" and len(buf) - i < 3 and "```".startswith(buf[i:]):
                return i  # maybe the start of a fence: wait for the next chunk
        return len(buf)

    def rest(self, final_text: str) -> str:
        """What is left to show once the answer is parsed into `final_text`."""
        if final_text.startswith(self.buffer[: self.released]):
            return final_text[self.released :]
        return ""


class VisibleText:
    """Streamed text split into thinking (shown as such) and prose let through the gate.
    With `hold_calls=False` all prose is shown as it comes (an answer that cannot call)."""

    def __init__(self, *, hold_calls: bool = True) -> None:
        self.splitter = ThinkSplitter()
        self.gate = ProseGate()
        self.hold_calls = hold_calls
        # Where calls are read, the gate holds them; elsewhere one written out is a leak.
        self.guard = LeakGuard(calls=not hold_calls)
        self.repeats = RepeatGuard()  # after the guard: it reads what the person may see
        self.prose = ""  # all prose let through the guards

    @property
    def leak(self) -> Leak | None:
        """Where one of Loomchat's own formats, or the model saying the same lines over
        and over, began: the answer ends there."""
        return self.guard.leak or self.repeats.cut

    def feed(self, text: str) -> list[ProviderEvent]:
        return self._shown(self.splitter.feed(text))

    def flush(self) -> list[ProviderEvent]:
        return self._shown(self.splitter.flush(), final=True)

    def _shown(self, pieces: list[tuple[bool, str]], final: bool = False) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        for thinking, text in pieces:
            if thinking:
                out.append(ThinkingChunk(text))
            else:
                self._prose(self.repeats.feed(self.guard.feed(text)), out)
        if final:
            self._prose(self.repeats.feed(self.guard.flush()) + self.repeats.flush(), out)
        return out

    def _prose(self, text: str, out: list[ProviderEvent]) -> None:
        if not text:
            return
        self.prose += text
        if not self.hold_calls:
            out.append(TextChunk(text))
        elif released := self.gate.feed(text):
            out.append(TextChunk(released))


async def relay(
    source: AsyncGenerator[ProviderEvent, None],
    visible: VisibleText,
    replies: list[Reply],
    stop: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[ProviderEvent, None]:
    """`source` as shown: its text fed through `visible` (thinking split out, a possible
    call held back), its `Reply` kept in `replies` for the caller to rewrite, token odds
    left to the call gate, which reads them apart. `stop` is asked after each text chunk:
    true ends the answer there, closing the source, as does one of Loomchat's formats or
    a loop (`visible.leak`; no `Reply` then; a loop is told of, as the answer ends short)."""
    async with aclosing(source) as stream:
        async for event in stream:
            match event:
                case TextChunk():
                    for piece in visible.feed(event.text):
                        yield piece
                    if visible.repeats.cut is not None:
                        yield Notice(NOTICE)
                    if visible.leak is not None or stop():
                        return
                case Reply():
                    replies.append(event)
                case TokenOdds():
                    pass
                case ThinkingChunk() | UsageReport() | Notice():
                    yield event
                case _:
                    assert_never(event)
