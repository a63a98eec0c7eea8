"""One vocabulary of events, from the provider to the widget.

What a provider yields for one model request (`ProviderEvent`: text and thinking chunks,
usage, notices, token odds, and one `Reply`) the loop turns into what a turn emits
(`Event`: the GUI, the CLI, tests and traces read these). They pair: `TextChunk` becomes
`TextDelta`, `ThinkingChunk` `ThinkingDelta`, `UsageReport` `Usage`, `Notice`
`TurnWarning`, and a `Reply` the turn's calls or its end.

Every turn event has a `kind` and the `step` it belongs to (the 0-based index of the model
request within the turn). `event_to_dict` gives the JSON form the CLI prints with
`--events jsonl`; images appear there as their type and size, not their bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

from desktop.core.messages import Image, Source, ToolCall

# --- what a provider yields ---------------------------------------------------------------


@dataclass(frozen=True)
class TextChunk:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingChunk:
    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class UsageReport:
    prompt_tokens: int
    completion_tokens: int
    # Prompt tokens the server took from its cache (llama.cpp `timings.cache_n`), if it says.
    cached_tokens: int | None = None
    kind: Literal["usage_report"] = "usage_report"


@dataclass(frozen=True)
class Notice:
    """Something the user should know that does not stop the answer (context nearly full)."""

    message: str
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class TokenOdds:
    """The likeliest candidates for one generated token, with their probabilities; and the
    token generated with its probability before any grammar (None where not reported): a
    grammar may force a token the model found unlikely."""

    alternatives: tuple[tuple[str, float], ...]
    chosen: tuple[str, float] | None = None
    kind: Literal["token_odds"] = "token_odds"


@dataclass(frozen=True)
class BrokenCall:
    """A tool call the model started but that cannot be run: cut off, or not JSON."""

    name: str
    arguments: Any
    reason: str


@dataclass(frozen=True)
class CallGate:
    """How the call gate judged a call the model opened: its odds of a call against the
    bar, and where that bar came from (the model's calibration, or none yet). A call under
    the bar is still made if the model was sure of its arguments: their odds (the mean
    probability of their tokens, written under the grammar) against the arguments' bar."""

    odds: float
    bar: float
    source: str  # "calibrated <day>", or "uncalibrated"
    arguments: float | None = None  # weighed only for a call under the bar
    arguments_bar: float | None = None

    @property
    def passed(self) -> bool:
        return self.odds >= self.bar or self.arguments_sure

    @property
    def arguments_sure(self) -> bool:
        """The call's arguments made it pass, under the bar."""
        if self.arguments is None or self.arguments_bar is None:
            return False
        return self.odds < self.bar and self.arguments >= self.arguments_bar


@dataclass(frozen=True)
class GateRecord:
    """What the gate saw and decided for one step: the bars that applied, the greedy
    opening's odds, the request judged by its bar, the turn alone judged by the first
    bar (the second look), and the verdict with why."""

    bar: float
    source: str
    alone_bar: float | None = None
    alone_source: str | None = None
    arguments_bar: float | None = None
    opening: float | None = None  # the greedy opening probe's odds of a call
    request: CallGate | None = None
    alone: CallGate | None = None
    verdict: Literal["call", "plain", "prose"] = "prose"
    reason: str = ""

    @property
    def judged(self) -> CallGate | None:
        """The judgement the verdict rests on: the second look's where it let the call
        through, else the request's."""
        if self.alone is not None and (self.alone.passed or self.request is None):
            return self.alone
        return self.request

    def bars(self) -> dict[str, Any]:
        """The bars that applied, as the trace's export names them."""
        found: dict[str, Any] = {"bar": self.bar, "source": self.source}
        if self.alone_bar is not None:
            found |= {"alone_bar": self.alone_bar, "alone_source": self.alone_source}
        if self.arguments_bar is not None:
            found["arguments_bar"] = self.arguments_bar
        return found

    def to_dict(self) -> dict[str, Any]:
        def gate(found: CallGate | None) -> dict[str, Any] | None:
            if found is None:
                return None
            return {"odds": found.odds, "bar": found.bar, "source": found.source,
                    "arguments": found.arguments, "passed": found.passed}  # fmt: skip

        return {
            **self.bars(),
            "opening": self.opening,
            "request": gate(self.request),
            "alone": gate(self.alone),
            "verdict": self.verdict,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Reply:
    """The end of one model response.

    `text` is the answer text, without any tool-call JSON; `raw` is what the model wrote,
    for the inspector. `finish_reason` is the backend's ("stop", "length", "tool_calls").
    """

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    broken_calls: list[BrokenCall] = field(default_factory=list)
    raw: str = ""
    finish_reason: str | None = None
    gate: CallGate | None = None  # set where the call gate weighed an opened call
    kind: Literal["reply"] = "reply"
    record: GateRecord | None = None  # what the call gate saw and decided, where it ran


ProviderEvent = TextChunk | ThinkingChunk | UsageReport | Notice | TokenOdds | Reply


# --- what a turn emits -------------------------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    step: int
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    step: int
    text: str
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ToolCallParsed:
    """The model asked for a tool; validation and dedupe come next. `gate`: how the call
    gate judged the step's calls (the bars that let them through), where it weighed them."""

    step: int
    id: str
    name: str
    arguments: Any
    kind: Literal["tool_call"] = "tool_call"
    gate: CallGate | None = None


RejectionStage = Literal[
    "parse", "validation", "repeat", "cooldown", "limit", "withdrawn", "denied"
]


@dataclass(frozen=True)
class ToolRejected:
    """A call that was not run, and why; the reason is also what the model is told.

    `stage` says which check refused it: the call could not be parsed, its name or
    arguments are invalid, it repeats an earlier call, its tool is on cooldown, the turn's
    limit was spent, or tools had been withdrawn and the model called anyway.
    """

    step: int
    name: str
    arguments: Any
    reason: str
    stage: RejectionStage = "validation"
    id: str | None = None
    kind: Literal["tool_rejected"] = "tool_rejected"


@dataclass(frozen=True)
class ToolStarted:
    step: int
    id: str
    name: str
    kind: Literal["tool_started"] = "tool_started"


@dataclass(frozen=True)
class RetrievedPassage:
    """A passage a document search sent to the model: where it is, and its score by each
    method that found it ("bm25", "embedding", and "fused" where both ranked it)."""

    where: str
    path: str
    scores: dict[str, float]
    page: int | None = None


@dataclass(frozen=True)
class Retrieval:
    """What a document search did, for the inspector: the query, the collections searched
    (empty: all), the methods used, the passages sent (best first), and why embeddings
    were not used where they were meant to be."""

    query: str
    collections: tuple[str, ...]
    methods: tuple[str, ...]
    passages: tuple[RetrievedPassage, ...]
    note: str = ""

    def sources(self) -> tuple[Source, ...]:
        """What the answer's citations [1], [2]... point at, in the passages' order."""
        return tuple(Source(p.path, p.page, p.where) for p in self.passages)


@dataclass(frozen=True)
class ToolResult:
    step: int
    id: str
    name: str
    content: str
    images: list[Image] = field(default_factory=list)
    duration_ms: float = 0.0
    error: str | None = None
    # A document search's record (its query and scores); None for every other tool.
    retrieval: Retrieval | None = None
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class Usage:
    step: int
    prompt_tokens: int
    completion_tokens: int
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True)
class TurnWarning:
    """A warning that does not end the turn, e.g. the prompt nearly fills the context."""

    step: int
    message: str
    kind: Literal["warning"] = "warning"


@dataclass(frozen=True)
class TurnFinished:
    step: int
    text: str
    kind: Literal["turn_finished"] = "turn_finished"


@dataclass(frozen=True)
class TurnFailed:
    step: int
    message: str
    kind: Literal["turn_failed"] = "turn_failed"


Event = (
    TextDelta
    | ThinkingDelta
    | ToolCallParsed
    | ToolRejected
    | ToolStarted
    | ToolResult
    | Usage
    | TurnWarning
    | TurnFinished
    | TurnFailed
)

EVENT_KINDS: tuple[str, ...] = tuple(
    cls.__dataclass_fields__["kind"].default for cls in get_args(Event)
)


def event_to_dict(event: Event) -> dict[str, Any]:
    """JSON-ready form: `kind` first, then the fields in declaration order."""
    out: dict[str, Any] = {"kind": event.kind}
    for f in fields(event):
        if f.name == "kind":
            continue
        value = getattr(event, f.name)
        if f.name == "images":
            value = [image.summary() for image in value]
        elif isinstance(value, CallGate):
            value = {**asdict(value), "passed": value.passed}
        elif isinstance(value, Retrieval):
            value = asdict(value)
        out[f.name] = value
    return out
