"""Attachments: text files with their name, a PDF's text, images fitted like tool images;
and the refusals: binary, too large for the context, damaged, unreadable."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from desktop.core.attachments import (
    MAX_FILE_BYTES,
    AttachmentError,
    ImageAttachment,
    TextAttachment,
    image_attachment,
    read_attachment,
)
from tests.support.images import PNG, picture


def pdf_with(text: str | None) -> bytes:
    """A real PDF drawn by matplotlib: with a line of text, or (None) a picture only."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4, 2))
    if text is None:
        figure.add_subplot().plot([1, 2, 3])
        figure.axes[0].set_axis_off()
    else:
        figure.text(0.1, 0.5, text)
    out = io.BytesIO()
    figure.savefig(out, format="pdf")
    return out.getvalue()


async def test_a_text_file_is_attached_with_its_name(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Plan\n\n- buy ```milk```\n", encoding="utf-8")
    found = await read_attachment(notes, max_tokens=1000)
    assert isinstance(found, TextAttachment) and found.kind == "text"
    prompt = found.as_prompt()
    assert prompt.startswith("[Attached file: notes.md]\n````\n# Plan")  # a longer fence
    assert prompt.endswith("\n````")


async def test_utf16_and_legacy_8_bit_text_are_read(tmp_path: Path) -> None:
    (tmp_path / "w.csv").write_bytes("a;b\nÄ;ö\n".encode("utf-16"))
    (tmp_path / "old.log").write_bytes("caf\xe9\n".encode("latin-1"))
    assert (await read_attachment(tmp_path / "w.csv", 100)).text == "a;b\nÄ;ö\n"  # type: ignore[union-attr]
    assert (await read_attachment(tmp_path / "old.log", 100)).text == "café\n"  # type: ignore[union-attr]


async def test_a_pdfs_text_page_by_page(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(pdf_with("Revenue grew 12 percent."))
    found = await read_attachment(report, 1000)
    assert isinstance(found, TextAttachment) and found.kind == "pdf"
    assert found.text == "[Page 1]\nRevenue grew 12 percent."


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("app.bin", b"\x7fELF\x00\x00\x01" + bytes(200), "looks binary"),
        ("scan.pdf", None, "has no text to read"),
        ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage", "is not a PDF that"),
        ("photo.jpg", b"\xff\xd8\xff" + b"not really a jpeg", "is not an image that"),
    ],
)
async def test_what_cannot_be_attached_says_why(
    tmp_path: Path, name: str, content: bytes | None, why: str
) -> None:
    path = tmp_path / name
    path.write_bytes(pdf_with(None) if content is None else content)
    with pytest.raises(AttachmentError, match=why) as refused:
        await read_attachment(path, 1000)
    assert str(refused.value).startswith(name)


async def test_text_too_long_for_the_context_is_refused_with_the_numbers(tmp_path: Path) -> None:
    big = tmp_path / "server.log"
    big.write_text("line of a log\n" * 4000)
    with pytest.raises(AttachmentError, match=r"about 14,001 tokens; .* room for about 2,000"):
        await read_attachment(big, max_tokens=2000)


async def test_a_huge_file_or_a_folder_is_refused_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(AttachmentError, match="too large to attach"):
        await read_attachment(huge, 10**9)
    with pytest.raises(AttachmentError, match="is not a file"):
        await read_attachment(tmp_path, 1000)
    with pytest.raises(AttachmentError, match="cannot be read"):
        await read_attachment(tmp_path / "gone.txt", 1000)


async def test_images_are_fitted_like_tool_images(tmp_path: Path) -> None:
    large = tmp_path / "large.bmp"
    large.write_bytes(picture(3000, 2000, "BMP"))
    found = await read_attachment(large, 10)
    assert isinstance(found, ImageAttachment) and found.image.mime in ("image/png", "image/jpeg")
    from PIL import Image as Pillow

    assert max(Pillow.open(io.BytesIO(found.image.data)).size) == 1568
    pasted = image_attachment("pasted image.png", PNG)
    assert pasted.image.data == PNG
    with pytest.raises(AttachmentError, match=r"pasted image\.png: not an image"):
        image_attachment("pasted image.png", b"<svg/>")
