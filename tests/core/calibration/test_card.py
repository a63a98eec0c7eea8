from __future__ import annotations

from typing import Any

from desktop.core.calibration.card import Calibration
from desktop.core.calibration.scoring import Bars


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
    calibration = Calibration.from_dict(data)  # as written before there were two bars
    scores = [{**data["scores"][0], "left_unasked": 0}]  # a field added since
    assert calibration.to_dict() == {**data, "scores": scores, "later_bar": None,
                                     "arguments_bar": None, "method": 1}  # fmt: skip
    assert calibration.bars == Bars(0.8, 0.8)  # one bar judges every request
    assert calibration.source == "calibrated 2026-11-30"
    card = dict(calibration.card())
    assert card["Parallel calls right"] == "none asked"
    assert card["Track"] == "constrained" and card["Call gate"] == "bar 0.80 for every request"
    assert "Arguments' bar" not in card
    two = Calibration.from_dict({**data, "later_bar": 0.55})
    assert two.to_dict()["later_bar"] == 0.55 and two.bars == Bars(0.8, 0.55)
    assert dict(two.card())["Call gate"] == "bar 0.80; after earlier turns 0.55"
    three = Calibration.from_dict({**data, "later_bar": 0.55, "arguments_bar": 0.95, "method": 2})
    assert three.bars == Bars(0.8, 0.55, 0.95) and three.method == 2
    assert dict(three.card())["Arguments' bar"] == "0.95, for a call under the gate's bar"
