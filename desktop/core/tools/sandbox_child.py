"""The code runner's child: started by `sandbox.run_program` as its own Python process, it
fences itself in, then runs the model's program. Trusted code that runs before the
program, in this order, so the program starts with every fence already up:

1. limits (rlimits): CPU seconds, address space, file size, open files, no core dumps;
2. no network: a network namespace of its own (as root, or in a user namespace where the
   system allows one), and an audit hook that refuses sockets' connects and lookups; and
   a process namespace, whose first process runs the program: when it ends or is killed,
   the kernel ends every process it started, even one that left its process group;
3. processes: at most a few more than the user already has (a fork bomb ends there); as
   root, which no such limit binds, a process-count control group of its own (Linux);
5. Landlock (Linux 5.13 and later): files read only under the interpreter's own folders,
   the system's libraries and the workspace; written only in its own temporary folder;
   TCP neither connected nor bound; no signal to any process outside its own.

Whatever a step cannot do on this system is skipped and said on a pipe of the parent's,
closed before the program starts (so the program cannot speak for the fences). Reads the
run's settings from the JSON file named on the command line.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

# Landlock's rights (linux/landlock.h), by the ABI version that brought them.
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # x86-64 and arm64 alike
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWNET, _CLONE_NEWUSER, _CLONE_NEWPID = 0x40000000, 0x10000000, 0x20000000
READ_ONLY = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def limit(settings: dict[str, Any]) -> None:
    for name, value in (("RLIMIT_CPU", settings["cpu_s"]), ("RLIMIT_AS", settings["memory"]),
                        ("RLIMIT_FSIZE", settings["file_bytes"]), ("RLIMIT_NOFILE", 256),
                        ("RLIMIT_CORE", 0)):  # fmt: skip
        resource.setrlimit(getattr(resource, name), (value, value))


def namespaces(libc: ctypes.CDLL, said: list[str]) -> bool:
    """A network and a process namespace of its own; whether the process one was made."""
    both = _CLONE_NEWNET | _CLONE_NEWPID
    if libc.unshare(both) == 0 or libc.unshare(_CLONE_NEWUSER | both) == 0:
        return True
    said.append("no network or process namespace on this system")
    return False


def without_network(said: list[str]) -> None:
    def refuse(event: str, _args: Any) -> None:
        if event in ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto",
                     "socket.sendmsg", "socket.gethostbyname"):  # fmt: skip
            raise PermissionError("the code runner has no network")

    sys.addaudithook(refuse)


def bound_processes(settings: dict[str, Any], said: list[str]) -> None:
    resource.setrlimit(resource.RLIMIT_NPROC, (settings["processes"],) * 2)
    if os.geteuid() != 0:
        return
    group = settings.get("cgroup")
    try:
        Path(str(group), "cgroup.procs").write_text(str(os.getpid()), encoding="ascii")
    except OSError:
        said.append("running as root with no process-count group: a fork bomb is not bounded")


def fence_files(libc: ctypes.CDLL, folder: Path, readable: list[str], said: list[str]) -> None:
    abi = libc.syscall(_CREATE_RULESET, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        said.append("no Landlock on this system: files and TCP are not fenced")
        return
    handled = FS_ALL_BY_ABI[max(v for v in FS_ALL_BY_ABI if v <= abi)]
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if abi >= 6 else 0)  # fmt: skip
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        said.append("Landlock refused the rules: files are not fenced")
        return
    for path, rights in [*((p, READ_ONLY) for p in readable), (str(folder), handled),
                         ("/dev/null", FS_READ_FILE | FS_WRITE_FILE)]:  # fmt: skip
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        if not os.path.isdir(path):
            rights &= FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (1 << 14)  # a file's own
        rule = _PathBeneath(rights & handled, fd)
        libc.syscall(_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0)  # PATH_BENEATH
        os.close(fd)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
        said.append("Landlock could not be applied: files are not fenced")
    os.close(ruleset)


def main(argv: list[str] | None = None) -> None:
    """`argv`: the settings file's path (default: the command line's)."""
    settings = json.loads(Path((argv or sys.argv[1:])[0]).read_text(encoding="utf-8"))
    folder = Path(settings["folder"])
    os.chdir(folder)
    said: list[str] = []
    limit(settings)
    on_linux = sys.platform.startswith("linux")
    libc = ctypes.CDLL(None, use_errno=True) if on_linux else None
    own_processes = libc is not None and namespaces(libc, said)
    without_network(said)
    bound_processes(settings, said)
    if libc is not None:
        fence_files(libc, folder, settings["readable"], said)
    code = (folder / "program.py").read_text(encoding="utf-8")
    with os.fdopen(settings["report_fd"], "w", encoding="utf-8") as report:
        report.write(json.dumps(said))
    if own_processes and (pid := os.fork()) != 0:  # here: wait for the namespace's first
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):  # said as it happened: the parent reads the signal
            with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
                signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status))
    sys.argv = ["program.py"]
    program = compile(code, "program.py", "exec")
    exec(program, {"__name__": "__main__", "__builtins__": __builtins__})


if __name__ == "__main__":
    main()
