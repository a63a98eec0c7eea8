"""Running a calibration: pausable whenever a chat needs the model, cancellable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import date
from functools import partial

from desktop.core.calibration.card import METHOD, Calibration, TrackScore
from desktop.core.calibration.questions import (
    FULL_ANSWERS,
    LATER_KINDS,
    Case,
    TrackName,
    cases_for,
)
from desktop.core.calibration.reading import GateReader
from desktop.core.calibration.scoring import Answer, Bars, answer, opening, score
from desktop.core.providers.base import Provider
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.bars import Bars as GateBars
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.native import NativeTools
from desktop.core.tracks.prompt import emulated_history
from desktop.core.tracks.tool_forms import TOOL_FORMS, ToolForm

Progress = Callable[[int, int], None]
# The native track is chosen over the emulated one (the default) only if it answers this
# many more of the same questions rightly: on 12 questions one answer is noise (a margin
# of one chose native for a model on which it did clearly worse).
NATIVE_MARGIN = 2


class Calibrator:
    """One calibration run over a provider (the raw backend, not on a track), pausable.

    `pause()` cancels the question in flight and holds the run until `resume()`; that
    question is asked again then. Cancelling the task that runs `run()` ends it."""

    def __init__(
        self,
        provider: Provider,
        tools: Sequence[ToolSpec],
        model: str,
        *,
        native: bool = False,
        progress: Progress | None = None,
        examples_in_prompt: bool = True,
        forms: Sequence[ToolForm] = TOOL_FORMS,
    ) -> None:
        self.provider = provider
        # The forms of the tool prompt tried (the first kept where others do no better).
        self.forms = tuple(forms) or ("json",)
        # Without examples in the prompt where the turns judged will show none (see cases_for).
        self.cases = cases_for(tools, examples_in_prompt=examples_in_prompt)
        self.model = model
        self.native = native
        self.progress = progress or (lambda done, total: None)
        self._may_run = asyncio.Event()
        self._may_run.set()
        self._current: asyncio.Future[Answer] | None = None
        # The answers the bars were chosen from, once run (for the bench's record).
        self.decided: list[Answer] = []

    def pause(self) -> None:
        self._may_run.clear()
        if self._current is not None:
            self._current.cancel()

    def resume(self) -> None:
        self._may_run.set()

    async def run(self) -> Calibration:
        """Every question read at its opening on the gated track, with the calls it would
        make (its bars come from these, and how good its calls are), once per form of the
        tool prompt, the best form kept; without constrained decoding, a few answered in
        full on the emulated track instead; the same few on the native track where there
        is one. The better track is kept."""
        if not self.cases:
            raise ValueError("no tool has examples to calibrate with")
        started = time.perf_counter()
        due = [c for c in self.cases if c.due]
        quiet = [c for c in self.cases if not c.due]
        few = due[:FULL_ANSWERS] + quiet[:FULL_ANSWERS]
        gated = self.provider.features.constrains_json
        first: TrackName = "constrained" if gated else "emulated"
        track = ConstrainedTools(self.provider)
        plan: list[tuple[TrackName, str, Case, ToolForm | None]] = []
        # First requests first: the bars they set judge the later questions' second looks,
        # so the turn alone's calls are written only where its odds fall under the first
        # bar (as in a chat), not for every later question.
        firsts = [c for c in self.cases if c.kind not in LATER_KINDS]
        laters = [c for c in self.cases if c.kind in LATER_KINDS]
        forms = self.forms if gated else ("json",)
        if gated:
            # The forms are compared on the first requests; the later questions are read
            # in the form that did best (None here: known once the first are read).
            # In the order of their prompts' text: each shares the longest start with the
            # one before, which the server's prompt cache then keeps.
            for form in forms:
                order = sorted(firsts, key=partial(_prompt_order, form=form))
                plan += [(first, "opening", c, form) for c in order]
            plan += [(first, "opening", c, None) for c in sorted(laters, key=_prompt_order)]
        else:  # no constrained decoding: no odds to weigh, the tolerant parser's answers
            plan += [(first, "full", c, "json") for c in few]
        if self.native:
            plan += [("native", "full", c, "json") for c in few]
        self.progress(0, len(plan))
        native = NativeTools(self.provider)
        opened: dict[tuple[ToolForm, int], Answer] = {}
        full: dict[TrackName, list[Answer]] = {first: [], "native": []}
        asked = self.cases if gated else few

        def firsts_in(form: ToolForm) -> list[Answer]:
            return [opened[form, id(c)] for c in firsts]

        def form_score(form: ToolForm) -> float:
            """How a form did on the first requests, at the bars they choose."""
            return score(firsts_in(form), Bars.chosen(firsts_in(form)))

        def best() -> ToolForm:
            """The form that did best (the earlier of two that did as well)."""
            return max(forms, key=form_score) if gated else "json"

        def made() -> list[Answer]:
            """The first track's answers, in the questions' own order."""
            if not gated:
                return full[first]
            chosen = best()
            return [opened[chosen, id(c)] for c in self.cases]

        def reference() -> tuple[Bars, list[Answer]]:
            """The first track's bars, and its answers to the questions the native track
            is asked (compared on the same questions)."""
            answers = made()
            return Bars.chosen(answers), [
                a for a, c in zip(answers, asked, strict=True) if c in few
            ]

        # No bars yet: the first requests' are chosen from their readings.
        readers = {form: GateReader(self.provider, form=form) for form in forms}
        judging: GateReader | None = None  # the chosen form's first bars, once known
        for done, (name, how, case, in_form) in enumerate(plan, start=1):
            if how == "opening":
                if in_form is None:  # a later question: in the form that did best
                    if judging is None:
                        known = Bars.chosen(firsts_in(best()))
                        # After earlier turns, judged by the first requests' bars; the
                        # later bar is chosen from these readings, so until then it is
                        # the first.
                        judged_by = GateBars(known.first, known.first, known.arguments)
                        judging = GateReader(self.provider, judged_by, best())
                    reader = judging
                else:
                    reader = readers[in_form]
                measuring = case.kind not in LATER_KINDS
                read = partial(opening, reader, case, measuring=measuring)
                opened[reader.form, id(case)] = await self._ask(read)
            elif name == "native" and not _may_win(full["native"], few, *reference()):
                self.progress(len(plan), len(plan))
                break  # right answers to all the rest would not make it the better track
            else:
                provider: Provider = native if name == "native" else track
                full[name].append(await self._ask(partial(answer, provider, case)))
            self.progress(done, len(plan))
        chosen_form = best()
        decided = made()
        self.decided = decided
        bars, first_answers = reference()
        scores = [TrackScore.of(first, decided, bars, None if gated else full[first])]
        chosen = first
        if self.native:
            native_score = TrackScore.of("native", full["native"], bars)
            # Fewer answers than questions: it was stopped once it could not win.
            unasked = len(few) - len(full["native"])
            scores.append(replace(native_score, left_unasked=unasked))
            if len(full["native"]) == len(few) and _wins(full["native"], first_answers, bars):
                chosen = "native"
        return Calibration(
            self.model,
            date.today().isoformat(),
            chosen,
            bars.first,
            tuple(scores),
            len(self.cases),
            round(time.perf_counter() - started, 1),
            any(a.odds is not None for a in decided),
            bars.later,
            bars.arguments,
            METHOD,
            chosen_form,
            tuple((f, round(form_score(f), 4)) for f in forms) if gated else (),
        )

    async def _ask(self, question: Callable[[], Awaitable[Answer]]) -> Answer:
        while True:
            await self._may_run.wait()
            self._current = asyncio.ensure_future(question())
            try:
                return await self._current
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    self._current.cancel()
                    raise  # the run itself was cancelled
                # paused by a chat: ask this question again once the chat is done
            finally:
                self._current = None


def _prompt_order(case: Case, form: ToolForm = "json") -> str:
    """Questions are read in the order of their prompts' text, so that each shares the
    longest start with the one before: the server keeps the previous prompt's evaluation
    and reuses it up to the first difference. Evaluating the tools' descriptions is most
    of a question's time."""
    prompt = emulated_history(list(case.messages), list(case.tools), form=form)
    return "\n".join(m.text for m in prompt)


def _wins(native: Sequence[Answer], first: Sequence[Answer], bars: Bars) -> bool:
    """Whether the native track did better on the same questions: NATIVE_MARGIN answers
    more in balanced accuracy (each weighs 1/(2n) in its group of n; the groups are as
    large), and more right calls where one is due: its wins were in the questions that need
    no call (it stays quiet more often), while it did worse where calls were due."""
    margin = NATIVE_MARGIN / len(native) if native else 0.0

    def due_right(answers: Sequence[Answer]) -> int:
        return sum(a.right_with(bars) for a in answers if a.due)

    better = score(native, bars) >= score(first, bars) + margin - 1e-9
    return better and due_right(native) > due_right(first)


def _may_win(
    made: Sequence[Answer], few: Sequence[Case], bars: Bars, first: Sequence[Answer]
) -> bool:
    """Whether the native track could still win if it answered every question it has not
    been asked yet rightly; if not, asking them would only cost time (answers in full are
    the slowest a calibration asks)."""
    rest = few[len(made) :]
    if not made or not rest:
        return True
    best = [
        *made,
        *(Answer(c.kind, c.due, c.due, c.due, None, False, False, 0, 0, 0.0) for c in rest),
    ]
    return _wins(best, first, bars)
