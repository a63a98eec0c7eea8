"""The next turn's prompt, read ahead while the person reads the answer.

A turn's first request starts with everything said so far, and where the system prompt
holds the earlier turns as a transcript before the tool prompt, the turn that just ended
changes that prompt before the new message: the server reads that turn and the whole tool
prompt again before the first word of the next answer, and on a CPU that is the wait a
person notices. Once a turn has ended, the conversation with an empty request after it is
sent for a one-token answer, so the server's prompt cache holds all of it when the next
message comes; only that message is left to read. The person is reading meanwhile; a new
turn, a calibration, a request to the local API or closing stops the warm-up first, and
none starts while a calibration goes on (its requests take the slots). Only for a backend
that caches prompts (`Features.caches_prompt`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import aclosing, suppress
from dataclasses import replace

from desktop.core.messages import Message
from desktop.core.providers.base import Provider, RequestOptions
from desktop.core.tool_spec import ToolSpec

log = logging.getLogger(__name__)


class PromptWarmUp:
    """At most one warm-up at a time, the session's (see the module)."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def start(
        self,
        provider: Provider,
        conversation: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> None:
        """Read ahead the prompt a turn after `conversation` will start with, offered
        `tools`, in the background (a warm-up before it is stopped)."""
        self.cancel()
        if not provider.features.caches_prompt:
            return
        messages = [*conversation, Message.user("")]
        asked = replace(options, max_tokens=1, temperature=0, warm_up=True)
        self._task = asyncio.create_task(_read(provider, messages, list(tools), asked))

    def cancel(self) -> None:
        """Stop the warm-up under way without waiting for it to end."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def stop(self) -> None:
        """Stop the warm-up under way, if any, and wait until it has ended."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def settled(self) -> None:
        """Wait for the warm-up under way to end (a bench's person, reading the answer)."""
        if self._task is not None:
            with suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)


async def _read(
    provider: Provider, messages: list[Message], tools: list[ToolSpec], options: RequestOptions
) -> None:
    try:
        async with aclosing(provider.stream(messages, tools, options)) as stream:
            async for _ in stream:
                pass
    except Exception as exc:  # nobody asked for it: the next turn tells of a real failure
        log.info("reading the next prompt ahead failed: %s", exc)
