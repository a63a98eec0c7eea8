"""Whether a call is the person's: the call gate's last rule, read off the call itself.

In a chat a small model calls tools where none fits, and opens those calls as surely as the
due ones: a greeting got the calculator with the tool prompt's own example. What tells the
two apart needs no model. A call that copies an example of the tool's is not the person's.
Otherwise a call is the person's when the request is about its tool (they
share words with its name, description or parameters), or when its values are mostly what
the person said. Later in a turn, after a tool's result, a call may also take its values
from the conversation and the results (a chain: list the files, then read one); and a
follow-up may add one value to earlier ones ("divide that by 2"). A call that
is none of these is made up, and the model is asked for its answer in words instead.
So is a call made already in this turn, written again after its result (small models
do): the deduplicator would refuse it, and the answer is the result's.

Some calls are judged by their tool's name alone: where the request is about no offered
tool and the tool's schema lets its arguments hold nothing the person said ("Bye" and a
calculator that takes only arithmetic), no call to it could be theirs, and reading its
arguments would only spend the time before the answer.
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any, Literal, assert_never

from desktop.core.messages import Message, ToolCall, call_fingerprint
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.char_class import one_class
from desktop.core.tracks.example_numbers import copies_example_numbers, prompt_numbers
from desktop.core.tracks.prompt import current_turn_start, is_request
from desktop.core.words import STOPWORDS, numbers_in

# A call at least half made of the person's values (or, after a result, of what was said):
# "45 minutes in seconds" is 45 * 60, one value said and one known.
GROUNDED_SHARE = 0.5
_WORD = re.compile(r"[^\W\d_]{3,}")
_NAME_PARTS = re.compile(r"([a-z0-9])([A-Z])")
# An example inside a description ("e.g. months") is a particular, not what the tool is for.
_EXAMPLE_CLAUSE = re.compile(r"\b(?:e\.g\.|for example|such as)[^.;,)]*", re.IGNORECASE)
_KEYWORDS_THAT_WIDEN = ("anyOf", "oneOf", "allOf", "$ref", "not", "if", "prefixItems")
_SCHEMA_DEPTH = 8


RefusalKind = Literal[
    "prompt_numbers", "copies_an_example", "not_about", "not_the_persons",
    "holds_nothing_said", "made_before",
]  # fmt: skip


@dataclass(frozen=True)
class Reason:
    """Why the licence leaves a call to `tool` out, as a value the loop can act on (a call
    of the prompt's numbers is written again with the numbers said), worded for the
    inspector by `str`."""

    kind: RefusalKind
    tool: str

    def __str__(self) -> str:
        match self.kind:
            case "prompt_numbers":
                return f"the call's numbers are the tool prompt's examples', not said ({self.tool})"
            case "copies_an_example":
                return f"the call copies an example of {self.tool}"
            case "not_about":
                return f"the request is not about {self.tool}"
            case "not_the_persons":
                return (
                    f"the request is not about {self.tool}, and the call's values are not "
                    "the person's"
                )
            case "holds_nothing_said":
                return (
                    f"the request is not about {self.tool}, and its arguments could hold "
                    "nothing the person said"
                )
            case "made_before":
                return (
                    f"this call to {self.tool} was made in this turn already; its result is above"
                )
            case _:
                assert_never(self.kind)


@cache
def _stemmer() -> Any:
    import Stemmer  # "driving" finds "drive"; loaded on the first call weighed

    return Stemmer.Stemmer("english")


def _words(text: str) -> set[str]:
    """The stems of a text's content words (names split: get_weather -> get weather)."""
    text = re.sub(r"[_.\-/]+", " ", _NAME_PARTS.sub(r"\1 \2", text)).casefold()
    words = [w for w in _WORD.findall(text) if w not in STOPWORDS]
    return set(_stemmer().stemWords(words))


def _numbers(text: str) -> set[str]:
    return {_value(number) for number in numbers_in(text)}


def _value(number: Decimal) -> str:
    """A number as the licence compares it: "7,006,652" and "7006652.0" are one value."""
    return str(number.normalize())


def content(text: str) -> set[str]:
    """What a text says that a call could take: its numbers and its content words."""
    return _numbers(text) | _words(text)


def _leaves(value: Any) -> Iterator[str]:
    """The scalar values in arguments, however deeply a model nested them (no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif item is not None and not isinstance(item, bool):
            yield str(item)


def values_of(arguments: Any) -> set[str]:
    """What a call's arguments say: the numbers and content words of their values."""
    said: set[str] = set()
    for leaf in _leaves(arguments):
        said |= content(leaf)
    return said


def grounded(values: set[str], said: set[str]) -> float | None:
    """The share of a call's values found in what was said (None: the call has none)."""
    return len(values & said) / len(values) if values else None


def tool_words(tool: ToolSpec) -> set[str]:
    """What a tool is about: its name, description and parameters (names, descriptions and
    the values they take), not its examples, whose particulars ("our sales") would make it
    about whatever they mention."""
    parts = [tool.name, _EXAMPLE_CLAUSE.sub("", tool.description)]
    for name, spec in tool.properties.items():
        parts.append(name)
        if isinstance(spec, dict):
            parts.append(_EXAMPLE_CLAUSE.sub("", str(spec.get("description", ""))))
            enum = spec.get("enum")
            if isinstance(enum, list):
                parts += [str(v) for v in enum if isinstance(v, str)]
    return _words(" ".join(parts))


def _example_values(tool: ToolSpec) -> set[str]:
    """The values of all the tool's own examples: an optional argument made of them alone,
    and never said, was copied from the prompt."""
    found: set[str] = set()
    for example in tool.examples:
        found |= values_of(example.arguments)
    return found


def _could_hold(schema: Any, numbers: set[str], words: set[str], depth: int = 0) -> bool:
    """Whether a value valid under `schema` could hold one of the person's `numbers` or
    `words` (stems). Where the schema is not one of the plain shapes read here, it could."""
    if depth > _SCHEMA_DEPTH or not isinstance(schema, dict):
        return True
    if any(key in schema for key in _KEYWORDS_THAT_WIDEN):
        return True
    options = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(options, list):
        return bool(values_of(options) & (numbers | words))
    kind = schema.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else None
    if kinds is None or not kinds <= {"number", "integer", "boolean", "null", "string", "array"}:
        return True
    held = bool(numbers) and bool({"number", "integer"} & kinds)
    if "string" in kinds:
        held = held or _string_could_hold(schema.get("pattern"), numbers, words)
    if "array" in kinds:
        held = held or _could_hold(schema.get("items", True), numbers, words, depth + 1)
    return held


def _string_could_hold(pattern: Any, numbers: set[str], words: set[str]) -> bool:
    """Whether a string matching `pattern` could hold one of the numbers or words."""
    if not numbers and not words:
        return False
    char = one_class(pattern, re.IGNORECASE)
    if char is None:
        return True
    if numbers and any(char.fullmatch(d) for d in "0123456789"):
        return True  # some digits at least: a number said may be written
    # Two letters may spell a word whose stem is one said (stems are not spellings); one
    # letter only spells that letter repeated ("eee" beside the calculator's exponents).
    candidates = set(string.ascii_lowercase) | {c for word in words for c in word}
    letters = {c for c in candidates if char.fullmatch(c)}
    if len(letters) != 1:
        return bool(letters) and bool(words)
    return any(set(word) <= letters for word in words)


def refused_by_name(tools: Sequence[ToolSpec], messages: Sequence[Message]) -> dict[str, Reason]:
    """The offered tools no call to which could be the person's, known before a call to
    one writes its arguments, and why: on a turn's first step, for a request about no
    offered tool, those whose arguments could hold nothing the person said."""
    if after_a_result(messages) or tools_about(messages, tools):
        return {}
    request = request_of(messages)
    numbers, words = _numbers(request), _words(request)
    refused: dict[str, Reason] = {}
    for tool in tools:
        if tool.parameters.get("additionalProperties") is True:
            continue
        if not any(_could_hold(spec, numbers, words) for spec in tool.properties.values()):
            refused[tool.name] = Reason("holds_nothing_said", tool.name)
    return refused


def request_of(messages: Sequence[Message]) -> str:
    """The person's request this turn: their last message that is not the loop's."""
    start = current_turn_start(messages)
    return messages[start].text if messages and is_request(messages[start]) else ""


def refusal(
    call: ToolCall,
    tool: ToolSpec,
    messages: Sequence[Message],
    offered: Sequence[ToolSpec] = (),
    repeats_allowed: Collection[str] = (),
) -> Reason | None:
    """None if the call is the person's; else why not. `offered`: the step's other tools,
    whose examples' numbers the call may have copied; `repeats_allowed`: the tools whose
    exact repeats the deduplicator lets run (its switch off for them)."""
    if call.name not in repeats_allowed and made_before(call, messages):
        return Reason("made_before", call.name)
    request = request_of(messages)
    values = values_of(call.arguments)
    said = content(" ".join(m.text for m in messages))
    # First, as the one copy the loop can mend: written again with the numbers said.
    others = [t for t in offered if t is not tool]
    if copies_example_numbers(call, [tool, *others], messages):
        return Reason("prompt_numbers", call.name)
    # The values of one whole example: a single shared word ("txt") is not a copy.
    copies = any(values == values_of(e.arguments) for e in tool.examples)
    if values and copies and not values & said:
        return Reason("copies_an_example", call.name)
    if _words(request) & tool_words(tool):
        return None
    from_request = grounded(values, content(request))
    if from_request is not None and from_request >= GROUNDED_SHARE:
        return None
    from_conversation = grounded(values, said)
    if after_a_result(messages) and (from_conversation or 0) >= GROUNDED_SHARE:
        return None
    # A follow-up adds a number to what the conversation holds: "And if I divide that by
    # 2?" after "What is 1234 * 5678?" is 1234 * 5678 / 2. One that adds none ("Thanks!")
    # is not asking for the earlier values again, nor is a word shared ("the total sales"
    # and a chart titled "Sales").
    if values & _numbers(request) and from_conversation == 1:
        return None
    if from_request is None:
        return Reason("not_about", call.name)
    return Reason("not_the_persons", call.name)


def made_before(call: ToolCall, messages: Sequence[Message]) -> bool:
    """Whether this exact call (by its fingerprint, as the deduplicator knows calls) ran
    at an earlier step of this turn: its result is there (one refused, say as invalid, is
    the other rules' to judge)."""
    made = call_fingerprint(call.name, call.arguments)
    turn = messages[current_turn_start(messages) + 1 :]
    answered = {m.tool_call_id for m in turn if m.role == "tool" and not m.rejected}
    earlier = (c for m in turn if m.role == "assistant" for c in m.tool_calls)
    return any(c.id in answered and call_fingerprint(c.name, c.arguments) == made for c in earlier)


def after_a_result(messages: Sequence[Message]) -> bool:
    """Whether a tool has answered in this turn (its result is the loop's message)."""
    turn = messages[current_turn_start(messages) + 1 :]
    return any(m.role == "tool" or m.from_the_loop for m in turn)


def trimmed(call: ToolCall, tool: ToolSpec, messages: Sequence[Message]) -> ToolCall:
    """The call without the optional arguments it copied from its tool's examples or made
    only of the numbers its prompt shows, never said: "What time is it?" wants the clock,
    not the example's time zone, and a season written as the description's stated default
    leaves the tool its default (kept, the call would read as one of the prompt's numbers
    and be refused whole)."""
    required = tool.parameters.get("required", [])
    if all(name in required for name in call.arguments):
        return call  # most calls: nothing to read in the prompt or the conversation
    copied = _example_values(tool) | {_value(n) for n in prompt_numbers([tool])}
    said = content(" ".join(m.text for m in messages))

    def made_up(value: Any) -> bool:
        values = values_of(value)
        return bool(values) and values <= copied and not values & said

    kept = {k: v for k, v in call.arguments.items() if k in required or not made_up(v)}
    return call if len(kept) == len(call.arguments) else ToolCall(call.id, call.name, kept)


@dataclass(frozen=True)
class Licence:
    """The last rule as the writing of one step's calls applies it: each whole call's
    verdict (`refusal`), and the tools whose calls it refuses by name (`refused_by_name`),
    before their arguments are written."""

    tools: Sequence[ToolSpec]
    messages: Sequence[Message]
    by_name: Mapping[str, Reason]
    repeats_allowed: Collection[str] = ()

    @classmethod
    def of(
        cls,
        tools: Sequence[ToolSpec],
        messages: Sequence[Message],
        repeats_allowed: Collection[str] = (),
    ) -> Licence:
        return cls(tools, messages, refused_by_name(tools, messages), repeats_allowed)

    def refusal(self, call: ToolCall) -> Reason | None:
        return refusal_of(call, self.tools, self.messages, self.repeats_allowed)

    def licensed(self, calls: Sequence[ToolCall]) -> tuple[list[ToolCall], list[Refusal]]:
        return licensed(calls, self.tools, self.messages, self.repeats_allowed)


@dataclass(frozen=True)
class Refusal:
    """A call left out as not the person's: why (which names its tool); the call itself
    where it was written whole (not where it was refused at its name)."""

    reason: Reason
    call: ToolCall | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return self.reason.tool


def tools_about(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[str]:
    """The offered tools the person's request is about, those sharing the most words
    first (in the order offered where they share as many)."""
    request = _words(request_of(messages))
    shared = [(len(request & tool_words(tool)), tool.name) for tool in tools]
    ranked = sorted(shared, key=lambda pair: -pair[0])
    return [name for count, name in ranked if count > 0]


def refusal_of(
    call: ToolCall,
    tools: Sequence[ToolSpec],
    messages: Sequence[Message],
    repeats_allowed: Collection[str] = (),
) -> Reason | None:
    """Why a call is not the person's, as `licensed` judges it (None: it is, or it names
    no offered tool, which is another rule's)."""
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        return None
    return refusal(trimmed(call, tool, messages), tool, messages, tools, repeats_allowed)


def licensed(
    calls: Sequence[ToolCall],
    tools: Sequence[ToolSpec],
    messages: Sequence[Message],
    repeats_allowed: Collection[str] = (),
) -> tuple[list[ToolCall], list[Refusal]]:
    """The calls that are the person's (trimmed of copied optional arguments), and why each
    other one is not."""
    by_name = {tool.name: tool for tool in tools}
    kept: list[ToolCall] = []
    refused: list[Refusal] = []
    for call in calls:
        tool = by_name.get(call.name)
        if tool is not None:
            call = trimmed(call, tool, messages)
        why = None if tool is None else refusal(call, tool, messages, tools, repeats_allowed)
        if why is None:
            kept.append(call)
        else:
            refused.append(Refusal(why, call))
    return kept, refused
