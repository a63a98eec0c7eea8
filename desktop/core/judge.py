"""May this call run? The turn's one place for it: the tool-call limit, validation, repeats
and cooldowns, and the user's approval, asked in that order."""

from __future__ import annotations

from dataclasses import dataclass

from desktop.core.events import RejectionStage
from desktop.core.messages import ToolCall
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import Approver, Toolbox


@dataclass(frozen=True)
class Verdict:
    """Why a call may not run. `fixable`: it named a real tool with arguments that failed,
    which the model may put right once it reads the reason."""

    reason: str
    stage: RejectionStage
    fixable: bool = False


class Judge:
    """Judges a turn's calls in order, counting each against the limit (a refused call
    spends one too: a model that repeats itself must run out)."""

    def __init__(
        self,
        toolbox: Toolbox,
        max_calls: int,
        dedupe: Deduplicator,
        approver: Approver | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.max_calls = max_calls
        self.dedupe = dedupe
        self.approver = approver  # without one, calls that need approval are declined
        self.spent = 0

    @property
    def spent_all(self) -> bool:
        return self.spent >= self.max_calls

    async def judge(self, call: ToolCall, too_large: str | None = None) -> Verdict | None:
        """None if the call may run (and it is recorded as run), else the verdict.
        `too_large`: why its arguments could not even be kept, found before."""
        if self.spent_all:
            limit = f"Not run: the limit of {self.max_calls} tool calls was reached."
            return Verdict(limit, "limit")
        self.spent += 1
        tool = self.toolbox.get(call.name)
        if tool is None:  # no slip to fix: the model is told which tools there are
            return Verdict(too_large or self.toolbox.not_found(call.name), "validation")
        reason = too_large or self.toolbox.validate(call.name, call.arguments)
        if reason is not None:
            return Verdict(reason, "validation", fixable=True)
        if (refusal := self.dedupe.check(tool, call.arguments)) is not None:
            return Verdict(refusal.reason, refusal.kind)
        self.dedupe.record(tool, call.arguments)
        if tool.needs_approval and not (self.approver and await self.approver(call, tool)):
            return Verdict(f"The user declined this call to {tool.name}.", "denied")
        return None

    def spend_broken(self) -> None:
        """A call that could not be parsed counts against the limit too."""
        self.spent += 1
