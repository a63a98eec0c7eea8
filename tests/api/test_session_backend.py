"""The chat's model as the local API answers with it, beside the chat's turns."""

from __future__ import annotations

import asyncio
from pathlib import Path

from desktop.api.session_backend import session_backend
from tests.core.test_warm_up import run, session_over, until_asked
from tests.support.fakes import Step


async def test_the_local_api_does_not_wait_behind_a_warm_up(tmp_path: Path) -> None:
    """Its requests go to the chat's server beside the chat's turns, not through them."""
    session, provider, c = session_over(tmp_path, "Rome.", Step(hang=True))
    await run(session, c, "The capital of Italy?")
    await until_asked(provider, 2)
    assert session_backend(session).answering() is not None
    for _ in range(100):
        if provider.cancelled:
            break
        await asyncio.sleep(0)
    assert provider.cancelled
    await session.close()
