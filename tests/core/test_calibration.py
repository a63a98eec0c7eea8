"""Per-model calibration: the questions built from tools, the bar chosen from a model's
odds, the card, pausing for a chat, and the file the results are kept in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from desktop.core.calibration import (
    FULL_ANSWERS,
    MAX_CASES,
    Answer,
    Calibration,
    CalibrationStore,
    Calibrator,
    calls_right,
    cases_for,
    choose_bar,
    model_key,
    score,
)
from desktop.core.messages import ToolCall
from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool
from tests.fakes import Request, ScriptedProvider, Step


async def nothing(arguments: dict[str, Any]) -> str:
    return ""


def tool(name: str, parameter: str, *examples: tuple[str, Any]) -> Tool:
    return Tool(
        name,
        f"The {name} tool.",
        {"type": "object", "properties": {parameter: {"type": "string"}}, "required": [parameter]},
        nothing,
        examples=tuple(Example(prompt, {parameter: value}) for prompt, value in examples),
    )


WEATHER = tool("weather", "city", ("What's the weather in Paris?", "Paris"),
               ("Is it raining in Oslo?", "Oslo"))  # fmt: skip
STOCKS = tool("stock_price", "symbol", ("What is Apple's share price?", "AAPL"))
TRANSLATE = tool("translate", "text", ("Translate 'cat' into German.", "cat"))
TOOLS = [WEATHER, STOCKS, TRANSLATE]


def test_questions_come_from_the_tools_examples_half_of_them_with_no_call_due() -> None:
    cases = cases_for(TOOLS)
    assert cases == cases_for(TOOLS)  # a measurement: the same questions every time
    assert 0 < len(cases) <= MAX_CASES
    due = [c for c in cases if c.due]
    assert 0 < len(due) <= len(cases) // 2
    kinds = {c.kind for c in cases}
    assert {"call", "distracted", "unfit", "chat", "near-miss", "answered"} <= kinds
    for case in cases:
        offered = {t.name for t in case.tools}
        assert {name for name, _ in case.expected} <= offered
        if case.kind == "unfit":  # the tool that fits is withheld
            prompt = case.messages[-1].text
            owner = next(t for t in TOOLS if any(e.prompt == prompt for e in t.examples))
            assert owner.name not in offered and offered
        if case.kind == "calls":
            assert len({name for name, _ in case.expected}) == 2
        if case.due:  # the question asked is never shown as an example of its tool
            shown = {e.prompt for t in case.tools for e in t.examples}
            assert not any(e.prompt in case.messages[-1].text for e in case.tools[0].examples)
            assert case.messages[-1].text not in shown
    assert cases_for([tool("bare", "x")]) == cases_for([]) or all(
        not c.due for c in cases_for([tool("bare", "x")])
    )


def test_loose_argument_matching() -> None:
    made = [ToolCall("1", "weather", {"city": " paris "}), ToolCall("2", "add", {"a": "3"})]
    assert calls_right(made, [("weather", {"city": "Paris"}), ("add", {"a": 3})])
    assert not calls_right(made, [("weather", {"city": "Oslo"}), ("add", {"a": 3})])
    assert not calls_right(made[:1], [("weather", {"city": "Paris"}), ("add", {"a": 3})])
    assert not calls_right([ToolCall("1", "weather", {"city": True})], [("weather", {"city": 1})])


def answer(due: bool, odds: float | None, *, right: bool = True, called: bool = True) -> Answer:
    kind = "call" if due else "unfit"
    return Answer(kind, due, called, right and due, odds, False, False, 1, 20, 0.5)


def test_the_bar_separates_the_odds_of_due_calls_from_the_rest() -> None:
    answers = [answer(True, p) for p in (0.9, 0.95, 0.97, 0.99)]
    answers += [answer(False, p) for p in (0.6, 0.8, 0.85)]
    bar = choose_bar(answers)
    assert 0.85 < bar < 0.9 and bar == pytest.approx(0.875)
    assert score(answers, bar) == 1.0 and score(answers, 0.0) == 0.5


def test_the_bar_may_cost_a_tenth_of_the_right_calls_and_no_more() -> None:
    """Twenty right calls: the bar may pass over the two least sure of them to turn down
    the unwanted calls below, never a third."""
    right = [answer(True, p) for p in (0.55, 0.6, 0.7, *([0.95] * 17))]
    unwanted = [answer(False, p) for p in (0.5, 0.58, 0.65, 0.9)]
    assert choose_bar(right + unwanted) == pytest.approx(0.675)  # between 0.65 and 0.7
    assert sum(a.right_at(0.675) for a in right) == 18
    # Wrong calls do not count as calls to keep.
    wrong = [answer(True, 0.3, right=False)] * 5
    assert choose_bar(right + unwanted + wrong) == pytest.approx(0.675)


def test_the_midpoint_below_the_lowest_kept_call_and_a_useless_bar_is_none() -> None:
    answers = [answer(True, 0.9), answer(True, 0.95), answer(False, 0.5), answer(False, 0.55)]
    assert choose_bar(answers) == pytest.approx(0.725)
    # Equally sure everywhere: no bar does better than none.
    same = [answer(True, 0.9), answer(False, 0.9), answer(True, 0.8), answer(False, 0.8)]
    assert choose_bar(same) == 0.0
    # A model that never calls where none is due needs no bar either.
    quiet = [answer(True, 0.7), answer(False, None, called=False)]
    assert choose_bar(quiet) == 0.0


def sure_model(
    unsure_odds: float = 0.6, tools: Sequence[Tool] = TOOLS, chat: str = "from the chat"
) -> ScriptedProvider:
    """A model that opens a call on everything, sure of it only where an offered tool fits
    the request (by its tool's example), and then writes the right call. A message with
    `chat` in it gets a plain answer."""

    def respond(request: Request) -> Step | str:
        system = request.messages[0].text if request.messages[0].role == "system" else ""
        question = request.messages[-1].text
        fits = [
            (t, e)
            for t in tools
            for e in t.examples
            if e.prompt.rstrip(".?") in question and f"{t.name}" in system
        ]
        phase = request.options.phase
        if chat in question and phase is None:
            return "Hello! How can I help?"
        if phase == "call-odds":
            sure = 0.95 if fits else unsure_odds
            return Step(odds=[("{", sure), ("Sure", 1 - sure)])
        if phase == "constrained":
            calls = [{"name": t.name, "arguments": e.arguments} for t, e in fits]
            first = tools[0]
            fallback = {"name": first.name, "arguments": first.examples[0].arguments}
            return json.dumps(calls or [fallback])
        named = fits[0][0].name if fits else tools[0].name
        return Step(chunks=['{"name": "', f'{named}", "arguments"'], usage=(100, 5))

    return ScriptedProvider([respond] * 5000, constrains_json=True, reports_token_odds=True)


async def test_a_calibration_sets_the_bar_from_the_models_odds() -> None:
    seen: list[tuple[int, int]] = []
    calibrator = Calibrator(
        sure_model(), TOOLS, "file:model.gguf:1", progress=lambda *p: seen.append(p)
    )
    calibration = await calibrator.run()
    assert 0.6 < calibration.bar < 0.95
    assert calibration.track == "constrained" and calibration.odds_reported
    chosen = calibration.chosen
    assert chosen.quiet_right == chosen.quiet > 0
    assert chosen.due_right == chosen.due > 0 and chosen.parallel_right == chosen.parallel
    due = sum(c.due for c in calibrator.cases)
    # Every question read at its opening, then a few due ones answered in full.
    assert seen[-1] == (len(calibrator.cases) + min(due, FULL_ANSWERS),) * 2
    rows = dict(calibration.card())
    assert rows["No call where none fits"].startswith(f"{chosen.quiet} of {chosen.quiet}")
    assert "bar 0.7" in rows["Track"] or "bar 0.8" in rows["Track"]


async def test_native_is_chosen_only_where_it_does_better() -> None:
    """With native tool calling on offer, the same questions go to that track too; this
    fake's native answers are plain text, so the gated track is kept."""
    calibrator = Calibrator(sure_model(), TOOLS, "m", native=True)
    calibration = await calibrator.run()
    assert [s.track for s in calibration.scores] == ["constrained", "native"]
    native = calibration.scores[1]
    assert native.due_right == 0 and calibration.track == "constrained"


async def test_a_chat_pauses_the_run_and_the_question_is_asked_again() -> None:
    provider = sure_model()
    calibrator = Calibrator(provider, TOOLS, "m")
    run = asyncio.ensure_future(calibrator.run())
    for _ in range(30):
        await asyncio.sleep(0)
    asked = len(provider.requests)
    calibrator.pause()
    for _ in range(30):
        await asyncio.sleep(0)
    assert len(provider.requests) == asked and not run.done()  # holds while paused
    calibrator.resume()
    calibration = await run
    assert calibration.chosen.quiet_right == calibration.chosen.quiet
    assert calibration.chosen.due_right == calibration.chosen.due


async def test_cancelling_the_run_ends_it() -> None:
    calibrator = Calibrator(
        ScriptedProvider([Step(hang=True)] * 100, constrains_json=True), TOOLS, "m"
    )
    run = asyncio.ensure_future(calibrator.run())
    await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


async def test_results_are_kept_per_model_and_a_damaged_file_is_set_aside(
    tmp_path: Path,
) -> None:
    calibration = await Calibrator(sure_model(), TOOLS, "ollama:qwen3:4b").run()
    path = tmp_path / "calibrations.json"
    CalibrationStore(path).put(calibration)
    again = CalibrationStore(path)
    assert again.problem is None and again.get("ollama:qwen3:4b") == calibration
    assert again.get("ollama:other") is None
    kept = json.loads(path.read_text())["models"]["ollama:qwen3:4b"]
    bad_bar = {**kept, "bar": "high"}
    path.write_text(json.dumps({"version": 1, "models": {"x": {"model": 3}, "y": bad_bar,
                                                         "ok": kept}}))  # fmt: skip
    damaged = CalibrationStore(path)
    assert damaged.get("x") is None and damaged.get("y") is None and damaged.get("ok")
    assert damaged.problem and "calibrating again" in damaged.problem
    path.write_text('{"version": 1, "models": [')
    damaged = CalibrationStore(path)
    assert damaged.get("ok") is None and damaged.problem
    damaged.put(calibration)  # a new result replaces the damaged file
    assert CalibrationStore(path).get("ollama:qwen3:4b") == calibration


def test_a_model_file_is_known_by_name_and_size(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x" * 10)
    assert model_key("builtin", "", model) == "file:m.gguf:10"
    model.write_bytes(b"x" * 11)  # requantized: another model
    assert model_key("builtin", "", model) == "file:m.gguf:11"
    assert model_key("ollama", "qwen3:4b") == "ollama:qwen3:4b"


def test_the_card_names_the_model_as_a_person_knows_it() -> None:
    def named(model: str) -> str:
        return Calibration(model, "2026-12-01", "constrained", 0.5, (), 0, 0.0).model_name

    assert named("file:qwen-q4_k_m.gguf:468") == "qwen-q4_k_m.gguf"
    assert named("llamacpp:/models/qwen-q4_k_m.gguf") == "qwen-q4_k_m.gguf"
    assert named("ollama:qwen3:4b") == "qwen3:4b"


def test_a_calibration_reads_back_from_its_dict() -> None:
    data: dict[str, Any] = {
        "model": "m", "day": "2026-11-30", "track": "constrained", "bar": 0.8,
        "scores": [{"track": "constrained", "due_right": 1, "due": 2, "parallel_right": 0,
                    "parallel": 0, "quiet_right": 2, "quiet": 2, "invalid": 0, "cut_off": 0,
                    "calls": 1, "tokens_per_call": 12.0, "seconds_per_call": 0.4,
                    "score": 0.75, "arguments_right": 1, "answered_in_full": 2}],
        "cases": 4, "seconds": 3.0, "odds_reported": True,
    }  # fmt: skip
    calibration = Calibration.from_dict(data)
    assert calibration.to_dict() == data
    assert calibration.source == "calibrated 2026-11-30"
    assert dict(calibration.card())["Parallel calls right"] == "none asked"
