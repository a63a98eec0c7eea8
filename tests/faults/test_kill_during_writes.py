"""kill -9 while Loomchat writes: chats, settings, workspace files. After every kill the
data opens cleanly, nothing acknowledged is lost, and no file is half-written."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.core.storage.chats import ChatStore
from desktop.core.storage.settings import load_settings

CHATS_WRITER = """
import sys
from pathlib import Path
from desktop.core.messages import Image, Message
from desktop.core.storage.chats import ChatStore
store = ChatStore(Path(sys.argv[1]))
chat = store.create_conversation(sys.argv[2])
picture = Image(b"\\x89PNG" + bytes(range(256)) * 64, "image/png")  # bodies of 16 KB too
i = 0
while True:
    store.append(chat, Message.user(f"{sys.argv[2]} {i}", [picture] if i % 3 == 0 else []))
    print(i, flush=True)
    i += 1
"""

SETTINGS_WRITER = """
import sys
from dataclasses import replace
from pathlib import Path
from desktop.core.storage.settings import Settings, save_settings
i = 0
while True:
    save_settings(replace(Settings(), max_tool_calls=1 + i % 50, model="m" * (i % 4000)), Path(sys.argv[1]))
    print(i, flush=True)
    i += 1
"""

WORKSPACE_WRITER = """
import sys
from pathlib import Path
from desktop.core.tools.builtin.workspace import Workspace
workspace = Workspace(Path(sys.argv[1]))
i = 0
while True:
    workspace.write_text("notes.txt", f"version {i}\\n" * (1 + i % 5000))
    print(i, flush=True)
    i += 1
"""


def kill_while_writing(script: str, *args: str, seed: int) -> int:
    """Start a writer, kill -9 it at a random moment; the last write it acknowledged."""
    writer = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    acknowledged = -1
    wanted = random.Random(seed).randint(0, 60)
    deadline = time.monotonic() + 30
    while acknowledged < wanted and time.monotonic() < deadline:
        line = writer.stdout.readline()
        if not line:
            break
        acknowledged = int(line)
    time.sleep(random.Random(seed).random() * 0.02)  # mid-write, not between writes
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    return acknowledged


def chats_survive(tmp_path: Path, kills: int) -> None:
    path = tmp_path / "chats.db"
    acknowledged: dict[str, int] = {}
    for round_ in range(kills):
        title = f"round{round_}"
        acknowledged[title] = kill_while_writing(CHATS_WRITER, str(path), title, seed=round_)
        store = ChatStore(path)  # opens after every kill
        assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        store.close()
    assert sum(acknowledged.values()) > kills  # the kills landed mid-stream, not at start
    store = ChatStore(path)
    by_title = {c.title: c.id for c in store.conversations()}
    for title, last in acknowledged.items():
        texts = [m.text for _, m in store.messages(by_title[title])]
        assert texts[: last + 1] == [f"{title} {i}" for i in range(last + 1)]
    store.close()


def settings_survive(tmp_path: Path, kills: int) -> None:
    path = tmp_path / "settings.json"
    for round_ in range(kills):
        kill_while_writing(SETTINGS_WRITER, str(path), seed=round_)
        if path.exists():
            load_settings(path)  # whole: the old or the new, never half


def workspace_files_survive(tmp_path: Path, kills: int) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for round_ in range(kills):
        last = kill_while_writing(WORKSPACE_WRITER, str(work), seed=round_)
        text = (work / "notes.txt").read_text() if (work / "notes.txt").exists() else None
        if last >= 0:
            assert text is not None
        if text is not None:
            lines = text.splitlines()
            assert len(set(lines)) == 1 and len(lines) == 1 + int(lines[0].split()[1]) % 5000


@pytest.mark.parametrize("what", ["chats", "settings", "workspace files"])
def test_three_kills_during_writes(tmp_path: Path, what: str) -> None:
    {"chats": chats_survive, "settings": settings_survive,
     "workspace files": workspace_files_survive}[what](tmp_path, 3)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("what", ["chats", "settings", "workspace files"])
def test_thirty_kills_during_writes(tmp_path: Path, what: str) -> None:
    {"chats": chats_survive, "settings": settings_survive,
     "workspace files": workspace_files_survive}[what](tmp_path, 30)  # fmt: skip
