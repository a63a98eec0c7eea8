"""Who can read what Loomchat writes: the data folder is its owner's alone (and made so
again if something opened it up), its files too; the log's fallback in the shared
temporary folder is a folder of the user's own, and a link planted there or at the log's
name is never followed."""

from __future__ import annotations

import logging
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from desktop.core.storage.logs import LOG_NAME, log_handler
from desktop.core.storage.paths import check_writable, private_temp_folder
from desktop.core.storage.presets import Preset, PresetBook
from desktop.core.storage.settings import Settings, save_settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_data_folder_and_its_files_are_the_owners_alone(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual one: everything readable by everyone
    try:
        folder = tmp_path / "data"
        check_writable(folder)  # what the app does first
        assert mode(folder) == 0o700
        folder.chmod(0o755)  # opened up since (an older version, a copy)
        check_writable(folder)
        assert mode(folder) == 0o700
        save_settings(Settings(), folder / "settings.json")
        book = PresetBook(path=folder / "presets.json")
        book.put(Preset("Mine"))
        book.save()
        assert mode(folder / "settings.json") == 0o600 == mode(folder / "presets.json")
    finally:
        os.umask(old)


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def test_the_logs_fallback_is_a_folder_of_the_users_own(temp_folder: Path) -> None:
    found = private_temp_folder("loomchat-logs")
    assert found == temp_folder / f"loomchat-logs-{os.getuid()}" and mode(found) == 0o700


@pytest.mark.parametrize("planted", ["a link", "open to all", "another user's"])
def test_a_planted_logs_folder_is_not_used(temp_folder: Path, tmp_path: Path, planted: str) -> None:
    name = temp_folder / f"loomchat-logs-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "a link":
        name.symlink_to(elsewhere)
    elif planted == "open to all":
        name.mkdir()
        name.chmod(0o777)
    else:
        if os.getuid() != 0:
            pytest.skip("making a folder another user owns needs root")
        name.mkdir(mode=0o700)
        os.chown(name, 12345, 12345)
    assert private_temp_folder("loomchat-logs") is None
    unwritable = tmp_path / "read-only"
    unwritable.write_text("a file where the data folder should be")
    assert log_handler(unwritable) is None  # stderr then: never the planted folder
    assert list(elsewhere.iterdir()) == []


def test_a_link_at_the_logs_name_is_never_followed(tmp_path: Path, temp_folder: Path) -> None:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    target = tmp_path / "victim.txt"
    target.write_text("untouched")
    (data / "logs" / LOG_NAME).symlink_to(target)
    found = log_handler(data)
    assert found is not None
    handler, file = found
    assert file.parent == temp_folder / f"loomchat-logs-{os.getuid()}"  # the fallback
    handler.emit(logging.makeLogRecord({"msg": "hello"}))
    handler.close()
    assert target.read_text() == "untouched"
    assert "hello" in file.read_text() and mode(file) == 0o600
