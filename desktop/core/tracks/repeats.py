"""An answer that says the same lines over and over, ended where the repeating begins.

A small model sampled at a chat's temperature sometimes falls into a loop: item 5 of a
list is written again as items 6, 7, 8... until the answer's token budget runs out, and
on a CPU the person waits for all of it. A `RepeatGuard` reads the prose as it streams
and ends the answer once one line has been said `TIMES` times in a row, or a block of a
few lines `BLOCK_TIMES` times, keeping its first saying. A line that may be a saying again
(it begins as one of the last few lines did) is held until it is not, so the person never
sees the repeats that are cut.

Lines too short to mean much ("---", "Yes."), blank lines and code (inside fences, where
the same line often comes back by right) neither count nor break a run.

A loop can also stay inside one line, one paragraph that never ends: its phrases (its
sentences, and their clauses) are counted as lines are ("The shaft is connected to the
housing. The shaft is connected to the housing. ...", "... when a volcano erupts, it is a
process that occurs when a volcano erupts, it is ..."); a list marker is no phrase of its
own. Or a few characters said over and over ("= 7777777...", "hahaha..."). Such a run is
held from its second saying while it goes on, shown if it ends (a doubled letter, a number
with many zeros, a short laugh), and the answer is ended once it is too long to be any of
them. Runs of punctuation and spaces (a rule, a table's "|---|") are left alone.
"""

from __future__ import annotations

import re

from desktop.core.tracks.leaks import Leak

# How many times in a row a line is said before the answer is ended: a person may ask for
# a line three times, and a loop shows itself long before its budget runs out.
TIMES = 4
# A block of several lines said this many times is a loop already, and waiting for a
# fourth would hold back many lines.
BLOCK_TIMES = 3
# The longest block, in lines, whose sayings are counted: a loop may go round several
# list items, each perhaps with a sub-point.
LONGEST_BLOCK = 8
# A line shorter than this (without its list marker) is too plain to tell a loop by.
SHORTEST_LINE = 16
# A stretch of at most this many characters said again at once inside one line is a run,
# held from its second saying while it goes on (a doubled letter waits one token), and
# ended at this many characters: longer than any number or laugh.
LONGEST_STRETCH = 8
HELD_SAYINGS = 2
LOOPING_RUN = 64
REPEATING = "the same lines over and over"
NOTICE = "The model began repeating itself, so its answer was ended there."

_MARKER = re.compile(r"^\s*(?:\d{1,4}[.)]|[-*+•])\s+")
# A line still being written may be a list marker not yet finished ("12", "1.", "-").
_MARKER_SO_FAR = re.compile(r"^\s*(?:\d{1,4}[.)]?|[-*+•])?\s*")
_SPACES = re.compile(r"\s+")
# Where a phrase ends inside a line (a sentence, or a clause: a loop may never end its
# sentence): its mark, any closing quote or bracket, a space.
_PHRASE_END = re.compile(r"[.!?,;:][\"'\u2019\u201d)\]*_]*[ \t]+")


def _plain(line: str, marker: re.Pattern[str] = _MARKER) -> str:
    """A line as compared: its list marker (the number that grows in a loop), spacing and
    case left out."""
    return _SPACES.sub(" ", marker.sub("", line)).strip().casefold()


def stretch_run(line: str) -> tuple[int, int] | None:
    """The run of one stretch said over and over that ends `line`, from `HELD_SAYINGS`
    sayings on: where its second saying begins, and the run's length in characters (None:
    no such run, or one of punctuation and spaces alone)."""
    found: tuple[int, int] | None = None
    for size in range(1, LONGEST_STRETCH + 1):
        stretch = line[len(line) - size :]
        if len(line) < HELD_SAYINGS * size or not any(c.isalnum() for c in stretch):
            continue
        start = len(line) - size
        while start >= size and line[start - size : start] == stretch:
            start -= size
        length = len(line) - start
        if length >= HELD_SAYINGS * size and (found is None or length > found[1]):
            found = (start + size, length)
    return found


