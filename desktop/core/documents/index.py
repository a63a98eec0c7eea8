"""The document collections and their index: one SQLite file in the data folder.

BM25 comes from SQLite's FTS5: the index grows and shrinks a file at a time in one
transaction each (an index kept in memory would be rebuilt whole on every change), it
lives in the same kind of file as the chats, and a kill -9 mid-way loses at most the file
being written. Every method blocks: callers on the event loop run them in a thread (one
connection, behind a lock, shared by the indexer and the searches)."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop.core.documents.chunks import Chunk
from desktop.core.errors import LoomchatError
from desktop.core.storage.chats import set_aside
from desktop.core.words import STOPWORDS

INDEX_FILE = "documents.sqlite3"
SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    collection INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, PRIMARY KEY (collection, path));
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    collection INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT, pages INTEGER NOT NULL DEFAULT 0, problem TEXT, indexed REAL NOT NULL,
    UNIQUE (collection, path));
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, file INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    section INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    page INTEGER, heading TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_of_file ON chunks(file);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    text, heading, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS chunk_added AFTER INSERT ON chunks BEGIN
    INSERT INTO passages(rowid, text, heading) VALUES (new.id, new.text, new.heading); END;
CREATE TRIGGER IF NOT EXISTS chunk_removed AFTER DELETE ON chunks BEGIN
    INSERT INTO passages(passages, rowid, text, heading)
    VALUES ('delete', old.id, old.text, old.heading); END;
CREATE TABLE IF NOT EXISTS vectors (
    chunk INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, chunk));
CREATE INDEX IF NOT EXISTS vectors_of_chunk ON vectors(chunk);
"""
# The words of a query searched for, at most: a pasted page is not a query.
MAX_QUERY_WORDS = 32
# The heading weighs half as much as the text in the ranking: it repeats in every passage
# under it.
_RANK = "bm25(passages, 1.0, 0.5)"
_WORD = re.compile(r"\w+")
# What a Hit is read from, for the searches here and the vector search.
HIT_COLUMNS = (
    "chunks.id, collections.name, files.path, chunks.page, chunks.heading, chunks.start, "
    "chunks.end, chunks.text"
)
HIT_JOINS = (
    "JOIN files ON files.id = chunks.file JOIN collections ON collections.id = files.collection"
)
DAMAGED = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


class DocumentsError(LoomchatError):
    """The document index cannot be used, or a collection asked for does not exist."""


@dataclass(frozen=True)
class Known:
    """What the index holds of a file: whether it changed is read off these."""

    size: int
    mtime_ns: int
    sha256: str | None
    problem: str | None


@dataclass(frozen=True)
class Hit:
    """A passage found for a query: where it is, and its score (higher is better): BM25's,
    or the fused one where embeddings ranked the passages too (`scores` has each method's)."""

    chunk: int
    collection: str
    path: str
    page: int | None
    heading: str
    start: int
    end: int
    text: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    sources: tuple[str, ...]
    files: int
    chunks: int
    pages: int
    problems: tuple[tuple[str, str], ...]  # (path, what is wrong with it)


def hit_from_row(row: Sequence[Any], method: str, score: float) -> Hit:
    """A Hit from a row that starts with HIT_COLUMNS, scored by `method`."""
    return Hit(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], row[7], score,
               {method: score})  # fmt: skip


