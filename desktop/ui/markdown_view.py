"""A message's text as Markdown: prose in rich-text labels, code blocks with a Copy button."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.messages import Source
from desktop.ui.accessible import describe
from desktop.ui.citations import linked, open_source, source_of

# A fence opens with ``` (and a language), closes with ``` on its own line; an unclosed
# fence (still streaming) runs to the end.
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


# Prose is cut at blank lines into labels of about this size: while an answer streams,
# only the last label is laid out again, so painting stays cheap however long it grows.
PROSE_CHUNK_CHARS = 1200


def split_markdown(text: str) -> list[tuple[str, str, str]]:
    """(kind, language, content) segments: "prose" or "code", in order."""
    segments: list[tuple[str, str, str]] = []
    cursor = 0
    for match in _FENCE.finditer(text):
        if match.start() > cursor:
            segments.extend(_prose_chunks(text[cursor : match.start()]))
        segments.append(("code", match.group(1), match.group(2).rstrip("\n")))
        cursor = match.end()
    if cursor < len(text):
        segments.extend(_prose_chunks(text[cursor:]))
    return [s for s in segments if s[0] == "code" or s[2].strip()]


def _prose_chunks(prose: str) -> list[tuple[str, str, str]]:
    chunks: list[tuple[str, str, str]] = []
    current = ""
    for paragraph in prose.strip("\n").split("\n\n"):
        if current and len(current) + len(paragraph) > PROSE_CHUNK_CHARS:
            chunks.append(("prose", "", current))
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        chunks.append(("prose", "", current))
    return chunks


class ProseLabel(QLabel):
    """A rich-text label that remembers its height for a width: Qt asks every label in the
    chat again on each layout pass, and laying out rich text is not free, so a finished
    paragraph must not cost anything while the answer below it streams."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._heights: dict[int, int] = {}
        self.setTextFormat(Qt.TextFormat.MarkdownText)
        self.setWordWrap(True)
        self.setOpenExternalLinks(False)  # offline app: links are shown, not followed
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )

    def setText(self, text: str) -> None:
        self._heights.clear()
        super().setText(text)

    def heightForWidth(self, width: int) -> int:
        if width not in self._heights:
            self._heights[width] = super().heightForWidth(width)
        return self._heights[width]


class CodeBlock(QFrame):
    def __init__(self, language: str, code: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self.language = language
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.setSpacing(2)
        header = QHBoxLayout()
        header.addWidget(QLabel(language or "code"))
        header.addStretch()
        self.copy_button = QPushButton("Copy")
        self.copy_button.setFlat(True)
        self.copy_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.copy_button.clicked.connect(self._copy)
        describe(self.copy_button, "Copy this code", f"Copy the {language or 'code'} block")
        header.addWidget(self.copy_button)
        layout.addLayout(header)
        self.code = QLabel()
        self.code.setTextFormat(Qt.TextFormat.PlainText)
        self.code.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.code.setWordWrap(True)
        self.code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.code)
        self.set_code(code)

    def set_code(self, code: str) -> None:
        if self.code.text() != code:
            self.code.setText(code)

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.code.text())
        self.copy_button.setText("Copied")
        # the button as context: no callback if the block is gone by then
        QTimer.singleShot(1500, self.copy_button, lambda: self.copy_button.setText("Copy"))


class MarkdownView(QWidget):
    """Shows Markdown; `set_text` with the growing text while an answer streams reuses the
    widgets already there, so only the last segment changes."""

    def __init__(
        self,
        text: str = "",
        parent: QWidget | None = None,
        sources: dict[int, Source] | None = None,
    ) -> None:
        super().__init__(parent)
        # The documents' passages the answer may cite: its [n] link to their files.
        self.sources = sources or {}
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._widgets: list[tuple[str, str, QWidget]] = []
        self.text = ""
        self.set_text(text)

    def set_text(self, text: str) -> None:
        if text == self.text:
            return
        self.text = text
        segments = split_markdown(text)
        for index, (kind, language, content) in enumerate(segments):
            if index < len(self._widgets):
                old_kind, old_language, widget = self._widgets[index]
                if old_kind == kind and old_language == language:
                    self._update(widget, content)
                    continue
                for _, _, stale in self._widgets[index:]:
                    stale.deleteLater()
                del self._widgets[index:]
            widget = self._prose() if kind == "prose" else CodeBlock(language, content)
            self._update(widget, content)
            self._layout.addWidget(widget)
            self._widgets.append((kind, language, widget))
        for _, _, stale in self._widgets[len(segments) :]:
            stale.deleteLater()
        del self._widgets[len(segments) :]

    def _prose(self) -> ProseLabel:
        label = ProseLabel()
        if self.sources:
            label.setTextInteractionFlags(
                label.textInteractionFlags() | Qt.TextInteractionFlag.LinksAccessibleByMouse
            )
            label.linkActivated.connect(self.open_citation)
        return label

    def open_citation(self, href: str) -> bool:
        """Open the file a citation link points at; any other link is not followed."""
        source = source_of(href, self.sources)
        return source is not None and open_source(source)

    def _update(self, widget: QWidget, content: str) -> None:
        if isinstance(widget, CodeBlock):
            widget.set_code(content)
        elif isinstance(widget, QLabel):
            shown = linked(content, self.sources)
            if widget.text() != shown:
                widget.setText(shown)

    def code_blocks(self) -> list[CodeBlock]:
        return [w for _, _, w in self._widgets if isinstance(w, CodeBlock)]
