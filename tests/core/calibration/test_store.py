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
