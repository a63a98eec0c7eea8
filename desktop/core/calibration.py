"""Per-model calibration of tool calling: how a model calls the tools it is offered, and
the call gate's bar and the track that serve it best.

Models differ in how sure they are when they open a call (one model's odds are 0.95 where
a call is due and 0.87 where none is; a larger one's 0.58-0.86 where a call is plainly
due), so no fixed bar suits them all. Calibration asks the model a few dozen short
questions built from the tools themselves (their examples; a request with only other tools
offered; chit-chat; a question the last result already answers), once with no bar,
reading its odds of a call on each, and picks the bar that best separates the calls that
were due and right from the answers that should have been text. Where the backend has
its own tool calling, that track answers the same questions and the better one is kept.

The run is paused (its request cancelled, the question asked again later) whenever a chat
needs the model: calibration never makes a person wait.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any, Literal

import jsonschema

from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Provider, Reply, RequestOptions, UsageReport
from desktop.core.tool_spec import Example, ToolSpec
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.native import NativeTools

CaseKind = Literal["call", "calls", "distracted", "later", "unfit", "chat", "near-miss", "answered"]
TrackName = Literal["constrained", "emulated", "native"]

# Questions read at their opening (a second or two each): enough to place a bar (half of
# them with a call due), few enough for a 0.5B model on two CPU cores in about two minutes.
MAX_CASES = 40
# Of those, this many due and as many not are answered in full, for the card and for the
# native track.
FULL_ANSWERS = 6
# At most this many tools beside a question: as many as a turn offers when tool selection
# picks (tool_selection.py), so that a few hundred tools still make short prompts.
OFFERED = 4
# Requests no tool serves: the model should answer them in words.
CHIT_CHAT = (
    "Tell me a short joke.",
    "Hi! How are you today?",
    "Write a two-line poem about autumn.",
    "Thanks, that is all I needed.",
    "What does the word 'ephemeral' mean?",
    "Give me one tip for sleeping better.",
)
# Each calibration question runs with the same seed and temperature 0: a calibration is a
# measurement, the same on every run.
OPTIONS = RequestOptions(temperature=0, seed=11, max_tokens=256)
# The call gate may turn at most this share of right calls into text answers: a call
# that is due is what tools are for. Below that it turns down all the unwanted calls it can.
KEEP_RIGHT_CALLS = 0.9
# Where no call is due and the track cannot stop at the answer's opening, this many tokens
# show whether it calls (a call cut short still counts as one).
QUIET_TOKENS = 48


@dataclass(frozen=True)
class Case:
    """One calibration question: the conversation, the tools offered, and the calls that
    answer it (none where the model should answer in words)."""

    kind: CaseKind
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    expected: tuple[tuple[str, dict[str, Any]], ...] = ()

    @property
    def due(self) -> bool:
        return bool(self.expected)


def cases_for(tools: Sequence[ToolSpec], seed: int = 0) -> list[Case]:
    """Calibration questions built from `tools`: each example gives a call that is due
    (alone, with other tools beside it, two at once, after earlier turns) and a request no
    offered tool fits
    (its own tool withheld); chit-chat, a near-miss about a tool, and a question the last
    result answers need no call. Half the cases, at most, are due calls."""
    rng = random.Random(seed)
    examples = [(tool, example) for tool in tools for example in tool.examples[:2]]
    rng.shuffle(examples)
    due: list[Case] = []
    quiet: list[Case] = []
    for tool, example in examples:
        others = [t for t in tools if t.name != tool.name]
        expected: tuple[tuple[str, dict[str, Any]], ...] = ((tool.name, dict(example.arguments)),)
        ask = (Message.user(example.prompt),)
        fresh = _without(tool, example)
        due.append(Case("call", ask, (fresh,), expected))
        if others:
            beside = rng.sample(others, min(OFFERED - 1, len(others)))
            due.append(Case("distracted", ask, tuple(_in_order(tools, [fresh, *beside])), expected))
            withheld = rng.sample(others, min(OFFERED - 1, len(others)))
            quiet.append(Case("unfit", ask, tuple(_in_order(tools, withheld)), ()))
    for (one, first), (two, second) in zip(examples[::2], examples[1::2], strict=False):
        # Deep in a conversation: asked after a turn with a call and its result, and one of
        # chit-chat (models call less surely there).
        before = (
            *_a_turn_with_a_call(two, second),
            Message.user(CHIT_CHAT[len(due) % len(CHIT_CHAT)]),
            Message.assistant("Sure, here you go."),
        )
        expected = ((one.name, dict(first.arguments)),)
        offered = _in_order(tools, [_without(one, first), *([two] if two.name != one.name else [])])
        due.append(Case("later", (*before, Message.user(first.prompt)), tuple(offered), expected))
        if one.name != two.name:
            both = Message.user(f"{first.prompt.rstrip('.?! ')}. Also: {second.prompt}")
            expected = ((one.name, dict(first.arguments)), (two.name, dict(second.arguments)))
            pair = [_without(one, first), _without(two, second)]
            due.append(Case("calls", (both,), tuple(_in_order(tools, pair)), expected))

    def a_few(*kept: ToolSpec) -> tuple[ToolSpec, ...]:
        """Up to OFFERED tools, as a turn offers them (all of few, a selection of many)."""
        rest = [t for t in tools if t not in kept]
        return tuple(
            _in_order(tools, [*kept, *rng.sample(rest, min(len(rest), OFFERED - len(kept)))])
        )

    quiet += [Case("chat", (Message.user(text),), a_few()) for text in CHIT_CHAT]
    for tool, example in examples:
        about = tool.name.replace("_", " ").replace("-", " ")
        question = Message.user(f"In a sentence: what is {about} good for?")
        quiet.append(Case("near-miss", (question,), a_few(tool)))
        conversation = (*_a_turn_with_a_call(tool, example), Message.user("Thanks! Did it work?"))
        quiet.append(Case("answered", conversation, a_few(tool)))
    rng.shuffle(due)
    rng.shuffle(quiet)
    quiet_count = min(len(quiet), max(MAX_CASES // 2, MAX_CASES - len(due)))
    chosen = _by_kind(due, MAX_CASES - quiet_count) + _by_kind(quiet, quiet_count)
    rng.shuffle(chosen)
    return chosen


def _a_turn_with_a_call(tool: ToolSpec, example: Example) -> tuple[Message, ...]:
    """An earlier turn: the example's request, its call, a result, a short answer."""
    call = ToolCall("earlier", tool.name, dict(example.arguments))
    return (
        Message.user(example.prompt),
        Message.assistant("", [call]),
        Message.tool(call.id, tool.name, '{"ok": true, "result": "done"}'),
        Message.assistant("Done."),
    )


