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

BOAT = "# Kayak\nThe kayak is stored in the blue shed.\n"


async def indexed(index: DocumentIndex, folder: Path, files: dict[str, str]) -> Path:
    """`files` written into `folder`, read into `index` as a collection of the folder's name."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    index.add_sources(folder.name, [folder])
    await index_collection(index, folder.name)
    return folder


async def test_a_turn_searches_the_persons_documents(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "boat.md").write_text(BOAT)
    index = DocumentIndex(tmp_path / "index.sqlite3")
    (folder / "car.md").write_text("# Car\nThe car is parked in the street.\n")
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(document_search="tool"), store, SecretStore(), documents=index)
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
    retrieval = results[0].retrieval  # what the inspector shows of the search
    assert retrieval is not None and retrieval.query == "kayak stored"
    assert retrieval.methods == ("bm25",) and retrieval.collections == ("notes",)
    (passage,) = retrieval.passages
    assert passage.where == "boat.md — Kayak" and passage.scores["bm25"] > 0
    (trace,) = session.traces[conversation]
    assert results[0] in trace.steps[0].events and not trace.before
    await session.close()


async def test_by_default_the_model_gets_the_passages_before_it_answers(
    tmp_path: Path,
) -> None:
    from desktop.core.events import ToolCallParsed

    index = DocumentIndex(tmp_path / "index.sqlite3")
    folder = await indexed(index, tmp_path / "notes", {"boat.md": BOAT})
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), documents=index)
    provider = ScriptedProvider([Step(chunks=["In the blue shed [1]."]), Step(chunks=["Hi!"]),
                                 Step(chunks=["In the shed."])])  # fmt: skip
    session.use_provider(provider)
    conversation = store.create_conversation("chat")
    events = [e async for e in session.send(conversation, "Where is my kayak stored?")]
    (call,) = [e for e in events if isinstance(e, ToolCallParsed)]
    assert call.name == NAME and call.arguments == {"query": "Where is my kayak stored?"}
    asked = provider.requests[0].messages
    assert "blue shed" in asked[-1].text  # the model's first request already has them
    # Searched already: the turn does not offer the search again (a small model repeats it).
    assert "- search_documents:" not in asked[0].text and "- calculator:" in asked[0].text
    (trace,) = session.traces[conversation]  # kept apart, before the first request
    assert [e.kind for e in trace.before] == ["tool_call", "tool_started", "tool_result"]
    searched = trace.before[-1]
    assert isinstance(searched, ToolResult) and searched.retrieval is not None
    assert searched.retrieval.passages[0].path == str(folder / "boat.md")
    assert trace.to_dict()["before"][-1]["retrieval"]["query"] == "Where is my kayak stored?"
    kept = [m for _, m in store.messages(conversation)]
    assert [m.role for m in kept] == ["user", "assistant", "tool", "assistant"]
    hello = [e async for e in session.send(conversation, "Hello")]  # no passage matches
    assert not [e for e in hello if isinstance(e, ToolCallParsed)]
    # Left to the model ("tool"), nothing is searched before it answers.
    session.apply_settings(Settings(document_search="tool"))
    left = [e async for e in session.send(conversation, "Where is my kayak stored?")]
    assert not [e for e in left if isinstance(e, ToolCallParsed)]
    await session.close()


async def test_a_presets_collections_are_the_only_ones_searched(tmp_path: Path) -> None:
    from desktop.core.storage.presets import Preset

    index = DocumentIndex(tmp_path / "index.sqlite3")
    for name, text in (("home", "# Kayak\nThe kayak is in the shed."),
                       ("work", "# Kayak\nThe office kayak is in the lobby.")):  # fmt: skip
        await indexed(index, tmp_path / name, {"kayak.md": text})
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(document_search="always"), store, SecretStore(), documents=index)
    session.presets.put(Preset("Work", collections=("work",)))
    provider = ScriptedProvider([Step(chunks=["In the lobby [1]."])])
    session.use_provider(provider)
    conversation = store.create_conversation("chat")
    work = session.presets.get("Work")
    assert work is not None
    session.use_preset(conversation, work)
    events = [e async for e in session.send(conversation, "Where is the kayak?")]
    (searched,) = [e for e in events if isinstance(e, ToolResult)]
    assert "lobby" in searched.content and "shed" not in searched.content
    assert searched.retrieval is not None and searched.retrieval.collections == ("work",)
    assert session.library is not None
    narrowed = session.library.narrowed(session.offer([], "kayak"), ("work",))
    (search,) = [t for t in narrowed.tools if t.name == NAME]
    assert "collection" not in search.parameters["properties"]  # one collection: no choice

    # The conversation's own choice wins over its preset's.
    store.set_collections(conversation, ["home"])
    provider.script.append(Step(chunks=["In the shed [1]."]))
    again = [e async for e in session.send(conversation, "Where is the kayak?")]
    (searched,) = [e for e in again if isinstance(e, ToolResult)]
    assert "shed" in searched.content and "lobby" not in searched.content
    await session.close()


async def test_an_answer_that_cites_nothing_gets_the_passage_it_drew_on(tmp_path: Path) -> None:
    from desktop.core.events import TextDelta, TurnFinished

    index = DocumentIndex(tmp_path / "index.sqlite3")
    trailer = "# Kayak trailer\nThe kayak trailer is parked outside.\n"
    folder = await indexed(index, tmp_path / "notes", {"boat.md": BOAT, "car.md": trailer})
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), documents=index)
    provider = ScriptedProvider([Step(chunks=["In the blue ", "shed."]),
                                 Step(chunks=["It is stored in the blue shed [2]."])])  # fmt: skip
    session.use_provider(provider)
    conversation = store.create_conversation("chat")
    events = [e async for e in session.send(conversation, "Where is my kayak stored?")]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.retrieval is not None
    shed = 1 + [p.path for p in result.retrieval.passages].index(str(folder / "boat.md"))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == f"In the blue shed. [{shed}]"  # shown as it is added
    assert events[-1] == TurnFinished(0, text)
    assert [m for _, m in store.messages(conversation)][-1].text == text  # and kept
    # The model's own citation stands, right or wrong: the app adds none beside it.
    again = [e async for e in session.send(conversation, "Where is my kayak stored?")]
    assert again[-1] == TurnFinished(0, "It is stored in the blue shed [2].")
    await session.close()
