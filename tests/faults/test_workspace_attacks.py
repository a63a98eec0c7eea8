"""Workspace attacks: planted links, check-then-open races, FIFOs, devices, sockets,
sparse files, link loops, crowded folders. Nothing may escape the workspace, hang, or
fail a whole listing for one bad entry."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
from pathlib import Path

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tools.builtin.workspace import MAX_LISTED, MAX_READ_BYTES, MAX_SCANNED
from desktop.core.tools.toolbox import Toolbox
from tests.core.tools.builtin.test_workspace import box, root, run

__all__ = ["box", "root"]  # fixtures, used by name


async def test_a_planted_partial_link_is_never_written_through(
    box: Toolbox, root: Path, tmp_path: Path
) -> None:
    """A cloned repository may hold `.notes.txt.partial -> ~/anything`: the write of
    notes.txt went through it, outside the workspace."""
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    os.symlink(victim, root / ".notes.txt.partial")
    os.symlink(tmp_path / "created-outside.txt", root / "notes" / ".todo.txt.partial")
    await run(box, "write_file", path="notes.txt", content="hello")
    await run(box, "write_file", path="notes/todo.txt", content="new")
    assert victim.read_text() == "mine"
    assert not (tmp_path / "created-outside.txt").exists()
    assert (root / "notes.txt").read_text() == "hello"
    assert (root / "notes" / "todo.txt").read_text() == "new"


async def test_a_folder_swapped_for_a_link_mid_write_never_leads_outside(
    box: Toolbox, root: Path, tmp_path: Path
) -> None:
    """Check-then-open races: a thread swaps the real folder `inbox` for a link to a
    folder outside, and back, while the tool writes and reads in it (the path checked
    is not the path opened). Nothing may land outside, and nothing outside may be read."""
    import shutil
    import threading

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "note.txt").write_text("SECRET")
    inbox, saved = root / "inbox", root / "inbox.saved"
    inbox.mkdir()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            try:
                os.rename(inbox, saved)
                os.symlink(outside, inbox)  # inbox -> outside
                os.unlink(inbox)
                os.rename(saved, inbox)  # the real folder again
            except OSError:  # the tool made a new inbox in between: start over
                if inbox.is_dir() and not inbox.is_symlink():
                    shutil.rmtree(saved, ignore_errors=True)
                elif saved.is_dir():
                    with contextlib.suppress(OSError):
                        os.unlink(inbox)
                    os.rename(saved, inbox)

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes = []
    try:
        for i in range(300):
            write = await box.run(
                ToolCall("w", "write_file", {"path": "inbox/note.txt", "content": f"v{i}"})
            )
            read = await box.run(ToolCall("r", "read_file", {"path": "inbox/note.txt"}))
            outcomes.append((write.error, read.content))
    finally:
        stop.set()
        swapper.join()
    assert (outside / "note.txt").read_text() == "SECRET"
    assert sorted(p.name for p in outside.iterdir()) == ["note.txt"]
    assert all("SECRET" not in content for _, content in outcomes)
    assert any(error is None for error, _ in outcomes)  # the race really ran both ways


async def test_a_fifo_is_refused_without_waiting(box: Toolbox, root: Path) -> None:
    os.mkfifo(root / "pipe")
    for name in ("read_file", "show_file", "view_image"):
        outcome = await asyncio.wait_for(box.run(ToolCall("c", name, {"path": "pipe"})), 5)
        assert outcome.error == "WorkspaceError: 'pipe' is not a file"
    entries = (await run(box, "list_files"))["entries"]
    assert {"name": "pipe", "type": "other", "note": "a named pipe; not read"} in entries


async def test_a_huge_sparse_file_is_refused_by_its_size(box: Toolbox, root: Path) -> None:
    with open(root / "sparse.bin", "wb") as file:
        file.truncate(50 * 1024**3)  # 50 GB of nothing, on no disk
    outcome = await asyncio.wait_for(box.run(ToolCall("c", "read_file", {"path": "sparse.bin"})), 5)
    assert outcome.error is not None and "are not read" in outcome.error


async def test_broken_links_and_link_loops_are_listed_and_marked(box: Toolbox, root: Path) -> None:
    os.symlink(root / "missing.txt", root / "broken")
    os.symlink(root / "loop-b", root / "loop-a")
    os.symlink(root / "loop-a", root / "loop-b")
    entries = {e["name"]: e for e in (await run(box, "list_files"))["entries"]}
    assert entries["broken"] == {"name": "broken", "type": "link", "note": "a broken link"}
    assert entries["loop-a"] == {"name": "loop-a", "type": "link", "note": "a link loop"}
    assert entries["loop-b"]["note"] == "a link loop"
    assert entries["README.md"] == {"name": "README.md", "type": "file", "size": 8}
    outcome = await box.run(ToolCall("c", "read_file", {"path": "loop-a"}))
    assert outcome.error is not None and "loop-a" in outcome.error


async def test_a_folder_of_many_entries_is_listed_from_its_first(box: Toolbox, root: Path) -> None:
    crowd = root / "crowd"
    crowd.mkdir()
    for i in range(MAX_SCANNED + 5):
        (crowd / f"f{i}").touch()
    listing = await run(box, "list_files", path="crowd")
    assert len(listing["entries"]) == MAX_LISTED
    assert listing["note"] == f"the folder holds more than {MAX_SCANNED} entries; the first shown"


async def test_file_work_does_not_block_the_event_loop(box: Toolbox, root: Path) -> None:
    """Reads and listings run in a thread: a heartbeat keeps beating through them."""
    (root / "big.txt").write_text("x" * (MAX_READ_BYTES - 10))
    beats = 0

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            await asyncio.sleep(0)

    beating = asyncio.ensure_future(heartbeat())
    for _ in range(20):
        await run(box, "read_file", path="big.txt")
    beating.cancel()
    assert beats > 20


async def test_a_file_swapped_for_a_fifo_mid_race_never_hangs(box: Toolbox, root: Path) -> None:
    """A thread swaps notes.txt between a file and a FIFO while it is read: each read
    ends at once, with the text or a refusal, never waiting on the pipe."""
    import threading

    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.mkfifo(root / "notes.fifo")
                os.replace(root / "notes.fifo", root / "swapped.txt")
            with contextlib.suppress(OSError):
                (root / "notes.file").write_text("text")
                os.replace(root / "notes.file", root / "swapped.txt")

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        for _ in range(200):
            outcome = await asyncio.wait_for(
                box.run(ToolCall("c", "read_file", {"path": "swapped.txt"})), 5
            )
            assert outcome.content == "text" or outcome.error is not None
    finally:
        stop.set()
        swapper.join()


async def test_a_unix_socket_is_listed_and_refused(box: Toolbox, root: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(root / "sock"))
        outcome = await asyncio.wait_for(box.run(ToolCall("c", "read_file", {"path": "sock"})), 5)
        assert outcome.error is not None
        entries = {e["name"]: e for e in (await run(box, "list_files"))["entries"]}
        assert entries["sock"]["type"] == "other"


async def test_a_device_inside_is_not_read(box: Toolbox, root: Path) -> None:
    try:
        os.mknod(root / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # like /dev/zero
    except PermissionError:
        pytest.skip("making a device needs root")
    outcome = await asyncio.wait_for(box.run(ToolCall("c", "read_file", {"path": "zero"})), 5)
    assert outcome.error == "WorkspaceError: 'zero' is not a file"
    os.symlink("/dev/zero", root / "zero-link")
    outcome = await asyncio.wait_for(box.run(ToolCall("c", "read_file", {"path": "zero-link"})), 5)
    assert outcome.error is not None and "outside the workspace" in outcome.error


async def test_a_write_over_a_planted_link_replaces_the_link_not_its_target(
    box: Toolbox, root: Path, tmp_path: Path
) -> None:
    """notes.txt -> outside: writing notes.txt is refused (its real path is outside)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    os.symlink(victim, root / "notes.txt")
    outcome = await box.run(ToolCall("c", "write_file", {"path": "notes.txt", "content": "x"}))
    assert outcome.error is not None and "outside the workspace" in outcome.error
    assert victim.read_text() == "mine"
