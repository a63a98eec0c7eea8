"""Answers from documents: a question about Python's standard library answered by the model
through the app's session, with no documents, with the Library Reference as a collection
(searched as the app's default says, and before every answer), and with the right page
attached whole; side by side, on the same questions.

    .venv/bin/python -m bench answers [--questions 30] [--requantize Q3_K_S] [--docs DIR]
                                      [--only none|documents|always|attached ...]

The questions are `bench retrieval`'s (a module's own docstring, its name taken out;
Python's Library Reference from Debian's python3.11-doc), asked as "Which module of
Python's standard library is this: ...? Answer with its name." Right: the module's name is
in the answer. Cited: a citation [n] in the answer points at the module's page (only
where the documents were searched); of them by the app: the citation the app adds to an
answer that cites no passage itself (the passage its words point to). A source line
copied: the answer is a passage's source line ("[1] os.html — Navigation"), not a
sentence. Each question is asked in a new
conversation, after the app's calibration of the model on the built-in tools (one, kept
for every condition, as in the app when a person adds documents to a model already
calibrated).

Writes `bench/results/answers.md` and the answers in detail to `answers.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.accuracy import development_model
from bench.everyday import CONTEXT_SIZE, Seeded
from bench.retrieval import library_pages, questions
from desktop.core.calibration.store import CalibrationStore
from desktop.core.documents.attribution import app_citation
from desktop.core.documents.formats import sections_of
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.indexer import index_collection
from desktop.core.documents.tool import NAME
from desktop.core.events import TextDelta, ToolResult, TurnFailed, TurnFinished
from desktop.core.messages import Message, MessageMeta, fenced
from desktop.core.models.library import built_in_server
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings

# An attached page is cut to half the context, as the app lets a file be attached
# (characters, about four to a token).
ATTACHED_CHARS = 4 * CONTEXT_SIZE // 2
_CITATION = re.compile(r"\[(\d{1,3})\]")
# An answer that is a passage's source line copied ("[1] os.html — Navigation"), not a
# sentence: right by its file's name, yet no answer a person wants.
_HEADER = re.compile(r"^\s*\[\d{1,3}\] \S+\.\w+\b")


def asked(sentence: str) -> str:
    return f"Which module of Python's standard library is this: {sentence}? Answer with its name."


async def answer(session: Session, text: str) -> tuple[str, dict[int, str], float, bool]:
    """The answer, the sources the turn's document searches gave (number -> page name), and
    whether its citation is the app's (the answer's last piece, as `app_citation` adds it)."""
    conversation = session.new_conversation()
    sources: dict[int, str] = {}
    final, last, searched = "", "", [Message.user(text)]
    started = time.perf_counter()
    async for event in session.send(conversation, text):
        match event:
            case ToolResult() if event.name == NAME and event.retrieval is not None:
                found = enumerate(event.retrieval.sources(), 1)
                sources = {n: Path(s.path).stem for n, s in found}
                # With its sources, as the loop keeps it: the passages of a page vote together.
                meta = MessageMeta(sources=event.retrieval.sources())
                searched.append(Message.tool(event.id, NAME, event.content, meta=meta))
            case TextDelta():
                last = event.text
            case TurnFinished():
                final = event.text
            case TurnFailed():
                final = f"(failed: {event.message})"
            case _:
                pass
    own = final.removesuffix(last)
    by_app = bool(last) and own != final and app_citation(own, searched) == last
    return final, sources, time.perf_counter() - started, by_app


async def ask_all(session: Session, chosen: dict[str, str], how: str,
                  pages: Path) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for name, sentence in chosen.items():
        text = asked(sentence)
        if how == "attached":
            page = sections_of(f"{name}.html", (pages / f"{name}.html").read_bytes())
            whole = "\n\n".join(s.text for s in page)[:ATTACHED_CHARS]
            text = f"[Attached file: {name}.html]\n{fenced(whole)}\n\n{text}"
        reply, sources, seconds, by_app = await answer(session, text)
        right = bool(re.search(rf"\b{re.escape(name)}\b", reply))
        cited = any(sources.get(int(n)) == name for n in _CITATION.findall(reply))
        searched = name in sources.values()
        mark = "ok " if right else "BAD"
        print(f"  {how:9} {mark} {name:16} {reply[:70]!r}", flush=True)
        echoed = bool(_HEADER.match(reply))
        rows.append({"how": how, "module": name, "right": right, "cited": cited, "echoed": echoed,
                     "by_app": cited and by_app, "searched": searched, "seconds": seconds,
                     "answer": reply})  # fmt: skip
    return rows


HOWS = ("none", "documents", "always", "attached")


async def measure(url: str, chosen: dict[str, str], pages: Path, seed: int,
                  hows: list[str]) -> dict[str, Any]:  # fmt: skip
    base = make_provider("llamacpp", url)
    base.model = (await base.list_models() or [""])[0]
    await CapabilityCache().apply(base)
    provider = Seeded(base, seed)
    rows: list[dict[str, Any]] = []
    cards = {}
    # One calibration, on the built-in tools, kept for the three sessions: as in the app
    # when a person adds documents to a model already calibrated.
    calibrations = CalibrationStore(None)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "documents.sqlite3"
        index = DocumentIndex(path)
        index.add_sources("Python library reference", [pages])
        await index_collection(index, "Python library reference")
        index.close()
        for how in hows:
            store = ChatStore(Path(scratch) / f"chats-{how}.db")
            search = "always" if how == "always" else "auto"
            settings = Settings(backend="llamacpp", url=url, document_search=search)
            # A session closes the index it was given: each opens its own, as the app does.
            documents = DocumentIndex(path) if how in ("documents", "always") else None
            session = Session(settings, store, SecretStore(), calibrations=calibrations,
                              documents=documents)  # fmt: skip
            session.use_provider(provider, "llamacpp")
            card = session.calibration or await session.calibrate()
            cards[how] = {"misses_calls": card.misses_calls, "form": card.tool_form}
            print(f"{how}: calibrated, misses calls: {card.misses_calls}", flush=True)
            rows += await ask_all(session, chosen, how, pages)
            await session.close()
    await base.aclose()
    return {"cards": cards, "rows": rows}


def summary(label: str, result: dict[str, Any]) -> str:
    lines = ["| model | documents | right | cited (of right) | of them by the app | "
             "a source line copied | page searched | s per question |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    names = {"none": "none", "documents": "a collection, searched as the app's default says",
             "always": "a collection, searched before every answer",
             "attached": "the right page attached whole"}  # fmt: skip
    for how, shown in names.items():
        rows = [r for r in result["rows"] if r["how"] == how]
        if not rows:
            continue
        right = sum(r["right"] for r in rows)
        cited = sum(r["cited"] for r in rows if r["right"])
        by_app = sum(r.get("by_app", False) for r in rows if r["right"])
        echoed = sum(r.get("echoed", False) for r in rows)
        searched = sum(r["searched"] for r in rows)
        seconds = sorted(r["seconds"] for r in rows)[len(rows) // 2]
        searching = how in ("documents", "always")
        lines.append(f"| {label} | {shown} | {right}/{len(rows)} | "
                     f"{cited if searching else '—'} | {by_app if searching else '—'} | "
                     f"{echoed if searching else '—'} | "
                     f"{searched if searching else '—'} | {seconds:.1f} |")  # fmt: skip
    return "\n".join(lines)


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--requantize", metavar="TYPE")
    parser.add_argument("--docs", type=Path, help="an unpacked library/ folder of HTML pages")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=HOWS, action="append", help="these conditions only")
    parser.add_argument("--out", type=Path, default=Path("bench/results/answers.md"))
    args = parser.parse_args()
    pages = library_pages(args.docs)
    every = questions(pages)
    names = sorted(random.Random(args.seed).sample(sorted(every), min(args.questions, len(every))))
    chosen = {name: every[name] for name in names}
    model = development_model(args.requantize)
    server = await built_in_server(model, threads=2, context_size=CONTEXT_SIZE)
    await server.start()
    try:
        result = await measure(server.base_url, chosen, pages, args.seed, args.only or list(HOWS))
    finally:
        server.stop()
    text = summary(model.stem, result)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
