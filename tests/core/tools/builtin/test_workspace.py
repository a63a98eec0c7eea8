"""The workspace file tools, and every way out of the workspace they refuse."""

import os
from pathlib import Path
from typing import Any

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tools.builtin.workspace import (
    MAX_READ_BYTES,
    Workspace,
    WorkspaceError,
    workspace_tools,
)
from desktop.core.tools.toolbox import Toolbox, ToolOutput
from tests.support.images import picture


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
