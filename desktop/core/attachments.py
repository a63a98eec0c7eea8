"""Files attached to a message: images (converted and downscaled like tool images), text
files (code, Markdown, CSV, logs) as text with their name, and a PDF's text (pypdf). Every
file is read off the event loop, in a child process that a timeout kills: a hostile file
(a PDF that never ends, a decompression bomb) costs a clear refusal, never a hang."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from desktop.core.documents.formats import UnreadablePdf, decoded, pdf_pages
from desktop.core.errors import LoomchatError
from desktop.core.messages import CHARS_PER_TOKEN, Image, fenced
from desktop.core.tools.images import ImageError, fit_image
from desktop.core.tools.isolation import WorkerCrashed, run_isolated

READ_TIMEOUT_S = 30.0
MAX_FILE_BYTES = 64 * 1024 * 1024  # read at all; the text kept is bounded by the context
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff"}


class AttachmentError(LoomchatError):
    """A file that cannot be attached, and why."""


@dataclass(frozen=True)
class TextAttachment:
    name: str
    text: str
    kind: str = "text"  # "text" or "pdf"

    @property
    def tokens(self) -> int:
        return len(self.text) // CHARS_PER_TOKEN + 1

    def as_prompt(self) -> str:
        """How the model reads it: its name, then its content, fenced."""
        return f"[Attached file: {self.name}]\n{fenced(self.text)}"


@dataclass(frozen=True)
class ImageAttachment:
    name: str
    image: Image


Attachment = TextAttachment | ImageAttachment


async def read_attachment(path: Path, max_tokens: int) -> Attachment:
    """The file as an attachment; `AttachmentError` saying why not (too big for the
    `max_tokens` the conversation has room for, not readable, not text)."""
    try:
        found = await run_isolated(_read, str(path), timeout_s=READ_TIMEOUT_S)
    except TimeoutError:
        raise AttachmentError(
            f"{path.name} could not be read in {READ_TIMEOUT_S:g} s, so it was left out."
        ) from None
    except (WorkerCrashed, MemoryError):
        raise AttachmentError(
            f"{path.name} could not be read (it needed too much memory)."
        ) from None
    if isinstance(found, str):  # why not, from the child
        raise AttachmentError(f"{path.name} {found}")
    if isinstance(found, TextAttachment) and found.tokens > max_tokens:
        raise AttachmentError(
            f"{path.name} is about {found.tokens:,} tokens; this conversation has room for "
            f"about {max(max_tokens, 0):,}. Attach a part of it, or use a model with a "
            "larger context."
        )
    return found


def image_attachment(name: str, data: bytes) -> ImageAttachment:
    """An image from the clipboard or a drop (already in memory; small work)."""
    try:
        return ImageAttachment(name, fit_image(data))
    except ImageError as exc:
        raise AttachmentError(f"{name}: {exc}") from None


def _read(path: str) -> Attachment | str:
    """In the child: the attachment, or why it cannot be one (a plain string). Opened
    without blocking and checked once open: what is read is the file that was opened, at
    most the cap, whatever was at that name when it was chosen (a FIFO, a file swapped for
    a larger one)."""
    file = Path(path)
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return "is not a file."
        with os.fdopen(fd, "rb") as opened:
            data = opened.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})."
    if len(data) > MAX_FILE_BYTES:
        return f"is over {MAX_FILE_BYTES // 1024 // 1024} MB: too large to attach."
    suffix = file.suffix.lower()
    if suffix in IMAGE_SUFFIXES or data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff":
        try:
            return ImageAttachment(file.name, fit_image(data))
        except ImageError as exc:
            return f"is not an image that can be attached ({exc})."
    if suffix == ".pdf" or data[:5] == b"%PDF-":
        return _pdf_text(file.name, data)
    try:
        return TextAttachment(file.name, decoded(data))
    except ValueError:
        return "is not a text file (it looks binary): only text, PDF and images can be attached."


def _pdf_text(name: str, data: bytes) -> Attachment | str:
    try:
        pages = pdf_pages(data)
    except UnreadablePdf as exc:
        if exc.cause is None:
            return "is a password-protected PDF: it cannot be read."
        return f"is not a PDF that can be read ({exc}: {str(exc.cause)[:120]})."
    text = "\n\n".join(f"[Page {n}]\n{page.strip()}" for n, page in enumerate(pages, 1))
    if not any(page.strip() for page in pages):
        return "has no text to read (a scanned PDF?)."
    return TextAttachment(name, text, "pdf")
