"""The inspector's record of a turn."""

import json
from typing import Any

from desktop.core.calibration.card import Calibration, TrackScore
from desktop.core.events import ToolRejected, TurnFinished
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Image, Message
from desktop.core.providers.base import Capabilities, RequestOptions
from desktop.core.tools.toolbox import Tool, Toolbox
from desktop.core.tracing import TracingProvider
from desktop.core.tracks.emulated import EmulatedTools
from tests.support.fakes import ScriptedProvider, Step

# Asked at temperature 0: a sampled answer first asks how it would open greedily.
GREEDY = LoopSettings(options=RequestOptions(temperature=0))

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 30


async def search(arguments: dict[str, Any]) -> str:
    return "3 hits"


SEARCH = Tool(
    "search",
    "Search",
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    search,
)


async def test_the_trace_holds_the_wire_request_raw_output_and_verdicts() -> None:
    raw_call = '{"name": "search", "arguments": {"q": "rust"}}'
    inner = ScriptedProvider(
        [
            Step(chunks=["<think>hm</think>", raw_call], usage=(50, 9)),
            Step(chunks=[raw_call]),
            "Found 3.",
        ],
        capabilities=Capabilities(vision=True),
    )  # fmt: skip  (sees the image)
    traced = TracingProvider(inner)
    trace = traced.start_turn("emulated")
    conversation = [Message.user("find rust", [Image.from_bytes(PNG)])]
    async for event in run_turn(EmulatedTools(traced), Toolbox([SEARCH]), conversation):
        trace.record(event)
    assert len(trace.steps) == 3
    first = trace.steps[0]
    system = first.messages[0]
    assert system["role"] == "system" and "You can use tools" in system["parts"][0]["text"]
    assert first.messages[1]["parts"][1] == {
        "kind": "image",
        "mime": "image/png",
        "bytes": len(PNG),
    }
    assert first.tools == []  # emulated: tools are in the prompt
    assert first.raw_output == "<think>hm</think>" + raw_call
    assert first.usage == {"prompt_tokens": 50, "completion_tokens": 9}
    assert first.thinking == "hm"
    assert [e.kind for e in first.events] == [
        "usage",
        "tool_call",
        "tool_started",
        "tool_result",
    ]
    second = trace.steps[1]
    rejected = [e for e in second.events if isinstance(e, ToolRejected)]
    assert rejected[0].stage == "repeat"
    assert trace.outcome == TurnFinished(2, "Found 3.")
    exported = json.loads(json.dumps(trace.to_dict()))
    assert exported["track"] == "emulated" and exported["provider"] == "scripted model"
    assert exported["steps"][0]["request"]["messages"][0]["role"] == "system"
    # Events are kept as objects and serialised on export only.
    assert exported["outcome"] == {"kind": "turn_finished", "step": 2, "text": "Found 3."}
    assert exported["steps"][1]["events"][-1]["kind"] == "tool_rejected"


async def test_the_constrained_phase_is_part_of_its_step() -> None:
    from desktop.core.tracks.choice import on_track
    from desktop.core.tracks.constrained import ConstrainedTools

    raw_call = '{"name": "search", "arguments": {"q": "rust"}}'
    inner = ScriptedProvider(
        [Step(chunks=["Looking. ", raw_call]), Step(chunks=[raw_call]), "Found."],
        constrains_json=True,
    )
    traced = TracingProvider(inner)
    active, track = on_track(traced, "emulated")
    assert isinstance(active, ConstrainedTools) and track == "emulated"
    trace = traced.start_turn(track)
    async for event in run_turn(active, Toolbox([SEARCH]), [Message.user("find rust")]):
        trace.record(event)
    assert [s.step for s in trace.steps] == [0, 1]
    assert trace.steps[0].raw_output.startswith("Looking. {")  # the free answer, cut at the call
    assert trace.steps[0].raw_output.endswith("[generation stopped here]")
    (phase,) = trace.steps[0].phases
    pinned = phase.options["json_schema"]["anyOf"][0]["prefixItems"][0]  # the free answer's tool
    assert phase.step == 0 and pinned == {"$ref": "#/$defs/call0"}
    assert phase.options["phase"] == "constrained"
    assert phase.raw_output == raw_call
    assert [e.kind for e in trace.steps[0].events] == [
        "tool_call",
        "tool_started",
        "tool_result",
    ]
    assert trace.to_dict()["steps"][0]["phases"][0]["raw_output"] == raw_call


