"""Files in the workspace folder the user chose: list, read, write, show, view images.

Every path is relative to the workspace and must stay inside it: absolute paths, drive
letters, `..` that climbs out, and symbolic links that point out are refused with a
message the model can act on. Writing needs the user's approval.

A workspace may hold anything (a cloned repository, an unpacked archive), so a path is
never checked and then opened again by name: each file or folder is opened once, without
following a last link, and what was opened is checked to be inside. Temporary files are
created exclusively, so a planted link is never written through. FIFOs and devices are
not read. The file work runs in a thread, image decoding in a worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from desktop.core.errors import ToolError
from desktop.core.messages import sniff_image_mime
from desktop.core.tool_spec import Example
from desktop.core.tools.images import ImageError, fit_image
from desktop.core.tools.isolation import run_isolated
from desktop.core.tools.toolbox import Tool, ToolOutput

MAX_READ_BYTES = 1_000_000
MAX_LISTED = 500
# A folder with more entries is listed from its first ones: reading a million names to
# show 500 would block for long.
MAX_SCANNED = 10_000
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
_DRIVE = re.compile(r"^[A-Za-z]:")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
# Folder descriptors, and names relative to them, where the system has them (not Windows).
# (os.replace takes dir fds wherever os.rename does, but only rename is listed.)
_AT_FOLDER = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd


class WorkspaceError(ToolError, ValueError):
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
        if not self.contains(real):
            raise WorkspaceError(f"{path!r} is outside the workspace")
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    @contextlib.contextmanager
    def opened(self, path: str, *, folder: bool = False) -> Iterator[tuple[Path, int]]:
        """The real path and a descriptor of `path`, opened once and checked to be inside.

        A link swapped in after `resolve` is not followed (O_NOFOLLOW on the last name,
        and the opened descriptor's own path checked for the folders above it). A FIFO
        opens without waiting for a writer (O_NONBLOCK), to be refused by its type."""
        real = self.resolve(path)
        flags = _READ_FLAGS | _NOFOLLOW | (_DIRECTORY if folder else os.O_NONBLOCK)
        try:
            fd = os.open(real, flags)
        except FileNotFoundError:
            raise WorkspaceError(f"{path!r} does not exist") from None
        except NotADirectoryError:
            raise WorkspaceError(f"{path!r} is not a folder") from None
        except OSError as exc:
            raise WorkspaceError(f"{path!r} cannot be opened: {exc.strerror}") from None
        try:
            if not self._opened_inside(fd, real):
                raise WorkspaceError(f"{path!r} is outside the workspace")
            yield real, fd
        finally:
            os.close(fd)

    def _opened_inside(self, fd: int, real: Path) -> bool:
        where = descriptor_path(fd)
        if where is not None:
            return self.contains(where)
        # No way to ask the system where the descriptor points: it must at least be the
        # very file that `resolve` checked.
        try:
            seen, checked = os.fstat(fd), os.stat(real, follow_symlinks=False)
        except OSError:
            return False
        return (seen.st_dev, seen.st_ino) == (checked.st_dev, checked.st_ino)

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> tuple[Path, bytes]:
        with self.opened(path) as (real, fd):
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise WorkspaceError(f"{path!r} is not a file")
            if info.st_size > limit:
                raise WorkspaceError(
                    f"{path!r} is {info.st_size} bytes; files over {limit} bytes are not read"
                )
            chunks: list[bytes] = []
            size = 0
            while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):  # it may grow
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise WorkspaceError(f"{path!r} grew past {limit} bytes while being read")
            return real, b"".join(chunks)

    def write_text(self, path: str, content: str) -> Path:
        """Write `content` to `path`, whole or not at all: into a new temporary file beside
        it, then renamed over it."""
        real = self.resolve(path)
        if real == self.root or real.is_dir():
            raise WorkspaceError(f"{path!r} is a folder")
        data = content.encode("utf-8", errors="replace")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"{path!r}: its folder cannot be made: {exc.strerror}") from None
        folder = self.relative(real.parent)
        if not _AT_FOLDER:
            return self._write_by_name(path, real, data)
        with self.opened(folder, folder=True) as (_, folder_fd):
            partial = f".{real.name}.{secrets.token_hex(4)}.partial"
            try:
                fd = os.open(
                    partial,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                    0o666,
                    dir_fd=folder_fd,
                )
            except OSError as exc:
                raise WorkspaceError(f"{path!r} cannot be written: {exc.strerror}") from None
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())
                # The rename replaces whatever has the name, a link included: never through it.
                os.replace(partial, real.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(partial, dir_fd=folder_fd)
                raise
        return real

    def _write_by_name(self, path: str, real: Path, data: bytes) -> Path:
        """Where folders cannot be opened (Windows): an exclusively created temporary file."""
        import tempfile

        fd, partial = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".partial", dir=real.parent)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(partial, real)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise
        return real

    def list_folder(self, path: str) -> dict[str, Any]:
        """The entries of a folder; one that cannot be read (a broken link, a loop) is
        marked, never the end of the listing. Links out of the workspace are not shown."""
        if _AT_FOLDER:
            with self.opened(path, folder=True) as (real, fd):
                names = _names(fd if os.scandir in os.supports_fd else real)
        else:  # folders cannot be opened as descriptors (Windows)
            real = self.resolve(path)
            if not real.is_dir():
                raise WorkspaceError(f"{path!r} is not a folder")
            names = _names(real)
        entries = [e for e in (self._entry(real, name) for name in names) if e is not None]
        entries.sort(key=lambda e: (e["type"] != "folder", e["name"].lower()))
        result: dict[str, Any] = {"path": self.relative(real), "entries": entries[:MAX_LISTED]}
        unlisted = len(entries) - MAX_LISTED
        if len(names) >= MAX_SCANNED:
            result["note"] = f"the folder holds more than {MAX_SCANNED} entries; the first shown"
        elif unlisted > 0:
            result["note"] = f"{unlisted} more entries not listed"
        return result

    def _entry(self, folder: Path, name: str) -> dict[str, Any] | None:
        path = folder / name
        try:
            own = os.lstat(path)
        except OSError as exc:
            return {"name": name, "type": "unreadable", "note": exc.strerror or str(exc)}
        if stat.S_ISLNK(own.st_mode):
            target = Path(os.path.realpath(path))
            if not self.contains(target):
                return None  # a link pointing out of the workspace is not shown
            try:
                info = os.stat(path)
            except OSError as exc:
                why = "a link loop" if exc.errno == errno.ELOOP else "a broken link"
                return {"name": name, "type": "link", "note": why}
        else:
            info = own
        if stat.S_ISDIR(info.st_mode):
            return {"name": name, "type": "folder"}
        if stat.S_ISREG(info.st_mode):
            return {"name": name, "type": "file", "size": info.st_size}
        kind = "a named pipe" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        return {"name": name, "type": "other", "note": f"{kind}; not read"}


def _names(folder: int | Path) -> list[str]:
    names: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) >= MAX_SCANNED:
                break
    return names


def descriptor_path(fd: int) -> Path | None:
    """Where an open descriptor really is, as the system sees it, or None where it
    cannot say."""
    if sys.platform.startswith("linux"):
        try:
            return Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return None
    if sys.platform == "darwin":
        import fcntl

        try:
            raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))  # type: ignore[attr-defined]
        except OSError:
            return None
        return Path(os.fsdecode(raw.rstrip(b"\0")))
    return None


def workspace_tools(workspace: Workspace) -> list[Tool]:
    async def list_files(arguments: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(workspace.list_folder, arguments.get("path", "."))

    async def read_file(arguments: dict[str, Any]) -> Any:
        target, data = await asyncio.to_thread(workspace.read_bytes, arguments["path"])
        if sniff_image_mime(data) or target.suffix.lower() in IMAGE_SUFFIXES:
            image = await run_isolated(fit_image, data)
            return ToolOutput(f"{arguments['path']} is an image ({image.mime}).", [image])
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError(f"{arguments['path']!r} is not a text file") from None

    async def view_image(arguments: dict[str, Any]) -> ToolOutput:
        _, data = await asyncio.to_thread(workspace.read_bytes, arguments["path"])
        try:
            image = await run_isolated(fit_image, data)
        except ImageError as exc:
            raise WorkspaceError(f"{arguments['path']!r}: {exc}") from None
        return ToolOutput(f"{arguments['path']} is an image ({image.mime}).", [image])

    async def write_file(arguments: dict[str, Any]) -> str:
        content = arguments["content"]
        target = await asyncio.to_thread(workspace.write_text, arguments["path"], content)
        return f"Wrote {len(content)} characters to {workspace.relative(target)}."

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
            "Read (open) a text file of the workspace; an image file comes back as an image.",
            path_only,
            read_file,
            examples=(Example("What does notes/todo.txt say?", {"path": "notes/todo.txt"}),),
        ),
        Tool(
            "write_file",
            "Write (save) a text file in the workspace, created or replaced. Asks the user first.",
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
