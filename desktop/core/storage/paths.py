"""Where Loomchat keeps its data: one folder for chats, settings, models and logs.

`$LOOMCHAT_DATA_DIR` if set; else a folder the user chose when the usual one could not be
used (remembered in a small file in the configuration folder); else the platform's place
for app data: ~/.local/share/Loomchat, %APPDATA%\\Loomchat, ~/Library/Application
Support/Loomchat.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import platformdirs

from desktop.core.errors import LoomchatError

APP_NAME = "Loomchat"


def default_data_dir() -> Path:
    # roaming: %APPDATA% on Windows, where Qt's AppDataLocation was (the chats of earlier
    # versions are there).
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False, roaming=True))


def chosen_data_dir_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False, roaming=True)) / (
        "data-folder.txt"
    )


def data_dir() -> Path:
    override = os.environ.get("LOOMCHAT_DATA_DIR")
    if override:
        return Path(override)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        chosen = chosen_data_dir_file().read_text(encoding="utf-8").strip()
        if chosen:
            return Path(chosen)
    return default_data_dir()


def remember_data_dir(folder: Path) -> bool:
    """Use `folder` from the next start on; False if that could not be written down (and
    so it serves this run only). `$LOOMCHAT_DATA_DIR` still comes first."""
    try:
        record = chosen_data_dir_file()
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(str(folder), encoding="utf-8")
    except OSError:
        return False
    return True


def legacy_model_dir() -> Path:
    """Where versions before 0.2 put the bundled model (a lower-case folder of its own)."""
    return Path(platformdirs.user_data_dir("loomchat", appauthor=False)) / "models"


class DataFolderError(LoomchatError):
    """The data folder cannot be used; the message says why in plain words. `damaged` is
    the file at fault, where one is (it can be set aside and a fresh one started)."""

    def __init__(self, message: str, damaged: Path | None = None) -> None:
        super().__init__(message)
        self.damaged = damaged


def check_writable(folder: Path) -> None:
    """`DataFolderError` unless files can be made in `folder` (made if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"Loomchat cannot write to its data folder {folder} ({reason})."
        raise DataFolderError(message) from None
