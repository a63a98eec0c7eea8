"""The app's log file: in the data folder's `logs/`, or, where that cannot be written (a
read-only data folder is exactly when a log is needed), in a folder of the user's own in
the temporary folder. Either way the file is the user's alone and never opened through a
link someone else planted."""

from __future__ import annotations

import io
import logging
import os
from logging.handlers import RotatingFileHandler
from pathlib import Path

from desktop.core.storage.paths import make_private, open_private, private_temp_folder

LOG_NAME = "loomchat.log"
MAX_BYTES = 1_000_000
BACKUPS = 3


class PrivateLog(RotatingFileHandler):
    """A rotating log file opened readable by its owner only, refusing a link at its name."""

    def _open(self) -> io.TextIOWrapper:
        return os.fdopen(open_private(Path(self.baseFilename)), "a", encoding="utf-8")


def log_handler(data_folder: Path) -> tuple[PrivateLog, Path] | None:
    """A handler writing to the first place that can be used, and its file; None if none."""
    for folder in (data_folder / "logs", private_temp_folder("loomchat-logs")):
        if folder is None:
            continue
        try:
            make_private(folder)
            handler = PrivateLog(folder / LOG_NAME, maxBytes=MAX_BYTES, backupCount=BACKUPS)
        except OSError:
            continue
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        return handler, folder / LOG_NAME
    return None
