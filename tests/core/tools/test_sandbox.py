"""The code runner's fences, each tried by a hostile program: every one ends within its
limit, the app's loop goes on meanwhile, and nothing escapes (no network, no file written
or read outside, no process left behind). Linux: every fence; elsewhere skipped."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

import psutil
import pytest

from desktop.core.tools.sandbox import Limits, run_program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux fences")
QUICK = Limits(cpu_s=2, wall_s=6)


def test_a_program_prints_and_its_folder_is_its_own() -> None:
    run = asyncio.run(run_program("import os\nprint(1 + 1)\nopen('out.txt', 'w').write('x')"))
    assert (run.exit_code, run.stdout, run.unfenced) == (0, "2\n", [])


def test_while_true_ends_at_its_cpu_limit_and_the_loop_goes_on() -> None:
    async def both() -> tuple[float, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        started = time.perf_counter()
        run = await run_program("while True: pass", QUICK)
        ticker.cancel()
        assert run.exit_code is not None and run.exit_code < 0 and not run.timed_out
        return time.perf_counter() - started, ticks

    seconds, ticks = asyncio.run(both())
    assert seconds < QUICK.wall_s and ticks >= seconds / 0.05 / 4  # the loop was not held


def test_ten_gigabytes_are_refused() -> None:
    run = asyncio.run(run_program("b = bytearray(10 * 1024**3)", QUICK))
    assert run.exit_code == 1 and "MemoryError" in run.stderr


def test_a_fork_bomb_ends_and_leaves_no_process() -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    before = {p.pid for p in psutil.process_iter()}
    started = time.perf_counter()
    run = asyncio.run(run_program(bomb, QUICK))
    assert time.perf_counter() - started < QUICK.wall_s + 3
    assert run.timed_out or run.exit_code is not None
    time.sleep(0.5)
    left = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
            and "sandbox_child" in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    assert left == []


def test_no_connection_leaves_the_machine() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(2)\n"
        f"s.connect(('127.0.0.1', {port}))\nprint('connected')"
    )
    run = asyncio.run(run_program(code, QUICK))
    assert "connected" not in run.stdout and run.exit_code == 1
    with pytest.raises(TimeoutError):
        listener.accept()  # nobody came
    listener.close()
    # Not even through the C library, past Python's own socket module.
    raw = (
        "import ctypes, struct\nlibc = ctypes.CDLL(None)\nfd = libc.socket(2, 1, 0)\n"
        f"address = struct.pack('!HH4s8x', 2, {port}, bytes([127, 0, 0, 1]))\n"
        "address = struct.pack('H', 2) + address[2:]\n"
        "print('connect', libc.connect(fd, address, 16))"
    )
    raw_run = asyncio.run(run_program(raw, QUICK))
    assert "connect -1" in raw_run.stdout


def test_files_outside_are_neither_written_nor_read(tmp_path: Path) -> None:
    keychain = tmp_path / "data" / "secrets.json"
    keychain.parent.mkdir()
    keychain.write_text('{"openai": "sk-secret"}')
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the workspace reads")
    outside = tmp_path / "written.txt"
    code = (
        "import pathlib\n"
        "print(open('notes.txt').read())\n"
        f"for path in ({str(outside)!r}, {str(workspace / 'new.txt')!r}):\n"
        "    try:\n        open(path, 'w').write('x')\n        print('wrote', path)\n"
        "    except OSError as exc:\n        print('refused', type(exc).__name__)\n"
        f"try:\n    print(open({str(keychain)!r}).read())\n"
        "except OSError as exc:\n    print('refused', type(exc).__name__)\n"
    ).replace("open('notes.txt')", f"open({str(workspace / 'notes.txt')!r})")
    run = asyncio.run(run_program(code, QUICK, workspace))
    assert "the workspace reads" in run.stdout
    assert run.stdout.count("refused PermissionError") == 3 and "sk-secret" not in run.stdout
    assert not outside.exists() and not (workspace / "new.txt").exists()


def test_output_is_capped_and_images_come_back() -> None:
    run = asyncio.run(run_program("print('x' * 10**7)", QUICK))
    assert len(run.stdout) == QUICK.output_chars and run.cut > 9_000_000
    png = (
        "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.savefig('chart.png')\n"
        "import os\nos.symlink('/etc/passwd', 'linked.png')\nprint('saved')"
    )
    drawn = asyncio.run(run_program(png, Limits(cpu_s=20, wall_s=40)))
    assert drawn.stdout == "saved\n" and len(drawn.images) == 1
    assert drawn.images[0].startswith(b"\x89PNG")
