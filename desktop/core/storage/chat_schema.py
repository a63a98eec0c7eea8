"""The chat database's tables, how an older one is migrated, and how a file that is not
one this code can use is recognised (and said so, never guessed at)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from desktop.core.storage.paths import DataFolderError

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    body TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (conversation_id, seq)
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, seq);
"""  # version 0's tables; a new database is migrated from there like an old one
SCHEMA_VERSION = 3
# Version 0 (no user_version) had no branches: each message followed the one stored before
# it, and the conversation ended at its last. The migration links them so.
MIGRATIONS = {
    1: """
ALTER TABLE messages ADD COLUMN parent INTEGER;
UPDATE messages SET parent = (
    SELECT MAX(earlier.seq) FROM messages earlier
    WHERE earlier.conversation_id = messages.conversation_id AND earlier.seq < messages.seq
);
ALTER TABLE conversations ADD COLUMN head INTEGER;
UPDATE conversations SET head = (
    SELECT MAX(m.seq) FROM messages m WHERE m.conversation_id = conversations.id
);
ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN preset TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS messages_by_parent ON messages (conversation_id, parent);
""",
    # The document collections a conversation searches (a JSON list); NULL: its preset's.
    2: "ALTER TABLE conversations ADD COLUMN collections TEXT;",
    # The saved server a conversation talks to ("": its preset's, or the one in use).
    3: "ALTER TABLE conversations ADD COLUMN server TEXT NOT NULL DEFAULT '';",
}
# The path from the head to the root: (seq) rows, for a conversation id and its head. It
# takes at most :bound steps (the conversation's message count): parents that loop, which
# only another program could have written, end there, and show as a seq seen twice.
PATH = """
WITH RECURSIVE path(seq, parent, depth) AS (
    SELECT seq, parent, 1 FROM messages WHERE conversation_id = :c AND seq = :head
    UNION ALL
    SELECT m.seq, m.parent, path.depth + 1 FROM messages m JOIN path ON m.seq = path.parent
    WHERE m.conversation_id = :c AND path.depth < :bound
)
"""
# A message and everything below it (UNION: each once, so a loop of parents ends).
SUBTREE = """
WITH RECURSIVE below(seq) AS (
    SELECT :seq
    UNION
    SELECT m.seq FROM messages m JOIN below ON m.parent = below.seq WHERE m.conversation_id = :c
)
"""
# The columns each table must have for this code to use it (an older version's file has
# them after its migration; a newer one's is used as long as it has them).
COLUMNS = {
    "conversations": {
        "id",
        "title",
        "created",
        "updated",
        "head",
        "system_prompt",
        "preset",
        "collections",
        "server",
    },
    "messages": {"id", "conversation_id", "seq", "role", "text", "body", "created", "parent"},
}


# SQLite's words for a file that is not (or no longer) a sound database.
DAMAGED = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


def open_database(path: Path) -> sqlite3.Connection:
    """Open (or create) the chats at `path`, migrated to SCHEMA_VERSION; `DataFolderError`
    if that cannot be done: the file is damaged (`damaged` set), or it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise DataFolderError(f"The chat history {path} cannot be opened ({exc}).") from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL with WAL: a commit survives an app crash; only an OS crash may lose the
        # last one.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(SCHEMA)
        _migrate(db, path)
        _check_tables(db, path)
    except sqlite3.Error as exc:
        db.close()
        if getattr(exc, "sqlite_errorname", "") in DAMAGED:
            raise DataFolderError(
                f"The chat history {path} is damaged ({exc}).", damaged=path
            ) from None
        raise DataFolderError(f"The chat history {path} cannot be opened ({exc}).") from None
    except DataFolderError:
        db.close()
        raise
    return db


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring an older database up to SCHEMA_VERSION, each step in one transaction (a
    crash mid-way leaves the old version, whole). A newer one is used as it is."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version < 0:
        raise _unusable(path, f"it says it is of version {version}, which no Loomchat wrote")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[target].split(";\n"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {target}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def _check_tables(db: sqlite3.Connection, path: Path) -> None:
    """`DataFolderError` unless every table has the columns this code reads."""
    for table, needed in COLUMNS.items():
        found = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
        if missing := sorted(needed - found):
            raise _unusable(path, f"its {table} table has no {', '.join(missing)} column")
    db.execute("SELECT COUNT(*) FROM conversations").fetchone()


def _unusable(path: Path, why: str) -> DataFolderError:
    return DataFolderError(
        f"The chat history {path} is not one Loomchat can use: {why}.", damaged=path
    )
