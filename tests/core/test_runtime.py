"""The built-in runtime: the bundled model, and llama-server started, watched and stopped."""

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.core.runtime import (
    PROMPT_CACHE_VARIABLE,
    LlamaServer,
    RuntimeSetupError,
    assemble,
    find_llama_server,
    prompt_cache_mib,
)

GIB = 1 << 30


def test_assemble_checks_the_sha256(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate([b"GGUF", b"-part-two", b"-three"]):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(data)
        parts.append(part)
    good = hashlib.sha256(b"GGUF-part-two-three").hexdigest()
    target = tmp_path / "models" / "m.gguf"
    assemble(parts, target, good)
    assert target.read_bytes() == b"GGUF-part-two-three"

    other = tmp_path / "models" / "bad.gguf"
    with pytest.raises(RuntimeSetupError, match="checksum does not match"):
        assemble(parts, other, "0" * 64)
    assert not other.exists() and not other.with_suffix(".partial").exists()


def test_binary_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(fake))
    assert find_llama_server() == fake
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(tmp_path / "missing"))
    assert find_llama_server() is None


def test_a_packaged_app_finds_its_own_llama_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    inside = tmp_path / "llama" / "llama-server"
    inside.parent.mkdir()
    inside.write_bytes(b"")
    monkeypatch.delenv("LOOMCHAT_LLAMA_SERVER", raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert find_llama_server() == inside


def test_a_packaged_app_without_the_bundled_model_says_to_choose_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from desktop.core import runtime

    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "_BUNDLED_MODEL_PARTS", [("loomchat_no_such_part", "x.bin")])
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(RuntimeSetupError, match="Choose a GGUF model file") as caught:
        runtime.ensure_bundled_model()
    assert "pip" not in str(caught.value)
    assert not runtime.bundled_model_available()
    runtime.bundled_model_path().parent.mkdir(parents=True)
    runtime.bundled_model_path().write_bytes(b"GGUF")
    assert runtime.bundled_model_available()


async def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    server = LlamaServer(model=tmp_path / "nope.gguf", binary=Path("/bin/true"))
    with pytest.raises(
        RuntimeSetupError, match=r"is not there \(deleted or moved\?\): choose a model"
    ):
        await server.start()


async def test_a_server_that_exits_at_once_points_to_its_log(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "server.log"
    server = LlamaServer(model=model, binary=Path("/bin/false"), log_path=log)
    with pytest.raises(RuntimeSetupError, match=f"exited with code 1; see its log: {log}"):
        await server.start(timeout_s=10)


def test_a_model_with_a_projector_beside_it_is_started_seeing_images(tmp_path: Path) -> None:
    from desktop.core.runtime import projector_for

    binary, model = tmp_path / "llama-server", tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    server = LlamaServer(model=model, binary=binary, port=1234)
    assert "--mmproj" not in server.command()
    projector = projector_for(model)
    assert projector.name == "gemma-3-4b-it-Q4_K_M.mmproj.gguf"
    projector.write_bytes(b"GGUF")
    command = server.command()
    assert command[command.index("--mmproj") + 1] == str(projector)


def test_the_server_is_started_at_the_temperature_it_is_given_or_its_own(tmp_path: Path) -> None:
    binary, model = tmp_path / "llama-server", tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    given = LlamaServer(model=model, binary=binary, temperature=0.25).command()
    assert given[given.index("--temp") + 1] == "0.25"
    assert "--temp" not in LlamaServer(model=model, binary=binary).command()


# A stand-in for llama-server: answers /health on the port it is given, and nothing else.
FAKE_SERVER = """#!{python}
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""
# An app that starts the server, says its pid, and waits to be killed.
APP = """
import asyncio, sys, time
from pathlib import Path
from desktop.core.runtime import LlamaServer
async def main():
    server = LlamaServer(model=Path(sys.argv[1]), binary=Path(sys.argv[2]), log_path=Path(sys.argv[3]))
    await server.start(timeout_s=30)
    print(server.process.pid, flush=True)
    time.sleep(120)
asyncio.run(main())
"""


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet (a container's init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_the_server_does_not_outlive_an_app_killed_outright(tmp_path: Path) -> None:
    """kill -9 skips atexit: the kernel ends the server with the app (an orphan went on
    using both cores)."""
    binary, model = tmp_path / "llama-server", tmp_path / "m.gguf"
    binary.write_text(FAKE_SERVER.format(python=sys.executable))
    binary.chmod(0o755)
    model.write_bytes(b"GGUF")
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", APP, str(model), str(binary), str(tmp_path / "log")]
    environment = {**os.environ, "PYTHONPATH": str(root)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, cwd=root, env=environment) as app:
        assert app.stdout is not None
        server = int(app.stdout.readline())
        try:
            assert not _gone(server)
            app.kill()
            app.wait()
            deadline = time.monotonic() + 10
            while not _gone(server) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _gone(server)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)


def test_the_prompt_cache_is_bounded_by_the_machine_s_memory() -> None:
    """An eighth of the memory, never above llama.cpp's own 8 GiB."""
    assert prompt_cache_mib(4 * GIB) == 512
    assert prompt_cache_mib(16 * GIB) == 2048
    assert prompt_cache_mib(24 * GIB) == 3072
    assert prompt_cache_mib(256 * GIB) == 8192


async def test_the_server_is_started_with_its_prompt_cache_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the environment, which a server that lacks the setting ignores; read by the
    server process itself (a stand-in that writes down what it was given)."""
    import psutil

    monkeypatch.delenv(PROMPT_CACHE_VARIABLE, raising=False)
    seen = tmp_path / "seen"
    binary, model = tmp_path / "llama-server", tmp_path / "m.gguf"
    bound = f"os.environ.get({PROMPT_CACHE_VARIABLE!r}, 'unset')"
    recorder = f"import os, pathlib\npathlib.Path({str(seen)!r}).write_text({bound})\n"
    script = FAKE_SERVER.format(python=sys.executable).replace(
        "import http.server", recorder + "import http.server", 1
    )
    binary.write_text(script)
    binary.chmod(0o755)
    model.write_bytes(b"GGUF")

    async def started(environment: dict[str, str] | None = None) -> str:
        server = LlamaServer(
            model=model, binary=binary, log_path=tmp_path / "log", environment=environment or {}
        )
        await server.start(timeout_s=30)
        try:
            return seen.read_text()
        finally:
            server.stop()

    expected = str(prompt_cache_mib(psutil.virtual_memory().total))
    assert await started() == expected
    # A bound the user set for llama.cpp is theirs.
    monkeypatch.setenv(PROMPT_CACHE_VARIABLE, "100")
    assert await started() == "100"
    # And one given to the server object (a bench's) is used over both.
    assert await started(environment={PROMPT_CACHE_VARIABLE: "64"}) == "64"
