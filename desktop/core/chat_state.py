"""Where a view of one conversation stands: which conversation, how far back its messages
are drawn, the turn under way, the message being edited. Plain data, no Qt: the window's
chat pane keeps one and the tests read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ChatState:
    conversation_id: int | None = None
    # The oldest message drawn (older ones load on scroll); None: none drawn.
    oldest_seq: int | None = None
    # The running turn's messages follow this seq (-1: from the conversation's start); None:
    # no turn under way.
    turn_after: int | None = None
    turn_finished: bool = False
    # The message being edited in the composer (sending it makes a new version).
    editing: int | None = None

    def open(self, conversation_id: int | None) -> None:
        """Show another conversation (or none): nothing drawn, no turn, no edit."""
        self.conversation_id = conversation_id
        self.oldest_seq = self.turn_after = self.editing = None
        self.turn_finished = False

    def begin_turn(self, after: int | None) -> None:
        """A turn starts after message `after` (None: at the conversation's start)."""
        self.turn_after, self.turn_finished = -1 if after is None else after, False

    def end_turn(self) -> int | None:
        """The turn is settled: the seq its messages follow, once."""
        after, self.turn_after = self.turn_after, None
        return after
