"""Running a model's Python program in a fenced child process (`sandbox_child.py` puts the
fences up before the program starts): its own temporary folder, limits on CPU, memory,
file size and processes, no network, files readable only where Python and the workspace
are, written only in that folder. A wall-clock timeout (or cancelling the call) kills the
child's whole process group. Output is read as it comes and kept up to a cap; PNG files the
program saved are returned as images.

What each OS gets: Linux all of the above (the file and TCP fences need Landlock, Linux
5.13 or later; the network namespace needs root or user namespaces, else only Python's
own socket calls are refused). macOS and the BSDs: the limits and the refused socket
calls, not the file fences, which the tool's description says. Windows: not offered (its
fences would be a Job Object, not built yet).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import site
import stat
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Where a process-count control group can be made (as root): cgroup v2, then v1's pids.
CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids"))
# Images a program may hand back, and the largest one read.
MAX_IMAGES = 4
MAX_IMAGE_BYTES = 8 * 1024 * 1024
_CHILD = Path(__file__).with_name("sandbox_child.py")


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 10
    wall_s: float = 30.0
    memory: int = 2 * 1024**3  # address space: numpy and matplotlib load within it
    file_bytes: int = 64 * 1024**2
    output_chars: int = 20_000  # of stdout and of stderr, each
    processes: int = 32  # beyond those the user already has


@dataclass
class Run:
    """What a program did: its exit code (None: killed at the wall-clock limit), what it
    printed (cut to the cap, `cut` saying how much was left out), PNG images it saved, and
    the fences this system could not put up."""

    exit_code: int | None
    stdout: str
    stderr: str
    images: list[bytes] = field(default_factory=list)
    timed_out: bool = False
    cut: int = 0
    unfenced: list[str] = field(default_factory=list)


def readable_roots(workspace: Path | None) -> list[str]:
    """Where the program may read: Python's own folders, the system's libraries and
    settings, its own process's files, and the workspace (read-only)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    roots |= {p for p in sys.path if p and Path(p).is_dir()}
    roots |= set(site.getsitepackages()) if hasattr(site, "getsitepackages") else set()
    roots |= {"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc/self", "/sys/devices/system/cpu",
              "/dev/urandom", "/dev/zero"}  # fmt: skip
    if workspace is not None:
        roots.add(str(workspace))
    return sorted(roots)


def _user_processes() -> int:
    import psutil

    me = os.getuid() if hasattr(os, "getuid") else None
    count = 0
    for process in psutil.process_iter(["uids"]):
        uids = process.info.get("uids")
        count += uids is not None and uids.real == me
    return count


async def run_program(code: str, limits: Limits = Limits(), workspace: Path | None = None) -> Run:
    """Run `code` fenced in (see the module's docstring) and say what it did."""
    folder = Path(tempfile.mkdtemp(prefix="loomchat-run-"))
    group: Path | None = None
    report_read, report_write = os.pipe()
    pipe = [report_read, report_write]  # closed here once each, never a number reused
    try:
        (folder / "program.py").write_text(code, encoding="utf-8")
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        processes = 0 if root else await asyncio.to_thread(_user_processes)
        group = _process_group(folder.name, limits.processes) if root else None
        settings = {
            "folder": str(folder), "cpu_s": limits.cpu_s, "memory": limits.memory,
            "file_bytes": limits.file_bytes, "report_fd": report_write,
            "processes": processes + limits.processes, "cgroup": group and str(group),
            "readable": readable_roots(workspace),
        }  # fmt: skip
        (folder / "run.json").write_text(json.dumps(settings), encoding="utf-8")
        return await _run(folder, limits, pipe)
    finally:
        for fd in pipe:
            os.close(fd)
        if group is not None:
            with contextlib.suppress(OSError):
                group.rmdir()
        await asyncio.to_thread(shutil.rmtree, folder, True)


def _process_group(name: str, processes: int) -> Path | None:
    """A control group that lets at most `processes` run (root only; None where the
    system has no writable pids controller)."""
    for root in CGROUP_ROOTS:
        if not (root / "pids.max").exists() and not (root / "cgroup.procs").exists():
            continue
        group = root / f"loomchat-{name}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(processes), encoding="ascii")
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        return group
    return None


async def _run(folder: Path, limits: Limits, pipe: list[int]) -> Run:
    report_read, report_write = pipe
    environment = {
        "PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder),
        "MPLCONFIGDIR": str(folder), "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *child_command(), str(folder / "run.json"),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=folder, env=environment,
        start_new_session=True, pass_fds=(report_write,),
    )  # fmt: skip
    os.close(pipe.pop())  # the child has the only writer now: its end is our EOF
    assert process.stdout is not None and process.stderr is not None
    out, err = _Capped(limits.output_chars), _Capped(limits.output_chars)
    reading = asyncio.gather(out.read(process.stdout), err.read(process.stderr))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), limits.wall_s)
        except TimeoutError:
            timed_out = True
    finally:
        _kill_group(process.pid)  # its children too, whatever it started
        await process.wait()
        with contextlib.suppress(TimeoutError):  # a grandchild holding the pipes open
            await asyncio.wait_for(asyncio.shield(reading), 2)
        reading.cancel()
    report = await asyncio.to_thread(_read_all, report_read)
    try:
        unfenced = (
            [str(s) for s in json.loads(report)] if report else ["the fences were not put up"]
        )
    except ValueError:
        unfenced = ["the fences were not put up"]
    (stdout, out_cut), (stderr, err_cut) = out.kept(), err.kept()
    return Run(None if timed_out else process.returncode, stdout, stderr,
               await asyncio.to_thread(_images, folder), timed_out, out_cut + err_cut,
               unfenced)  # fmt: skip


def child_command() -> list[str]:
    """How the child starts: this Python on the child's file, isolated from the user's
    site and environment; in the packaged app, the app itself with a flag its entry point
    answers (packaging/loomchat_main.py)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "--sandbox-child"]
    return [sys.executable, "-I", str(_CHILD)]


class _Capped:
    """A stream's text up to `limit` characters; the rest is read and counted, not kept."""

    def __init__(self, limit: int) -> None:
        self.limit, self.parts, self.size, self.left = limit, list[bytes](), 0, 0

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = max(0, self.limit * 4 - self.size)  # bytes: up to 4 a character
            self.parts.append(chunk[:room])
            self.size += min(len(chunk), room)
            self.left += max(0, len(chunk) - room)

    def kept(self) -> tuple[str, int]:
        """The text kept, and how much was left out (bytes never kept, characters cut)."""
        whole = b"".join(self.parts).decode("utf-8", "replace")
        return whole[: self.limit], self.left + max(0, len(whole) - self.limit)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _images(folder: Path) -> list[bytes]:
    """The PNG files the program saved in its folder (its top level, never through a
    link), up to the caps."""
    found = []
    for path in sorted(folder.glob("*.png"))[: MAX_IMAGES * 4]:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = file.read(MAX_IMAGE_BYTES + 1)
        if len(data) <= MAX_IMAGE_BYTES and data.startswith(b"\x89PNG"):
            found.append(data)
        if len(found) == MAX_IMAGES:
            break
    return found
