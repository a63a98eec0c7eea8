"""Loomchat's own formats kept out of an answer. A small model shown a transcript, a result's
header or a step hint may write them back as its answer ("[Result of calculator] ...",
"I called translate with {...}", "User: ..."), and one told how to call a tool may write the
call out as prose where no call can be made. The person must never see these: an answer
is read through a `LeakGuard`, which holds back the little text that could be the start of
one, lets it through as soon as it cannot be, and ends the answer where one begins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from desktop.core.tracks.prompt import EARLIER_HEAD, NEXT_STEP_HINT, NO_TOOLS_HINT, QUESTION_HINT


@dataclass(frozen=True)
class Format:
    """One of Loomchat's formats: the pattern that begins it, a pattern every unfinished
    beginning of it matches whole (so the guard holds no more than it must), and whether
    it counts only at the start of a line."""

    pattern: re.Pattern[str]
    unfinished: re.Pattern[str]
    line_start: bool
    name: str


def _fixed(text: str, name: str) -> Format:
    prefixes = "|".join(re.escape(text[:n]) for n in range(1, len(text)))
    return Format(re.compile(re.escape(text)), re.compile(prefixes), True, name)


# Prompt lines and transcript forms, at the start of a line; a call's JSON anywhere.
TRANSCRIPT_FORMATS = (
    _fixed("[Result of ", "a tool result's header"),
    _fixed("(I called ", "an earlier call in words"),
    Format(
        re.compile(r"I called [\w.\-]+ with [{\[(]"),
        re.compile(r"I(?: (?:c(?:a(?:l(?:l(?:ed?)?)?)?)?)?)?|I called [\w.\-]*(?: w?i?t?h? ?)?"),
        True,
        "an earlier call",
    ),
    _fixed("User: ", "a transcript line"),
    _fixed("You: ", "a transcript line"),
    _fixed(EARLIER_HEAD, "the transcript's heading"),
    _fixed(NEXT_STEP_HINT, "a step hint"),
    _fixed(NO_TOOLS_HINT, "a step hint"),
    _fixed(QUESTION_HINT, "a step hint"),
    _fixed("You can use tools.", "the tool prompt"),
)
CALL_FORMATS = (
    Format(
        re.compile(r'\[?\s*\{\s*"name"\s*:'),
        re.compile(r'\[\s*(?:\{\s*(?:"n?a?m?e?"?\s*)?)?|\{\s*(?:"n?a?m?e?"?\s*)?'),
        False,
        "a call written out",
    ),
    Format(
        re.compile(r'```(?:json)?\s*\[?\s*\{\s*"name"\s*:'),
        re.compile(r'`{1,3}(?:j?s?o?n?)?\s*\[?\s*(?:\{\s*(?:"n?a?m?e?"?\s*)?)?'),
        False,
        "a call written out",
    ),
)


@dataclass(frozen=True)
class Leak:
    """Where in the answer a format began, and which."""

    at: int
    name: str


class LeakGuard:
    """Feed an answer's text; get back what may be shown. `calls`: a call written out is a
    leak too (an answer that cannot call); where calls are read, the call gate holds them."""

    def __init__(self, *, calls: bool) -> None:
        self.formats = TRANSCRIPT_FORMATS + (CALL_FORMATS if calls else ())
        self.text = ""  # all that was fed
        self.released = 0
        self.leak: Leak | None = None

    def feed(self, chunk: str) -> str:
        if self.leak is not None:
            return ""
        self.text += chunk
        return self._release(final=False)

    def flush(self) -> str:
        """What was held at the end: the answer ended before it could be a format."""
        return "" if self.leak is not None else self._release(final=True)

    @property
    def shown(self) -> str:
        """The answer as the person may see it: up to a leak, or all of it."""
        return self.text[: self.leak.at] if self.leak is not None else self.text

    def _release(self, *, final: bool) -> str:
        start = self.released
        end = len(self.text)
        i = start
        while i < end:
            verdict = self._at(i, final)
            if verdict is None:
                i += 1
                continue
            if isinstance(verdict, Leak):
                self.leak = verdict
            self.released = i  # a leak, or undecided: hold from here
            return self.text[start:i]
        self.released = end
        return self.text[start:end]

    def _at(self, i: int, final: bool) -> Leak | bool | None:
        """At `i`: a format begins (Leak), one may (True: hold), or none does (None)."""
        text = self.text
        line_start = not text[text.rfind("\n", 0, i) + 1 : i].strip()
        maybe = False
        for fmt in self.formats:
            if fmt.line_start and not line_start:
                continue
            if fmt.pattern.match(text, i):
                return Leak(i, fmt.name)
            maybe = maybe or (not final and fmt.unfinished.fullmatch(text, i) is not None)
        return True if maybe else None


def leak_in(text: str, *, calls: bool = True) -> Leak | None:
    """The first of Loomchat's formats in a whole answer, or None."""
    guard = LeakGuard(calls=calls)
    guard.feed(text)
    guard.flush()
    return guard.leak
