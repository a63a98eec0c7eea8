from __future__ import annotations

import json
from pathlib import Path

from desktop.core.calibration.calibrator import Calibrator
from desktop.core.calibration.store import CalibrationStore, model_key
from tests.core.calibration.samples import (
    TOOLS,
    sure_model,
)


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


def test_a_file_written_before_there_were_two_bars_is_read_with_one_bar_for_both() -> None:
    """data/calibrations-one-bar.json was written by the code of 7d21968 (a Calibrator run
    over samples.sure_model, kept with CalibrationStore.put), before a request after
    earlier turns had a bar of its own."""
    from desktop.core.messages import Message
    from desktop.core.tracks.choice import on_track
    from desktop.core.tracks.constrained import ConstrainedTools

    store = CalibrationStore(Path(__file__).parent / "data" / "calibrations-one-bar.json")
    key = "file:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf:491400064"
    calibration = store.get(key)
    assert store.problem is None and calibration is not None
    assert calibration.later_bar is None and calibration.bar == 0.775
    track, _ = on_track(sure_model(), "auto", calibration)
    assert isinstance(track, ConstrainedTools)
    later = [Message.user("Hi"), Message.assistant("Hello"), Message.user("Weather in Oslo?")]
    assert track.bar_for(later)[0] == track.bar_for(later[-1:])[0] == 0.775


def test_a_file_written_before_the_arguments_bar_is_read_and_measured_again() -> None:
    """data/calibrations-two-bars.json was written by the code of e784dc1 (a Calibrator run
    over samples.sure_model, kept with CalibrationStore.put): two bars, no arguments' bar,
    no method. It still judges calls (a call under its bar is text, as then) until the
    model is calibrated again the new way."""
    from desktop.core.calibration.card import METHOD
    from desktop.core.tracks.choice import on_track
    from desktop.core.tracks.constrained import ConstrainedTools

    store = CalibrationStore(Path(__file__).parent / "data" / "calibrations-two-bars.json")
    calibration = store.get("file:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf:491400064")
    assert store.problem is None and calibration is not None
    assert calibration.arguments_bar is None and calibration.method == 1 < METHOD
    assert calibration.later_bar == calibration.bar == 0.775
    track, _ = on_track(sure_model(), "auto", calibration)
    assert isinstance(track, ConstrainedTools) and track.bars.arguments is None
