"""What a conversation chose for itself, kept on its row in the chat database: its system
prompt and preset, the document collections it searches, and the saved server it talks to.
Empty or NULL: as its preset says (or, for the server, whichever is connected)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager

from desktop.core.messages import without_surrogates


class ConversationChoices:
    """The chat store's part that reads and writes a conversation's own choices."""

    _lock: threading.Lock
    _db: sqlite3.Connection

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def system_prompt(self, conversation_id: int) -> tuple[str, str]:
        """The conversation's own system prompt and the name of its preset ("": none)."""
        with self._lock:
            row = self._db.execute(
                "SELECT system_prompt, preset FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
        if row is None:
            raise KeyError(conversation_id)
        return str(row[0]), str(row[1])

    def set_system_prompt(self, conversation_id: int, text: str, preset: str = "") -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET system_prompt = ?, preset = ? WHERE id = ?",
                (without_surrogates(text), preset, conversation_id),
            )

    def collections(self, conversation_id: int) -> tuple[str, ...] | None:
        """The document collections the conversation searches; None: as its preset says."""
        with self._lock:
            row = self._db.execute(
                "SELECT collections FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        try:
            names = json.loads(row[0]) if row is not None and row[0] is not None else None
        except ValueError:
            return None  # written by another program: the preset's choice stands
        if not isinstance(names, list):
            return None
        return tuple(name for name in names if isinstance(name, str))

    def set_collections(self, conversation_id: int, names: Sequence[str] | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET collections = ? WHERE id = ?",
                (None if names is None else json.dumps(list(names)), conversation_id),
            )

    def server(self, conversation_id: int) -> str:
        """The saved server the conversation talks to ("": its preset's, or the one in use)."""
        with self._lock:
            row = self._db.execute(
                "SELECT server FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        return row[0] if row is not None and isinstance(row[0], str) else ""

    def set_server(self, conversation_id: int, name: str) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET server = ? WHERE id = ?",
                (without_surrogates(name), conversation_id),
            )
