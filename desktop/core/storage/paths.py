"""Where Loomchat keeps its data: one folder for chats, settings, models and logs.

`$LOOMCHAT_DATA_DIR` if set; else a folder the user chose when the usual one could not be
used (remembered in a small file in the configuration folder); else the platform's place
for app data: ~/.local/share/Loomchat, %APPDATA%\\Loomchat, ~/Library/Application
Support/Loomchat.
"""

from __future__ import annotations

import contextlib
import os
import stat
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


# Chats, settings, keys and logs are the user's alone: the data folder is readable by its
# owner only (the usual umask would make it readable by every local user).
PRIVATE_FOLDER = 0o700


def make_private(folder: Path) -> None:
    """Make `folder` (and any missing parent) and keep it readable by its owner only: an
    existing folder of the user's that others can read is made private again. POSIX only:
    on Windows a user's profile folders are private already."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    if os.name != "posix":
        return
    info = folder.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        folder.chmod(PRIVATE_FOLDER)


def private_temp_folder(name: str) -> Path | None:
    """A folder of this user's alone in the shared temporary folder (`name-UID`), or None
    where none can be had safely: another user made one under that name first, or put a
    link there (a log written through it would land wherever the link points)."""
    if os.name != "posix":
        return Path(tempfile.gettempdir()) / name  # per user already
    folder = Path(tempfile.gettempdir()) / f"{name}-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=PRIVATE_FOLDER)
    try:
        info = folder.lstat()
    except OSError:
        return None
    mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
    if not mine or info.st_mode & 0o077:
        return None
    return folder


def open_private(path: Path) -> int:
    """A file descriptor for appending to `path`, made readable by its owner only, never
    through a link planted at that name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, 0o600)


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
    """`DataFolderError` unless files can be made in `folder` (made if missing, and made
    private: see `make_private`)."""
    try:
        make_private(folder)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"Loomchat cannot write to its data folder {folder} ({reason})."
        raise DataFolderError(message) from None
