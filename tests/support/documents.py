"""Real documents for the collection tests: PDFs drawn by matplotlib (a page per text) and
Word files written by python-docx."""

from __future__ import annotations

import io
from collections.abc import Sequence


def pdf_pages(texts: Sequence[str]) -> bytes:
    """A PDF with one page per text (each a line on its own page)."""
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    out = io.BytesIO()
    with PdfPages(out) as pages:
        for text in texts:
            figure = Figure(figsize=(6, 2))
            figure.text(0.05, 0.5, text)
            pages.savefig(figure)
    return out.getvalue()


def docx_with(blocks: Sequence[tuple[int | None, str]]) -> bytes:
    """A Word document: (level, text) for a heading of that level, (None, text) for a
    paragraph."""
    import docx

    document = docx.Document()
    for level, text in blocks:
        if level is None:
            document.add_paragraph(text)
        else:
            document.add_heading(text, level)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdf_bomb(inflated: int) -> bytes:
    """A one-page PDF whose content stream is small on disk and `inflated` bytes once
    decompressed (spaces)."""
    import zlib

    compressor = zlib.compressobj(9)
    block = b" " * (1 << 20)
    stream = b"".join(compressor.compress(block) for _ in range(inflated >> 20))
    stream += compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
        + b"\nendstream",
    ]  # fmt: skip
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref,
    )  # fmt: skip
    return bytes(out)
