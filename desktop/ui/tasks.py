"""The window's jobs beside the turn (a connection, a calibration, a download, a file being
read), kept in one place: quitting waits for every one of them and stops it, and a dialog
stops its own when it closes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Tasks:
    """Running tasks, held until they end (asyncio keeps only a weak reference). A group
    made with a `parent` is part of it too: what the dialog starts, quitting sees."""

    def __init__(self, parent: Tasks | None = None) -> None:
        self._running: set[asyncio.Task[Any]] = set()
        self._parent = parent

    def start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(work)
        self._hold(task)
        return task

    def _hold(self, task: asyncio.Task[Any]) -> None:
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        if self._parent is not None:
            self._parent._hold(task)

    @property
    def pending(self) -> bool:
        return any(not task.done() for task in self._running)

    def cancel(self) -> None:
        for task in list(self._running):
            task.cancel()

    async def stop(self, timeout_s: float) -> None:
        """Cancel every task and wait (at most `timeout_s`) until they have ended."""
        running = [task for task in self._running if not task.done()]
        self.cancel()
        if running:
            await asyncio.wait(running, timeout=timeout_s)
