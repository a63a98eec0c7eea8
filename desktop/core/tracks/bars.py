"""The call gate's bars: the least odds of a call it lets through, per model, as its
calibration measured them (`gate` applies them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from desktop.core.messages import Message
from desktop.core.tracks.prompt import split_turns

UNCALIBRATED = "uncalibrated"


class Calibrated(Protocol):
    """What a model's calibration says of its gate (calibration.Calibration)."""

    @property
    def bar(self) -> float: ...

    @property
    def later_bar(self) -> float | None: ...

    @property
    def arguments_bar(self) -> float | None: ...

    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class Bars:
    """The least odds of a call for a first request (`first`) and for one after earlier
    turns (`later`), and for a call's arguments under its bar (None: not weighed). How
    surely a model opens a call differs from model to model, so each model's bars are
    measured by its calibration; until then there are none (0: the model's own choice)."""

    first: float = 0.0
    later: float = 0.0
    arguments: float | None = None
    source: str = UNCALIBRATED

    @classmethod
    def of(cls, calibration: Calibrated | None) -> Bars:
        if calibration is None:
            return cls()
        later = calibration.bar if calibration.later_bar is None else calibration.later_bar
        return cls(calibration.bar, later, calibration.arguments_bar, calibration.source)

    def for_request(self, messages: Sequence[Message]) -> tuple[float, str]:
        """The bar that judges this request's calls, and where it came from."""
        if split_turns(messages)[0]:
            later = "" if self.source == UNCALIBRATED else ", after earlier turns"
            return self.later, f"{self.source}{later}"
        return self.first, self.source

    def for_second_look(self, messages: Sequence[Message]) -> tuple[float, str] | None:
        """The bar for the turn asked alone (None for a first request: no earlier turns)."""
        if not split_turns(messages)[0]:
            return None
        return self.first, f"{self.source}, the turn alone"
