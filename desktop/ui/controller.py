"""The one object that owns the running turn: it starts it, stops it, and passes the
core's events on to the widgets as they are, through one signal."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Coroutine
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from desktop.core.connection import Connection
from desktop.core.events import Event, TurnFailed
from desktop.core.messages import Image, ToolCall
from desktop.core.providers.base import ProviderError
from desktop.core.session import Session
from desktop.core.tools.toolbox import Tool
from desktop.ui.api_host import ApiHost
from desktop.ui.tasks import Tasks

log = logging.getLogger(__name__)


@dataclass
class ApprovalRequest:
    """A tool call waiting for the user's yes or no; the turn waits on `future`."""

    call: ToolCall
    tool: Tool
    future: asyncio.Future[bool]

    def answer(self, allowed: bool) -> None:
        if not self.future.done():
            self.future.set_result(allowed)


class ChatController(QObject):
    """Signals:
    event_received(object): each event of the running turn, a core `Event` as it is (views
        dispatch on it with `match`); a failure outside the turn comes as `TurnFailed`.
    turn_stopped(): the user stopped the turn.
    busy_changed(bool): a turn started or ended.
    connection_changed(object): a new `Connection` (status bar, first-run screen).
    speed_measured(float): tokens per second of the last answer.
    approval_requested(object): an `ApprovalRequest` to show the user.
    calibration_progress(int, int): questions answered of all (0 of 0 until they are known).
    calibration_finished(object): the model's new `Calibration`.
    calibration_ended(str): calibration stopped without a result, and why ("" when the
        user cancelled it).
    """

    event_received = Signal(object)
    turn_stopped = Signal()
    busy_changed = Signal(bool)
    connection_changed = Signal(object)
    speed_measured = Signal(float)
    approval_requested = Signal(object)
    calibration_progress = Signal(int, int)
    calibration_finished = Signal(object)
    calibration_ended = Signal(str)

    def __init__(self, session: Session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self._task: asyncio.Task[None] | None = None
        self.tasks = Tasks()  # every job beside the turn, the dialogs' included
        self._calibration: asyncio.Task[None] | None = None
        self._connecting: asyncio.Task[None] | None = None
        # Calibrate a model on its first turn with tools; off in tests that count requests.
        self.calibrate_on_first_use = True
        self._conversation: int | None = None  # the running turn's
        self._allowed_in_chat: dict[int, set[str]] = {}  # tools whose "always" is per chat
        self.api = ApiHost(session)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def pending(self) -> bool:
        """A turn or a job beside it (connecting, calibrating, a download) is running."""
        return self.busy or self.tasks.pending

    # --- the turn ---------------------------------------------------------------------

    def send(self, conversation_id: int, text: str, images: list[Image] | None = None) -> None:
        """Start a turn; a turn still running is stopped first (a new message wins)."""
        turn = self.session.send(conversation_id, text, images or [], approver=self._approve)
        self._start(conversation_id, turn)

    def edit(
        self, conversation_id: int, seq: int, text: str, images: list[Image] | None = None
    ) -> None:
        """Send `text` in place of message `seq` (a new branch beside it)."""
        turn = self.session.edit(conversation_id, seq, text, images or [], self._approve)
        self._start(conversation_id, turn)

    def regenerate(self, conversation_id: int, seq: int) -> None:
        """Answer again the question that message `seq` answers (a new branch)."""
        self._start(conversation_id, self.session.regenerate(conversation_id, seq, self._approve))

    def _start(self, conversation_id: int, turn: AsyncGenerator[Event, None]) -> None:
        self.stop()
        self._conversation = conversation_id
        self._task = asyncio.ensure_future(self._run(conversation_id, turn))

    def stop(self) -> None:
        if self.busy and self._task is not None:
            self._task.cancel()

    async def shutdown(self, timeout_s: float = 3.0) -> None:
        """Stop the turn and every job beside it, and wait for them, so that no task
        outlives the window."""
        turn = self._task
        self.stop()
        if turn is not None and not turn.done():
            await asyncio.wait([turn], timeout=timeout_s)
        await self.tasks.stop(timeout_s)
        await self.api.stop()

    async def _run(self, conversation_id: int, turn: AsyncGenerator[Event, None]) -> None:
        self.busy_changed.emit(True)
        try:
            async with aclosing(turn) as stream:
                async for event in stream:
                    self.event_received.emit(event)
        except asyncio.CancelledError:
            self.turn_stopped.emit()
        except ProviderError as exc:
            self.event_received.emit(TurnFailed(0, str(exc)))
        except Exception as exc:  # the store, a bug: said in the window, never a dead turn
            log.exception("turn failed")
            message = f"Something went wrong: {type(exc).__name__}: {exc}"
            self.event_received.emit(TurnFailed(0, message))
        finally:
            speed = self._speed(conversation_id)
            if speed:
                self.speed_measured.emit(speed)
            self.busy_changed.emit(False)
        if self.calibrate_on_first_use and self.session.needs_calibration():
            self.calibrate()  # after the first answer, so that it never waits for this

    def allow_in_chat(self, tool: str) -> None:
        """Run `tool` without asking for the rest of the running turn's conversation."""
        if self._conversation is not None:
            self._allowed_in_chat.setdefault(self._conversation, set()).add(tool)

    async def _approve(self, call: ToolCall, tool: Tool) -> bool:
        """Ask the window, unless the person said "always" for this tool in this chat; a
        stopped turn cancels the question along with it."""
        if tool.name in self._allowed_in_chat.get(self._conversation or -1, set()):
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.approval_requested.emit(ApprovalRequest(call, tool, future))
        return await future

    def _speed(self, conversation_id: int) -> float | None:
        """Tokens per second of the last turn: its completion tokens over the time its model
        requests took (tool time left out), from the turn's trace."""
        traces = self.session.traces.get(conversation_id)
        if not traces:
            return None
        steps = [s for s in traces[-1].steps if s.usage and s.duration_ms]
        tokens = sum(s.usage["completion_tokens"] for s in steps if s.usage)
        seconds = sum(s.duration_ms or 0 for s in steps) / 1000
        return tokens / seconds if tokens and seconds > 0 else None

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """A short job beside the turn (reading an attachment): stopped with the window."""
        self.tasks.start(work)

    def read_ahead(self, conversation_id: int | None) -> None:
        """Read the shown conversation's next prompt ahead while the person types (see
        `Session.read_ahead`), where no turn has the server (nor a calibration: the session
        knows, where the calibration's own task has not yet ended as it reports)."""
        if conversation_id is not None and not self.busy:
            self.session.read_ahead(conversation_id)

    # --- calibration --------------------------------------------------------------------

    @property
    def calibrating(self) -> bool:
        return self._calibration is not None and not self._calibration.done()

    def calibrate(self) -> None:
        """Calibrate the connected model in the background (a turn pauses it)."""
        if self.calibrating:
            return
        self._calibration = self.tasks.start(self._calibrate())

    def cancel_calibration(self) -> None:
        if self._calibration is not None:
            self._calibration.cancel()

    async def _calibrate(self) -> None:
        self.calibration_progress.emit(0, 0)  # shown at once; the count once it is known
        try:
            calibration = await self.session.calibrate(self.calibration_progress.emit)
        except asyncio.CancelledError:
            self.calibration_ended.emit("")
        except (ProviderError, ValueError, OSError) as exc:
            self.calibration_ended.emit(f"Calibration stopped: {exc}")
        except Exception as exc:  # a bug: said, never a dead task
            log.exception("calibration failed")
            self.calibration_ended.emit(f"Calibration failed: {type(exc).__name__}: {exc}")
        else:
            self.calibration_finished.emit(calibration)
            self.connection_changed.emit(self.session.connection)  # the track may change

    # --- the connection ---------------------------------------------------------------

    def follow_server(self, conversation_id: int) -> None:
        """Connect to the conversation's saved server where another is in use; not under a
        running turn (its conversation's server is the one it runs on)."""
        moved = self.session.server_settings(conversation_id)
        if moved is not None and not self.busy:
            self.session.apply_settings(moved)
            self.reconnect()

    def reconnect(self) -> None:
        """Connect (again) in the background; `connection_changed` tells the result. A
        connection still being made is given up: the newest settings win, and two of them
        would each start a server."""
        self.stop()
        self.cancel_calibration()  # it belongs to the model being left
        if self._connecting is not None:
            self._connecting.cancel()
        self._connecting = self.tasks.start(self._connect())

    async def _connect(self) -> None:
        self.connection_changed.emit(
            Connection(False, "Connecting…", self.session.settings.backend)
        )
        with contextlib.suppress(asyncio.CancelledError):
            connection = await self.session.connect()
            await self.api.apply()  # the local API, as the settings now say
            if self.api.problem:  # said in the chat, with the tools' problems
                connection = replace(connection, problems=(*connection.problems, self.api.problem))
            self.connection_changed.emit(connection)
