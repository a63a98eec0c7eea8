import sqlite3
from pathlib import Path

import pytest

from desktop.core.documents.chunks import Chunk
from desktop.core.documents.index import DocumentIndex, DocumentsError


def passage(text: str, page: int | None = None) -> Chunk:
    return Chunk(text, 0, 0, len(text), page, "")


def test_search_ranks_by_bm25_within_the_chosen_collections(tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "docs.sqlite3")
    index.add_sources("notes", [tmp_path])
    index.add_sources("manuals", [tmp_path])
    index.store("notes", "/n/backup.md", 1, 1, "h1", 0, [
        passage("Backups run every night at two; the backup disk is in the closet."),
        passage("Groceries: milk, eggs."),
    ])  # fmt: skip
    index.store("manuals", "/m/router.pdf", 1, 1, "h2", 3, [
        passage("Hold the reset button for ten seconds to reset the router.", page=3),
    ])  # fmt: skip
    best = index.search("When do backups run?")
    assert best[0].path == "/n/backup.md" and best[0].score > 0
    assert [h.path for h in index.search("reset the router")][:1] == ["/m/router.pdf"]
    assert index.search("reset the router", ["notes"]) == []
    assert index.search("reset", ["manuals"])[0].page == 3
    assert index.search("   ?!  ") == []
    assert index.search('"quoted" OR NEAR(x) AND *') == []  # FTS syntax is only words


def test_a_file_stored_again_replaces_its_passages_and_removal_forgets_them(
    tmp_path: Path,
) -> None:
    index = DocumentIndex(tmp_path / "docs.sqlite3")
    index.add_sources("c", [tmp_path])
    index.store("c", "/a.md", 1, 1, "h", 0, [passage("alpha words"), passage("more alpha")])
    index.store("c", "/a.md", 2, 2, "h2", 0, [passage("beta words")])
    assert index.search("alpha") == [] and len(index.search("beta")) == 1
    assert index.info("c").chunks == 1
    index.refuse("c", "/b.pdf", 9, 9, "is a password-protected PDF")
    assert index.info("c").problems == (("/b.pdf", "is a password-protected PDF"),)
    index.forget("c", ["/a.md"])
    assert index.search("beta") == [] and index.chunk_count() == 0
    index.remove("c")
    assert index.names() == []
    with pytest.raises(DocumentsError, match="no document collection"):
        index.info("c")


def test_removing_a_source_forgets_only_its_files(tmp_path: Path) -> None:
    index = DocumentIndex(tmp_path / "docs.sqlite3")
    index.add_sources("c", [tmp_path / "one", tmp_path / "two"])
    index.store("c", str(tmp_path / "one" / "a.md"), 1, 1, "h", 0, [passage("apple")])
    index.store("c", str(tmp_path / "two" / "b.md"), 1, 1, "h", 0, [passage("banana")])
    index.remove("c", [tmp_path / "one"])
    assert index.search("apple") == [] and len(index.search("banana")) == 1
    assert index.sources("c") == [tmp_path / "two"]


def test_the_index_survives_a_reopen_and_a_damaged_one_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "docs.sqlite3"
    index = DocumentIndex(path)
    index.add_sources("c", [tmp_path])
    index.store("c", "/a.md", 1, 1, "h", 0, [passage("kept words")])
    index.close()
    assert len(DocumentIndex(path).search("kept")) == 1
    damaged = tmp_path / "bad.sqlite3"
    damaged.write_bytes(b"not a database at all" * 100)
    reopened = DocumentIndex(damaged)
    assert "set aside" in reopened.notice and reopened.names() == []
    assert list(tmp_path.glob("bad.sqlite3.damaged-*"))


def test_an_index_from_a_newer_loomchat_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "docs.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(DocumentsError, match="newer"):
        DocumentIndex(path)