def _by_kind(cases: list[Case], count: int) -> list[Case]:
    """`count` cases taken in turn from each kind: every kind as often as it can be (a
    bar set mostly by one kind of question would fit that kind only)."""
    kinds: dict[CaseKind, list[Case]] = {}
    for case in cases:
        kinds.setdefault(case.kind, []).append(case)
    chosen: list[Case] = []
    while len(chosen) < count and any(kinds.values()):
        for pool in kinds.values():
            if pool and len(chosen) < count:
                chosen.append(pool.pop(0))
    return chosen


def _in_order(tools: Sequence[ToolSpec], chosen: Sequence[ToolSpec]) -> list[ToolSpec]:
    """`chosen` in the toolbox's order (as a turn offers them)."""
    order = {t.name: i for i, t in enumerate(tools)}
    return sorted(chosen, key=lambda t: order[t.name])


def _without(tool: ToolSpec, example: Example) -> ToolSpec:
    """The tool as offered for a question made from one of its examples: without that
    example in its prompt. Shown its own question and call, a model is surer than any
    real request makes it (odds of 0.98-0.99 against 0.9-0.96)."""
    return replace(tool, examples=tuple(e for e in tool.examples if e != example))


# --- answers and how they score ----------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the model did with one question on one track."""

    kind: CaseKind
    due: bool
    called: bool  # it made (or tried to make) a call
    # Its calls named the expected tools: what the call gate decides on (the arguments are
    # the constrained phase's part, whatever the bar).
    right: bool
    odds: float | None  # its odds of a call, where the gate weighed one
    invalid: bool  # a call that could not be used
    cut_off: bool  # the output limit cut a call short
    calls: int
    completion_tokens: int
    seconds: float
    arguments_right: bool = False  # and their arguments were the example's

    def right_at(self, bar: float) -> bool:
        """Was the outcome right with this bar on the call gate?"""
        called = self.called and (self.odds is None or self.odds >= bar)
        return self.right if called else not self.due


