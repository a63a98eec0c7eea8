"""The Documents dialog, driven as a person would: a collection made, its folder indexed
in the background with progress, the unreadable files listed, a search tried."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.core.documents.tool import NAME
from desktop.ui.documents_dialog import DocumentsDialog
from tests.ui.conftest import WindowFactory

pytestmark = pytest.mark.gui


def test_a_folder_is_indexed_with_progress_and_searched(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(30):
        (folder / f"note{n}.md").write_text(f"# Note {n}\nSome words about topic {n}.\n")
    (folder / "recipe.md").write_text("# Bread\nKnead the dough for ten minutes.\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    os.mkfifo(folder / "pipe.txt")
    window, _ = make_window([])
    assert NAME not in {t.name for t in window.session.tools.all}
    window.open_documents()
    dialog = window.findChild(DocumentsDialog)
    assert dialog is not None and "No collection yet" in dialog.summary.text()
    seen: list[Any] = []
    jobs = window.documents
    assert jobs is not None
    jobs.progress.connect(seen.append)
    dialog.add_sources("Kitchen", [folder])
    qtbot.waitUntil(lambda: jobs.running is None and bool(seen), timeout=30000)
    qtbot.waitUntil(lambda: "Updated:" in dialog.status.text(), timeout=5000)
    assert seen[-1].files_done == seen[-1].files_total == 32  # the FIFO is not a file
    qtbot.waitUntil(lambda: "31 files" in dialog.summary.text(), timeout=5000)
    assert "Kitchen" in dialog.summary.text()
    qtbot.waitUntil(lambda: dialog.problems.topLevelItemCount() == 2, timeout=5000)
    rows = [dialog.problems.topLevelItem(i) for i in range(dialog.problems.topLevelItemCount())]
    problems = {row.text(0): row.text(1) for row in rows if row is not None}
    assert set(problems) == {str(folder / "broken.pdf"), str(folder / "pipe.txt")}
    assert NAME in {t.name for t in window.session.tools.all}  # now offered

    dialog.query.setText("knead dough")
    qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: dialog.results.topLevelItemCount() > 0, timeout=5000)
    best = dialog.results.topLevelItem(0)
    assert best is not None and best.text(0) == "[1] recipe.md — Bread"

    (folder / "recipe.md").unlink()
    qtbot.mouseClick(dialog.update_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "1 removed" in dialog.status.text(), timeout=30000)
    dialog.jobs.remove("Kitchen")
    assert "No collection yet" in dialog.summary.text()
    assert NAME not in {t.name for t in window.session.tools.all}


def test_an_answers_citations_link_to_the_passages_files(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    from desktop.core.documents.index import DocumentIndex
    from desktop.ui.citations import SCHEME
    from desktop.ui.markdown_view import ProseLabel
    from tests.support.fakes import Step
    from tests.ui.test_main_window import answer_bubbles, type_and_send

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "boat.md").write_text("# Kayak\nThe kayak is in the blue shed.\n")
    index = DocumentIndex(tmp_path / "data" / "documents.sqlite3")
    index.add_sources("notes", [folder])
    index.close()
    answer = "It is in the blue shed [1], see [7] and [a link](https://example.com)."
    window, _ = make_window([Step(chunks=[answer])])  # searched first, as by default
    jobs = window.documents
    assert jobs is not None
    jobs.update()
    qtbot.waitUntil(lambda: NAME in {t.name for t in window.session.tools.all}, timeout=30000)
    type_and_send(qtbot, window, "Where is my kayak?")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=5000
    )

    def shown() -> str:
        body = answer_bubbles(window)[-1].body
        return " ".join(w.text() for w in body.findChildren(ProseLabel))

    assert f"({SCHEME}:1)" in shown() and f"{SCHEME}:7" not in shown()  # [7] was not a source
    (card,) = [c for c in window.pane.chat.cards.values() if c.name == NAME]
    assert card.sources_label.isVisibleTo(card) and "boat.md" in card.sources_label.text()
    assert f"({SCHEME}:1)" in card.sources_label.text()
    body = answer_bubbles(window)[-1].body
    assert body.sources[1].path == str(folder / "boat.md")
    assert not body.open_citation("https://example.com")  # a model's link is not followed
    (folder / "boat.md").unlink()
    assert not body.open_citation(f"{SCHEME}:1")  # gone: nothing opened
    conversation = window.conversation_id
    assert conversation is not None
    window.open_conversation(conversation)  # read back from the stored conversation
    assert f"({SCHEME}:1)" in shown()


class EmbeddingHandler(BaseHTTPRequestHandler):
    """A server's /v1/embeddings on a thread of its own (the window's loop runs the app)."""

    def do_POST(self) -> None:
        from tests.core.documents.test_embeddings import toy_vector

        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        data = [{"embedding": toy_vector(t), "index": i, "object": "embedding"}
                for i, t in enumerate(texts)]  # fmt: skip
        body = json.dumps({"object": "list", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_searching_by_meaning_gives_the_passages_vectors_and_says_so(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    from dataclasses import replace

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "boat.md").write_text("# Boat\nThe kayak is kept in the blue shed.\n")
    (folder / "money.md").write_text("# Money\nSend the tax invoice in March.\n")
    server = ThreadingHTTPServer(("127.0.0.1", 0), EmbeddingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        window, _ = make_window([])
        session = window.session
        url = f"http://127.0.0.1:{server.server_address[1]}"
        session.connection = replace(session.connection, backend="llamacpp", url=url)
        window.open_documents()
        dialog = window.findChild(DocumentsDialog)
        assert dialog is not None and not dialog.search_by.model.isVisible()
        dialog.add_sources("Notes", [folder])
        qtbot.waitUntil(lambda: "by its words (BM25)" in dialog.summary.text(), timeout=30000)

        dialog.search_by.choice.setCurrentIndex(dialog.search_by.choice.findData("server"))
        assert dialog.search_by.model.isVisible() and session.settings.embeddings == "none"
        dialog.search_by.model.setText("toy")
        dialog.search_by.model.editingFinished.emit()
        assert (session.settings.embeddings, session.settings.embedding_model) == ("server", "toy")
        qtbot.waitUntil(lambda: "given vectors by toy" in dialog.status.text(), timeout=30000)
        dialog._show("Notes")
        qtbot.waitUntil(lambda: "2 of 2 passages have vectors from toy" in dialog.summary.text(),
                        timeout=5000)  # fmt: skip
        library = session.library
        assert library is not None and library.retriever.embedder is not None
    finally:
        server.shutdown()
        server.server_close()
