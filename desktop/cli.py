"""Headless use: `python -m desktop run --provider KIND --url URL --model NAME PROMPT`, and
`python -m desktop calibrate --provider KIND ...` to measure how a model calls tools.

With `--events jsonl` every event is printed as one JSON object per line on stdout;
otherwise the answer streams to stdout and tool activity goes to stderr. The exit code is
0 when the turn finishes, 1 when it fails, 2 for bad arguments, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any, TextIO, assert_never

from desktop.cli_docs import add_docs_parser, docs_command
from desktop.cli_mcp import add_mcp_parser, mcp_command
from desktop.cli_models import add_models_parser, models_command, printable
from desktop.cli_serve import add_serve_parser, serve_command
from desktop.core.calibration.calibrator import Calibrator
from desktop.core.calibration.store import CALIBRATIONS_FILE, CalibrationStore, model_key
from desktop.core.errors import LoomchatError, UsageError
from desktop.core.events import (
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
    event_to_dict,
)
from desktop.core.limits import parse_max_tool_calls
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message, ToolCall
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import ProviderError, RequestOptions
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import BACKENDS, make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.storage.paths import data_dir, make_private
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.mcp import McpServers, load_mcp_config
from desktop.core.tools.toolbox import Approver, Tool, Toolbox
from desktop.core.tracks.choice import prepare
from desktop.core.tracks.fitting import FittedHistory


def declared_tools(path: Path) -> list[Tool]:
    """Tools from a JSON list of OpenAI-style function definitions.

    Declared tools do nothing but report the call: `{"ok": true, "arguments": ...}`.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read tools file {path}: {exc}") from exc
    if not isinstance(raw, list):
        raise UsageError(f"tools file {path} must hold a JSON list of function definitions")
    tools = []
    for entry in raw:
        spec = entry.get("function", entry) if isinstance(entry, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise UsageError(f"tools file {path}: each entry needs a function name: {entry!r}")

        async def report(arguments: dict[str, Any]) -> dict[str, Any]:
            return {"ok": True, "arguments": arguments}

        try:
            tool = Tool(
                name=spec["name"],
                description=str(spec.get("description", "")),
                parameters=spec.get("parameters") or {"type": "object", "properties": {}},
                handler=report,
            )
        except ValueError as exc:  # a bad name or schema: said, as for the file's shape
            raise UsageError(f"tools file {path}: {exc}") from None
        tools.append(tool)
    return tools


# A key on the command line is in the process list, which every local user can read.
API_KEY_HELP = (
    "bearer token (default: $LOOMCHAT_API_KEY, which is safer: other users of this computer "
    "can read a command line, not another user's environment)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m desktop",
        description="Loomchat: local models that use tools. With no command, the window opens.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Opened by desktop/__main__.py (this module never imports Qt); listed for --help.
    commands.add_parser("gui", help="open the desktop window (the default with no command)")
    run = commands.add_parser("run", help="run one turn headless and print its answer or events")
    run.add_argument("--provider", required=True, choices=sorted(BACKENDS), metavar="KIND",
                     help=f"backend kind: {', '.join(sorted(BACKENDS))}")  # fmt: skip
    run.add_argument("--url", help="backend base URL (default: the backend's usual address)")
    run.add_argument("--model", default="", help="model name, where the backend serves several")
    run.add_argument("--track", choices=["auto", "native", "emulated"], default="emulated",
                     help="tool calling: emulated (default), native, or auto")  # fmt: skip
    run.add_argument("--tools-file", type=Path, help="JSON list of function definitions")
    run.add_argument("--tools", default="", metavar="NAME,...",
                     help="built-in and MCP tools to offer, by name, or 'all'")  # fmt: skip
    run.add_argument("--workspace", type=Path, help="folder the file tools work in")
    run.add_argument("--mcp-config", type=Path, help='MCP servers, as {"mcpServers": ...}')
    run.add_argument("--approve", choices=["all", "none", "ask"], default="ask",
                     help="tools that change things: run all, none, or ask (default)")  # fmt: skip
    run.add_argument("--max-tool-calls", type=_max_tool_calls, default=10, metavar="N")
    run.add_argument("--no-cooldown", action="store_true", help="turn tool cooldowns off")
    run.add_argument("--events", choices=["jsonl"], help="print every event as JSON lines")
    run.add_argument("--system", help="system prompt")
    run.add_argument("--temperature", type=float)
    run.add_argument("--seed", type=int)
    run.add_argument("--max-tokens", type=int)
    run.add_argument("--num-ctx", type=int, help="context size to ask for (Ollama)")
    run.add_argument("--api-key", default=os.environ.get("LOOMCHAT_API_KEY"),
                     help=API_KEY_HELP)  # fmt: skip
    run.add_argument("prompt")
    calibrate = commands.add_parser(
        "calibrate", help="measure how a model calls tools; print and keep its reliability card"
    )
    calibrate.add_argument("--provider", required=True, choices=["builtin", *sorted(BACKENDS)],
                           metavar="KIND", help="builtin, or a backend kind")  # fmt: skip
    calibrate.add_argument("--url", help="backend base URL (default: the backend's usual address)")
    calibrate.add_argument("--model", default="",
                           help="model name; builtin: a GGUF file (default: bundled)")  # fmt: skip
    calibrate.add_argument("--tools", default="all", metavar="NAME,...",
                           help="built-in tools to calibrate with (default: all)")  # fmt: skip
    calibrate.add_argument("--workspace", type=Path, help="folder the file tools work in")
    calibrate.add_argument("--json", action="store_true", help="print the card as JSON")
    calibrate.add_argument("--no-save", action="store_true",
                           help="do not keep the result in the data folder")  # fmt: skip
    calibrate.add_argument("--api-key", default=os.environ.get("LOOMCHAT_API_KEY"),
                           help=API_KEY_HELP)  # fmt: skip
    add_models_parser(commands)
    add_docs_parser(commands)
    add_mcp_parser(commands)
    add_serve_parser(commands)
    return parser


def _max_tool_calls(text: str) -> int:
    try:
        return parse_max_tool_calls(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class HumanPrinter:
    """The answer on stdout as it streams; tools and thinking on stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err

    def __call__(self, event: Event) -> None:
        match event:
            case TextDelta():
                self.out.write(event.text)
                self.out.flush()
            case ThinkingDelta():
                self.err.write(event.text)
            case ToolCallParsed():
                arguments = json.dumps(event.arguments, ensure_ascii=False)
                self.err.write(f"\n[tool] {event.name}({arguments})\n")
            case ToolRejected():
                self.err.write(f"[rejected] {event.name}: {event.reason}\n")
            case ToolResult():
                status = f"error: {event.error}" if event.error else f"{event.duration_ms:.0f} ms"
                self.err.write(f"[result] {event.name} ({status}): {event.content[:500]}\n")
            case TurnFinished():
                self.out.write("\n")
            case ToolStarted() | Usage() | TurnWarning() | TurnFailed():
                pass  # warnings and failures are written by the command, once
            case _:
                assert_never(event)


def jsonl_printer(out: TextIO) -> Any:
    def emit(event: Event) -> None:
        out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
        out.flush()

    return emit


def choose_tools(available: list[Tool], wanted: str) -> list[Tool]:
    """The tools named in `--tools` ("all" for every one); an unknown name is an error."""
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    if names == ["all"]:
        return list(available)
    by_name = {t.name: t for t in available}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(
            f"unknown tool(s): {', '.join(unknown)}; available: {', '.join(by_name) or 'none'}"
        )
    return [by_name[n] for n in names]


def cli_approver(mode: str, err: TextIO) -> Approver:
    """`all` runs every call, `none` declines them, `ask` asks on the terminal:
    yes, always (for this tool, for this run), or no. No terminal: no."""
    always: set[str] = set()

    async def approve(call: ToolCall, tool: Tool) -> bool:
        if mode != "ask":
            return mode == "all"
        if tool.name in always:
            return True
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        err.write(f"\nAllow {tool.name}({arguments})? [y]es, [a]lways, [N]o: ")
        err.flush()
        try:
            answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        except (OSError, ValueError):
            answer = ""
        if answer in ("a", "always"):
            always.add(tool.name)
            return True
        return answer in ("y", "yes")

    return approve


async def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    tools = declared_tools(args.tools_file) if args.tools_file else []
    servers = McpServers(load_mcp_config(args.mcp_config) if args.mcp_config else [])
    for problem in await servers.start():
        err.write(f"warning: {problem}\n")
    try:
        if args.tools:
            available = builtin_tools(args.workspace) + servers.tools
            tools += choose_tools(available, args.tools)
        names = [t.name for t in tools]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise UsageError(f"two tools are named {', '.join(twice)}")
        return await _run(args, tools, cli_approver(args.approve, err), out, err)
    finally:
        await servers.close()


async def _run(
    args: argparse.Namespace, tools: list[Tool], approver: Approver, out: TextIO, err: TextIO
) -> int:
    provider = make_provider(
        args.provider, args.url, args.model, api_key=args.api_key, num_ctx=args.num_ctx
    )
    # The model's calibration, as the app would use it (kept by `calibrate` or the app).
    if not provider.model:
        with contextlib.suppress(ProviderError):
            provider.model = next(iter(await provider.list_models()), "")
    calibrations = CalibrationStore(data_dir() / CALIBRATIONS_FILE)
    calibration = calibrations.get(model_key(args.provider, provider.model))
    active, _track, probed = await prepare(provider, args.track, CapabilityCache(), calibration)
    if probed.error and args.track != "emulated":
        err.write(f"warning: {probed.error}; using emulated tool calling\n")
    if context := provider.capabilities.context_size:  # answers bounded as in the app
        active = FittedHistory(active, context)
    conversation = [Message.system(args.system)] if args.system else []
    conversation.append(Message.user(args.prompt))
    settings = LoopSettings(
        max_tool_calls=args.max_tool_calls,
        options=RequestOptions(args.temperature, args.seed, args.max_tokens),
    )
    emit = jsonl_printer(out) if args.events == "jsonl" else HumanPrinter(out, err)
    status = 1
    try:
        dedupe = Deduplicator(cooldown_enabled=not args.no_cooldown)
        turn = run_turn(
            active,
            Toolbox(tools),
            conversation,
            settings=settings,
            dedupe=dedupe,
            approver=approver,
        )
        async with aclosing(turn) as events:
            async for event in events:
                emit(event)
                if isinstance(event, TurnFinished):
                    status = 0
                elif isinstance(event, TurnFailed):
                    err.write(f"error: {event.message}\n")
                elif isinstance(event, TurnWarning) and args.events != "jsonl":
                    err.write(f"warning: {event.message}\n")
    finally:
        await provider.aclose()
    return status


async def calibrate_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    tools = choose_tools(builtin_tools(args.workspace), args.tools)
    server: LlamaServer | None = None
    file: Path | None = None
    if args.provider == "builtin":
        file = Path(args.model) if args.model else ensure_bundled_model()
        server = await built_in_server(file)
        await server.start()
        provider = make_provider("llamacpp", server.base_url)
    else:
        provider = make_provider(args.provider, args.url, args.model, api_key=args.api_key)
    try:
        if not provider.model and (models := await provider.list_models()):
            provider.model = models[0]
        probed = await CapabilityCache().apply(provider)

        def progress(done: int, total: int) -> None:
            filled = done * 30 // total
            err.write(f"\rcalibrating [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            err.flush()

        key = model_key(args.provider, provider.model, file)
        calibrator = Calibrator(
            provider, tools, key, native=probed.capabilities.native_tools, progress=progress
        )
        calibration = await calibrator.run()
        err.write("\n")
    except ProviderError as exc:
        err.write(f"\nerror: {exc}\n")
        return 1
    finally:
        await provider.aclose()
        if server is not None:
            server.stop()
    if not args.no_save:
        CalibrationStore(data_dir() / CALIBRATIONS_FILE).put(calibration)
    if args.json:
        out.write(json.dumps(calibration.to_dict(), indent=1) + "\n")
    else:
        out.write(f"Reliability card: {calibration.model}\n")
        for label, value in calibration.card():
            out.write(f"  {label}: {value}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {
        "run": run_command,
        "calibrate": calibrate_command,
        "models": models_command,
        "docs": docs_command,
        "mcp": mcp_command,
        "serve": serve_command,
    }
    if args.command not in commands:  # `gui`: desktop/__main__.py opens the window
        parser.error(f"{args.command!r} is not a headless command; run: python -m desktop")
    command = commands[args.command]
    if args.command != "run":  # they read and write the data folder: the user's alone
        with contextlib.suppress(OSError):
            make_private(data_dir())
    try:
        return asyncio.run(command(args, sys.stdout, sys.stderr))
    except UsageError as exc:
        sys.stderr.write(f"error: {printable(str(exc))}\n")
        return 2
    except LoomchatError as exc:  # a backend, the runtime, the data folder: said, exit 1
        sys.stderr.write(f"error: {printable(str(exc))}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return 130
