"""Everyday conversations through the app's own session, as a new user has them.

    .venv/bin/python -m bench everyday [--half dev|held-out|both] [--requantize Q3_K_S]
                                       [--model FILE.gguf] [--seed 7] [--no-plain]

Starts the built-in runtime on the bundled model (or `--model`, or the bundled model
requantized with `--requantize`), connects a `Session` with the app's defaults (the
emulated track, the built-in tools, no temperature sent), calibrates the model as the app
does (from the tools' own examples, never from this set), then sends each conversation of
`bench/data/everyday` turn by turn. Each request carries a fixed seed, and the clock tool
tells one fixed instant (`--clock`; a model's later answers follow the date and time its
history holds, so a run on another day would differ), so a run can be repeated;
everything else is the app's.

Reports per model and half: turns right; unwanted calls (a tool called where the person
expected none, or another tool than the one expected); missed calls; calls made again
after their result (refused by the deduplicator, shown to the person); results not used;
refusals; Loomchat's formats or a call written out in an answer; a chart of numbers
nobody gave (the tool example's data); seconds to the first visible token and per turn.
Unless `--no-plain`, each turn that needs no tool is asked again afterwards with no tools
offered, on the same history, and the two are compared: a turn that needs no tool should
cost little more than a plain answer. Two ratios: the whole
turn's (swayed by the two answers' lengths, each a sample of its own) and its first
visible word's (what the call gate costs). The plain answer is judged too: a no-tool turn
it gets wrong (a fact the model does not know) is beyond any change to tool calling.
Between turns the next message waits, as a person reading the answer would, until the
session has read the next prompt ahead (`desktop.core.warm_up`; its seconds are reported);
a plain answer's prompt is read ahead likewise, as a plain chat's server holds its own last
answer. `--no-warm-up` sends each message at once, with nothing read ahead.
Writes `bench/results/everyday.md` and the turns in detail to `everyday.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.accuracy import development_model
from bench.everyday_checks import Expected, judge
from bench.everyday_report import HEADER, summary
from desktop.core.calibration.card import Calibration
from desktop.core.calibration.store import CalibrationStore
from desktop.core.events import (
    ProviderEvent,
    Reply,
    TextChunk,
    TextDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    TurnFailed,
    TurnFinished,
)
from desktop.core.messages import Message
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import (
    Provider,
    ProviderError,
    ProviderWrapper,
    RequestOptions,
)
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from desktop.core.tool_spec import ToolSpec
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.builtin.clock import CURRENT_TIME, stopped_clock
from desktop.core.tracks.emulated import EmulatedTools
from desktop.core.tracks.fitting import FittedHistory
from desktop.core.warm_up import PromptWarmUp

DATA = Path(__file__).resolve().parent / "data" / "everyday" / "conversations.jsonl"
CONTEXT_SIZE = 8192
# One evening, hours from midnight in UTC.
CLOCK = datetime(2026, 12, 6, 20, 0, tzinfo=UTC)


class Seeded(ProviderWrapper):
    """The backend with a fixed seed on every request that sends none: the app's sampling,
    repeatable."""

    def __init__(self, inner: Provider, seed: int) -> None:
        super().__init__(inner)
        self.seed = seed

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> AsyncGenerator[ProviderEvent, None]:
        asked = options if options.seed is not None else replace(options, seed=self.seed)
        async for event in self.inner.stream(messages, tools, asked):
            yield event


@dataclass
class Turn:
    conversation: str
    half: str
    user: str
    expected: str | None
    calls: list[str] = field(default_factory=list)
    arguments: list[Any] = field(default_factory=list)  # each call's, in order
    answer: str = ""
    problems: list[str] = field(default_factory=list)
    right: bool = False
    unwanted: int = 0
    missed: bool = False
    repeats: int = 0
    ignored: bool = False
    refusal: bool = False
    leaked: bool = False
    first_token_s: float | None = None
    seconds: float = 0.0
    warm_up_s: float | None = None  # reading the next prompt ahead, after the turn
    plain_seconds: float | None = None
    plain_first_token_s: float | None = None
    plain_answer: str = ""  # its text: the whole-turn ratio is swayed by the two lengths
    # The plain answer (no tools offered) judged as the turn is: a turn it gets wrong too
    # is one the model cannot answer, whatever the tools do.
    plain_right: bool | None = None
    gate: list[dict[str, Any]] = field(default_factory=list)
    history: list[Message] = field(default_factory=list, repr=False)
    wanted: Expected | None = field(default=None, repr=False)


def read_set(path: Path, half: str) -> list[dict[str, Any]]:
    conversations = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [c for c in conversations if half == "both" or c["half"] == half]


async def converse(
    session: Session, conversation: dict[str, Any], warm_up: bool = True
) -> list[Turn]:
    cid = session.new_conversation()
    if warm_up:  # as the window does when a chat opens, while the person types
        session.read_ahead(cid)
        await session.warm_up.settled()
    turns = []
    said: list[str] = []  # what the person and the tools said so far, for a chart's data
    for line in conversation["turns"]:
        expected = Expected.from_dict(line)
        said.append(expected.user)
        turn = Turn(conversation["id"], conversation["half"], expected.user, expected.tool)
        turn.wanted = expected
        turn.history = list(session.conversation(cid))
        results: dict[str, str] = {}
        called: dict[str, Any] = {}  # each call's arguments, by its id
        drawn: dict[str, Any] = {}  # those of each tool's last call that ran
        failed = ""
        started = time.perf_counter()
        async for event in session.send(cid, expected.user):
            match event:
                case TextDelta() if turn.first_token_s is None and event.text.strip():
                    turn.first_token_s = time.perf_counter() - started
                case ToolCallParsed():
                    turn.calls.append(event.name)
                    turn.arguments.append(event.arguments)
                    called[event.id] = event.arguments
                case ToolRejected() if event.stage in ("parse", "withdrawn"):  # never parsed
                    turn.calls.append(event.name)
                    turn.arguments.append(event.arguments)
                case ToolRejected() if event.stage == "repeat":
                    turn.repeats += 1
                case ToolResult() if event.error is None:
                    results[event.name] = event.content
                    drawn[event.name] = called.get(event.id)
                    if event.name != "create_chart":  # a chart's result counts its points
                        said.append(event.content)
                case TurnFinished():
                    turn.answer = event.text
                case TurnFailed():
                    failed = event.message
                case _:
                    pass
        turn.seconds = time.perf_counter() - started
        started = time.perf_counter()
        if warm_up:
            await session.warm_up.settled()  # the person reads the answer meanwhile
            turn.warm_up_s = time.perf_counter() - started
        else:
            await session.warm_up.stop()
        trace = session.traces[cid][-1]
        turn.gate = [s.gate.to_dict() for s in trace.steps if s.gate is not None]
        verdict = judge(expected, turn.calls, results, turn.answer, failed, turn.repeats,
                        drawn, "\n".join(said))  # fmt: skip
        turn.problems, turn.right = verdict.problems(), verdict.right
        turn.unwanted, turn.missed = len(verdict.unwanted_calls), verdict.missed_call
        turn.ignored, turn.refusal = verdict.result_ignored, verdict.refusal
        turn.leaked = verdict.loomchat_format or verdict.call_shaped
        mark = "ok " if turn.right else "BAD"
        print(f"  {mark} {turn.user[:50]:50} {', '.join(turn.problems)}", flush=True)
        turns.append(turn)
    return turns


async def plain_answers(provider: Provider, turns: list[Turn], warm_up: bool = True) -> None:
    """Each turn that needs no tool asked again with no tools offered, on its history, and
    its answer judged."""
    plain = EmulatedTools(FittedHistory(provider, CONTEXT_SIZE))  # as the session bounds it
    for turn in turns:
        if turn.expected is not None:
            continue
        if warm_up:  # as a plain chat's server holds its own last answer
            ahead = PromptWarmUp()
            ahead.start(plain, turn.history, [], RequestOptions())
            await ahead.settled()
        started = time.perf_counter()
        messages = [*turn.history, Message.user(turn.user)]
        try:
            async for event in plain.stream(messages, [], RequestOptions()):
                if isinstance(event, Reply):
                    turn.plain_answer = event.text
                    if turn.wanted is not None:
                        turn.plain_right = judge(turn.wanted, [], {}, event.text).right
                    break
                shown = isinstance(event, TextChunk) and bool(event.text.strip())
                if shown and turn.plain_first_token_s is None:
                    turn.plain_first_token_s = time.perf_counter() - started
        except ProviderError as error:  # no ratio for this turn; the rest still count
            print(f"  plain answer failed: {error}", flush=True)
            continue
        turn.plain_seconds = time.perf_counter() - started


def kept(path: Path | None, model_key: str) -> CalibrationStore:
    """The calibrations, with the one kept in `path` (as `--calibration` wrote it) taken
    for this server's model: the app after a restart, its model calibrated before."""
    store = CalibrationStore(None)
    if path is not None and path.exists():
        card = Calibration.from_dict(json.loads(path.read_text()))
        store.put(replace(card, model=model_key))
    return store