def calibrated(bar: float, track: str = "constrained") -> Calibration:
    score = TrackScore(track, 1, 1, 0, 0, 1, 1, 0, 0, 1, 10.0, 0.5, 1.0)  # type: ignore[arg-type]
    return Calibration("m", "2026-11-30", track, bar, (score,), 2, 1.0)  # type: ignore[arg-type]


async def test_the_call_gate_probe_and_plain_answer_are_parts_of_their_step() -> None:
    from desktop.core.tracks.choice import on_track

    inner = ScriptedProvider(
        [
            Step(chunks=['{"name"']),
            Step(chunks=["{"], odds=[("{", 0.6), ("Rust", 0.4)]),
            "Rust is a language.",
        ],
        constrains_json=True,
        reports_token_odds=True,
    )
    traced = TracingProvider(inner)
    active, track = on_track(traced, "emulated", calibrated(bar=0.9))
    trace = traced.start_turn(track)
    async for event in run_turn(
        active, Toolbox([SEARCH]), [Message.user("what is rust")], settings=GREEDY
    ):
        trace.record(event)
    assert trace.outcome == TurnFinished(0, "Rust is a language.")
    (step,) = trace.steps
    probe, plain = step.phases
    assert probe.options["phase"] == "call-odds" and probe.token_odds == [("{", 0.6), ("Rust", 0.4)]
    assert plain.options["phase"] == "plain" and plain.raw_output == "Rust is a language."
    exported = json.loads(json.dumps(step.to_dict()))
    assert exported["phases"][0]["token_odds"] == [["{", 0.6], ["Rust", 0.4]]


async def test_a_sampled_answers_opening_probe_is_a_part_of_the_step_after_it() -> None:
    """Asked before the step's first request, the opening probe is traced inside that
    step, not as a step of its own nor inside the step before."""
    from desktop.core.tracks.choice import on_track

    call = '{"name": "search", "arguments": {"query": "rust"}}'
    inner = ScriptedProvider(
        [Step(odds=[("{", 0.95), ("Rust", 0.05)]), Step(chunks=[call]), Step(chunks=[f"[{call}]"]),
         Step(odds=[("Rust", 0.9), ("{", 0.1)]), "Rust is a language."],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    traced = TracingProvider(inner)
    active, track = on_track(traced, "emulated", calibrated(bar=0.9))
    trace = traced.start_turn(track)
    async for event in run_turn(active, Toolbox([SEARCH]), [Message.user("find rust")]):
        trace.record(event)
    assert trace.outcome == TurnFinished(1, "Rust is a language.")
    first, second = trace.steps
    assert [p.options["phase"] for p in first.phases] == ["opening", "constrained"]
    assert first.options["temperature"] == 0 and first.raw_output.startswith('{"name"')
    assert [p.options["phase"] for p in second.phases] == ["opening"]
    assert second.raw_output == "Rust is a language." and second.options.get("temperature") is None
    assert [p.step for p in second.phases] == [1]


async def test_the_tokens_of_a_weighed_call_are_kept_with_their_odds() -> None:
    """A call under the bar is written with its tokens' odds; the trace keeps them for the
    inspector's verdict on its arguments."""
    from dataclasses import replace

    from desktop.core.tracks.choice import on_track

    call = '[{"name": "search", "arguments": {"query": "rust"}}]'
    tokens = [('[{"name": "search", "arguments": {"', 1.0), ("query", 0.99), ("rust", 0.98)]
    inner = ScriptedProvider(
        [Step(chunks=['{"name": "search"']), Step(odds=[("{", 0.6)]),
         Step(chunks=[call], chosen=tokens)],
        constrains_json=True, reports_token_odds=True,
    )  # fmt: skip
    traced = TracingProvider(inner)
    active, track = on_track(traced, "emulated", replace(calibrated(0.9), arguments_bar=0.95))
    traced.start_turn(track)
    replies = [e async for e in active.stream([Message.user("rust?")], [SEARCH], GREEDY.options)]
    assert replies[-1].tool_calls  # type: ignore[union-attr]
    constrained = traced.trace.steps[0].phases[1]
    assert constrained.options["top_logprobs"] == 1 and constrained.chosen_tokens == tokens
    exported = json.loads(json.dumps(traced.trace.steps[0].to_dict()))
    assert exported["phases"][1]["chosen_tokens"] == [[t, p] for t, p in tokens]
