"""The status bar's context meter: the conversation's tokens against the model's context,
a warning colour as it nears the end, and a sentence on what to do."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

# Past this share of the context the meter warns: the next answers may not fit.
WARN_SHARE = 0.8


class ContextMeter(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("contextMeter")
        self.bar = QProgressBar()
        self.bar.setFixedWidth(90)
        self.bar.setTextVisible(False)
        self.bar.setAccessibleName("Context used")
        self.label = QLabel()
        self.used, self.context = 0, 0
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.bar)
        row.addWidget(self.label)

    @property
    def warning(self) -> bool:
        return bool(self.context) and self.used >= self.context * WARN_SHARE

    def show_use(self, used: int, size: int, estimated: bool = False) -> None:
        """`used` tokens of `size`; `estimated`: counted from the text (~4 characters a
        token) rather than by the model's server after a turn."""
        self.used, self.context = used, size
        if not size:
            self.hide()
            return
        self.show()
        self.bar.setRange(0, size)
        self.bar.setValue(min(used, size))
        about = "~" if estimated else ""
        self.label.setText(f"{about}{used:,} / {size:,} tokens")
        self.label.setObjectName("contextWarning" if self.warning else "")
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)
        advice = (
            "The conversation nearly fills the model's context: older messages will soon "
            "not fit. Start a new chat, or delete messages you no longer need."
            if self.warning
            else "How much of the model's context this conversation takes."
        )
        self.setToolTip(advice)
        self.bar.setAccessibleDescription(f"{used:,} of {size:,} tokens. {advice}")