async def measure(
    url: str,
    label: str,
    half: str,
    seed: int,
    plain: bool,
    only: str | None = None,
    warm_up: bool = True,
    calibration: Path | None = None,
    clock: datetime | None = CLOCK,
) -> dict[str, Any]:
    base = make_provider("llamacpp", url)
    base.model = (await base.list_models() or [""])[0]
    await CapabilityCache().apply(base)
    provider = Seeded(base, seed)
    with tempfile.TemporaryDirectory() as scratch:
        store = ChatStore(Path(scratch) / "chats.db")
        tools = builtin_tools()
        if clock is not None:
            tools = [stopped_clock(clock) if t.name == CURRENT_TIME.name else t for t in tools]
        session = Session(Settings(backend="llamacpp", url=url), store, SecretStore(), tools,
                          calibrations=kept(calibration, f"llamacpp:{provider.label}"))  # fmt: skip
        session.use_provider(provider, "llamacpp")
        started = time.perf_counter()
        card = session.calibration
        if card is None or session.needs_calibration():
            card = await session.calibrate()
        calibration_s = time.perf_counter() - started
        if calibration is not None and not calibration.exists():
            calibration.write_text(json.dumps(card.to_dict()))
        print(f"{label}: calibrated in {calibration_s:.0f} s, bars {card.bar:.3f} / "
              f"{card.later_bar} / {card.arguments_bar}, tools as {card.tool_form} "
              f"{dict(card.form_scores)}", flush=True)  # fmt: skip
        turns: list[Turn] = []
        for conversation in read_set(DATA, half):
            if only is not None and conversation["id"] != only:
                continue
            print(f"{label}: {conversation['id']}", flush=True)
            turns += await converse(session, conversation, warm_up)
        if plain:
            await plain_answers(provider, turns, warm_up)
        await session.close()
    await base.aclose()
    kept_apart = {"history", "wanted"}
    shown = [{k: v for k, v in asdict(t).items() if k not in kept_apart} for t in turns]
    return {"model": label, "calibration": card.to_dict(), "calibration_s": calibration_s,
            "turns": shown}  # fmt: skip


