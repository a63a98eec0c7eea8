import json
import typing

from desktop.core import events
from desktop.core.events import EVENT_KINDS, Event, ToolResult, event_to_dict
from desktop.core.messages import Image

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 30


def test_the_event_set_is_closed_and_named_as_specified() -> None:
    kinds = {cls.__dataclass_fields__["kind"].default for cls in typing.get_args(Event)}
    assert kinds == set(EVENT_KINDS) == {
        "text_delta", "thinking_delta", "tool_call", "tool_rejected", "tool_started",
        "tool_result", "usage", "warning", "turn_finished", "turn_failed",
    }  # fmt: skip


def test_field_names_match_the_published_interface() -> None:
    expected = {
        "text_delta": ["step", "text"],
        "thinking_delta": ["step", "text"],
        "tool_call": ["step", "id", "name", "arguments", "gate"],  # gate: added, optional
        "tool_rejected": ["step", "name", "arguments", "reason", "stage", "id"],
        "tool_started": ["step", "id", "name"],
        "tool_result": [
            "step",
            "id",
            "name",
            "content",
            "images",
            "duration_ms",
            "error",
            "retrieval",
        ],  # retrieval: added, optional
        "usage": ["step", "prompt_tokens", "completion_tokens"],
        "warning": ["step", "message"],
        "turn_finished": ["step", "text"],
        "turn_failed": ["step", "message"],
    }
    for cls in typing.get_args(Event):
        kind = cls.__dataclass_fields__["kind"].default
        names = [n for n in cls.__dataclass_fields__ if n != "kind"]
        assert names == expected[kind], kind


def test_tool_result_json_shows_image_type_and_size_not_bytes() -> None:
    event = ToolResult(2, "c1", "chart", "done", [Image.from_bytes(PNG)], 12.5, None)
    out = event_to_dict(event)
    assert out == {
        "kind": "tool_result", "step": 2, "id": "c1", "name": "chart", "content": "done",
        "images": [{"mime": "image/png", "size": len(PNG)}], "duration_ms": 12.5, "error": None,
        "retrieval": None,
    }  # fmt: skip
    json.dumps(out)


def test_a_calls_gate_says_its_bars_in_json() -> None:
    gate = events.CallGate(0.8, 0.9, "calibrated 2026-12-01", arguments=0.97, arguments_bar=0.95)
    out = event_to_dict(events.ToolCallParsed(0, "c", "t", {}, gate=gate))
    assert out["gate"] == {"odds": 0.8, "bar": 0.9, "source": "calibrated 2026-12-01",
                           "arguments": 0.97, "arguments_bar": 0.95, "passed": True}  # fmt: skip
    assert event_to_dict(events.ToolCallParsed(0, "c", "t", {}))["gate"] is None


def test_every_event_serialises() -> None:
    samples: list[events.Event] = [
        events.TextDelta(0, "hi"), events.ThinkingDelta(0, "hm"),
        events.ToolCallParsed(0, "c", "t", {"a": 1}), events.ToolRejected(0, "t", None, "why"),
        events.ToolStarted(0, "c", "t"), events.Usage(0, 1, 2),
        events.TurnFinished(1, "done"), events.TurnFailed(1, "broke"),
    ]  # fmt: skip
    for sample in samples:
        out = json.loads(json.dumps(event_to_dict(sample)))
        assert out["kind"] == sample.kind and next(iter(out)) == "kind"
