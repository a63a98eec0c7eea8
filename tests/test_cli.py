"""The headless CLI, run as a real process against a local server speaking the OpenAI wire."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from desktop.cli import build_parser, declared_tools
from desktop.core.runtime import free_port
from tests.support.replay_server import Canned, Received, ReplayServer, sse

PATH = "/v1/chat/completions"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def content(text: str) -> list[bytes]:
    chunks = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return sse(*chunks)


async def run_cli(*args: str, data: Path | None = None) -> tuple[int, str, str]:
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(data)} if data is not None else None
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "desktop", "run", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


async def test_jsonl_events_for_an_emulated_tool_turn(tools_file: Path) -> None:
    next_answer = answers_route('{"name": "get_weather", "arguments": {"city": "Oslo"}}', "Cold.")
    async with ReplayServer() as server:
        server.route("POST", PATH, next_answer)
        code, out, err = await run_cli(
            "--provider", "llamacpp", "--url", server.url, "--model", "m",
            "--tools-file", str(tools_file), "--events", "jsonl", "Weather in Oslo?",
        )  # fmt: skip
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["kind"] for e in events] == [
        "tool_call", "tool_started", "tool_result", "text_delta", "turn_finished",
    ]  # fmt: skip
    assert events[0]["arguments"] == {"city": "Oslo"} and events[0]["step"] == 0
    assert json.loads(events[2]["content"]) == {"ok": True, "arguments": {"city": "Oslo"}}
    assert events[2]["images"] == [] and events[2]["error"] is None
    assert events[-1] == {"kind": "turn_finished", "step": 1, "text": "Cold."}
    # the default track is emulated: the tools went into the prompt, not the request
    first = next(r for r in server.requests if r.method == "POST").json()
    assert "tools" not in first
    assert "get_weather" in first["messages"][0]["content"]


@pytest.mark.parametrize("bar", [None, 0.5, 0.95])
async def test_run_uses_the_models_saved_calibration_and_says_its_bars(
    tools_file: Path, tmp_path: Path, bar: float | None
) -> None:
    """The same answers, the model 0.90 sure of its call: uncalibrated (no bar) and under a
    bar of 0.5 it is made, and its event names the bar; under a bar of 0.95 (the app's, as
    `calibrate` kept it) the call gate turns it into a plain answer, as in the app."""
    from desktop.core.calibration.card import Calibration
    from desktop.core.calibration.store import CalibrationStore

    if bar is not None:
        data = json.loads((Path(__file__).parent / "core" / "calibration" / "data" /
                           "calibrations-two-bars.json").read_text())  # fmt: skip
        entry = next(iter(data["models"].values()))
        entry |= {"model": "llamacpp:m", "bar": bar, "later_bar": bar}
        CalibrationStore(tmp_path / "calibrations.json").put(Calibration.from_dict(entry))
    call = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    async with ReplayServer() as server:
        server.route("POST", PATH, answers_route(call, "Cold.", "I can't tell.", sure=-0.105))
        code, out, err = await run_cli(
            "--provider", "llamacpp", "--url", server.url, "--model", "m",
            "--tools-file", str(tools_file), "--events", "jsonl", "Weather in Oslo?",
            data=tmp_path,
        )  # fmt: skip
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    calls = [e for e in events if e["kind"] == "tool_call"]
    if bar == 0.95:
        assert calls == [] and events[-1]["kind"] == "turn_finished"
        return
    (made,) = calls
    if bar is None:
        assert made["gate"]["bar"] == 0.0 and made["gate"]["source"] == "uncalibrated"
    else:
        assert made["gate"]["bar"] == 0.5 and made["gate"]["source"] == "calibrated 2026-12-02"
    assert 0.89 < made["gate"]["odds"] < 0.91 and made["gate"]["passed"] is True


async def test_native_track_sends_tools(tools_file: Path) -> None:
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=content("Hi.")))
        code, out, _ = await run_cli(
            "--provider", "lmstudio", "--url", server.url, "--track", "native",
            "--tools-file", str(tools_file), "hello",
        )  # fmt: skip
    assert code == 0 and out == "Hi.\n"
    chat = next(r for r in server.requests if r.path == PATH)
    assert chat.json()["tools"][0]["function"]["name"] == "get_weather"


async def test_a_dead_server_is_a_failure_with_a_message() -> None:
    port = free_port()
    code, _out, err = await run_cli(
        "--provider", "llamacpp", "--url", f"http://127.0.0.1:{port}", "hi"
    )
    assert code == 1
    assert f"error: llama.cpp server is not running at http://127.0.0.1:{port}" in err


@pytest.mark.parametrize("value", ["0", "-3", "abc", "2.5"])
async def test_invalid_max_tool_calls_is_a_usage_error(value: str) -> None:
    code, _, err = await run_cli("--provider", "openai", "--max-tool-calls", value, "hi")
    assert code == 2 and "max tool calls" in err


async def test_a_broken_tools_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text('{"name": "x"}')
    code, _, err = await run_cli("--provider", "openai", "--tools-file", str(bad), "hi")
    assert code == 2 and "must hold a JSON list" in err


def test_parser_defaults() -> None:
    args = build_parser().parse_args(["run", "--provider", "llamacpp", "hi"])
    assert (args.track, args.max_tool_calls, args.no_cooldown, args.events) == (
        "emulated", 10, False, None,
    )  # fmt: skip


async def test_declared_tools_report_their_arguments(tools_file: Path) -> None:
    (tool,) = declared_tools(tools_file)
    result: Any = await tool.handler({"city": "Rome"})
    assert result == {"ok": True, "arguments": {"city": "Rome"}}
    assert tool.required == ["city"]


async def test_ollama_from_the_cli(tools_file: Path) -> None:
    from tests.support.replay_server import ndjson

    def line(content: str) -> dict[str, Any]:
        return {"model": "qwen3:4b", "created_at": "2026-11-30T10:00:00Z",
                "message": {"role": "assistant", "content": content}, "done": False}  # fmt: skip

    end = {"model": "qwen3:4b", "created_at": "2026-11-30T10:00:01Z", "message": {"role": "assistant", "content": ""},
           "done": True, "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 12}  # fmt: skip
    call = ndjson(line('{"name": "get_weather", '), line('"arguments": {"city": "Oslo"}}'), end)
    answers = iter([call, ndjson(line("Cold "), line("in Oslo."), end)])

    def chat_answer(request: Received) -> Canned:
        # the constrained second phase (`format`) writes the call again
        pieces = call if "format" in request.json() else next(answers)
        return Canned(content_type="application/x-ndjson", pieces=pieces)

    async with ReplayServer() as server:
        server.route(
            "POST", "/api/show", Canned.json({"capabilities": ["completion"], "model_info": {}})
        )
        server.route("POST", "/api/chat", chat_answer)
        code, out, err = await run_cli(
            "--provider", "ollama", "--url", server.url, "--model", "qwen3:4b",
            "--tools-file", str(tools_file), "--events", "jsonl", "Weather in Oslo?",
        )  # fmt: skip
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["kind"] for e in events if e["kind"] in ("tool_call", "tool_result", "turn_finished")] == [
        "tool_call", "tool_result", "turn_finished",
    ]  # fmt: skip
    assert events[-1]["text"] == "Cold in Oslo."
    chat = [r.json() for r in server.requests if r.path == "/api/chat"]
    assert chat[0]["options"]["num_ctx"] == 8192 and "tools" not in chat[0]
    assert "format" not in chat[0]  # two phases: the second is constrained, to get_weather first
    assert chat[1]["format"]["$defs"]["call0"]["properties"]["name"] == {"const": "get_weather"}
    assert chat[1]["format"]["anyOf"][0]["prefixItems"] == [{"$ref": "#/$defs/call0"}]


async def test_koboldcpp_from_the_cli() -> None:
    tokens = [{"token": "Hello", "finish_reason": None}, {"token": " there.", "finish_reason": None},
              {"token": "", "finish_reason": "stop"}]  # fmt: skip
    pieces = [f"event: message\ndata: {json.dumps(t)}\n\n".encode() for t in tokens]
    async with ReplayServer() as server:
        server.route(
            "GET",
            "/api/extra/version",
            Canned.json({"result": "KoboldCpp", "version": "1.102", "vision": False}),
        )
        server.route("POST", "/api/extra/generate/stream", Canned(pieces=pieces))
        code, out, err = await run_cli(
            "--provider", "koboldcpp", "--url", server.url, "--max-tokens", "200", "Hi"
        )
    assert code == 0, err
    assert out == "Hello there.\n"
    generate = next(r for r in server.requests if r.path == "/api/extra/generate/stream").json()
    assert generate["max_length"] == 200


def answers_route(*texts: str, sure: float = -0.01) -> Any:
    """The model's answers in order. The call gate's one-token probe gets the first token
    of the answer before it with llama.cpp's `logprobs` (a model sure of its call: the
    log-probability `sure`), and a constrained request (the second phase of a call) gets
    that call, as a list, as a model under the schema would write it."""
    queue = list(texts)
    last: list[str] = []

    def route(request: Received) -> Canned:
        body = request.json()
        if body.get("logprobs"):
            top = [{"token": "{", "logprob": sure}, {"token": "The", "logprob": -4.6}]
            chunk = {"choices": [{"index": 0, "delta": {"content": "{"}, "finish_reason": None,
                                  "logprobs": {"content": [{"token": "{", "logprob": -0.01,
                                                            "top_logprobs": top}]}}]}  # fmt: skip
            return Canned(pieces=sse(chunk, {"choices": [{"index": 0, "delta": {},
                                                          "finish_reason": "length"}]}))  # fmt: skip
        if "response_format" in body or "format" in body:
            return Canned(pieces=content(f"[{last[-1]}]"))
        last.append(queue.pop(0))
        return Canned(pieces=content(last[-1]))

    return route


async def test_builtin_tools_by_name_with_an_image_summary() -> None:
    chart = '{"name": "create_chart", "arguments": {"type": "pie", "title": "Mix", "labels": ["a", "b"], "values": [1, 3]}}'
    async with ReplayServer() as server:
        server.route("POST", PATH, answers_route(chart, "Here it is."))
        code, out, err = await run_cli(
            "--provider", "llamacpp", "--url", server.url, "--tools", "calculator,create_chart",
            "--events", "jsonl", "Chart it",
        )  # fmt: skip
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    result = next(e for e in events if e["kind"] == "tool_result")
    assert result["name"] == "create_chart"
    assert len(result["images"]) == 1 and result["images"][0]["mime"] == "image/png"
    assert result["images"][0]["size"] > 1000
    system = next(r for r in server.requests if r.method == "POST").json()["messages"][0]["content"]
    assert "- calculator:" in system and "- create_chart:" in system and "write_file" not in system


async def test_write_file_follows_the_approve_flag(tmp_path: Path) -> None:
    call = '{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}'
    for mode, written in (("none", False), ("all", True)):
        async with ReplayServer() as server:
            server.route("POST", PATH, answers_route(call, "Done."))
            code, out, err = await run_cli(
                "--provider", "llamacpp", "--url", server.url, "--tools", "all",
                "--workspace", str(tmp_path), "--approve", mode, "--events", "jsonl", "Save hi",
            )  # fmt: skip
        assert code == 0, err
        assert (tmp_path / "note.txt").exists() == written
        kinds = [json.loads(line)["kind"] for line in out.splitlines()]
        assert ("tool_rejected" in kinds) == (not written)


async def test_approve_ask_reads_the_terminal(tmp_path: Path) -> None:
    call = '{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}'
    async with ReplayServer() as server:
        server.route("POST", PATH, answers_route(call, "Done."))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "desktop", "run", "--provider", "llamacpp", "--url", server.url,
            "--tools", "write_file", "--workspace", str(tmp_path), "Save",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _out, err = await asyncio.wait_for(process.communicate(b"y\n"), 60)
    assert process.returncode == 0
    assert (
        'Allow write_file({"path": "a.txt", "content": "x"})? [y]es, [a]lways, [N]o:'
        in err.decode()
    )
    assert (tmp_path / "a.txt").read_text() == "x"


async def test_mcp_tools_from_the_cli(tmp_path: Path) -> None:
    server_script = Path(__file__).resolve().parent / "support" / "mcp_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [str(server_script)]},
                                                 "gone": {"command": "no-such-binary-xyz"}}}))  # fmt: skip
    call = '{"name": "demo__add", "arguments": {"a": 20, "b": 22}}'
    async with ReplayServer() as server:
        server.route("POST", PATH, answers_route(call, "42."))
        code, out, err = await run_cli(
            "--provider", "llamacpp", "--url", server.url, "--mcp-config", str(config),
            "--tools", "demo__add", "--approve", "all", "--events", "jsonl", "Add",
        )  # fmt: skip
    assert code == 0, err
    assert (
        "warning: MCP server 'gone': the command 'no-such-binary-xyz' was not found on PATH." in err
    )
    result = next(json.loads(line) for line in out.splitlines() if '"tool_result"' in line)
    assert result["content"] == "20 + 22 = 42"


async def test_an_unknown_tool_name_is_a_usage_error() -> None:
    code, _, err = await run_cli("--provider", "openai", "--tools", "calculator,teleport", "hi")
    assert code == 2 and "unknown tool(s): teleport" in err


async def test_a_lone_surrogate_from_the_backend_is_replaced_and_the_turn_goes_on() -> None:
    """Half an emoji (`\\ud83d`) in the stream ended the turn with exit 2."""
    half = b'data: {"choices":[{"index":0,"delta":{"content":"half \\ud83d here"},"finish_reason":null}]}\n\n'
    done = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=[half, done]))
        for events in ([], ["--events", "jsonl"]):
            code, out, err = await run_cli(
                "--provider", "llamacpp", "--url", server.url, *events, "Hi"
            )  # fmt: skip
            assert code == 0, err
            assert "half \ufffd here" in (
                out if not events else json.loads(out.splitlines()[-1])["text"]
            )


def test_an_unknown_command_is_a_usage_error_not_the_window() -> None:
    """`python -m desktop anything` used to open the window; now it lists the commands."""
    code = (
        "import sys\n"
        "from desktop.__main__ import main\n"
        "try:\n    code = main(['anything'])\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print(code, any(m.startswith('PySide6') for m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["2", "False"]
    assert "invalid choice: 'anything'" in result.stderr
    assert "gui" in result.stderr and "run" in result.stderr and "calibrate" in result.stderr


def test_help_lists_every_command_and_says_the_window_is_the_default() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "desktop", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    for command in ("gui", "run", "calibrate"):
        assert f"    {command}" in result.stdout
    assert "With no command, the window opens" in result.stdout


def test_gui_is_no_headless_command() -> None:
    from desktop.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["gui"])
    assert exited.value.code == 2


async def test_a_tool_with_an_invalid_schema_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps([{"name": "x", "parameters": {"type": "string"}}]))
    code, _, err = await run_cli("--provider", "openai", "--tools-file", str(bad), "hi")
    assert code == 2 and "parameters must be an object schema" in err
    assert "Traceback" not in err


def test_a_runtime_failure_exits_1_and_a_usage_error_2_by_class(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not by ValueError: a bug's ValueError is no usage error."""
    from desktop import cli
    from desktop.core.errors import UsageError
    from desktop.core.runtime import RuntimeSetupError

    for raised, expected in ((RuntimeSetupError("no llama-server"), 1), (UsageError("no"), 2)):

        async def fails(*_: Any, exc: Exception = raised) -> int:
            raise exc

        monkeypatch.setattr(cli, "run_command", fails)
        assert cli.main(["run", "--provider", "openai", "hi"]) == expected
        assert f"error: {raised}" in capsys.readouterr().err

    async def buggy(*_: Any) -> int:
        raise ValueError("a bug")

    monkeypatch.setattr(cli, "run_command", buggy)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["run", "--provider", "openai", "hi"])
