"""What the words module takes out of a request, and what it leaves."""

from __future__ import annotations

import pytest

from desktop.core.words import without_pleasantries


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("Thanks, bye!", ", !"),
        ("Good morning!", "!"),
        ("Ha, good one. Bye!", ", . !"),
        ("Hello! What is 12 * 7?", "! What is 12 * 7?"),
        ("Thanks! Now chart the good months.", "! Now chart the  months."),
        ("Which day was the warmest?", "Which day was the warmest?"),
        ("Write a goodbye note for Sam.", "Write a  note for Sam."),
        ("thankfully, the highway was nicer", "thankfully, the highway was nicer"),
    ],
)
def test_only_greetings_thanks_and_goodbyes_are_taken_out(text: str, left: str) -> None:
    assert " ".join(without_pleasantries(text).split()) == " ".join(left.split())
