"""Finding the calls in a model's text: JSON objects and lists, in fences or not, written
as the emulated prompt asks or as models write them anyway. A pure function of the text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from desktop.core.events import BrokenCall
from desktop.core.tracks.holdback import strip_thinking

_CALL_START = re.compile(r'\{\s*"(?:name|function)"\s*:\s*"([^"\\]*)')
_FENCE_PAIR = re.compile(r"```[A-Za-z0-9_-]*\s*```")


@dataclass
class ParsedAnswer:
    text: str
    calls: list[tuple[str, Any]] = field(default_factory=list)
    broken: list[BrokenCall] = field(default_factory=list)


def match_json_end(text: str, start: int) -> int | None:
    """Index just past the object or array opening at `start`, or None if it never closes.

    String-aware: brackets inside JSON strings (and escaped quotes) do not count.
    """
    found = JsonSpans(text).span(start)
    return found[0] if found else None


# Deeper JSON is no call: it is text, and never reaches json.loads (which recurses).
MAX_JSON_DEPTH = 64


class JsonSpans:
    """Where the brackets of a text close, each found at most once: a scan from one
    bracket records every bracket it passes, so a text of 20,000 unclosed `[` costs one
    pass, not 20,000. A budget of characters scanned keeps any text linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.budget = 8 * len(text) + 4096
        self._spans: dict[int, tuple[int, int] | None] = {}

    @property
    def exhausted(self) -> bool:
        return self.budget <= 0

    def span(self, start: int) -> tuple[int, int] | None:
        """(end, depth) of the object or array opening at `start`, or None if it never
        closes (or the budget ran out)."""
        if start not in self._spans:
            self._scan(start)
        return self._spans.get(start)

    def _scan(self, start: int) -> None:
        text = self.text
        stack: list[int] = []  # open brackets' positions
        peaks: list[int] = []  # deepest level reached inside each of them
        in_string = escaped = False
        i = start
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                stack.append(i)
                peaks.append(len(stack))
            elif ch in "}]":
                if not stack:
                    break
                opened, peak = stack.pop(), peaks.pop()
                self._spans.setdefault(opened, (i + 1, peak - len(stack)))
                if peaks:
                    peaks[-1] = max(peaks[-1], peak)
                if not stack:
                    break
        self.budget -= i - start + 1
        for opened in stack:
            self._spans.setdefault(opened, None)
        self._spans.setdefault(start, None)


_IDENTIFIER = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # what a Tool name may be


def _as_call(value: Any, known: frozenset[str]) -> tuple[str, Any] | None:
    """(name, arguments) if `value` is shaped like a call. A `name` that is no identifier
    ("The Godfather") is a small model answering in the call's shape: text, not a call."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    if value["name"] not in known and not _IDENTIFIER.fullmatch(value["name"]):
        return None
    for key in ("arguments", "parameters"):
        if key in value:
            return value["name"], value[key]
    if value["name"] in known:
        return value["name"], {}
    return None


def parse_answer(text: str, known_names: Iterable[str] = ()) -> ParsedAnswer:
    """Find tool calls in a model's answer. Never raises, and takes time linear in the
    length of the answer, however it is nested or broken.

    A call is a JSON object with a string `name` and `arguments` (alone, fenced, or after
    prose), or a JSON array of such objects. Anything else, `[1]`, `42`, `null`, `true` and
    JSON that is not call-shaped included, stays text. A call that starts but never closes
    (the output limit cut it) is reported as broken, never run.
    """
    visible, _ = strip_thinking(text)
    try:
        return _parse_visible(visible, frozenset(known_names))
    except (RecursionError, MemoryError, ValueError):  # a promise: whatever it is, text
        return ParsedAnswer(visible)


_OPENING = re.compile(r"[{\[]")


def _parse_visible(visible: str, known: frozenset[str]) -> ParsedAnswer:
    calls: list[tuple[str, Any]] = []
    broken: list[BrokenCall] = []
    spans: list[tuple[int, int]] = []
    brackets = JsonSpans(visible)
    i = 0
    while (opening := _OPENING.search(visible, i)) and not brackets.exhausted:
        i = opening.start()
        found = brackets.span(i)
        if found is None:
            started = _CALL_START.match(visible, i)
            if visible[i] == "{" and started:
                reason = "The tool call was cut off before it ended (output limit reached?)."
                broken.append(BrokenCall(started.group(1), visible[i:], reason))
                spans.append((i, len(visible)))
                break
            i += 1
            continue
        end, depth = found
        if depth > MAX_JSON_DEPTH:
            i = end  # nested too deeply to be a call
            continue
        try:
            value = json.loads(visible[i:end])
        except (ValueError, RecursionError):
            i += 1
            continue
        shaped = [_as_call(v, known) for v in (value if isinstance(value, list) else [value])]
        if shaped and all(shaped):
            calls.extend(c for c in shaped if c)
            spans.append((i, end))
            i = end
        else:
            i = end if isinstance(value, dict) else i + 1
    if not spans:
        return ParsedAnswer(visible)
    prose = []
    cursor = 0
    for start, end in spans:
        prose.append(visible[cursor:start])
        cursor = end
    prose.append(visible[cursor:])
    remaining = _FENCE_PAIR.sub("", "".join(prose)).rstrip()
    return ParsedAnswer(remaining, calls, broken)
