"""Files and images on their way into the composer: chosen in a dialog, dropped or
pasted, read off the event loop (`core/attachments.py`), refused in words."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from desktop.core.attachments import TextAttachment, image_attachment, read_attachment
from desktop.core.errors import LoomchatError
from desktop.ui.composer import ComposerBar
from desktop.ui.controller import ChatController

FILE_TYPES = (
    "Images, text and PDF (*.png *.jpg *.jpeg *.gif *.webp *.bmp *.txt *.md *.csv *.log "
    "*.json *.py *.pdf);;All files (*)"
)


class Attacher(QObject):
    """Signal: refused(str): a file that could not be attached, and why."""

    refused = Signal(str)

    def __init__(
        self, bar: ComposerBar, controller: ChatController, context_size: Callable[[], int]
    ) -> None:
        super().__init__(bar)
        self.bar = bar
        self.controller = controller
        self.context_size = context_size
        bar.attach_requested.connect(lambda: self.choose(bar))
        bar.editor.files_dropped.connect(self.attach_files)
        bar.editor.image_pasted.connect(self.attach_image)

    def choose(self, parent: QWidget) -> None:
        chosen, _ = QFileDialog.getOpenFileNames(
            parent, "Attach files", str(Path.home()), FILE_TYPES
        )
        self.attach_files([Path(p) for p in chosen])

    def attach_files(self, paths: list[Path]) -> None:
        for path in paths:
            self.controller.in_background(self._attach(path))

    def attach_image(self, data: bytes) -> None:
        """An image pasted from the clipboard."""
        try:
            self.bar.add_attachment(image_attachment("pasted image.png", data))
        except LoomchatError as exc:
            self.refused.emit(str(exc))

    async def _attach(self, path: Path) -> None:
        try:
            attachment = await read_attachment(path, self.room())
        except LoomchatError as exc:
            self.refused.emit(str(exc))
            return
        self.bar.add_attachment(attachment)

    def room(self) -> int:
        """Tokens a text attachment may take: half the model's context, less what the
        attachments waiting already take (the conversation and the answer need the rest)."""
        waiting = sum(a.tokens for a in self.bar.attachments if isinstance(a, TextAttachment))
        return self.context_size() // 2 - waiting
