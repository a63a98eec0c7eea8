"""The everyday bench's clock: one fixed instant unless asked for the real one, so that a
run on another day reads the same history."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from bench.everyday import CLOCK, clock_instant


def test_the_clock_is_an_instant_with_its_offset_or_the_real_one() -> None:
    assert clock_instant(CLOCK.isoformat()) == CLOCK
    later = clock_instant("2026-03-14T15:09:26+02:00")
    assert later is not None and later.utcoffset() == timedelta(hours=2)
    assert clock_instant("now") is None
    with pytest.raises(argparse.ArgumentTypeError, match="no UTC offset"):
        clock_instant("2026-03-14T15:09:26")
    with pytest.raises(argparse.ArgumentTypeError):
        clock_instant("tomorrow")
