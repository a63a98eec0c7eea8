"""Files in the workspace folder the user chose: list, read, write, show, view images.

Every path is relative to the workspace and must stay inside it: absolute paths, drive
letters, `..` that climbs out, and symbolic links that point out are refused with a
message the model can act on. Writing needs the user's approval.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from desktop.core.images import ImageError, fit_image
from desktop.core.messages import sniff_image_mime
from desktop.core.tools import Example, Tool, ToolOutput

MAX_READ_BYTES = 1_000_000
MAX_LISTED = 500
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
_DRIVE = re.compile(r"^[A-Za-z]:")


class WorkspaceError(ValueError):
    pass


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().resolve()

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace, or `WorkspaceError` saying why not."""
        text = str(path).strip()
        if not text or text == ".":
            return self.root
        if "\x00" in text:
            raise WorkspaceError("the path contains a NUL character")
        if (
            text.startswith(("/", "\\", "~"))
            or _DRIVE.match(text)
            or PureWindowsPath(text).is_absolute()
        ):
            raise WorkspaceError(
                f"{path!r} is an absolute path; use a path relative to the workspace"
            )
        parts = PurePosixPath(text.replace("\\", "/")).parts
        candidate = self.root.joinpath(*parts)
        real = Path(os.path.realpath(candidate))  # follows symbolic links
        if real != self.root and self.root not in real.parents:
            raise WorkspaceError(f"{path!r} is outside the workspace")
        return real

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."


def workspace_tools(workspace: Workspace) -> list[Tool]:
    async def list_files(arguments: dict[str, Any]) -> dict[str, Any]:
        folder = workspace.resolve(arguments.get("path", "."))
        if not folder.is_dir():
            raise WorkspaceError(f"{arguments.get('path', '.')!r} is not a folder")
        entries = []
        for entry in sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower())):
            try:
                workspace.resolve(workspace.relative(entry))
            except (WorkspaceError, ValueError):
                continue  # a link pointing out of the workspace is not shown
            kind = "folder" if entry.is_dir() else "file"
            item: dict[str, Any] = {"name": entry.name, "type": kind}
            if kind == "file":
                item["size"] = entry.stat().st_size
            entries.append(item)
        shown = entries[:MAX_LISTED]
        result: dict[str, Any] = {"path": workspace.relative(folder), "entries": shown}
        if len(entries) > MAX_LISTED:
            result["note"] = f"{len(entries) - MAX_LISTED} more entries not listed"
        return result

    def read_bytes(path: str) -> tuple[Path, bytes]:
        target = workspace.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"{path!r} is not a file")
        if target.stat().st_size > MAX_READ_BYTES:
            raise WorkspaceError(
                f"{path!r} is {target.stat().st_size} bytes; files over {MAX_READ_BYTES} "
                "bytes are not read"
            )
        return target, target.read_bytes()

    async def read_file(arguments: dict[str, Any]) -> Any:
        target, data = read_bytes(arguments["path"])
        if sniff_image_mime(data) or target.suffix.lower() in IMAGE_SUFFIXES:
            image = fit_image(data)
            return ToolOutput(f"{arguments['path']} is an image; it is attached.", [image])
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError(f"{arguments['path']!r} is not a text file") from None

    async def view_image(arguments: dict[str, Any]) -> ToolOutput:
        _, data = read_bytes(arguments["path"])
        try:
            image = fit_image(data)
        except ImageError as exc:
            raise WorkspaceError(f"{arguments['path']!r}: {exc}") from None
        return ToolOutput(f"{arguments['path']} ({image.mime}) is attached.", [image])

    async def write_file(arguments: dict[str, Any]) -> str:
        target = workspace.resolve(arguments["path"])
        if target == workspace.root or target.is_dir():
            raise WorkspaceError(f"{arguments['path']!r} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(arguments["content"], encoding="utf-8")
        os.replace(partial, target)  # never a half-written file
        return f"Wrote {len(arguments['content'])} characters to {workspace.relative(target)}."

    async def show_file(arguments: dict[str, Any]) -> str:
        text = await read_file(arguments)
        if isinstance(text, ToolOutput):
            raise WorkspaceError(f"{arguments['path']!r} is an image; use view_image")
        return str(text)

    path_only = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "relative to the workspace"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    return [
        Tool(
            "list_files",
            "List the files and folders in a folder of the workspace.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "folder; '.' is the workspace"}
                },
                "additionalProperties": False,
            },
            list_files,
            examples=(Example("What files do I have?", {"path": "."}),),
        ),
        Tool(
            "read_file",
            "Read a text file of the workspace (an image file comes back as an image).",
            path_only,
            read_file,
            examples=(Example("What does notes/todo.txt say?", {"path": "notes/todo.txt"}),),
        ),
        Tool(
            "write_file",
            "Write a text file in the workspace (created or replaced). Asks the user first.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "relative to the workspace"},
                    "content": {"type": "string"},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
            write_file,
            needs_approval=True,
            examples=(
                Example("Save 'buy milk' to todo.txt", {"path": "todo.txt", "content": "buy milk"}),
            ),
        ),
        Tool(
            "show_file",
            "Show the user a file's content exactly as it is, as the answer.",
            path_only,
            show_file,
            direct_output=True,
            examples=(Example("Show me README.md", {"path": "README.md"}),),
        ),
        Tool(
            "view_image",
            "Look at an image file of the workspace.",
            path_only,
            view_image,
            examples=(Example("What is in photos/cat.jpg?", {"path": "photos/cat.jpg"}),),
        ),
    ]
