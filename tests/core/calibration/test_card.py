from __future__ import annotations

from pathlib import Path
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
                                     "arguments_bar": None, "method": 1, "tool_form": "json",
                                     "form_scores": ()}  # fmt: skip
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


def calibrated(track: str, quiet_right: int, quiet: int, method: int = 3) -> Calibration:
    from desktop.core.calibration.card import TrackScore

    score = TrackScore(track, 8, 10, 1, 1, quiet_right, quiet, 0, 0, 9, 20.0, 1.0, 0.8)  # type: ignore[arg-type]
    return Calibration("file:qwen.gguf:468", "2026-12-01", track, 0.9, (score,), 20, 60.0,  # type: ignore[arg-type]
                       method=method)  # fmt: skip


def test_the_card_says_how_often_a_tool_is_called_where_none_fits() -> None:
    rows = dict(calibrated("constrained", 7, 10).card())
    assert rows["Calls a tool where none fits"] == "in 3 of 10"


def test_a_model_that_often_calls_where_none_fits_gets_a_suggestion() -> None:
    assert calibrated("constrained", 8, 10).suggestion() is None
    suggested = calibrated("constrained", 7, 10).suggestion()
    assert suggested == (
        "qwen.gguf calls a tool where none fits in 3 of 10 calibration questions: the native "
        "track or another model may suit tools better (Settings)."
    )
    native = calibrated("native", 0, 4).suggestion()
    assert native is not None and "in 4 of 4" in native and "native track" not in native
    assert calibrated("constrained", 0, 0).suggestion() is None
    # A card measured before the licence counted overstates it: no suggestion from it.
    assert calibrated("constrained", 0, 10, method=2).suggestion() is None


def test_the_tool_prompt_form_is_kept_and_read_back(tmp_path: Path) -> None:
    from dataclasses import replace

    from desktop.core.calibration.store import CalibrationStore

    card = replace(calibrated("constrained", 9, 10), tool_form="signatures",
                   form_scores=(("json", 0.71), ("signatures", 0.8)))  # fmt: skip
    store = CalibrationStore(tmp_path / "calibrations.json")
    store.put(card)
    assert CalibrationStore(tmp_path / "calibrations.json").get(card.model) == card
    assert (
        dict(card.card())["Tool prompt form"]
        == "signatures (first requests: json 0.71, signatures 0.80)"
    )
    # A form this version does not know (a later one's, or damage) lists tools as JSON.
    data = {**card.to_dict(), "tool_form": "yaml"}
    assert Calibration.from_dict(data).tool_form == "json"
