"""`python -m bench everyday --calibration FILE`: a calibration kept between runs is taken
for the model on the run's server, as the app takes its stored one after a restart."""

import json
from pathlib import Path

from bench.everyday import kept
from tests.core.calibration.test_card import calibrated


def test_a_kept_calibration_is_taken_for_this_servers_model(tmp_path: Path) -> None:
    card = calibrated("constrained", 9, 10)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(card.to_dict()))
    taken = kept(path, "llamacpp:llama.cpp server at http://127.0.0.1:5000")
    found = taken.get("llamacpp:llama.cpp server at http://127.0.0.1:5000")
    assert found is not None and found.to_dict() == {**card.to_dict(), "model": found.model}
    assert found.model != card.model and taken.get(card.model) is None
    assert kept(tmp_path / "none.json", "llamacpp:m").get("llamacpp:m") is None
    assert kept(None, "llamacpp:m").get("llamacpp:m") is None
