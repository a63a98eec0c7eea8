"""The backend a session talks to: found or started as the settings ask, probed, put on
its track, and calibrated. The session asks it for the provider of each turn; everything
about reaching a model server lives here, so the session can be about conversations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path

from desktop.core.backend_kind import Track
from desktop.core.calibration.calibrator import Calibrator, Progress
from desktop.core.calibration.card import METHOD, Calibration
from desktop.core.calibration.store import CalibrationStore, model_key
from desktop.core.connection import NOT_CONNECTED, Connection
from desktop.core.events import Event
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import Provider, ProviderError
from desktop.core.providers.discovery import Found
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import BACKENDS, ProbingProvider, make_provider
from desktop.core.providers.transport import Transport, TransportError
from desktop.core.runtime import LlamaServer, RuntimeSetupError, ensure_bundled_model
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.servers import key_name
from desktop.core.storage.settings import Settings
from desktop.core.tools.toolbox import Tool
from desktop.core.tracing import TracingProvider
from desktop.core.tracks.choice import on_track


def reached(
    settings: Settings, secrets: SecretStore, kind: str, url: str | None
) -> ProbingProvider:
    """The provider of the `kind` server at `url` (None: its usual address), reached as
    the settings say: its model, context, certificates, headers and proxy, and the key kept
    for it (the saved server's, else its kind's)."""
    transport = Transport.of(settings.ca_file, settings.client_cert, settings.client_key,
                             settings.headers, settings.proxy)  # fmt: skip
    key = settings.server and secrets.get(key_name(settings.server))
    return make_provider(kind, url, settings.model, api_key=key or secrets.get(kind),
                         num_ctx=settings.context_size, transport=transport)  # fmt: skip


class Connector:
    def __init__(
        self,
        secrets: SecretStore,
        calibrations: CalibrationStore,
        *,
        discover: Callable[[], Awaitable[list[Found]]],
        has_bundled_model: Callable[[], bool],
        runtime_log: Path | None = None,
    ) -> None:
        """`discover` and `has_bundled_model` are the seams to this machine: what runs on
        it, and whether the app came with a model."""
        self.secrets = secrets
        self.calibrations = calibrations
        self._discover = discover
        self._has_bundled_model = has_bundled_model
        self.runtime_log = runtime_log
        self.cache = CapabilityCache()
        self.connection = NOT_CONNECTED
        self.model_key = ""  # whom the connected model's calibration belongs to
        self.runtime: LlamaServer | None = None
        self._supervisor: asyncio.Task[None] | None = None
        # The probing provider when the connector opened it (None when handed one).
        self.provider: ProbingProvider | None = None
        self.raw: Provider | None = None  # the backend itself, for calibration
        self.traced: TracingProvider | None = None  # every request recorded per turn
        self.active: Provider | None = None  # the traced backend on its track
        self.calibrator: Calibrator | None = None  # while a calibration runs

    def use_provider(self, provider: ProbingProvider | Provider, backend: str, track: Track,
                     problems: Sequence[str]) -> Connection:  # fmt: skip
        """Talk to this provider as it is (tests, and embedding the session elsewhere)."""
        traced = TracingProvider(provider)
        self.raw = provider
        self.model_key = f"{backend}:{provider.label}"
        active, on = on_track(traced, track, self.calibration)
        self.provider, self.traced, self.active = None, traced, active
        self.connection = Connection(
            True, f"Connected to {provider.label}.", backend, "", "", on, provider.capabilities,
            problems=tuple(problems),
        )  # fmt: skip
        return self.connection

    def check_connected(self) -> None:
        """`ProviderError` saying why, unless a model server is connected."""
        if self.active is None or self.traced is None:
            raise ProviderError(self.connection.message or "Not connected to a model server.")

    async def paused_calibration(
        self, turn: AsyncGenerator[Event, None]
    ) -> AsyncGenerator[Event, None]:
        """`turn`, with a calibration under way paused while it runs (the chat has the
        model; the calibration waits)."""
        self.check_connected()
        calibrator = self.calibrator
        if calibrator is not None:
            calibrator.pause()  # the chat has the model; the calibration waits
        try:
            async with aclosing(turn) as events:
                async for event in events:
                    yield event
        finally:
            if calibrator is not None:
                calibrator.resume()

    async def connect(self, settings: Settings) -> Connection:
        await self._close_provider()
        try:
            provider = await self._open_backend(settings)
        except (ProviderError, RuntimeSetupError, TransportError) as exc:
            self.connection = Connection(False, str(exc), settings.backend)
            return self.connection
        if provider is None:
            own = "use the built-in model" if self._has_bundled_model() else "choose a model file"
            self.connection = Connection(
                False,
                "No model server is running. Start Ollama, LM Studio, KoboldCPP or a llama.cpp "
                f"server, or {own}.",
                "auto",
            )
            return self.connection
        try:
            models = tuple(await provider.list_models())
        except ProviderError as exc:
            await provider.aclose()
            self.connection = Connection(False, str(exc), settings.backend, provider.base_url)
            return self.connection
        if not provider.model and models:
            provider.model = models[0]
        probed = await self.cache.apply(provider)
        runtime = self.runtime
        builtin = runtime is not None and provider.base_url == runtime.base_url
        file = runtime.model if builtin and runtime is not None else None
        self.model_key = model_key(provider.kind, provider.model, file)
        self.raw = provider
        traced = TracingProvider(provider)
        active, track = on_track(traced, settings.track, self.calibration)
        self.provider, self.traced, self.active = provider, traced, active
        note = f" ({probed.error})" if probed.error else ""
        self.connection = Connection(
            True,
            f"Connected to {provider.label}.{note}",
            provider.kind,
            provider.base_url,
            provider.model,
            track,
            probed.capabilities,
            models,
        )
        return self.connection

    async def _open_backend(self, settings: Settings) -> ProbingProvider | None:
        kind = settings.backend
        if kind == "builtin":
            return await self._start_runtime(settings)
        if kind == "auto":
            found = await self._discover()
            if not found:
                return None
            kind, url = found[0].kind, found[0].url
        else:
            url = settings.url or BACKENDS[kind].default_url
        return reached(settings, self.secrets, kind, url)

    async def _start_runtime(self, settings: Settings) -> ProbingProvider:
        model = Path(settings.runtime_model) if settings.runtime_model else None
        if self.runtime is None or not self.runtime.running:
            model = model or ensure_bundled_model()
            self.runtime = await built_in_server(
                model, context_size=settings.context_size, log_path=self.runtime_log
            )
            await self.runtime.start()
            self._supervise(self.runtime)
        return make_provider("llamacpp", self.runtime.base_url)

    def _supervise(self, runtime: LlamaServer) -> None:
        """Restart the built-in server if it crashes; when it gives up, say so."""
        if self._supervisor is not None:
            self._supervisor.cancel()
        self._supervisor = asyncio.ensure_future(runtime.supervise())

        def gave_up(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and (problem := task.exception()) is not None:
                self.connection = Connection(False, str(problem), "builtin")

        self._supervisor.add_done_callback(gave_up)

    async def ensure_runtime(self) -> None:
        """Before a turn on the built-in server: bring it back if it crashed since."""
        runtime, provider = self.runtime, self.provider
        if runtime is not None and provider is not None and provider.base_url == runtime.base_url:
            try:
                await runtime.ensure_running()
            except RuntimeSetupError as exc:
                raise ProviderError(str(exc)) from None

    def on_track(self, track: Track) -> tuple[Provider, str]:
        """The traced backend on another track than the connection's (a preset's)."""
        assert self.traced is not None
        return on_track(self.traced, track, self.calibration)

    # --- calibration ------------------------------------------------------------------

    @property
    def calibration(self) -> Calibration | None:
        """The connected model's reliability card, once it has been calibrated."""
        return self.calibrations.get(self.model_key) if self.model_key else None

    def needs_calibration(self, tools: Sequence[Tool]) -> bool:
        """Connected, with tools to calibrate with, and this model not yet calibrated (or
        calibrated the way calibration measured before: its card serves until then)."""
        card = self.calibration
        return (
            self.raw is not None
            and (card is None or card.method < METHOD)
            and self.calibrator is None
            and any(t.examples for t in tools)
        )

    async def calibrate(self, tools: Sequence[Tool], track: Track,
                        progress: Progress | None) -> Calibration:  # fmt: skip
        if self.raw is None or self.traced is None:
            raise ProviderError(self.connection.message or "Not connected to a model server.")
        calibrator = Calibrator(
            self.raw,
            [t for t in tools if t.examples] or list(tools),
            self.model_key,
            native=self.raw.capabilities.native_tools,
            progress=progress,
        )
        self.calibrator = calibrator
        try:
            calibration = await calibrator.run()
        finally:
            self.calibrator = None
        self.calibrations.put(calibration)
        if self.traced is not None and calibration.model == self.model_key:
            self.active, on = on_track(self.traced, track, calibration)
            self.connection = replace(self.connection, track=on)
        return calibration

    async def _close_provider(self) -> None:
        if self.provider is not None:
            await self.provider.aclose()
        self.provider = self.traced = self.active = self.raw = None

    async def close(self) -> None:
        """The HTTP client, then the built-in server. Safe to call more than once."""
        if self._supervisor is not None:
            self._supervisor.cancel()
            self._supervisor = None
        await self._close_provider()
        if self.runtime is not None:
            self.runtime.stop()