def same_value(got: Any, wanted: Any) -> bool:
    """Loose equality for arguments: case and surrounding spaces aside, 3 == 3.0 == "3"."""
    if isinstance(wanted, bool) or isinstance(got, bool):
        return bool(got is wanted)
    if isinstance(wanted, int | float) and isinstance(got, int | float | str):
        try:
            return math.isclose(float(got), float(wanted), rel_tol=1e-6)
        except ValueError:
            return False
    if isinstance(wanted, str) and isinstance(got, str):
        return got.strip().casefold() == wanted.strip().casefold()
    if isinstance(wanted, list) and isinstance(got, list):
        return len(got) == len(wanted) and all(map(same_value, got, wanted))
    if isinstance(wanted, dict) and isinstance(got, dict):
        return set(got) >= set(wanted) and all(same_value(got[k], v) for k, v in wanted.items())
    same: bool = got == wanted
    return same


def calls_right(made: Sequence[ToolCall], expected: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    """The calls name exactly the expected tools, and each expected call's arguments are
    found (loosely equal) in a call to its tool."""
    if sorted(c.name for c in made) != sorted(name for name, _ in expected):
        return False
    return all(
        any(c.name == name and same_value(c.arguments, arguments) for c in made)
        for name, arguments in expected
    )


async def opening(provider: ConstrainedTools, case: Case) -> Answer:
    """How the model opens its answer, and no more: a call or not, the tool it names (the
    call is right for the gate if that tool is due), and its odds. About a second."""
    started = time.perf_counter()
    seen = await provider.opening(list(case.messages), list(case.tools), OPTIONS)
    right = case.due and seen.call and seen.tool in {name for name, _ in case.expected}
    seconds = time.perf_counter() - started
    return Answer(case.kind, case.due, seen.call, right, seen.odds, False, False, 0, 0, seconds)


async def answer(provider: Provider, case: Case) -> Answer:
    """The whole answer, its calls checked. Where no call is due, only whether the answer
    calls matters, and it is cut short."""
    started = time.perf_counter()
    options = OPTIONS if case.due else replace(OPTIONS, max_tokens=QUIET_TOKENS)
    reply: Reply | None = None
    tokens = 0
    messages, tools = list(case.messages), list(case.tools)
    async with aclosing(provider.stream(messages, tools, options)) as events:
        async for event in events:
            if isinstance(event, Reply):
                reply = event
            elif isinstance(event, UsageReport):
                tokens += event.completion_tokens
    seconds = time.perf_counter() - started
    if reply is None:
        return Answer(case.kind, case.due, False, False, None, True, False, 0, tokens, seconds)
    made = reply.tool_calls
    broken = bool(reply.broken_calls)
    cut_off = broken and reply.finish_reason == "length" and case.due
    expected = [name for name, _ in case.expected]
    return Answer(
        case.kind,
        case.due,
        called=bool(made) or broken,
        right=not broken and bool(made) and sorted(c.name for c in made) == sorted(expected),
        odds=reply.gate.odds if reply.gate is not None else None,
        invalid=broken and not cut_off and case.due,
        cut_off=cut_off,
        calls=len(made) + len(reply.broken_calls),
        completion_tokens=tokens,
        seconds=seconds,
        arguments_right=not broken and calls_right(made, case.expected),
    )


def score(answers: Sequence[Answer], bar: float) -> float:
    """Balanced accuracy at a bar: the share right where a call is due and the share right
    where none is, weighed equally, so the mix of questions does not choose the bar."""
    shares = []
    for group in ([a for a in answers if a.due], [a for a in answers if not a.due]):
        if group:
            shares.append(sum(a.right_at(bar) for a in group) / len(group))
    return sum(shares) / len(shares) if shares else 0.0


def choose_bar(answers: Sequence[Answer]) -> float:
    """The highest bar that still keeps KEEP_RIGHT_CALLS of the right calls: it turns down
    as many unwanted calls as it can at that price. Placed midway between the lowest right
    call kept and the next lower odds seen; 0 when it would turn no unwanted call down.

    Measured and dropped: the bar with the best balanced accuracy. Calibration's questions
    where no call is due split into chit-chat (prose, or low odds) and requests whose tool
    is withheld (odds as high as a due call's); that bar settled under the first group
    and moved with the questions drawn (0.51-0.94 where the best bars were 0.90 and
    0.955; bench/accuracy.py --calibrated)."""
    right = sorted(a.odds for a in answers if a.due and a.right and a.odds is not None)
    unwanted = [a.odds for a in answers if not a.due and a.called and a.odds is not None]
    if not right or not unwanted:
        return 0.0
    lost = math.floor(len(right) * (1 - KEEP_RIGHT_CALLS) + 1e-9)  # right calls it may cost
    lowest_kept = right[lost]
    below = [a.odds for a in answers if a.odds is not None and a.odds < lowest_kept]
    bar = (max(below) + lowest_kept) / 2 if below else 0.0
    if not any(odds < bar for odds in unwanted):
        return 0.0  # it would turn down nothing unwanted: the model's own choice stands
    return round(bar, 3)


# --- the result: a reliability card --------------------------------------------------------


@dataclass(frozen=True)
class TrackScore:
    """How one track did on the calibration questions (with its bar, for the gated one)."""

    track: TrackName
    due_right: int
    due: int
    parallel_right: int
    parallel: int
    quiet_right: int  # no call where none fits
    quiet: int
    invalid: int
    cut_off: int
    calls: int
    tokens_per_call: float
    seconds_per_call: float
    score: float  # balanced accuracy
    arguments_right: int = 0  # of the due calls made, those with the example's arguments
    answered_in_full: int = 0  # the due questions answered in full (arguments checked)

    @classmethod
    def of(
        cls,
        track: TrackName,
        decisions: Sequence[Answer],
        bar: float,
        calls: Sequence[Answer] | None = None,
    ) -> TrackScore:
        """The track's score at `bar`: whether it calls where it should from `decisions`,
        how good its calls are from `calls` (answers in full; `decisions` if they are)."""
        calls = decisions if calls is None else calls
        due = [a for a in decisions if a.due]
        quiet = [a for a in decisions if not a.due]
        parallel = [a for a in calls if a.kind == "calls"]
        calling = [a for a in calls if a.called and a.calls]
        made = sum(a.calls for a in calling)
        full_due = [a for a in calls if a.due]
        return cls(
            track,
            sum(a.right_at(bar) for a in due),
            len(due),
            sum(a.right_at(bar) for a in parallel),
            len(parallel),
            sum(a.right_at(bar) for a in quiet),
            len(quiet),
            sum(a.invalid for a in calls),
            sum(a.cut_off for a in calls),
            made,
            round(sum(a.completion_tokens for a in calling) / made, 1) if made else 0.0,
            round(sum(a.seconds for a in calling) / made, 2) if made else 0.0,
            round(score(decisions, bar), 4),
            sum(a.arguments_right and a.right_at(bar) for a in full_due),
            len(full_due),
        )


@dataclass(frozen=True)
class Calibration:
    """A model's reliability card: the track and bar chosen, and how each track did."""

    model: str
    day: str  # ISO date
    track: TrackName
    bar: float  # the call gate's bar on the emulated track
    scores: tuple[TrackScore, ...]
    cases: int
    seconds: float
    odds_reported: bool = True  # False: the backend gives no token odds, so no gate

    @property
    def chosen(self) -> TrackScore:
        return next(s for s in self.scores if s.track == self.track)

    @property
    def source(self) -> str:
        return f"calibrated {self.day}"

    @property
    def model_name(self) -> str:
        """The model as a person knows it: the file's name, or the served model's."""
        kind, _, rest = self.model.partition(":")
        if kind == "file":
            return rest.rsplit(":", 1)[0]
        return Path(rest).name or rest or self.model

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scores": [asdict(s) for s in self.scores]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        scores = tuple(TrackScore(**s) for s in data["scores"])
        return cls(**{**data, "scores": scores})

    def card(self) -> list[tuple[str, str]]:
        """The card's rows, as the Settings dialog and the CLI show them."""
        s = self.chosen
        gate = f"bar {self.bar:.2f}" if self.odds_reported else "no odds from this backend"
        rows = [
            ("Track", f"{self.track} ({gate})" if self.track != "native" else "native"),
            ("Calls right where one is due", _share(s.due_right, s.due)),
            ("… with the expected arguments", _share(s.arguments_right, s.answered_in_full)),
            ("Parallel calls right", _share(s.parallel_right, s.parallel)),
            ("No call where none fits", _share(s.quiet_right, s.quiet)),
            ("Invalid or cut-off calls", f"{s.invalid} invalid, {s.cut_off} cut off"),
            ("Per call", f"{s.tokens_per_call:.0f} tokens, {s.seconds_per_call:.1f} s"),
        ]
        others = [o for o in self.scores if o.track != self.track]
        rows += [
            (f"{o.track.capitalize()} track", f"{o.score:.0%} right, against {s.score:.0%}")
            for o in others
        ]
        rows.append(("Measured", f"{self.day}, {self.cases} questions, {self.seconds:.0f} s"))
        return rows


def _share(right: int, total: int) -> str:
    return f"{right} of {total} ({right / total:.0%})" if total else "none asked"


Progress = Callable[[int, int], None]


class Calibrator:
    """One calibration run over a provider (the raw backend, not on a track), pausable.

    `pause()` cancels the question in flight and holds the run until `resume()`; that
    question is asked again then. Cancelling the task that runs `run()` ends it."""

    def __init__(
        self,
        provider: Provider,
        tools: Sequence[ToolSpec],
        model: str,
        *,
        native: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.provider = provider
        self.cases = cases_for(tools)
        self.model = model
        self.native = native
        self.progress = progress or (lambda done, total: None)
        self._may_run = asyncio.Event()
        self._may_run.set()
        self._current: asyncio.Future[Answer] | None = None

    def pause(self) -> None:
        self._may_run.clear()
        if self._current is not None:
            self._current.cancel()

    def resume(self) -> None:
        self._may_run.set()

    async def run(self) -> Calibration:
        """Every question read at its opening on the gated track (its bar comes from
        these), a few answered in full (how good the calls are), and the same few on the
        native track where there is one; the better track is kept."""
        if not self.cases:
            raise ValueError("no tool has examples to calibrate with")
        started = time.perf_counter()
        due = [c for c in self.cases if c.due]
        quiet = [c for c in self.cases if not c.due]
        few = due[:FULL_ANSWERS] + quiet[:FULL_ANSWERS]
        gated = self.provider.features.constrains_json
        first: TrackName = "constrained" if gated else "emulated"
        track = ConstrainedTools(self.provider)
        plan: list[tuple[TrackName, str, Case]] = []
        if gated:
            plan += [(first, "opening", c) for c in self.cases]
            plan += [(first, "full", c) for c in due[:FULL_ANSWERS]]
        else:  # no constrained decoding: no odds to weigh, the tolerant parser's answers
            plan += [(first, "full", c) for c in few]
        if self.native:
            plan += [("native", "full", c) for c in few]
        native = NativeTools(self.provider)
        decided: list[Answer] = []
        full: dict[TrackName, list[Answer]] = {first: [], "native": []}
        for done, (name, how, case) in enumerate(plan, start=1):
            if how == "opening":
                decided.append(await self._ask(partial(opening, track, case)))
            else:
                provider: Provider = native if name == "native" else track
                full[name].append(await self._ask(partial(answer, provider, case)))
            self.progress(done, len(plan))
        if not gated:
            decided = full[first]
        bar = choose_bar(decided)
        scores = [TrackScore.of(first, decided, bar, full[first])]
        chosen = first
        if self.native:
            scores.append(TrackScore.of("native", full["native"], bar))
            # Compared on the questions both answered.
            asked = self.cases if gated else few
            same = [a for a, c in zip(decided, asked, strict=True) if c in few]
            if score(full["native"], bar) > score(same, bar):
                chosen = "native"
        return Calibration(
            self.model,
            date.today().isoformat(),
            chosen,
            bar,
            tuple(scores),
            len(self.cases),
            round(time.perf_counter() - started, 1),
            any(a.odds is not None for a in decided),
        )

    async def _ask(self, question: Callable[[], Awaitable[Answer]]) -> Answer:
        while True:
            await self._may_run.wait()
            self._current = asyncio.ensure_future(question())
            try:
                return await self._current
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    self._current.cancel()
                    raise  # the run itself was cancelled
                # paused by a chat: ask this question again once the chat is done
            finally:
                self._current = None


# --- kept per model ----------------------------------------------------------------------

CALIBRATIONS_FILE = "calibrations.json"  # in the data folder

_COUNT = {"type": "integer", "minimum": 0}
_SCORE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "track": {"enum": ["constrained", "emulated", "native"]},
        **{name: _COUNT for name in ("due_right", "due", "parallel_right", "parallel",
                                     "quiet_right", "quiet", "invalid", "cut_off", "calls",
                                     "arguments_right", "answered_in_full")},
        **{name: {"type": "number", "minimum": 0} for name in ("tokens_per_call",
                                                                "seconds_per_call", "score")},
    },
    "required": ["track", "due_right", "due", "parallel_right", "parallel", "quiet_right",
                 "quiet", "invalid", "cut_off", "calls", "tokens_per_call", "seconds_per_call",
                 "score"],
    "additionalProperties": False,
}  # fmt: skip
_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model": {"type": "string"},
        "day": {"type": "string"},
        "track": {"enum": ["constrained", "emulated", "native"]},
        "bar": {"type": "number", "minimum": 0, "maximum": 1},
        "scores": {"type": "array", "items": _SCORE, "minItems": 1},
        "cases": _COUNT,
        "seconds": {"type": "number", "minimum": 0},
        "odds_reported": {"type": "boolean"},
    },
    "required": ["model", "day", "track", "bar", "scores", "cases", "seconds"],
    "additionalProperties": False,
}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "version": {"const": 1},
        "models": {"type": "object", "additionalProperties": {"type": "object"}},
    },
    "required": ["version", "models"],
}