class RepeatGuard:
    """Feed an answer's prose; get back what may be shown. `cut` says where the answer
    was ended (None: it was not)."""

    def __init__(self) -> None:
        self.text = ""  # all that was fed
        self.released = 0
        self.cut: Leak | None = None
        self._lines = _Sayings()
        self._line_start = 0  # where the line being written begins
        self._in_code = False
        self._phrases = _Phrases(0)  # of the line being written

    def _new_line(self, start: int) -> None:
        self._line_start, self._lines.new = start, False
        self._phrases = _Phrases(start)

    def feed(self, chunk: str) -> str:
        if self.cut is not None:
            return ""
        self.text += chunk
        while (end := self.text.find("\n", self._line_start)) >= 0:
            self._phrases_done(end, last=True)
            if self.cut is None:
                self._line_done(self._line_start, self.text[self._line_start : end])
            self._new_line(end + 1)
            if self.cut is not None:
                return self._release(self.cut.at)
        self._phrases_done(len(self.text))
        if self.cut is not None:
            return self._release(self.cut.at)
        run = None if self._in_code else stretch_run(self.text[self._line_start :])
        if run is not None and run[1] >= LOOPING_RUN:
            # Its first sayings may have been shown before it was a run: they stay.
            self.cut = Leak(max(self._line_start + run[0], self.released), REPEATING)
            return self._release(self.cut.at)
        held = len(self.text) if run is None else self._line_start + run[0]
        return self._release(min(self._showable(), held))

    def flush(self) -> str:
        """What was held at the end, its last line read as done: a loop the model ended
        by itself is left out too (its repeats were held, never shown), else the run was
        no loop and is shown."""
        if self.cut is None and self._line_start < len(self.text):
            self._phrases_done(len(self.text), last=True)
            if self.cut is None:
                self._line_done(self._line_start, self.text[self._line_start :])
            self._new_line(len(self.text))
        return self._release(len(self.text) if self.cut is None else self.cut.at)

    def _release(self, end: int) -> str:
        end = max(end, self.released)
        out = self.text[self.released : end]
        self.released = end
        return out

    def _showable(self) -> int:
        """Where what may be shown ends: before the held lines and phrases, and before
        the line (or phrase) being written while it begins as one of the last few did."""
        if self._in_code:
            return len(self.text)
        phrases = self._phrases
        lines = self._lines.showable(self.text, self._line_start)
        return min(lines, phrases.sayings.showable(self.text, phrases.start))

    def _line_done(self, start: int, line: str) -> None:
        if line.lstrip().startswith("```"):
            self._in_code = not self._in_code
            return
        plain = _plain(line)
        if self._in_code or len(plain) < SHORTEST_LINE:
            return
        if (cut := self._lines.count(start, plain)) is not None:
            self.cut = Leak(cut, REPEATING)

    def _phrases_done(self, end: int, last: bool = False) -> None:
        """The line's phrases that ended before `end` counted (`last`: the line ends
        there, and so does its last phrase)."""
        if self._in_code:
            return
        cut = self._phrases.read(self.text, end, last)
        if cut is not None:
            self.cut = Leak(cut, REPEATING)


class _Phrases:
    """The phrases of one line, counted as lines are: a paragraph that goes round in
    circles never ends its line."""

    def __init__(self, start: int) -> None:
        self.start = start  # where the phrase being written begins
        self.scanned = start  # how far phrase ends were looked for
        self.sayings = _Sayings()

    def read(self, text: str, end: int, last: bool) -> int | None:
        """Where the answer is cut, if a phrase that ended before `end` closed a loop."""
        while found := _PHRASE_END.search(text, self.scanned, end):
            self.scanned = found.end()
            if (cut := self._done(text, found.end())) is not None:
                return cut
        # A mark and its closers near the end may yet end a phrase once a space comes.
        self.scanned = max(self.scanned, end - 8)
        return self._done(text, end) if last else None

    def _done(self, text: str, end: int) -> int | None:
        plain = _plain(text[self.start : end])
        if not plain:
            return None  # a list marker ("1. ") opens the phrase after it
        start, self.start, self.sayings.new = self.start, end, False
        if len(plain) < SHORTEST_LINE:
            return None
        return self.sayings.count(start, plain)


class _Sayings:
    """Lines (or one line's phrases) as said, counted for a loop: each kept as compared,
    with where it began."""

    def __init__(self) -> None:
        self.said: list[tuple[int, str]] = []  # the recent ones: start, as compared
        self.held_from: int | None = None  # the first that may be a saying again
        self.new = False  # the one being written began otherwise than the last few

    def count(self, start: int, plain: str) -> int | None:
        """One more said: where to cut, once one was said `TIMES` times in a row or a
        block `BLOCK_TIMES`; a saying again is held (it may be a loop's)."""
        recent = [said for _, said in self.said[-LONGEST_BLOCK:]]
        self.said = [*self.said[-BLOCK_TIMES * LONGEST_BLOCK :], (start, plain)]
        if plain not in recent:
            self.held_from = None  # the run is broken: its sayings are shown
            return None
        if self.held_from is None:
            self.held_from = start
        sayings = [said for _, said in self.said]
        for block in range(1, LONGEST_BLOCK + 1):
            times = TIMES if block == 1 else BLOCK_TIMES
            run = sayings[-times * block :]
            if len(run) == times * block and run == run[:block] * times:
                return self.said[-(times - 1) * block][0]
        return None

    def showable(self, text: str, start: int) -> int:
        """Where what may be shown ends: before the held sayings, and before the one being
        written from `start` while it begins as one of the last few did."""
        if self.held_from is not None:
            return self.held_from
        if self.new:
            return len(text)
        begun = _plain(text[start:], _MARKER_SO_FAR)
        if any(said.startswith(begun) for _, said in self.said[-LONGEST_BLOCK:]):
            return start  # an empty beginning (a marker, spaces) may be either
        # Once it differs it stays different: a long one is not read again on each token.
        self.new = bool(begun)
        return len(text)
