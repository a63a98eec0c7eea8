"""A chat session without Qt: the backend connection, the tools, the deduplicator, the
store, and one turn at a time. The desktop window drives one; tests drive it directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path

from desktop.core.calibration.calibrator import Progress
from desktop.core.calibration.card import Calibration
from desktop.core.calibration.store import CalibrationStore
from desktop.core.connection import Connection
from desktop.core.connector import Connector
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.library import DocumentLibrary
from desktop.core.documents.tool import NAME as SEARCH_DOCUMENTS
from desktop.core.events import Event
from desktop.core.messages import Image, Message
from desktop.core.providers.base import Provider, ProviderError
from desktop.core.providers.discovery import Found, discover
from desktop.core.providers.registry import ProbingProvider
from desktop.core.runtime import LlamaServer, bundled_model_available
from desktop.core.session_turn import read_ahead, session_turn
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.presets import Preset, PresetBook
from desktop.core.storage.servers import in_use, settings_for
from desktop.core.storage.settings import Settings, save_settings
from desktop.core.tools.catalog import ToolCatalog
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.selection import Offer
from desktop.core.tools.toolbox import Approver, Tool, Toolbox
from desktop.core.tracing import TurnTrace
from desktop.core.warm_up import PromptWarmUp


class Session:
    def __init__(
        self,
        settings: Settings,
        store: ChatStore,
        secrets: SecretStore,
        tools: Sequence[Tool] | None = None,
        *,
        runtime_log: Path | None = None,
        calibrations: CalibrationStore | None = None,
        settings_path: Path | None = None,
        discover: Callable[[], Awaitable[list[Found]]] = discover,
        has_bundled_model: Callable[[], bool] = bundled_model_available,
        presets: PresetBook | None = None,
        documents: DocumentIndex | None = None,
    ) -> None:
        """`tools` replaces the built-in ones (and the workspace's), for tests.
        `settings_path`: where changed settings are saved (None: not saved, as when the
        data folder could not be used). `discover` and `has_bundled_model`: see Connector.
        `documents`: the collections, searched by a tool once one has passages."""
        self.settings = settings
        self.settings_path = settings_path
        self.store = store
        self.presets = presets or PresetBook()
        self.secrets = secrets
        self.tools = ToolCatalog(tools)
        self.dedupe = Deduplicator()
        self.warm_up = PromptWarmUp()  # the next turn's prompt, read after each turn
        self.backend = Connector(
            secrets,
            calibrations or CalibrationStore(None),
            discover=discover,
            has_bundled_model=has_bundled_model,
            runtime_log=runtime_log,
        )
        self._connecting = asyncio.Lock()
        self._conversations: dict[int, list[Message]] = {}
        self.traces: dict[int, list[TurnTrace]] = {}
        self.documents = documents
        self.library = DocumentLibrary(documents) if documents is not None else None
        self._take(settings)
        self.refresh_documents()

    # --- settings and tools ---------------------------------------------------------

    def apply_settings(self, settings: Settings) -> bool:
        """Take new settings and save them. Tool and cooldown changes apply from the next
        turn on; returns whether the change needs a reconnect (the fields that say so)."""
        before = self.settings
        self._take(settings)
        if self.settings_path is not None:
            save_settings(settings, self.settings_path)
        return settings.needs_reconnect(before)

    def _take(self, settings: Settings) -> None:
        self.settings = settings
        self.dedupe.cooldown_enabled = settings.cooldown_enabled
        self.dedupe.cooldown_overrides = dict(settings.cooldown_overrides)
        self.tools.collect(settings)
        if self.library is not None:
            self.library.take(settings)

    def refresh_documents(self) -> None:
        """Offer `search_documents` over the collections that have passages (none: not
        at all). One quick query: call it after indexing, not per turn."""
        self.tools.extra = [t for t in self.tools.extra if t.name != SEARCH_DOCUMENTS]
        if self.library is not None and (tool := self.library.tool()) is not None:
            self.tools.extra.append(tool)
        self.tools.collect(self.settings)

    def set_dark(self, dark: bool) -> None:
        """Charts from now on are drawn for a dark window (or a light one)."""
        if dark != self.tools.dark:
            self.tools.dark = dark
            self.tools.collect(self.settings)

    async def start_mcp(self) -> list[str]:
        """(Re)start the MCP servers of the settings; returns what went wrong, per server."""
        return await self.tools.start_mcp(self.settings)

    def toolbox(self) -> Toolbox:
        return self.tools.toolbox(self.settings)

    @property
    def context_size(self) -> int:
        """The connected model's context, or the one the settings ask for."""
        return self.connection.capabilities.context_size or self.settings.context_size

    def offer(self, conversation: Sequence[Message], request: str) -> Offer:
        return self.tools.offer(self.settings, conversation, request, self.context_size)

    # --- the connection and the calibration (the connector's) -------------------------

    @property
    def connection(self) -> Connection:
        return self.backend.connection

    @connection.setter
    def connection(self, connection: Connection) -> None:
        self.backend.connection = connection

    @property
    def runtime(self) -> LlamaServer | None:
        return self.backend.runtime

    @runtime.setter
    def runtime(self, runtime: LlamaServer | None) -> None:
        self.backend.runtime = runtime

    @property
    def model_key(self) -> str:
        return self.backend.model_key

    @property
    def calibration(self) -> Calibration | None:
        """The connected model's reliability card, once it has been calibrated."""
        return self.backend.calibration

    def use_provider(self, provider: ProbingProvider | Provider, backend: str = "custom") -> None:
        """Talk to this provider as it is (tests, and embedding the session elsewhere)."""
        self.backend.use_provider(provider, backend, self.settings.track, self.tools.problems)

    async def connect(self) -> Connection:
        """Find or start the backend the settings ask for, probe the model, choose the track
        (and start the MCP servers, the first time or when their configuration changed)."""
        async with self._connecting:  # one at a time: each may start the built-in server
            if self.tools.mcp_config_started != self.settings.mcp_config:
                await self.start_mcp()
            connection = await self.backend.connect(self.settings)
            self.connection = replace(connection, problems=tuple(self.tools.problems),
                                      server=in_use(self.settings))  # fmt: skip
            return self.connection

    def needs_calibration(self) -> bool:
        return self.backend.needs_calibration(list(self.toolbox()))

    async def calibrate(self, progress: Progress | None = None) -> Calibration:
        """Calibrate the connected model on the enabled tools, keep the result and use it
        from the next turn on. A chat pauses it (see `send`); cancelling ends it."""
        await self.warm_up.stop()  # its requests would wait behind the warm-up's
        return await self.backend.calibrate(list(self.toolbox()), self.settings.track, progress)

    async def close(self) -> None:
        """The one teardown: the HTTP client, the built-in server, the MCP servers (and
        their helpers), the chat store and the document index. Safe to call more than once."""
        await self.warm_up.stop()
        await self.backend.close()
        await self.tools.mcp.close()
        self.store.close()
        if self.library is not None:
            await self.library.close()

    # --- conversations and turns -------------------------------------------------------

    def conversation(self, conversation_id: int) -> list[Message]:
        """What the model is sent: the conversation's system prompt, then its shown branch."""
        if conversation_id not in self._conversations:
            system, _preset = self.store.system_prompt(conversation_id)
            self._conversations[conversation_id] = [
                *([Message.system(system)] if system.strip() else []),
                *(m for _, m in self.store.messages(conversation_id)),
            ]
        return self._conversations[conversation_id]

    def forget(self, conversation_id: int) -> None:
        self._conversations.pop(conversation_id, None)
        self.traces.pop(conversation_id, None)

    def new_conversation(self) -> int:
        """A new conversation with the default preset's system prompt."""
        conversation_id = self.store.create_conversation()
        default = self.presets.default_preset
        if default is not None:
            self.store.set_system_prompt(conversation_id, default.system_prompt, default.name)
        return conversation_id

    def read_ahead(self, conversation_id: int) -> None:
        """Read the conversation's next prompt ahead while the person types (after each
        turn it is; call this where nothing was: a chat opened, a model connected or
        calibrated). Not while a calibration goes on; a turn stops it."""
        read_ahead(self, conversation_id)

    def preset_of(self, conversation_id: int) -> Preset | None:
        return self.presets.get(self.store.system_prompt(conversation_id)[1])

    def server_settings(self, conversation_id: int) -> Settings | None:
        """The settings that connect to the conversation's saved server (its own choice,
        else its preset's); None where that is the one in use, none, or saved no more."""
        preset = self.preset_of(conversation_id)
        wanted = self.store.server(conversation_id) or (preset.server if preset else "")
        return settings_for(self.settings, wanted)

    async def connect_for(self, conversation_id: int) -> bool:
        """Connect to the conversation's server where another is in use; whether it did."""
        if (moved := self.server_settings(conversation_id)) is None:
            return False
        self.apply_settings(moved)
        await self.connect()
        return True

    def use_preset(self, conversation_id: int, preset: Preset) -> None:
        """The conversation takes the preset: its system prompt (which may then be edited
        for this conversation alone), temperature, tools and track."""
        self.set_system_prompt(conversation_id, preset.system_prompt, preset.name)

    def set_system_prompt(self, conversation_id: int, text: str, preset: str = "") -> None:
        """From the next turn on (the tool block stays right after it: the prompt's prefix is
        stable for the whole conversation)."""
        self.store.set_system_prompt(conversation_id, text, preset)
        self._conversations.pop(conversation_id, None)

    def show_branch(self, conversation_id: int, seq: int) -> None:
        """Show (and continue) the branch through message `seq`."""
        self.store.show_branch(conversation_id, seq)
        self._conversations.pop(conversation_id, None)

    def delete_from(self, conversation_id: int, seq: int) -> None:
        """Delete message `seq` and everything that followed it."""
        self.store.delete_from(conversation_id, seq)
        self._conversations.pop(conversation_id, None)

    def question_of(self, conversation_id: int, seq: int) -> int:
        """The person's message that the answer at `seq` (or `seq` itself) answers."""
        if (question := self.store.question_of(conversation_id, seq)) is None:
            raise ProviderError("There is no question before that message to answer again.")
        return question

    async def send(self, conversation_id: int, text: str, images: Sequence[Image] = (),
                   approver: Approver | None = None) -> AsyncGenerator[Event, None]:  # fmt: skip
        """Run one turn (on the conversation's server); every message is stored the moment
        it is complete."""
        await self.connect_for(conversation_id)
        async with aclosing(
            self.backend.paused_calibration(
                session_turn(self, conversation_id, Message.user(text, list(images)), approver)
            )
        ) as events:
            async for event in events:
                yield event

    async def edit(self, conversation_id: int, seq: int, text: str, images: Sequence[Image] = (),
                   approver: Approver | None = None) -> AsyncGenerator[Event, None]:  # fmt: skip
        """Send `text` in place of the message `seq`: a new branch beside it (kept). If
        the new message never got stored (the server could not be reached), the old one is
        shown again."""
        await self.connect_for(conversation_id)
        self.backend.check_connected()
        shown, parent = self.store.head(conversation_id), self.store.parent(conversation_id, seq)
        self.store.rewind(conversation_id, parent)
        self._conversations.pop(conversation_id, None)
        try:
            async with aclosing(self.send(conversation_id, text, images, approver)) as events:
                async for event in events:
                    yield event
        finally:
            self._restore_if_nothing_came(conversation_id, parent, shown)

    async def regenerate(
        self, conversation_id: int, seq: int, approver: Approver | None = None
    ) -> AsyncGenerator[Event, None]:
        """Answer again the question that the message `seq` answers: a new branch after the
        question; the old answer stays as a branch (and is shown again if no new answer
        came: a failed or stopped regeneration hides nothing)."""
        await self.connect_for(conversation_id)
        self.backend.check_connected()
        shown, question = self.store.head(conversation_id), self.question_of(conversation_id, seq)
        self.store.rewind(conversation_id, question)
        self._conversations.pop(conversation_id, None)
        try:
            async with aclosing(
                self.backend.paused_calibration(session_turn(self, conversation_id, None, approver))
            ) as events:
                async for event in events:
                    yield event
        finally:
            self._restore_if_nothing_came(conversation_id, question, shown)

    def _restore_if_nothing_came(self, conversation_id: int, rewound: int | None,
                                 shown: int | None) -> None:  # fmt: skip
        """After an edit or a regeneration that stored nothing: the branch shown before."""
        if self.store.head(conversation_id) == rewound:
            self.store.rewind(conversation_id, shown)
            self._conversations.pop(conversation_id, None)
