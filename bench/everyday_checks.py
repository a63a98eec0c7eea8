"""What the everyday bench checks in an answer, apart from running anything: whether it
declines, shows Loomchat's own formats or a call written out, and states what a tool
returned. Written from what a person would see, not from the product's own detector, so
the bench can catch what the product misses."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

# An answer that declines: "I'm sorry, but I can't assist with that", "I cannot help ...".
REFUSAL = re.compile(
    r"\b(I'?m sorry|I am sorry|I apologi[sz]e|I can(?:'|no)t (?:assist|help|provide)|"
    r"I am unable|I'm unable|unable to (?:assist|help)|as an AI)",
    re.IGNORECASE,
)
# Loomchat's words to the model, which a person must never read back: the transcript of
# earlier turns, a result's header, a step's hints, a refusal's reason, the tool prompt.
LOOMCHAT_WORDS = re.compile(
    r"Earlier in this conversation:|^\s*(?:User|You):\s|\[Result of\b|I called \w+ with \{|"
    r"answer the user now in plain text|using the results above|"
    r"Rejected: this exact call|You can use tools|To call a tool, answer",
    re.IGNORECASE | re.MULTILINE,
)
# A call written out instead of made: a JSON object with a name and arguments, in a fence
# or not, or a chat template's call tag.
CALL_SHAPED = re.compile(
    r"\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\"\s*:|<tool_call>|"
    r"```(?:json)?\s*\{\s*\"name\"",
    re.IGNORECASE,
)
# A number as a person writes it: "7,006,652", "12.5", "95".
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Expected:
    """What a person expects of one turn (a line of the set's `turns`)."""

    user: str
    tool: str | None
    answer_has: tuple[str, ...] = ()
    uses_result: bool = False

    @classmethod
    def from_dict(cls, turn: dict[str, Any]) -> Expected:
        return cls(
            str(turn["user"]),
            turn.get("tool"),
            tuple(turn.get("answer_has") or ()),
            bool(turn.get("uses_result")),
        )


@dataclass
class Verdict:
    """How one turn went, each way it can go wrong named."""

    unwanted_calls: list[str] = field(default_factory=list)
    missed_call: bool = False
    repeated_call: bool = False  # a call made again after its result (the deduplicator's)
    result_ignored: bool = False
    refusal: bool = False
    loomchat_format: bool = False
    call_shaped: bool = False
    missing: bool = False  # the answer lacks what it must contain
    made_up_data: bool = False  # a chart drawn of numbers nobody gave it
    failed: str = ""  # the turn ended in an error

    @property
    def right(self) -> bool:
        return not (
            self.unwanted_calls or self.missed_call or self.repeated_call
            or self.result_ignored or self.refusal
            or self.loomchat_format or self.call_shaped or self.missing
            or self.made_up_data or self.failed
        )  # fmt: skip

    def problems(self) -> list[str]:
        named = [
            (bool(self.unwanted_calls), f"unwanted call: {', '.join(self.unwanted_calls)}"),
            (self.missed_call, "missed call"),
            (self.repeated_call, "a call made again"),
            (self.result_ignored, "result not used"),
            (self.refusal, "refusal"),
            (self.loomchat_format, "Loomchat format shown"),
            (self.call_shaped, "call written out"),
            (self.missing, "answer lacks what it must say"),
            (self.made_up_data, "chart of numbers nobody gave"),
            (bool(self.failed), f"failed: {self.failed}"),
        ]
        return [text for shown, text in named if shown]


def judge(expected: Expected, calls: list[str], results: dict[str, str], answer: str,
          failed: str = "", repeats: int = 0, drawn: Mapping[str, Any] | None = None,
          said: str = "") -> Verdict:  # fmt: skip
    """`calls`: the tools the turn called, in order (refused ones too); `results`: each
    tool's last successful result; `repeats`: calls refused as made before (the person
    sees each as a refused call); `drawn`: the arguments of each tool's last successful
    call; `said`: what the person and the tools said in the conversation so far."""
    verdict = Verdict(failed=failed, repeated_call=repeats > 0)
    chart = (drawn or {}).get("create_chart")
    verdict.made_up_data = chart is not None and not chart_data_given(chart, said)
    verdict.unwanted_calls = [c for c in calls if c != expected.tool]
    verdict.missed_call = expected.tool is not None and expected.tool not in results
    if expected.uses_result and expected.tool in results:
        verdict.result_ignored = not states_result(expected.tool, results[expected.tool], answer)
    verdict.refusal = bool(REFUSAL.search(answer)) or not answer.strip()
    verdict.loomchat_format = bool(LOOMCHAT_WORDS.search(answer))
    verdict.call_shaped = bool(CALL_SHAPED.search(answer))
    folded = answer.casefold()
    verdict.missing = bool(expected.answer_has) and not any(
        want.casefold() in folded for want in expected.answer_has
    )
    return verdict


def states_result(tool: str, result: str, answer: str) -> bool:
    """Whether the answer states what the tool returned."""
    try:
        value = json.loads(result)
    except json.JSONDecodeError:
        value = result
    if tool == "calculator" and isinstance(value, dict):
        return any(form in answer for form in number_forms(str(value.get("result", ""))))
    if tool == "current_time" and isinstance(value, dict):
        return any(form.casefold() in answer.casefold() for form in time_forms(value))
    return True  # a chart: it was drawn; the answer is judged for refusals and formats


def chart_data_given(arguments: Any, said: str) -> bool:
    """Whether every number a chart shows (its values, and its more series') was given in
    `said`: a chart of its tool example's numbers looks right and tells the person
    nothing of theirs."""
    if not isinstance(arguments, dict):
        return False
    shown = list(arguments.get("values") or [])
    for series in arguments.get("more_series") or []:
        if isinstance(series, dict):
            shown += list(series.get("values") or [])
    given = {Decimal(n.replace(",", "")) for n in NUMBER.findall(said)}
    try:
        return all(Decimal(str(value)) in given for value in shown)
    except InvalidOperation:
        return False


def number_forms(text: str) -> set[str]:
    """How an answer may write a number: as given, with thousands separators, rounded."""
    try:
        number = Decimal(text)
    except InvalidOperation:
        return {text} if text else set()
    forms = {text}
    for places in (0, 1, 2):
        rounded = round(number, places)
        if rounded == number or places > 0:
            plain = f"{rounded:.{places}f}"
            forms |= {plain, f"{rounded:,.{places}f}"}
    if number == number.to_integral_value():
        forms |= {f"{int(number)}", f"{int(number):,}"}
    return {f for f in forms if f not in ("0.0", "0.00")}


def time_forms(value: dict[str, Any]) -> set[str]:
    """How an answer may state the clock's result: its weekday, its time to the minute (24-
    or 12-hour), or its date in the common ways."""
    forms: set[str] = set()
    if isinstance(value.get("weekday"), str):
        forms.add(value["weekday"])
    try:
        moment = datetime.fromisoformat(str(value.get("iso")))
    except ValueError:
        return forms
    hour12 = moment.hour % 12 or 12
    forms |= {moment.strftime("%H:%M"), f"{moment.hour}:{moment.minute:02d}",
              f"{hour12}:{moment.minute:02d}"}  # fmt: skip
    month, day = moment.strftime("%B"), moment.day
    forms |= {moment.strftime("%Y-%m-%d"), f"{month} {day}", f"{day} {month}",
              f"{month[:3]} {day}", f"{day} {month[:3]}", f"{month} {day:02d}",
              moment.strftime("%m/%d/%Y"), moment.strftime("%d/%m/%Y")}  # fmt: skip
    return forms
