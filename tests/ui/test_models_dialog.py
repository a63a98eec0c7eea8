"""The models dialog and the first run's download, against a local stand-in for the Hub."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from desktop.core.models.catalogue import Machine, load_catalogue, recommend
from desktop.core.models.hub import Hub
from desktop.ui.models_dialog import ModelsDialog
from tests.support.hub_server import FakeHub, HubFileData, HubRepoData

GB = 1024**3
CONTENT = b"GGUF" + bytes(range(256)) * 4000


def serve(repo: str, file: str) -> FakeHub:
    return FakeHub({repo: HubRepoData({file: HubFileData(CONTENT)}, downloads=3)})


def test_the_catalogue_says_what_fits_and_recommends_one(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    machine = Machine(ram_bytes=8 * GB, free_disk_bytes=100 * GB)
    dialog = ModelsDialog(
        tmp_path, load_catalogue(), hub=Hub("http://127.0.0.1:9"), machine=machine
    )
    qtbot.addWidget(dialog)
    table = dialog.catalogue_table
    rows = {table.item(r, 0).text(): table.item(r, 4).text() for r in range(table.rowCount())}  # type: ignore[union-attr]
    assert rows["Phi-3.5 mini Instruct (recommended)"] == "fits"
    assert rows["Qwen2.5 7B Instruct"] == "needs 7 GB of RAM; this machine has 8 GB"
    assert table.currentRow() == [m.name for m in dialog.catalogue].index("Phi-3.5 mini Instruct")


def test_a_download_shows_progress_then_use_this_model(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    model = load_catalogue()[0]
    server = serve(model.repo, model.file)
    entered = asyncio.ensure_future(server.__aenter__())
    qtbot.waitUntil(entered.done, timeout=5000)
    dialog = ModelsDialog(
        tmp_path, [model], hub=Hub(server.url), machine=Machine(64 * GB, 100 * GB)
    )
    qtbot.addWidget(dialog)
    used: list[Path] = []
    dialog.use_model.connect(used.append)
    row = dialog.download_catalogue(model)
    qtbot.waitUntil(lambda: row.use.isVisible() or "Downloaded" in row.detail.text(), timeout=20000)
    assert row.detail.text() == f"Downloaded and checked: {model.file}"
    assert (tmp_path / model.file).read_bytes() == CONTENT
    qtbot.mouseClick(row.use, Qt.MouseButton.LeftButton)
    assert used == [tmp_path / model.file]
    qtbot.waitUntil(lambda: dialog.local.table.rowCount() == 1, timeout=10000)
    closed = asyncio.ensure_future(server.__aexit__())
    qtbot.waitUntil(closed.done, timeout=5000)


def test_an_unreachable_hub_says_choose_a_file_instead(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    model = load_catalogue()[0]
    dialog = ModelsDialog(
        tmp_path, [model], hub=Hub("http://127.0.0.1:9"), machine=Machine(64 * GB, GB * 100)
    )
    qtbot.addWidget(dialog)
    row = dialog.download_catalogue(model)
    qtbot.waitUntil(lambda: "cannot be reached" in row.detail.text(), timeout=10000)
    assert "Hugging Face cannot be reached; choose a model file instead" in row.detail.text()
    search = asyncio.ensure_future(dialog.search("qwen"))
    qtbot.waitUntil(search.done, timeout=10000)
    assert "choose a model file instead" in dialog.message.text()


def test_search_then_a_repos_files_then_download(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    server = serve("someone/Tiny-GGUF", "tiny-Q4_K_M.gguf")
    card = "---\nlicense: mit\n---\n# Tiny\n\nA tiny model that answers in <b>few</b> words, for tests.\n"
    server.repos["someone/Tiny-GGUF"].files["README.md"] = HubFileData(card.encode())
    entered = asyncio.ensure_future(server.__aenter__())
    qtbot.waitUntil(entered.done, timeout=5000)
    dialog = ModelsDialog(tmp_path, [], hub=Hub(server.url), machine=Machine(64 * GB, 100 * GB))
    qtbot.addWidget(dialog)
    dialog.query.setText("tiny")
    dialog.query.returnPressed.emit()
    qtbot.waitUntil(lambda: dialog.results.count() == 1, timeout=10000)
    dialog.results.setCurrentRow(0)
    qtbot.waitUntil(lambda: dialog.files.count() == 1, timeout=10000)
    assert dialog.files.item(0).text().startswith("tiny-Q4_K_M.gguf   Q4_K_M")
    qtbot.waitUntil(lambda: dialog.card.text() != "", timeout=10000)
    assert dialog.card.text() == "Licence: mit\nA tiny model that answers in few words, for tests."
    dialog.files.setCurrentRow(0)
    dialog._download_selected_file()
    qtbot.waitUntil(lambda: (tmp_path / "tiny-Q4_K_M.gguf").is_file(), timeout=20000)
    closed = asyncio.ensure_future(server.__aexit__())
    qtbot.waitUntil(closed.done, timeout=5000)


def test_the_first_run_downloads_the_recommended_model_and_uses_it(
    make_window: Any, qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, _ = make_window(["unused"])
    rec = window.recommended
    assert rec is not None and rec == recommend(load_catalogue(), Machine.here(window.models_dir))
    buttons = [b.text() for b in window.first_run.findChildren(QPushButton)]
    assert buttons[0].startswith(f"Download {rec.name} (")  # the first choice
    server = serve(rec.repo, rec.file)
    entered = asyncio.ensure_future(server.__aenter__())
    qtbot.waitUntil(entered.done, timeout=5000)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    window.controller.reconnect = lambda: None
    window.first_run.download_recommended.emit()
    path = window.models_dir / rec.file
    qtbot.waitUntil(lambda: window.session.settings.runtime_model == str(path), timeout=20000)
    assert window.session.settings.backend == "builtin" and path.read_bytes() == CONTENT
    closed = asyncio.ensure_future(server.__aexit__())
    qtbot.waitUntil(closed.done, timeout=5000)


def test_a_model_deleted_behind_the_apps_back_is_said_and_dropped(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtWidgets import QMessageBox

    from tests.core.models.test_library import tiny_gguf

    tiny = tiny_gguf(tmp_path / "tiny.gguf")
    dialog = ModelsDialog(tmp_path, [], hub=Hub("http://127.0.0.1:9"), machine=Machine(GB, GB))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.local.table.rowCount() == 1, timeout=20000)
    tiny.unlink()  # by the person, in their file manager
    dialog.local.table.selectRow(0)
    monkeypatch.setattr(QMessageBox, "question", lambda *_: QMessageBox.StandardButton.Yes)
    dialog.local._delete_selected()
    assert dialog.message.text() == f"There is no model named 'tiny.gguf' in {tmp_path}."
    qtbot.waitUntil(lambda: dialog.local.table.rowCount() == 0, timeout=5000)


def test_the_manager_shows_what_the_header_says_and_when_it_was_used(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    from desktop.core.models.library import mark_used
    from tests.core.models.test_library import tiny_gguf

    used = tiny_gguf(tmp_path / "used.gguf")
    tiny_gguf(tmp_path / "fresh.gguf")
    (tmp_path / "used.mmproj.gguf").write_bytes(b"GGUF")
    mark_used(used, 1700000000.0)
    dialog = ModelsDialog(tmp_path, [], hub=Hub("http://127.0.0.1:9"), machine=Machine(GB, GB))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.local.table.rowCount() == 2, timeout=20000)
    table = dialog.local.table
    rows = {
        table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, 6)]  # type: ignore[union-attr]
        for r in range(2)
    }
    assert rows["used.gguf (sees images)"][1:4] == ["Q4_K_M", "4,096", "yes"]
    assert rows["used.gguf (sees images)"][4].startswith("2023-11-1")
    assert rows["fresh.gguf"][4] == "never"


def test_a_model_the_runtime_runs_is_marked_used(
    make_window: Any, qtbot: Any, tmp_path: Path
) -> None:
    from desktop.core.connection import Connection
    from desktop.core.models.library import local_models
    from desktop.core.runtime import LlamaServer
    from tests.core.models.test_library import tiny_gguf

    window, _ = make_window([])
    window.models_dir.mkdir(parents=True, exist_ok=True)
    model = tiny_gguf(window.models_dir / "tiny.gguf")
    window.session.runtime = LlamaServer(model=model)  # as connect() leaves it, not started
    window.controller.connection_changed.emit(Connection(True, "Connected.", "llamacpp"))
    listed = asyncio.ensure_future(local_models(window.models_dir))
    qtbot.waitUntil(listed.done, timeout=20000)
    (found,) = listed.result()
    assert found.last_used is not None
    window.session.runtime = None


def test_a_crafted_model_file_is_listed_with_its_problem_at_once(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """A 60-byte GGUF declaring an array of 2^60 strings, in the Models dialog: listed in
    seconds beside a real one, as unreadable and why (its reader grew by ~110 MB/s)."""
    import time

    from tests.core.models.test_library import tiny_gguf
    from tests.faults.test_crafted_gguf import CRAFTED

    tiny_gguf(tmp_path / "real.gguf")
    (tmp_path / "crafted.gguf").write_bytes(CRAFTED["2^60 strings in 60 bytes"]())
    started = time.monotonic()
    dialog = ModelsDialog(tmp_path, [], hub=Hub("http://127.0.0.1:9"), machine=Machine(GB, GB))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.local.table.rowCount() == 2, timeout=20000)
    assert time.monotonic() - started < 15
    table = dialog.local.table
    rows = {table.item(r, 0).text(): table.item(r, 4).text() for r in range(2)}  # type: ignore[union-attr]
    assert rows["real.gguf"] == "yes"
    assert rows["crafted.gguf"].startswith("unreadable: not a readable GGUF file")


def test_a_hostile_hub_download_ends_in_a_message_and_leaves_nothing(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """The catalogue's model, served as 48 MB where the listing says 4 KB: the row says it
    is not the file listed; no file and no `.part` stay; the app is not offered it."""
    model = load_catalogue()[0]
    served = HubFileData(b"GGUF" + bytes(48 * 1024 * 1024), listed_size=4096)
    server = FakeHub({model.repo: HubRepoData({model.file: served})})
    entered = asyncio.ensure_future(server.__aenter__())
    qtbot.waitUntil(entered.done, timeout=5000)
    dialog = ModelsDialog(
        tmp_path, [model], hub=Hub(server.url), machine=Machine(64 * GB, 100 * GB)
    )
    qtbot.addWidget(dialog)
    used: list[Path] = []
    dialog.use_model.connect(used.append)
    row = dialog.download_catalogue(model)
    qtbot.waitUntil(lambda: "not the file Hugging Face lists" in row.detail.text(), timeout=30000)
    assert not row.use.isVisible() and used == []
    assert not any(p.name.startswith(model.file) for p in tmp_path.iterdir())
    closed = asyncio.ensure_future(server.__aexit__())
    qtbot.waitUntil(closed.done, timeout=5000)


def test_quitting_sees_a_running_download_and_stops_it(
    make_window: Any, qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dialog's download is one of the window's jobs: closing the window waits for it
    and stops it (its bytes kept for next time), as it does a turn."""
    model = load_catalogue()[0]
    served = HubFileData(CONTENT * 4, stall_after=len(CONTENT))
    server = FakeHub({model.repo: HubRepoData({model.file: served})})
    entered = asyncio.ensure_future(server.__aenter__())
    qtbot.waitUntil(entered.done, timeout=5000)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    window, _ = make_window([])
    window.open_models(model)
    part = window.models_dir / f"{model.file}.part"
    qtbot.waitUntil(lambda: part.is_file() and part.stat().st_size > 0, timeout=20000)
    assert window.controller.pending  # the window knows of it
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=20000)
    assert not window.controller.pending and part.stat().st_size > 0
    closed = asyncio.ensure_future(server.__aexit__())
    qtbot.waitUntil(closed.done, timeout=5000)
