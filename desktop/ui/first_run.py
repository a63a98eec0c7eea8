"""The first-run panel: shown instead of the chat while no model server answers."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop.ui.accessible import describe


class FirstRunPanel(QWidget):
    """Shown instead of the chat while no model server answers."""

    use_builtin = Signal()
    download_recommended = Signal()
    choose_model_file = Signal()
    open_settings = Signal()
    retry = Signal()

    def __init__(
        self,
        offer_bundled_model: bool = True,
        download_label: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """`download_label`: "Download Qwen2.5 3B Instruct (2.1 GB)", the first choice
        where the catalogue has a model that fits this machine."""
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.addStretch()
        title = QLabel("<h2>Let’s find a model to talk to</h2>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        self.reason = QLabel()
        self.reason.setWordWrap(True)
        self.reason.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.reason)
        explain = QLabel(
            "Loomchat works with the model servers people already run: install "
            "<b>Ollama</b> (ollama.com) and run <code>ollama pull qwen3:4b</code>, or open "
            "<b>LM Studio</b> and start its server, or run <b>KoboldCPP</b> or a "
            "<b>llama.cpp</b> server. Or let Loomchat run a model itself, with no other "
            "program: "
            + ("its small built-in model, or " if offer_bundled_model else "")
            + "a GGUF model file you downloaded (from huggingface.co, for example)."
        )
        explain.setWordWrap(True)
        explain.setAlignment(Qt.AlignmentFlag.AlignCenter)
        explain.setFixedWidth(560)
        explain.setMinimumHeight(explain.heightForWidth(560) + 8)  # rich text under-reports
        layout.addWidget(explain, alignment=Qt.AlignmentFlag.AlignHCenter)
        buttons = QHBoxLayout()
        buttons.addStretch()
        choices = [
            *([(download_label, self.download_recommended)] if download_label else []),
            ("Use the built-in model", self.use_builtin),
            ("Choose a model file…", self.choose_model_file),
            ("Try again", self.retry),
            ("Settings…", self.open_settings),
        ]
        if not offer_bundled_model:
            choices = [c for c in choices if c[1] is not self.use_builtin]
        explained = {
            self.download_recommended: "Download the model recommended for this computer "
            "from Hugging Face, then chat with it",
            self.use_builtin: "Run the small model that came with Loomchat",
            self.choose_model_file: "Run a GGUF model file from this computer",
            self.retry: "Look for a model server again",
            self.open_settings: "Choose a server by hand: LM Studio, KoboldCPP, llama.cpp",
        }
        for text, signal in choices:
            button = QPushButton(text)
            describe(button, explained[signal])
            button.setDefault(signal is choices[0][1])  # the first way on stands out
            button.clicked.connect(signal.emit)
            buttons.addWidget(button)
        buttons.addStretch()
        layout.addLayout(buttons)
        layout.addStretch()
