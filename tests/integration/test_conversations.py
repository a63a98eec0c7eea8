"""Issue 15's chat features on the real llama-server with the bundled model: a system
prompt ahead of the tool block, a regenerated answer and a branch switch changing what the
next request sends, a text attachment, and an image to a model that cannot see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.core.attachments import read_attachment
from desktop.core.messages import Image
from desktop.core.runtime import LlamaServer
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from tests.support.images import PNG


async def turn(session: Session, events: Any) -> list[Any]:
    return [event async for event in events]


def first_request(session: Session, conversation: int) -> list[dict[str, Any]]:
    """The messages of the last turn's first request, as they went to the server."""
    return session.traces[conversation][-1].steps[0].messages


def request_of(session: Session, conversation: int) -> dict[str, Any]:
    """The person's message in the last turn's first request (an answer in words that goes
    on from the word the gate's probe sampled has that word after it)."""
    return [m for m in first_request(session, conversation) if m["role"] == "user"][-1]


def text_of(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("kind") == "text")


async def test_the_chat_features_on_the_real_server(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    store = ChatStore(tmp_path / "chats.db")
    settings = Settings(backend="llamacpp", url=llama_server.base_url, temperature=0.7)
    session = Session(settings, store, SecretStore())
    assert (await session.connect()).ok
    try:
        c = session.new_conversation()
        session.set_system_prompt(c, "You are terse. Answer in one short sentence.")
        done = await turn(session, session.send(c, "What is the capital of Italy?"))
        assert done[-1].kind == "turn_finished", done[-1]
        system = text_of(first_request(session, c)[0])
        # The system prompt first, the tool block right after it: a prefix that holds.
        assert system.startswith("You are terse. Answer in one short sentence.\n\nYou can use")

        question = session.question_of(c, store.messages(c)[-1][0])

        def answer_start() -> int:  # the turn's first message after the question
            return next(seq for seq, _ in store.messages(c) if seq > question)

        first = answer_start()
        again = await turn(session, session.regenerate(c, store.messages(c)[-1][0]))
        assert again[-1].kind == "turn_finished"
        second = answer_start()
        assert store.branches(c, [second])[second].siblings == (first, second)
        session.show_branch(c, first)
        # The answer's words (an earlier turn's calls and results stay out of the prompt).
        shown = [
            m.text.strip()
            for seq, m in store.messages(c)
            if seq > question and m.role == "assistant" and m.text.strip()
        ]
        assert shown
        await turn(session, session.send(c, "And of Spain?"))
        sent = "\n".join(text_of(m) for m in first_request(session, c))
        assert all(text in sent for text in shown)  # the version on screen went out

        notes = tmp_path / "notes.txt"
        notes.write_text("Meeting moved to Thursday at 10.")
        attached = await read_attachment(notes, 2000)
        ask = f"{attached.as_prompt()}\n\nWhen is the meeting?"  # type: ignore[union-attr]
        await turn(session, session.send(c, ask))
        sent_last = text_of(request_of(session, c))
        assert "[Attached file: notes.txt]" in sent_last and "Thursday at 10" in sent_last

        # The bundled model cannot see: the picture stays in the chat, the words go, and
        # the server (which would refuse an image) answers.
        assert not session.connection.capabilities.vision
        seen = await turn(
            session, session.send(c, "What is in this picture?", [Image(PNG, "image/png")])
        )
        assert seen[-1].kind == "turn_finished", seen[-1]
        parts = request_of(session, c)["parts"]
        assert all(p.get("kind") != "image" for p in parts)
        asked = [m for _, m in store.messages(c) if m.role == "user" and not m.from_the_loop]
        assert asked[-1].images  # kept with the message (the model may have called a tool)
    finally:
        await session.close()
        store.close()
