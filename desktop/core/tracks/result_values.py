"""The values a tool's result holds that the answer after it is there to state, and
whether an answer states one of them.

Only a short structured result counts: a JSON value or a small record (a product, a date
and a weekday, a file's size). A prose result (a chart's note, a page, a program's output)
is for the model to read, not to repeat, and is never checked. A value the call itself
carried (the expression the calculator was given, a file's name) proves nothing when the
answer repeats it, so it is left out.

Matching is loose on purpose: a number in any of its usual forms (with thousands
separators, rounded to fewer decimals, written without its sign), a word value as a whole
word in any case. What is caught is an answer that states none of the result at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from desktop.core.messages import Message
from desktop.core.tracks.prompt import current_turn_start

# A result longer than this, as JSON, is a document rather than a value to state.
MAX_STATED_RESULT_CHARS = 400
# A word value longer than this is a sentence, stated in other words if at all.
MAX_STATED_WORDS_CHARS = 40

_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WORD_VALUE = re.compile(r"[^\W\d_][\w' -]*", re.UNICODE)


@dataclass(frozen=True)
class ResultValues:
    """What the current turn's results hold: numbers (as exact decimals) and word values
    (lower case). Empty where there is nothing to check."""

    numbers: frozenset[Decimal] = frozenset()
    words: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.numbers or self.words)

    def stated_in(self, text: str) -> bool:
        """Whether `text` states at least one of the values."""
        said = list(numbers_in(text))
        if any(number in self.numbers or _rounded_match(number, self.numbers)
               for number in said):  # fmt: skip
            return True
        lowered = text.lower()
        return any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", lowered) for word in self.words)


def result_values(messages: Sequence[Message]) -> ResultValues:
    """The values of the current turn's short structured results that its calls did not
    carry."""
    turn = messages[current_turn_start(messages) :]
    given_numbers: set[Decimal] = set()
    given_words: set[str] = set()
    for message in turn:
        for call in message.tool_calls:
            numbers, words = _values(call.arguments)
            given_numbers |= numbers
            given_words |= words
    found_numbers: set[Decimal] = set()
    found_words: set[str] = set()
    for message in turn:
        if message.role != "tool" or message.rejected or message.meta.error:
            continue
        text = message.text.strip()
        if len(text) > MAX_STATED_RESULT_CHARS:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue  # prose: read, not repeated
        numbers, words = _values(value)
        found_numbers |= numbers
        found_words |= words
    return ResultValues(
        frozenset(found_numbers - given_numbers), frozenset(found_words - given_words)
    )


def numbers_in(text: str) -> Iterator[Decimal]:
    for match in _NUMBER.finditer(text):
        try:
            yield Decimal(match.group().replace(",", ""))
        except InvalidOperation:
            continue


def _values(value: Any) -> tuple[set[Decimal], set[str]]:
    numbers: set[Decimal] = set()
    words: set[str] = set()
    for leaf in _leaves(value):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            number = Decimal(repr(leaf)) if isinstance(leaf, float) else Decimal(leaf)
            if number.is_finite():
                numbers.add(abs(number))
            continue
        text = str(leaf)
        numbers.update(numbers_in(text))
        word = text.strip().lower()
        if len(word) <= MAX_STATED_WORDS_CHARS and _WORD_VALUE.fullmatch(word):
            words.add(word)
    return numbers, words


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _rounded_match(said: Decimal, numbers: frozenset[Decimal]) -> bool:
    """Whether `said` is one of `numbers` rounded to the decimals `said` has."""
    exponent = said.as_tuple().exponent
    step = Decimal(1).scaleb(exponent if isinstance(exponent, int) and exponent < 0 else 0)
    for number in numbers:
        try:
            if number.quantize(step) == said:
                return True
        except InvalidOperation:  # more digits than a decimal holds: not this one
            continue
    return False
