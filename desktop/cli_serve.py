"""`python -m desktop serve`: Loomchat as an OpenAI-compatible API, headless.

    serve [--provider builtin|KIND] [--url URL] [--model NAME|FILE] [--track auto|emulated|native]
          [--server NAME] [--host 127.0.0.1] [--port 8642] [--new-token]

Any program that speaks the OpenAI chat API (its `openai` client, an agent framework) gets
the model's tool calls through Loomchat's track: the emulated track with constrained
decoding, the model's calibrated call gate and strict validation against the caller's
schemas, or the server's native calls where the model's calibration chose them. The caller
runs the tools, as with the OpenAI API. A bearer token, made on first use and kept in the
keychain, is printed at start; only this computer can connect unless `--host` says
otherwise. `--server` serves from a server saved in the app (Settings → Backend), reached as
the app reaches it: its address, model, certificates, headers, proxy and key.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import Any, TextIO

from desktop.api.server import ApiServer, Backend, ChatApi
from desktop.api.token import api_token
from desktop.core.backend_kind import Track
from desktop.core.calibration.store import CALIBRATIONS_FILE, CalibrationStore, model_key
from desktop.core.connector import reached
from desktop.core.errors import LoomchatError, UsageError
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import Provider, ProviderError
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import BACKENDS, make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.paths import data_dir
from desktop.core.storage.servers import on_server
from desktop.core.storage.settings import SETTINGS_FILE, Settings, load_settings
from desktop.core.tracks.choice import prepare
from desktop.core.tracks.fitting import FittedHistory

DEFAULT_PORT = 8642


def add_serve_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="an OpenAI-compatible API whose tool calls go through Loomchat's track"
    )
    serve.add_argument("--provider", default="builtin", choices=["builtin", *sorted(BACKENDS)],
                       metavar="KIND", help="builtin (the default: Loomchat runs the model), "
                       "or a backend kind")  # fmt: skip
    serve.add_argument("--url", help="the backend's base URL (default: its usual address)")
    serve.add_argument("--model", default="", help="model name; builtin: a GGUF file")
    serve.add_argument("--track", choices=["auto", "emulated", "native"], default="auto",
                       help="auto (the default): as the model's calibration chose, emulated "
                       "where it has none")  # fmt: skip
    serve.add_argument("--server", metavar="NAME", help="a server saved in the app (Settings → "
                       "Backend), instead of --provider, --url and --model")  # fmt: skip
    serve.add_argument("--host", default="127.0.0.1", help="where to listen (default: only here)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument("--new-token", action="store_true", help="make a new token first")


async def serve_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is 0 to 65535")
    runtime: LlamaServer | None = None
    file: Path | None = None
    saved = saved_server(args.server) if args.server else None
    kind = saved.backend if saved is not None else args.provider
    if kind == "builtin":
        model = saved.runtime_model if saved is not None else args.model
        file = Path(model) if model else ensure_bundled_model()
        runtime = await built_in_server(file)
        err.write(f"starting llama-server with {file.name}…\n")
        await runtime.start()
        provider = make_provider("llamacpp", runtime.base_url)
    elif saved is not None:
        secrets = SecretStore.of_folder(data_dir(), saved.secrets_in_file)  # as the app keeps them
        provider = reached(saved, secrets, kind, saved.url or None)
    else:
        provider = make_provider(args.provider, args.url, args.model)
    server: ApiServer | None = None
    try:
        if not provider.model:
            with contextlib.suppress(ProviderError):
                provider.model = next(iter(await provider.list_models()), "")
        calibrations = CalibrationStore(data_dir() / CALIBRATIONS_FILE)
        calibration = calibrations.get(model_key(kind, provider.model, file))
        track: Track = "emulated" if args.track == "auto" and calibration is None else args.track
        active, chosen, _ = await prepare(provider, track, CapabilityCache(), calibration)
        answering: Provider = active
        if context := provider.capabilities.context_size:  # long histories fitted, as the app
            answering = FittedHistory(active, context)
        name = provider.model or (file.name if file else "loomchat")
        token = api_token(SecretStore(), args.new_token)
        api = ChatApi(Backend.fixed(answering, name), token)
        server = ApiServer(api, args.host, args.port)
        await server.start()
        card = (
            "its calibration" if calibration else "no calibration yet (python -m desktop calibrate)"
        )
        out.write(f"Loomchat API at {server.url} ({name}, {chosen} tool calls, {card})\n"
                  f"token: {token}\n")  # fmt: skip
        out.flush()
        await asyncio.Event().wait()  # until interrupted
    finally:
        if server is not None:
            await server.stop()
        await provider.aclose()
        if runtime is not None:
            runtime.stop()
    return 0


def saved_server(name: str) -> Settings:
    """The app's settings connected to its saved server `name` (`UsageError` if none)."""
    try:
        return on_server(load_settings(data_dir() / SETTINGS_FILE), name)
    except LoomchatError as exc:
        raise UsageError(f"--server {name!r}: {exc}") from None