class DocumentIndex:
    """The collections (named lists of folders and files), each file's state, and the
    passages searched. `notice`: what the person should know about opening it (a damaged
    index set aside)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.notice = ""
        self._lock = threading.RLock()
        try:
            self._db = _open(path)
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") not in DAMAGED:
                why = f"The document index {path} cannot be opened ({exc})."
                raise DocumentsError(why) from None
            kept = set_aside(path)
            self.notice = (
                f"The document index was damaged and was set aside as {kept.name}; add "
                "your collections again."
            )
            self._db = _open(path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection under the index's lock: for the vectors, kept in the same file so
        that a passage's vector goes with it."""
        with self._lock:
            yield self._db

    # --- collections ---------------------------------------------------------------

    def add_sources(self, collection: str, paths: Iterable[Path]) -> None:
        """Make the collection if it is new, and add folders or files to it."""
        name = collection.strip()
        if not name:
            raise DocumentsError("A collection needs a name.")
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO collections(name, created) VALUES (?, ?)",
                (name, time.time()),
            )
            cid = self._id(name)
            self._db.executemany(
                "INSERT OR IGNORE INTO sources(collection, path) VALUES (?, ?)",
                [(cid, str(Path(p).expanduser().absolute())) for p in paths],
            )

    def remove(self, collection: str, paths: Sequence[Path] = ()) -> None:
        """Remove the folders or files from the collection (with what was indexed from
        them), or the whole collection if none are named."""
        with self._lock, self._db:
            cid = self._id(collection)
            if not paths:
                self._db.execute("DELETE FROM chunks WHERE file IN "
                                 "(SELECT id FROM files WHERE collection = ?)", (cid,))  # fmt: skip
                self._db.execute("DELETE FROM collections WHERE id = ?", (cid,))
                return
            for path in paths:
                source = str(Path(path).expanduser().absolute())
                self._db.execute(
                    "DELETE FROM sources WHERE collection = ? AND path = ?", (cid, source)
                )
            self._forget_outside(cid)

    def names(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT name FROM collections ORDER BY name").fetchall()
        return [str(name) for (name,) in rows]

    def searchable(self) -> list[str]:
        """The collections with at least one passage (quick: it stops at the first)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT name FROM collections WHERE EXISTS (SELECT 1 FROM files JOIN chunks "
                "ON chunks.file = files.id WHERE files.collection = collections.id) ORDER BY name"
            ).fetchall()
        return [str(name) for (name,) in rows]

    def sources(self, collection: str) -> list[Path]:
        with self._lock:
            cid = self._id(collection)
            rows = self._db.execute(
                "SELECT path FROM sources WHERE collection = ? ORDER BY path", (cid,)
            ).fetchall()
        return [Path(path) for (path,) in rows]

    def info(self, collection: str) -> CollectionInfo:
        with self._lock:
            cid = self._id(collection)
            files, pages = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(pages), 0) FROM files "
                "WHERE collection = ? AND problem IS NULL", (cid,),
            ).fetchone()  # fmt: skip
            (chunks,) = self._db.execute(
                "SELECT COUNT(*) FROM chunks JOIN files ON files.id = chunks.file "
                "WHERE files.collection = ?", (cid,),
            ).fetchone()  # fmt: skip
            problems = self._db.execute(
                "SELECT path, problem FROM files WHERE collection = ? AND problem IS NOT NULL "
                "ORDER BY path", (cid,),
            ).fetchall()  # fmt: skip
        sources = tuple(str(p) for p in self.sources(collection))
        found = tuple((str(path), str(problem)) for path, problem in problems)
        return CollectionInfo(collection, sources, int(files), int(chunks), int(pages), found)

    # --- files, for the indexer ----------------------------------------------------

    def known(self, collection: str) -> dict[str, Known]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, size, mtime_ns, sha256, problem FROM files WHERE collection = ?",
                (self._id(collection),),
            ).fetchall()
        return {str(r[0]): Known(int(r[1]), int(r[2]), r[3], r[4]) for r in rows}

    def store(self, collection: str, path: str, size: int, mtime_ns: int, sha256: str,
              pages: int, chunks: Iterable[Chunk]) -> None:  # fmt: skip
        """The file's passages in place of what was indexed of it, in one transaction."""
        with self._lock, self._db:
            fid = self._file(collection, path, size, mtime_ns, sha256, pages, None)
            self._db.execute("DELETE FROM chunks WHERE file = ?", (fid,))
            self._db.executemany(
                "INSERT INTO chunks(file, section, start, end, page, heading, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((fid, c.section, c.start, c.end, c.page, c.heading, c.text) for c in chunks),
            )

    def refuse(self, collection: str, path: str, size: int, mtime_ns: int, problem: str) -> None:
        """The file could not be indexed: nothing of it is searched, and why is kept."""
        with self._lock, self._db:
            fid = self._file(collection, path, size, mtime_ns, None, 0, problem)
            self._db.execute("DELETE FROM chunks WHERE file = ?", (fid,))

    def touch(self, collection: str, path: str, size: int, mtime_ns: int) -> None:
        """The file's time changed but not its content: nothing to read again."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE collection = ? AND path = ?",
                (size, mtime_ns, self._id(collection), path),
            )

    def forget(self, collection: str, paths: Iterable[str]) -> None:
        """Files that are gone: out of the index."""
        with self._lock, self._db:
            cid = self._id(collection)
            for path in paths:
                row = self._db.execute(
                    "SELECT id FROM files WHERE collection = ? AND path = ?", (cid, path)
                ).fetchone()
                if row is not None:
                    self._db.execute("DELETE FROM chunks WHERE file = ?", (row[0],))
                    self._db.execute("DELETE FROM files WHERE id = ?", (row[0],))

    # --- searching -----------------------------------------------------------------

    def search(self, query: str, collections: Sequence[str] | None = None,
               limit: int = 5) -> list[Hit]:  # fmt: skip
        """The passages that best match the query's words (any of them), best first, in
        the named collections (None: all)."""
        every = list(dict.fromkeys(w.casefold() for w in _WORD.findall(query)))
        # "When do backups run?" is about backups: "when" and "do" match every passage.
        words = [w for w in every if w not in STOPWORDS] or every
        if not words or limit <= 0:
            return []
        match = " OR ".join(f'"{w}"' for w in words[:MAX_QUERY_WORDS])
        where, arguments = "passages MATCH ?", [match]
        if collections is not None:
            where += f" AND collections.name IN ({', '.join('?' * len(collections))})"
            arguments += list(collections)
        sql = (
            f"SELECT {HIT_COLUMNS}, {_RANK} AS rank FROM passages "
            f"JOIN chunks ON chunks.id = passages.rowid {HIT_JOINS} "
            f"WHERE {where} ORDER BY rank LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, [*arguments, limit]).fetchall()
        return [hit_from_row(r, "bm25", -float(r[8])) for r in rows]

    def passages(self) -> list[tuple[str, str]]:
        """Every passage as (its file, its text): for benchmarks that build other indexes
        from the same passages."""
        with self._lock:
            rows = self._db.execute(
                "SELECT files.path, chunks.text FROM chunks JOIN files ON files.id = chunks.file "
                "ORDER BY chunks.id"
            ).fetchall()
        return [(str(path), str(text)) for path, text in rows]

    def chunk_count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    # --- inside --------------------------------------------------------------------

    def _id(self, collection: str) -> int:
        row = self._db.execute(
            "SELECT id FROM collections WHERE name = ?", (collection,)
        ).fetchone()
        if row is None:
            raise DocumentsError(f"There is no document collection named {collection!r}.")
        return int(row[0])

    def _file(self, collection: str, path: str, size: int, mtime_ns: int, sha256: str | None,
              pages: int, problem: str | None) -> int:  # fmt: skip
        cid = self._id(collection)
        self._db.execute(
            "INSERT INTO files(collection, path, size, mtime_ns, sha256, pages, problem, "
            "indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(collection, path) DO UPDATE "
            "SET size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
            "pages = excluded.pages, problem = excluded.problem, indexed = excluded.indexed",
            (cid, path, size, mtime_ns, sha256, pages, problem, time.time()),
        )
        row = self._db.execute(
            "SELECT id FROM files WHERE collection = ? AND path = ?", (cid, path)
        ).fetchone()
        return int(row[0])

    def _forget_outside(self, cid: int) -> None:
        """Files no longer under any of the collection's sources leave the index."""
        sources = [Path(p) for (p,) in self._db.execute(
            "SELECT path FROM sources WHERE collection = ?", (cid,))]  # fmt: skip
        for fid, path in self._db.execute(
            "SELECT id, path FROM files WHERE collection = ?", (cid,)
        ).fetchall():
            if not any(Path(path) == s or Path(path).is_relative_to(s) for s in sources):
                self._db.execute("DELETE FROM chunks WHERE file = ?", (fid,))
                self._db.execute("DELETE FROM files WHERE id = ?", (fid,))


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # with WAL: a commit survives a crash
        db.execute("PRAGMA foreign_keys=ON")
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise DocumentsError(
                f"The document index {path} was made by a newer Loomchat; it is left as it is."
            )
        db.executescript(SCHEMA)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("SELECT COUNT(*) FROM passages").fetchone()
    except BaseException:
        db.close()
        raise
    return db