@dataclass
class CalibrationStore:
    """The calibrations of every model used with tools, in one JSON file of the data folder.
    A damaged file is set aside (its problem in `problem`) and the models calibrate again."""

    path: Path | None  # None: kept in memory only (tests, a one-off run)
    problem: str | None = None
    _entries: dict[str, Calibration] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            jsonschema.validate(raw, _SCHEMA)
        except (OSError, ValueError, jsonschema.ValidationError) as exc:
            self.problem = f"{self.path.name} could not be read ({exc}); calibrating again."
            return
        for key, entry in raw["models"].items():
            try:
                jsonschema.validate(entry, _ENTRY)
                calibration = Calibration.from_dict(entry)
                calibration.chosen  # noqa: B018 (the chosen track must be among the scores)
                self._entries[key] = calibration
            except (jsonschema.ValidationError, StopIteration) as exc:
                self.problem = (
                    f"{self.path.name}: {key} could not be read ({exc}); calibrating again."
                )

    def get(self, model: str) -> Calibration | None:
        return self._entries.get(model)

    def put(self, calibration: Calibration) -> None:
        self._entries[calibration.model] = calibration
        if self.path is None:
            return
        data = {"version": 1, "models": {k: v.to_dict() for k, v in self._entries.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        os.replace(partial, self.path)


def model_key(backend: str, model: str, file: Path | None = None) -> str:
    """Whom a calibration belongs to: a model file by its name and size (a requantized
    file is another model), a served model by its backend and name."""
    if file is not None:
        try:
            return f"file:{file.name}:{file.stat().st_size}"
        except OSError:
            return f"file:{file.name}"
    return f"{backend}:{model}"