def clock_instant(text: str) -> datetime | None:
    """`--clock`: an aware instant, or None ("now": the real clock)."""
    if text == "now":
        return None
    try:
        instant = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if instant.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset")
    return instant


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["dev", "held-out", "both"], default="dev")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--requantize", metavar="TYPE", help="the bundled model requantized")
    parser.add_argument("--url", help="an already running llama-server")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-plain", action="store_true", help="skip the plain answers")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="send each message at once, nothing read ahead"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/everyday.md"))
    parser.add_argument("--conversation", help="only the conversation with this id")
    parser.add_argument(
        "--calibration",
        type=Path,
        help="the model's calibration kept in this file: taken if it is there (no "
        "calibration before the chats, as after a restart), else written",
    )
    parser.add_argument(
        "--clock",
        type=clock_instant,
        default=CLOCK.isoformat(),
        help="the instant the clock tool tells (ISO 8601 with its offset), or 'now'",
    )
    parser.add_argument("--server-log", type=Path, help="the built-in server's log, kept")
    parser.add_argument(
        "--server-args", default="", help="more arguments for the built-in server, e.g. '-np 1'"
    )
    args = parser.parse_args()
    model = development_model(args.requantize, args.model)
    server = None
    url = args.url
    if not url:
        server = await built_in_server(
            model,
            threads=2,
            context_size=CONTEXT_SIZE,
            log_path=args.server_log,
            extra_args=args.server_args.split(),
        )
        await server.start()
        url = server.base_url
    try:
        result = await measure(
            url,
            model.stem,
            args.half,
            args.seed,
            not args.no_plain,
            args.conversation,
            warm_up=not args.no_warm_up,
            calibration=args.calibration,
            clock=args.clock,
        )
    finally:
        if server is not None:
            server.stop()
    text = "\n".join([HEADER, *summary(result)])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
