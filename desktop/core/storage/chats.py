"""Conversations on disk: SQLite (WAL), one row a message, committed as each completes.

A crash loses at most the answer in progress. Messages are stored as their JSON form
(images included, as base64), so what is loaded is exactly what was saved. Calls are
short and thread-safe, so the GUI can run the slower ones (loading, search) off its thread.

A conversation is a tree: each message links to its `parent` (the one it follows), so an
edited question or a regenerated answer is a sibling of the one it replaces, and nothing is
lost. The conversation's `head` is the last message of the branch on screen; the
conversation is the path from the root to the head (what is shown, sent and exported), and
a new message follows the head. A child is always stored after its parent, so a path runs
in `seq` order and the newest message below any message is a leaf.
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
from desktop.core.storage.chat_export import markdown_of
from desktop.core.storage.chat_schema import PATH, SUBTREE, open_database
from desktop.core.storage.conversation_choices import ConversationChoices


@dataclass(frozen=True)
class ConversationInfo:
    id: int
    title: str
    updated: float
    message_count: int


@dataclass(frozen=True)
class Branches:
    """Where a message on the shown path stands among its siblings (the versions of it):
    `index` of `count`, 0-based, and the siblings' seqs in order."""

    index: int
    siblings: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.siblings)


class ChatStore(ConversationChoices):
    def __init__(self, path: Path) -> None:
        """Open (or create) the chats at `path`; `DataFolderError` if that cannot be done:
        the file is damaged (`damaged` set), or it cannot be written."""
        self.path = path
        self._lock = threading.Lock()
        self.damage: dict[int, str] = {}  # conversation id: what could not be read
        self._db = open_database(path)

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
        return [ConversationInfo(int(r[0]), str(r[1]), _real(r[2]), int(r[3])) for r in rows]

    def append(self, conversation_id: int, message: Message) -> int:
        """Store one completed message after the conversation's head, which it becomes;
        committed before this returns. Its seq is returned."""
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
                "INSERT INTO messages (conversation_id, seq, role, text, body, created, parent) "
                "VALUES (?, ?, ?, ?, ?, ?, (SELECT head FROM conversations WHERE id = ?))",
                (conversation_id, seq, message.role, text, body, now, conversation_id),
            )
            db.execute(
                "UPDATE conversations SET updated = ?, head = ? WHERE id = ?",
                (now, seq, conversation_id),
            )
            return seq

    def count(self, conversation_id: int) -> int:
        """Messages in the conversation, every branch counted."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
        return int(row[0])

    def question_of(self, conversation_id: int, seq: int) -> int | None:
        """The person's message that the answer at `seq` (or `seq` itself) answers, on the
        shown branch; None when no question comes before it."""
        question = None
        for at, message in self.messages(conversation_id):
            if at > seq:
                break
            if message.role == "user" and not message.from_the_loop:
                question = at
        return question

    def messages(
        self, conversation_id: int, *, last: int | None = None, before_seq: int | None = None
    ) -> list[tuple[int, Message]]:
        """(seq, message) of the shown branch, in order; `last` limits to the newest ones
        (before `before_seq`), which is how a long conversation opens fast and loads the
        rest on scroll."""
        query = (
            PATH + "SELECT m.seq, m.body, path.depth FROM messages m "
            "JOIN path ON m.seq = path.seq WHERE m.conversation_id = :c"
        )
        params = self._path_params(conversation_id)
        if before_seq is not None:
            query += " AND m.seq < :before"
            params["before"] = before_seq
        if last is not None:
            query = (
                f"SELECT seq, body, depth FROM ({query} ORDER BY m.seq DESC LIMIT :last) "
                "ORDER BY seq"
            )
            params["last"] = last
        else:
            query += " ORDER BY m.seq"
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return self._readable(conversation_id, rows, params["bound"])

    def _path_params(self, conversation_id: int) -> dict[str, Any]:
        return {
            "c": conversation_id,
            "head": self.head(conversation_id),
            "bound": self.count(conversation_id) + 1,
        }

    def _readable(
        self, conversation_id: int, rows: list[tuple[Any, ...]], bound: int
    ) -> list[tuple[int, Message]]:
        """The rows' messages, each seq once, in order; what cannot be read is left out and
        said in `damage` (another program's rows, a loop of parents)."""
        found: dict[int, Message] = {}
        unreadable, looped = 0, False
        for seq, body, depth in rows:
            looped = looped or depth >= bound
            if not isinstance(seq, int) or seq in found:
                looped = looped or seq in found
                continue
            try:
                found[seq] = Message.from_dict(json.loads(body))
            except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
                unreadable += 1
        problems = []
        if unreadable:
            problems.append(f"{unreadable} of its messages could not be read and are left out")
        if looped:
            problems.append("its messages refer to each other in a loop")
        if problems:
            self.damage[conversation_id] = "; ".join(problems)
        return sorted(found.items())

    def damage_of(self, conversation_id: int) -> str | None:
        """What was found damaged in the conversation when it was last read (None: nothing)."""
        return self.damage.get(conversation_id)

    def shown_chars(self, conversation_id: int) -> int:
        """The characters of the shown branch's text, counted in the database (a context
        estimate must not parse every message of a long conversation)."""
        params = self._path_params(conversation_id)
        with self._lock:
            row = self._db.execute(
                PATH + "SELECT COALESCE(SUM(LENGTH(m.text)), 0) FROM messages m "
                "JOIN (SELECT DISTINCT seq FROM path) p ON m.seq = p.seq "
                "WHERE m.conversation_id = :c",
                params,
            ).fetchone()
        return _integer(row[0]) or 0

    # --- branches -------------------------------------------------------------------------

    def head(self, conversation_id: int) -> int | None:
        """The last message of the shown branch (None: the conversation is empty)."""
        with self._lock:
            row = self._db.execute(
                "SELECT head FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        return _integer(row[0]) if row is not None else None

    def parent(self, conversation_id: int, seq: int) -> int | None:
        with self._lock:
            row = self._db.execute(
                "SELECT parent FROM messages WHERE conversation_id = ? AND seq = ?",
                (conversation_id, seq),
            ).fetchone()
        if row is None:
            raise KeyError(seq)
        return _integer(row[0])

    def rewind(self, conversation_id: int, seq: int | None) -> None:
        """Make `seq` the head (None: before the first message), so that the next message
        follows it: a new branch beside what followed it, which is kept."""
        with self._transaction() as db:
            db.execute("UPDATE conversations SET head = ? WHERE id = ?", (seq, conversation_id))

    def show_branch(self, conversation_id: int, seq: int) -> None:
        """Show the branch through `seq`: the head becomes the newest message below it."""
        with self._transaction() as db:
            db.execute(
                SUBTREE + "UPDATE conversations SET head = (SELECT MAX(seq) FROM below) "
                "WHERE id = :c",
                {"c": conversation_id, "seq": seq},
            )

    def branches(self, conversation_id: int, seqs: list[int]) -> dict[int, Branches]:
        """For each of `seqs` that has siblings (other versions of it), where it stands."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        with self._lock:
            rows = self._db.execute(
                f"SELECT m.seq, s.seq FROM messages m JOIN messages s "
                f"ON s.conversation_id = m.conversation_id AND s.parent IS m.parent "
                f"WHERE m.conversation_id = ? AND m.seq IN ({marks}) ORDER BY m.seq, s.seq",
                (conversation_id, *seqs),
            ).fetchall()
        siblings: dict[int, list[int]] = {}
        for seq, sibling in rows:
            if isinstance(seq, int) and isinstance(sibling, int):
                siblings.setdefault(seq, []).append(sibling)
        return {
            seq: Branches(found.index(seq), tuple(found))
            for seq, found in siblings.items()
            if len(found) > 1
        }

    def delete_from(self, conversation_id: int, seq: int) -> None:
        """Delete a message and everything that followed it (every branch below it); the
        branch shown is then the newest one left where it was."""
        parent = self.parent(conversation_id, seq)
        with self._transaction() as db:
            db.execute(
                SUBTREE + "DELETE FROM messages WHERE conversation_id = :c "
                "AND seq IN (SELECT seq FROM below)",
                {"c": conversation_id, "seq": seq},
            )
            if parent is None:
                head = db.execute(
                    "SELECT MAX(seq) FROM messages WHERE conversation_id = ?", (conversation_id,)
                ).fetchone()[0]
            else:
                head = db.execute(
                    SUBTREE + "SELECT MAX(seq) FROM below", {"c": conversation_id, "seq": parent}
                ).fetchone()[0]
            db.execute(
                "UPDATE conversations SET head = ?, updated = ? WHERE id = ?",
                (head, time.time(), conversation_id),
            )

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
        return markdown_of(
            self.title(conversation_id), (m for _, m in self.messages(conversation_id))
        )


def _integer(value: Any) -> int | None:
    """A seq another program may have stored as anything: an int, or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _real(value: Any) -> float:
    """A time another program may have stored as text: a number, or 0."""
    return float(value) if isinstance(value, int | float) else 0.0


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
