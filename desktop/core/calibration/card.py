"""The result of a calibration: a model's reliability card."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from desktop.core.calibration.questions import TrackName
from desktop.core.calibration.scoring import Answer, Bars, score
from desktop.core.tracks.tool_forms import TOOL_FORMS, ToolForm

# How calibration measures, numbered: a card made an earlier way is measured again (and
# used until then). 2: questions from 10 examples in fixed tool groups, calls to no
# offered tool answered in text, the arguments' bar. 3: a call the gate's last rule (the
# licence) would leave out is no call, where none is due. 4: the tool prompt's form chosen.
# 5: a question on the step after a call's result, among those the forms are compared on.
METHOD = 5
# The window suggests another track or model from one unwanted call in this many questions.
UNWANTED_SHARE_TO_WARN = 4


@dataclass(frozen=True)
class TrackScore:
    """How one track did on the calibration questions (with its bar, for the gated one)."""

    track: TrackName
    due_right: int
    due: int
    parallel_right: int
    parallel: int
    quiet_right: int  # no call where none fits
    quiet: int
    invalid: int
    cut_off: int
    calls: int
    tokens_per_call: float
    seconds_per_call: float
    score: float  # balanced accuracy
    arguments_right: int = 0  # of the due calls made, those with the example's arguments
    answered_in_full: int = 0  # the due questions answered in full (arguments checked)
    # Questions this track was not asked once it could no longer do better than the
    # chosen one (the native track; 0 in cards from before it could stop).
    left_unasked: int = 0

    @classmethod
    def of(
        cls,
        track: TrackName,
        decisions: Sequence[Answer],
        bars: Bars,
        calls: Sequence[Answer] | None = None,
    ) -> TrackScore:
        """The track's score at `bars`: whether it calls where it should from `decisions`,
        how good its calls are from `calls` (answers in full; `decisions` if they are)."""
        calls = decisions if calls is None else calls
        due = [a for a in decisions if a.due]
        quiet = [a for a in decisions if not a.due]
        parallel = [a for a in calls if a.kind == "calls"]
        calling = [a for a in calls if a.called and a.calls]
        made = sum(a.calls for a in calling)
        full_due = [a for a in calls if a.due and a.checked]
        return cls(
            track,
            sum(a.right_with(bars) for a in due),
            len(due),
            sum(a.right_with(bars) for a in parallel),
            len(parallel),
            sum(a.right_with(bars) for a in quiet),
            len(quiet),
            sum(a.invalid for a in calls),
            sum(a.cut_off for a in calls),
            made,
            round(sum(a.completion_tokens for a in calling) / made, 1) if made else 0.0,
            round(sum(a.seconds for a in calling) / made, 2) if made else 0.0,
            round(score(decisions, bars), 4),
            sum(a.arguments_right and a.right_with(bars) for a in full_due),
            len(full_due),
        )


@dataclass(frozen=True)
class Calibration:
    """A model's reliability card: the track and bar chosen, and how each track did."""

    model: str
    day: str  # ISO date
    track: TrackName
    bar: float  # the call gate's bar on the emulated track
    scores: tuple[TrackScore, ...]
    cases: int
    seconds: float
    odds_reported: bool = True  # False: the backend gives no token odds, so no gate
    # The bar for a request after earlier turns; None (a card from before there were two):
    # `bar` judges every request.
    later_bar: float | None = None
    # The bar for the arguments of a call under its bar; None (a card from before, or a
    # model that made no unwanted call): such a call is answered in text.
    arguments_bar: float | None = None
    method: int = 1  # see METHOD; cards without one were made the first way
    # How the tool prompt lists the tools (tracks.tool_forms), chosen from each form's
    # score on the same first requests (`form_scores`); "json" in cards from before.
    tool_form: ToolForm = "json"
    form_scores: tuple[tuple[str, float], ...] = ()

    @property
    def chosen(self) -> TrackScore:
        return next(s for s in self.scores if s.track == self.track)

    @property
    def bars(self) -> Bars:
        later = self.bar if self.later_bar is None else self.later_bar
        return Bars(self.bar, later, self.arguments_bar)

    @property
    def source(self) -> str:
        return f"calibrated {self.day}"

    @property
    def model_name(self) -> str:
        """The model as a person knows it: the file's name, or the served model's."""
        kind, _, rest = self.model.partition(":")
        if kind == "file":
            return rest.rsplit(":", 1)[0]
        return Path(rest).name or rest or self.model

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scores": [asdict(s) for s in self.scores]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        scores = tuple(TrackScore(**s) for s in data["scores"])
        form = data.get("tool_form", "json")
        forms = tuple((str(f), float(s)) for f, s in data.get("form_scores", ()))
        return cls(**{**data, "scores": scores, "form_scores": forms,
                      "tool_form": form if form in TOOL_FORMS else "json"})  # fmt: skip

    @property
    def misses_calls(self) -> bool:
        """Whether the model leaves a quarter or more of the due calls unmade."""
        s = self.chosen
        return bool(s.due) and (s.due - s.due_right) * UNWANTED_SHARE_TO_WARN >= s.due

    def suggestion(self) -> str | None:
        """A suggestion for a model that often calls a tool where none fits (a quarter of
        such questions or more, counted as the chat would call: at the bar, after the
        licence rule). None for a card measured before the licence counted."""
        s = self.chosen
        if self.method < 3:
            return None
        unwanted = s.quiet - s.quiet_right
        if not s.quiet or unwanted * UNWANTED_SHARE_TO_WARN < s.quiet:
            return None
        other = "another model" if self.track == "native" else "the native track or another model"
        return (f"{self.model_name} calls a tool where none fits in {unwanted} of {s.quiet} "
                f"calibration questions: {other} may suit tools better (Settings).")  # fmt: skip

    def card(self) -> list[tuple[str, str]]:
        """The card's rows, as the Settings dialog and the CLI show them."""
        s = self.chosen
        rows: list[tuple[str, str]] = [("Track", self.track)]
        if self.track != "native":
            rows += self._gate()
            if len(self.form_scores) > 1:
                each = ", ".join(f"{form} {value:.2f}" for form, value in self.form_scores)
                rows.append(("Tool prompt form", f"{self.tool_form} (first requests: {each})"))
        rows += [
            ("Calls right where one is due", _share(s.due_right, s.due)),
            ("… with the expected arguments", _share(s.arguments_right, s.answered_in_full)),
            ("Parallel calls right", _share(s.parallel_right, s.parallel)),
            ("Calls a tool where none fits", _in(s.quiet - s.quiet_right, s.quiet)),
            ("Invalid or cut-off calls", f"{s.invalid} invalid, {s.cut_off} cut off"),
            ("Per call", f"{s.tokens_per_call:.0f} tokens, {s.seconds_per_call:.1f} s"),
        ]
        for other in (o for o in self.scores if o.track != self.track):
            asked = other.due + other.quiet
            if other.left_unasked:
                shown = (f"not kept: after {asked} of {asked + other.left_unasked} questions"
                         f" it could no longer do better than {self.track}")  # fmt: skip
            else:
                shown = f"{other.score:.0%} right, against {s.score:.0%}"
            rows.append((f"{other.track.capitalize()} track", shown))
        rows.append(("Measured", f"{self.day}, {self.cases} questions, {self.seconds:.0f} s"))
        return rows

    def _gate(self) -> list[tuple[str, str]]:
        """The call gate's bars, in words."""
        if not self.odds_reported:
            return [("Call gate", "none: this backend gives no token odds")]
        if self.later_bar is None:
            rows = [("Call gate", f"bar {self.bar:.2f} for every request")]
        else:
            rows = [("Call gate", f"bar {self.bar:.2f}; after earlier turns {self.later_bar:.2f}")]
        if self.arguments_bar is not None:
            rows.append(
                ("Arguments' bar", f"{self.arguments_bar:.2f}, for a call under the gate's bar")
            )
        return rows


def _in(count: int, total: int) -> str:
    return f"in {count} of {total}" if total else "none asked"


def _share(right: int, total: int) -> str:
    return f"{right} of {total} ({right / total:.0%})" if total else "none asked"
