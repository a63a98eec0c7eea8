"""Several servers saved at once, one chosen per conversation or preset: a turn goes to its
conversation's server, each with its own key, over real HTTP."""

from pathlib import Path

from desktop.core.events import TurnFinished
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.presets import Preset, PresetBook
from desktop.core.storage.servers import in_use, key_name, saved_as
from desktop.core.storage.settings import Settings
from tests.support.replay_server import Canned, ReplayServer
from tests.test_cli import PATH, content

MODELS = Canned.json({"object": "list", "data": [{"id": "m", "object": "model"}]})


def serving(server: ReplayServer, answer: str) -> None:
    server.route("GET", "/v1/models", MODELS)
    server.route("POST", PATH, lambda _: Canned(pieces=content(answer)))


async def answer(session: Session, conversation: int, text: str) -> str:
    events = [e async for e in session.send(conversation, text)]
    return next(e.text for e in events if isinstance(e, TurnFinished))


async def test_each_conversation_talks_to_its_own_server(tmp_path: Path) -> None:
    async with ReplayServer() as laptop, ReplayServer() as gpu:
        serving(laptop, "From the laptop.")
        serving(gpu, "From the GPU box.")
        settings = saved_as(Settings(backend="llamacpp", url=laptop.url), "Laptop")
        settings = saved_as(
            Settings(backend="llamacpp", url=gpu.url, headers={"X-Team": "ml"},
                     servers=settings.servers), "GPU box")  # fmt: skip
        secrets = SecretStore()
        secrets.set(key_name("GPU box"), "gpu-token")
        book = PresetBook(presets=[Preset("Assistant"), Preset("Heavy", server="GPU box")])
        store = ChatStore(tmp_path / "chats.db")
        session = Session(settings, store, secrets, tools=[], presets=book)
        try:
            assert (await session.connect()).ok and in_use(session.settings) == "GPU box"
            on_laptop, on_gpu, by_preset, either = (session.new_conversation() for _ in range(4))
            store.set_server(on_laptop, "Laptop")
            store.set_server(on_gpu, "GPU box")
            session.use_preset(by_preset, book.get("Heavy"))  # type: ignore[arg-type]
            assert await answer(session, on_laptop, "Hi") == "From the laptop."
            assert in_use(session.settings) == "Laptop" == session.connection.server
            assert await answer(session, either, "Hi") == "From the laptop."  # as in use
            assert await answer(session, by_preset, "Hi") == "From the GPU box."
            assert await answer(session, on_laptop, "Again") == "From the laptop."
            assert await answer(session, on_gpu, "Hi") == "From the GPU box."
            asked = [r for r in gpu.requests if r.path == PATH]
            assert len(asked) == 2
            assert all(r.headers.get("authorization") == "Bearer gpu-token" for r in asked)
            assert all(r.headers.get("x-team") == "ml" for r in asked)
            assert not any("authorization" in r.headers for r in laptop.requests)
            store.set_server(on_gpu, "Removed since")  # no longer saved: the one in use
            assert await answer(session, on_gpu, "Still there?") == "From the GPU box."
        finally:
            await session.close()
