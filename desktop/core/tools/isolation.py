"""Pure computation in a child process, so that a timeout or a stop really ends it.

A thread cannot be stopped and CPU-bound work on the event loop freezes the app, but a
child process can be killed. On POSIX the children come from a fork server, with the
built-in tools' modules already imported: a call costs a fork, not a Python start-up. The
server's own start (those imports) can take seconds on a loaded machine, so it is never
counted in a timeout: `workers_ready` waits for it first, and the app starts it early.
Cancelling the awaiting task (a tool's timeout, the user's Stop) kills the child at once.
On Linux a child may also use only so much memory beyond what it started with
(`MEMORY_BUDGET`): hostile input that declares a huge size (a GGUF array, a decompression
bomb, `9**9**9`) ends in a `MemoryError` instead of taking the machine's.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import multiprocessing.connection
import sys
from collections.abc import Callable
from multiprocessing.context import ForkServerContext, SpawnContext
from typing import Any, TypeVar, cast

from desktop.core.errors import ToolError

T = TypeVar("T")
# Memory a child may allocate beyond what it has when it starts (Linux: RLIMIT_DATA, which
# counts the heap and private mappings, not the files it maps). More than any of its jobs
# needs, decoding a 50-megapixel image included.
MEMORY_BUDGET = 1024 * 1024 * 1024

# Imported once in the fork server, so that each child starts with them loaded.
PRELOAD = [
    "desktop.core.tools.builtin.calculator",
    "desktop.core.tools.builtin.charts",
    "desktop.core.tools.images",
    "matplotlib.figure",
    "PIL.Image",
    # The model downloads' and headers' libraries: a download's child that started by
    # importing huggingface_hub lost that time on every file.
    "huggingface_hub.file_download",
    "gguf",
]


class WorkerCrashed(ToolError, RuntimeError):
    """The child process ended without an answer (killed by the system, out of memory)."""


@functools.cache
def _context() -> ForkServerContext | SpawnContext:
    # Never plain fork: the app has threads (Qt, httpx, keyring), and a forked copy of a
    # threaded process can deadlock. The fork server is a fresh, single-threaded process.
    if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods():
        forkserver = multiprocessing.get_context("forkserver")
        forkserver.set_forkserver_preload(PRELOAD)
        return forkserver
    return multiprocessing.get_context("spawn")


def _limit_memory(budget: int) -> None:
    """Cap the child's data at what it holds now plus `budget` (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as status:
            used = next(
                int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:")
            )
        resource.setrlimit(resource.RLIMIT_DATA, (used + budget, used + budget))
    except (OSError, ValueError, StopIteration):
        pass  # no /proc, or a limit already lower: the work runs as before


def _child(
    sender: multiprocessing.connection.Connection, function: Any, args: Any, budget: int | None
) -> None:
    if budget is not None:
        _limit_memory(budget)
    try:
        answer: tuple[bool, Any] = (True, function(*args))
    except BaseException as exc:  # everything goes back to the parent, as data
        answer = (False, exc)
    try:
        sender.send(answer)
    except Exception as exc:  # an answer or exception that does not pickle
        sender.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


def _nothing() -> None:
    pass


@functools.cache
def _started_workers() -> bool:
    """Blocking: start the fork server and wait until its imports are done (a first child
    waits for them). Once per process; with spawn there is no server to start."""
    context = _context()
    if isinstance(context, ForkServerContext):
        process = context.Process(target=_nothing, daemon=True)
        process.start()
        process.join()
    return True


async def workers_ready() -> None:
    """Wait until a child can start at the cost of a fork. Where the server cannot start,
    this returns anyway: the work that needs it then says why."""
    if _started_workers.cache_info().currsize:  # up already: no thread for every call
        return
    try:
        await asyncio.to_thread(_started_workers)
    except Exception:
        return


async def run_isolated(
    function: Callable[..., T],
    *args: Any,
    memory: int | None = MEMORY_BUDGET,
    timeout_s: float | None = None,
) -> T:
    """`function(*args)` in a child process; its exception is raised here. Cancelling the
    call kills the child. `function` and its arguments must pickle (a module-level
    function, plain data). `memory`: what the child may allocate beyond its start (None:
    no bound); past it, the work fails with `MemoryError`. `timeout_s`: how long the work
    may take, not counting the worker server's start; past it, `TimeoutError`."""
    if timeout_s is not None:
        await workers_ready()
        return await asyncio.wait_for(run_isolated(function, *args, memory=memory), timeout_s)
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args, memory), daemon=True)
    try:
        # Starting may wait for the fork server to import its modules: not on the loop.
        await _finish_even_if_cancelled(asyncio.to_thread(process.start))
        sender.close()  # the child holds the only writer now: its death means EOF here
        reading = asyncio.ensure_future(asyncio.to_thread(_receive, receiver))
        try:
            ok, value = await asyncio.shield(reading)
        except asyncio.CancelledError:
            _kill(process)  # the reading thread then gets EOF and ends
            await asyncio.wait([reading])
            if not reading.cancelled():
                reading.exception()  # the child was ended on purpose: no answer expected
            raise
    finally:
        if process.ident is not None:  # started: never left running, always reaped
            _kill(process)
            await asyncio.to_thread(process.join, 5)
        sender.close()
        receiver.close()
    if ok:
        return cast(T, value)
    raise value


async def _finish_even_if_cancelled(work: Any) -> None:
    """Await `work` to its end; a cancellation is raised only after it has finished."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise


def _receive(receiver: multiprocessing.connection.Connection) -> tuple[bool, Any]:
    try:
        answer = receiver.recv()
    except (EOFError, OSError):
        raise WorkerCrashed("the worker process stopped without an answer") from None
    return cast(tuple[bool, Any], answer)


def _kill(process: multiprocessing.process.BaseProcess) -> None:
    if process.is_alive():
        process.kill()
