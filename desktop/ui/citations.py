"""Citations in an answer ([1], [2]) made links to the passages' files: a click opens the
file with the system's viewer, at its page where a PDF viewer that takes one is installed.
Only these links are followed: any other link in a model's answer is shown, not opened."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from PySide6.QtCore import QProcess, QUrl
from PySide6.QtGui import QDesktopServices

from desktop.core.messages import Source

SCHEME = "loomchat-source"
# "[2]", not "[2](...)" (a link the model wrote) nor "[[2]]".
_CITATION = re.compile(r"(?<!\[)\[(\d{1,3})\](?![(\]])")
# PDF viewers that open a file at a page, and how they are told (the page counted from 1).
PAGE_VIEWERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("evince", ("--page-index={page}", "{path}")),
    ("okular", ("-p", "{page}", "{path}")),
    ("zathura", ("-P", "{page}", "{path}")),
    ("SumatraPDF", ("-page", "{page}", "{path}")),
)


def linked(text: str, sources: dict[int, Source]) -> str:
    """The Markdown with each citation of a known source as a link to it."""
    if not sources:
        return text

    def link(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in sources:
            return match.group(0)
        return f"[\\[{number}\\]]({SCHEME}:{number})"

    return _CITATION.sub(link, text)


def source_of(href: str, sources: dict[int, Source]) -> Source | None:
    scheme, _, number = href.partition(":")
    if scheme != SCHEME or not number.isdigit():
        return None
    return sources.get(int(number))


def open_source(source: Source) -> bool:
    """Open the cited file (at its page, where a viewer can); False if it is gone."""
    path = Path(source.path)
    if not path.is_file():
        return False
    if source.page is not None and path.suffix.lower() == ".pdf":
        for program, arguments in PAGE_VIEWERS:
            found = shutil.which(program)
            if found:
                filled = [a.format(page=source.page, path=str(path)) for a in arguments]
                if QProcess.startDetached(found, filled)[0]:
                    return True
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))  # the system's viewer
