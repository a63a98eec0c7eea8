"""Calibration in the status bar: busy at once, its count once the questions are known."""

from __future__ import annotations

from typing import Any


def test_the_count_shows_only_once_the_questions_are_known(qtbot: Any) -> None:
    from desktop.ui.calibration_status import CalibrationStatus

    status = CalibrationStatus()
    qtbot.addWidget(status)
    assert status.isHidden()
    status.progress(0, 0)
    assert not status.isHidden()
    assert status.label.text() == "Learning how this model calls tools…"
    assert (status.bar.minimum(), status.bar.maximum()) == (0, 0)  # busy, no share shown
    status.progress(3, 37)
    assert status.label.text() == "Learning how this model calls tools… 3/37"
    assert (status.bar.value(), status.bar.maximum()) == (3, 37)
