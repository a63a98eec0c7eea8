"""A document cut into passages a model can be shown: along its sections (headings,
pages), then its paragraphs, then its lines and sentences, each passage a little over the
last one's end so that a sentence cut at a boundary is whole in one of them. Each passage
keeps its place: the page, the heading path, and where its text lies in the section."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from desktop.core.documents.formats import Section

# About 300 tokens: a passage answers a question on its own, and five of them fit a small
# model's context beside the conversation.
TARGET_CHARS = 1200
# The start of a passage repeats at most this much of the one before.
OVERLAP_CHARS = 160
_BREAKS = (re.compile(r"\n[ \t]*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?])\s+"))


@dataclass(frozen=True)
class Chunk:
    """A passage: its text, page and heading path, and its place in its section (`section`,
    counted from 0; `start` and `end`, character offsets in that section's text)."""

    text: str
    section: int
    start: int
    end: int
    page: int | None = None
    heading: str = ""


def chunk(sections: Sequence[Section], target: int = TARGET_CHARS,
          overlap: int = OVERLAP_CHARS) -> list[Chunk]:  # fmt: skip
    """Every section's text in passages of about `target` characters, overlapping by at
    most `overlap`; a passage never spans two sections."""
    chunks: list[Chunk] = []
    for number, section in enumerate(sections):
        for start, end in _spans(section.text, target, overlap):
            text = section.text[start:end].strip()
            if text:
                chunks.append(Chunk(text, number, start, end, section.page, section.heading))
    return chunks


def _spans(text: str, target: int, overlap: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each passage: cut at the last paragraph break before `target`, or
    else the last line break, sentence end or space, or else at `target` itself."""
    start = 0
    while start < len(text):
        if len(text) - start <= target:
            yield start, len(text)
            return
        end = _cut(text, start, start + target)
        yield start, end
        start = _overlap_start(text, start, end, overlap)


def _cut(text: str, start: int, limit: int) -> int:
    """Where to end a passage that starts at `start` and may not pass `limit`."""
    floor = start + (limit - start) // 2  # never shorter than half the target
    for pattern in _BREAKS:
        ends = [m.end() for m in pattern.finditer(text, floor, limit)]
        if ends:
            return ends[-1]
    space = text.rfind(" ", floor, limit)
    return space + 1 if space > 0 else limit


def _overlap_start(text: str, start: int, end: int, overlap: int) -> int:
    """The next passage's start: up to `overlap` back from `end`, at a line, sentence or
    word start; always past `start`, so the cutting ends."""
    back = max(end - overlap, start + 1)
    for pattern in _BREAKS[1:]:
        starts = [m.end() for m in pattern.finditer(text, back, end)]
        if starts and starts[0] < end:
            return starts[0]
    space = text.find(" ", back, end)
    return space + 1 if 0 <= space < end - 1 else end
