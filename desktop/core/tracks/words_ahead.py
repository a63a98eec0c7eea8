"""The answer in words, asked ahead. Where the answer opens a call, the gate may still turn
it down (a tool not offered, a call that is not the person's, odds under the bar), and
the answer without tools is then what the person gets.
On a server that keeps that answer's prompt in a slot of its own and batches its slots,
it is asked at once, while the call is read to its name: the server writes the call's
tokens and reads the answer's prompt in the same batches, so the answer is on its way
when the verdict comes, at little cost to the call. Whatever the gate does not use is
cancelled, and the server stops writing it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

from desktop.core.events import ProviderEvent

# Put in the queue after the answer's last event (or its error).
_END = None


class WordsAhead:
    """One answer asked ahead of the verdict: its events kept as they come (as many as
    the answer's token limit allows), for the one who takes it; cancelled on `close`."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[ProviderEvent | Exception | None] = asyncio.Queue()
        self._asked = False
        self._taken = False

    def ask(self, answer: Callable[[], AsyncGenerator[ProviderEvent, None]]) -> None:
        """Start reading the stream `answer` makes (once: later asks are ignored)."""
        if not self._asked:
            self._asked = True
            self._task = asyncio.create_task(self._read(answer()))

    async def _read(self, source: AsyncGenerator[ProviderEvent, None]) -> None:
        try:
            async with aclosing(source) as events:
                async for event in events:
                    self._queue.put_nowait(event)
        except Exception as exc:  # the backend's failure, for whoever takes the answer
            self._queue.put_nowait(exc)
        finally:
            self._queue.put_nowait(_END)

    def take(self) -> AsyncGenerator[ProviderEvent, None] | None:
        """The answer's stream from its first event, where one was asked (once)."""
        if self._task is None or self._taken:  # never asked, taken, or cancelled
            return None
        self._taken = True
        return self._events()

    async def _events(self) -> AsyncGenerator[ProviderEvent, None]:
        try:
            while (item := await self._queue.get()) is not _END:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:  # read to its end, or left early: either way nothing more is written
            await self.close()

    async def close(self) -> None:
        """Cancel the answer where it is still being written, and wait until it is."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
