"""The workspace file tools, and every way out of the workspace they refuse."""

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from desktop.core.builtins.workspace import (
    MAX_LISTED,
    MAX_READ_BYTES,
    MAX_SCANNED,
    Workspace,
    WorkspaceError,
    workspace_tools,
)
from desktop.core.messages import ToolCall
from desktop.core.tools import Toolbox, ToolOutput
from tests.images import picture


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "todo.txt").write_text("buy milk\n")
    (root / "README.md").write_text("# Hello\n")
    (root / "chart.png").write_bytes(picture(3000, 2000))
    (root / "scan.bmp").write_bytes(picture(40, 30, "BMP"))
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "secret.txt").write_text("top secret")
    return root


@pytest.fixture
def box(root: Path) -> Toolbox:
    return Toolbox(workspace_tools(Workspace(root)))


async def run(box: Toolbox, name: str, **arguments: Any) -> Any:
    reason = box.validate(name, arguments)
    assert reason is None, reason
    tool = box.get(name)
    assert tool is not None
    return await tool.handler(arguments)


async def test_list_files(box: Toolbox) -> None:
    listing = await run(box, "list_files", path=".")
    assert listing["path"] == "."
    assert [e["name"] for e in listing["entries"]] == [
        "notes",
        "blob.bin",
        "chart.png",
        "README.md",
        "scan.bmp",
    ]
    assert listing["entries"][0] == {"name": "notes", "type": "folder"}
    assert (await run(box, "list_files", path="notes"))["entries"] == [
        {"name": "todo.txt", "type": "file", "size": 9}
    ]
    assert (await run(box, "list_files"))["path"] == "."


async def test_read_text_and_images(box: Toolbox) -> None:
    assert await run(box, "read_file", path="notes/todo.txt") == "buy milk\n"
    assert await run(box, "read_file", path="notes\\todo.txt") == "buy milk\n"  # Windows separators
    image = await run(box, "read_file", path="chart.png")
    assert isinstance(image, ToolOutput) and image.images[0].mime == "image/png"
    viewed = await run(box, "view_image", path="scan.bmp")
    assert viewed.images[0].mime == "image/png"  # BMP converted


async def test_big_images_are_downscaled(box: Toolbox) -> None:
    import io

    from PIL import Image as Pillow

    output = await run(box, "view_image", path="chart.png")
    assert max(Pillow.open(io.BytesIO(output.images[0].data)).size) == 1568


async def test_write_file_needs_approval_and_writes_atomically(box: Toolbox, root: Path) -> None:
    tool = box.get("write_file")
    assert tool is not None and tool.needs_approval
    message = await run(box, "write_file", path="out/new.txt", content="hello")
    assert message == "Wrote 5 characters to out/new.txt."
    assert (root / "out" / "new.txt").read_text() == "hello"
    assert not list((root / "out").glob(".*partial"))


async def test_show_file_is_direct_output_verbatim(box: Toolbox) -> None:
    tool = box.get("show_file")
    assert tool is not None and tool.direct_output
    assert await run(box, "show_file", path="README.md") == "# Hello\n"


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "notes/../../secret.txt",
        "/etc/passwd",
        "C:\\Windows\\win.ini",
        "c:/x",
        "\\\\server\\share",
        "~/secret.txt",
    ],
)
async def test_escapes_are_refused(box: Toolbox, path: str) -> None:
    for name in ("read_file", "list_files", "view_image", "show_file"):
        with pytest.raises(WorkspaceError, match=r"absolute path|outside the workspace"):
            await run(box, name, path=path)
    with pytest.raises(WorkspaceError):
        await run(box, "write_file", path=path, content="x")


async def test_a_symlink_pointing_out_is_refused_and_not_listed(
    box: Toolbox, root: Path, tmp_path: Path
) -> None:
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "outside")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await run(box, "read_file", path="link.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await run(box, "read_file", path="outside/secret.txt")
    names = [e["name"] for e in (await run(box, "list_files", path="."))["entries"]]
    assert "link.txt" not in names and "outside" not in names
    os.symlink(root / "notes" / "todo.txt", root / "inside.txt")
    assert await run(box, "read_file", path="inside.txt") == "buy milk\n"


async def test_other_refusals(box: Toolbox, root: Path) -> None:
    with pytest.raises(WorkspaceError, match="is not a file"):
        await run(box, "read_file", path="notes")
    with pytest.raises(WorkspaceError, match="is not a text file"):
        await run(box, "read_file", path="blob.bin")
    with pytest.raises(WorkspaceError, match="is not a folder"):
        await run(box, "list_files", path="README.md")
    with pytest.raises(WorkspaceError, match="is a folder"):
        await run(box, "write_file", path="notes", content="x")
    (root / "big.txt").write_text("x" * (MAX_READ_BYTES + 1))
    with pytest.raises(WorkspaceError, match="are not read"):
        await run(box, "read_file", path="big.txt")


async def test_refusals_reach_the_model_as_error_results(box: Toolbox) -> None:
    outcome = await box.run(ToolCall("c", "read_file", {"path": "../secret.txt"}))
    assert outcome.error == "WorkspaceError: '../secret.txt' is outside the workspace"
    assert "top secret" not in outcome.content


def test_schemas_refuse_bad_arguments(box: Toolbox) -> None:
    assert "missing required argument 'content'" in (
        box.validate("write_file", {"path": "a"}) or ""
    )
    assert "unknown argument 'mode'" in (
        box.validate("read_file", {"path": "a", "mode": "rb"}) or ""
    )
    assert "is not of type 'string'" in (box.validate("read_file", {"path": 3}) or "")


# --- attacks: planted links, races, FIFOs, sparse files, link loops ----------------------


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
