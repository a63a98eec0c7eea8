"""A session offers the document search once a collection has passages, and a turn that
calls it gets the passages back, quoted and numbered."""

from pathlib import Path

from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.indexer import index_collection
from desktop.core.documents.tool import NAME
from desktop.core.events import ToolResult
from desktop.core.messages import ToolCall
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from tests.support.fakes import ScriptedProvider, Step


async def test_a_turn_searches_the_persons_documents(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "boat.md").write_text("# Kayak\nThe kayak is stored in the blue shed.\n")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), documents=index)
    assert NAME not in {t.name for t in session.tools.all}  # nothing to search yet
    index.add_sources("notes", [folder])
    await index_collection(index, "notes")
    session.refresh_documents()
    assert NAME in {t.name for t in session.tools.all}

    call = ToolCall("s1", NAME, {"query": "kayak stored"})
    provider = ScriptedProvider([Step(tool_calls=[call]), Step(chunks=["In the blue shed [1]."])])
    session.use_provider(provider)
    conversation = store.create_conversation("chat")
    results = [e async for e in session.send(conversation, "Where is my kayak?")
               if isinstance(e, ToolResult)]  # fmt: skip
    assert (
        results
        and "blue shed" in results[0].content
        and "[1] boat.md — Kayak" in results[0].content
    )
    fed_back = provider.requests[1].messages[-1]  # as the track words a result
    assert "blue shed" in fed_back.text and "search_documents" in fed_back.text
    await session.close()
