"""Conversations on disk: SQLite (WAL), one row a message, committed as each completes.

A crash loses at most the answer in progress. Messages are stored as their JSON form
(images included, as base64), so what is loaded is exactly what was saved. Calls are
short and thread-safe, so the GUI can run the slower ones (loading, search) off its thread.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop.core.messages import Message, without_surrogates
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
"""


@dataclass(frozen=True)
class ConversationInfo:
    id: int
    title: str
    updated: float
    message_count: int


# SQLite's words for a file that is not (or no longer) a sound database.
_DAMAGED = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


class ChatStore:
    def __init__(self, path: Path) -> None:
        """Open (or create) the chats at `path`; `DataFolderError` if that cannot be done:
        the file is damaged (`damaged` set), or it cannot be written."""
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise DataFolderError(f"The chat history {path} cannot be opened ({exc}).") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL with WAL: a commit survives an app crash; only an OS crash may lose the
            # last one.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            self._db.execute("SELECT COUNT(*) FROM conversations").fetchone()
        except sqlite3.Error as exc:
            self._db.close()
            if getattr(exc, "sqlite_errorname", "") in _DAMAGED:
                raise DataFolderError(
                    f"The chat history {path} is damaged ({exc}).", damaged=path
                ) from None
            raise DataFolderError(f"The chat history {path} cannot be opened ({exc}).") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def create_conversation(self, title: str = "New chat") -> int:
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO conversations (title, created, updated) VALUES (?, ?, ?)",
                (title, now, now),
            )
            return int(cursor.lastrowid or 0)

    def rename(self, conversation_id: int, title: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))

    def delete(self, conversation_id: int) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def conversations(self, search: str = "") -> list[ConversationInfo]:
        """Newest first; `search` matches titles and message text, case-insensitively."""
        query = (
            "SELECT c.id, c.title, c.updated, "
            "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) "
            "FROM conversations c"
        )
        params: tuple[Any, ...] = ()
        if search:
            like = f"%{search}%"
            query += (
                " WHERE c.title LIKE ? OR EXISTS (SELECT 1 FROM messages m "
                "WHERE m.conversation_id = c.id AND m.text LIKE ?)"
            )
            params = (like, like)
        query += " ORDER BY c.updated DESC, c.id DESC"
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return [ConversationInfo(int(r[0]), str(r[1]), float(r[2]), int(r[3])) for r in rows]

    def append(self, conversation_id: int, message: Message) -> int:
        """Store one completed message; committed before this returns. Its seq is returned."""
        now = time.time()
        # Lone surrogates cannot be stored as UTF-8: replaced here, whatever let them in.
        body = without_surrogates(json.dumps(message.to_dict(), ensure_ascii=False))
        text = without_surrogates(message.text)
        with self._transaction() as db:
            row = db.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            seq = int(row[0])
            db.execute(
                "INSERT INTO messages (conversation_id, seq, role, text, body, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, seq, message.role, text, body, now),
            )
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))
            return seq

    def count(self, conversation_id: int) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
        return int(row[0])

    def messages(
        self, conversation_id: int, *, last: int | None = None, before_seq: int | None = None
    ) -> list[tuple[int, Message]]:
        """(seq, message) in order; `last` limits to the newest ones (before `before_seq`),
        which is how a long conversation opens fast and loads the rest on scroll."""
        query = "SELECT seq, body FROM messages WHERE conversation_id = ?"
        params: list[Any] = [conversation_id]
        if before_seq is not None:
            query += " AND seq < ?"
            params.append(before_seq)
        if last is not None:
            query = f"SELECT seq, body FROM ({query} ORDER BY seq DESC LIMIT ?) ORDER BY seq"
            params.append(last)
        else:
            query += " ORDER BY seq"
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return [(int(seq), Message.from_dict(json.loads(body))) for seq, body in rows]

    def title(self, conversation_id: int) -> str:
        with self._lock:
            row = self._db.execute(
                "SELECT title FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        if row is None:
            raise KeyError(conversation_id)
        return str(row[0])

    def export_json(self, conversation_id: int) -> dict[str, Any]:
        return {
            "title": self.title(conversation_id),
            "messages": [m.to_dict() for _, m in self.messages(conversation_id)],
        }

    def export_markdown(self, conversation_id: int) -> str:
        lines = [f"# {self.title(conversation_id)}", ""]
        calls: dict[str, str] = {}
        for _, message in self.messages(conversation_id):
            if message.role == "system":
                continue
            if message.role == "tool":
                name = calls.get(message.tool_call_id or "", message.name or "tool")
                status = " (not run)" if message.rejected else ""
                lines += [f"**Tool result: {name}{status}**", "", "```", message.text, "```", ""]
                continue
            speaker = "You" if message.role == "user" else "Assistant"
            if message.text:
                lines += [f"**{speaker}:**", "", message.text, ""]
            for image in message.images:
                lines += [f"*[image: {image.mime}, {len(image.data)} bytes]*", ""]
            for call in message.tool_calls:
                calls[call.id] = call.name
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                lines += [f"**Tool call:** `{call.name}({arguments})`", ""]
        return "\n".join(lines).rstrip() + "\n"


def set_aside(path: Path) -> Path:
    """Rename a damaged database (with its journal files) out of the way, keeping it for
    recovery: chats.db -> chats.db.damaged-20261130-142501. Returns the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.replace(kept.with_name(kept.name + suffix))
    return kept


def title_from(text: str) -> str:
    """A new conversation's title: the first line of its first message, shortened."""
    first_line = text.strip().splitlines()[0] if text.strip() else "New chat"
    return first_line[:60] + ("…" if len(first_line) > 60 else "")
