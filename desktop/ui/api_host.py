"""The local API while the window is open (Settings → Backend → *Local API*): started,
moved to another port or stopped as the settings say, on this computer only, answered by
the model the chat uses. Its requests are kept for the inspector (View → Local API
requests)."""

from __future__ import annotations

import logging

from desktop.api.server import ApiServer, ChatApi, Exchange
from desktop.api.session_backend import session_backend
from desktop.api.token import api_token
from desktop.core.session import Session
from desktop.core.tracing import TurnTrace

log = logging.getLogger(__name__)


class ApiHost:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.server: ApiServer | None = None
        self.api: ChatApi | None = None
        self.problem = ""  # why it could not start, for Settings to say
        self._port: int | None = None

    @property
    def url(self) -> str:
        return self.server.url if self.server is not None else ""

    @property
    def traces(self) -> list[TurnTrace]:
        exchanges: list[Exchange] = self.api.exchanges if self.api is not None else []
        return [e.trace for e in exchanges if e.trace is not None]

    async def apply(self) -> None:
        """Serve as the settings say now."""
        settings = self.session.settings
        if not settings.api_enabled:
            await self.stop()
            return
        if self.server is not None and self._port == settings.api_port:
            return
        await self.stop()
        self.api = ChatApi(session_backend(self.session), api_token(self.session.secrets))
        server = ApiServer(self.api, "127.0.0.1", settings.api_port)
        try:
            await server.start()
        except OSError as exc:
            self.problem = f"The local API cannot listen on port {settings.api_port}: {exc}"
            log.warning("%s", self.problem)
            return
        self.server, self._port, self.problem = server, settings.api_port, ""

    async def stop(self) -> None:
        server, self.server, self._port = self.server, None, None
        if server is not None:
            await server.stop()
