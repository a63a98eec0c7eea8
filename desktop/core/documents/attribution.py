"""The citation a small model leaves out: which of a turn's passages its answer draws on.

Asked to cite the passages it uses by number, a small model mostly does not, or copies a
passage's source line as its answer; yet the passage it answered from shows in its words.
An answer that cites none of the turn's passages gets the app's own citation: the passage
its words point to. Each word of the answer that the request did not say and some passage
holds is one vote, shared among the passages by how often each holds it. A citation opens
a file at its page, so the passages of one page vote together: a page with more than half
of all the votes is the one, and its passage with the most of them is cited. Where no page
has that, nothing is cited: an answer that could have come from anywhere gets no source.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence

from desktop.core.documents.tool import NAME, sources_of
from desktop.core.messages import Message
from desktop.core.words import STOPWORDS

# As `tool.passages_text` writes a passage: "[2] manual.pdf, page 4 — Setup", then the
# passage in a fence of three or more backticks that its text cannot close.
_PASSAGE = re.compile(r"^\[(\d{1,3})\] [^\n]*\n(`{3,})\n(.*?)\n\2$", re.MULTILINE | re.DOTALL)
_CITATION = re.compile(r"\[(\d{1,3})\]")
# Names as well as words: "os", "json", "shutil.copy" (its parts count apart).
_WORD = re.compile(r"[^\W_]{2,}")


def passages_in(result: str) -> dict[int, str]:
    """A search_documents result's passages by their numbers (none in any other text)."""
    return {int(m.group(1)): m.group(3) for m in _PASSAGE.finditer(result)}


def _words(text: str) -> list[str]:
    found = (w.casefold() for w in _WORD.findall(text))
    return [w for w in found if w not in STOPWORDS and not w.isdigit()]


def drawn_from(
    answer: str,
    request: str,
    passages: Mapping[int, str],
    places: Mapping[int, Hashable] | None = None,
) -> int | None:
    """The passage the answer's own words point to (see the module), or None. `places`:
    each passage's file and page, where passages of one vote together (by default each
    passage is a place of its own)."""
    said = set(_words(request))
    counts = {number: Counter(_words(text)) for number, text in passages.items()}
    votes: dict[int, float] = {}
    total = 0
    for word in set(_words(answer)) - said:
        held = {number: count[word] for number, count in counts.items() if count[word]}
        if not held:
            continue
        share = sum(held.values())
        for number, times in held.items():
            votes[number] = votes.get(number, 0.0) + times / share
        total += 1
    place_of = {n: (places or {}).get(n, n) for n in passages}
    by_place: dict[Hashable, float] = {}
    for number, vote in votes.items():
        by_place[place_of[number]] = by_place.get(place_of[number], 0.0) + vote
    if not by_place:
        return None
    place = max(by_place, key=lambda p: by_place[p])
    if by_place[place] <= total / 2:
        return None
    return max((n for n in votes if place_of[n] == place), key=lambda n: (votes[n], -n))


def app_citation(answer: str, turn: Sequence[Message]) -> str:
    """What the app adds to the answer that ends `turn` (the person's request and what
    followed it): " [n]" for the passage drawn on, where the turn searched the documents
    and the answer cites none of the passages itself; else nothing."""
    if not turn or not answer.strip():
        return ""
    results = [m for m in turn if m.role == "tool" and m.name == NAME]
    passages = passages_in(results[-1].text) if results else {}
    if not passages or any(int(n) in passages for n in _CITATION.findall(answer)):
        return ""
    places = {n: (s.path, s.page) for n, s in sources_of(results[-1]).items()}
    number = drawn_from(answer, turn[0].text, passages, places)
    if number is None:
        return ""
    # After a code block, a table or a line break, on a line of its own: never inside them.
    last = answer.rstrip().splitlines()[-1]
    apart = answer != answer.rstrip() or last.startswith(("`", "~", "|", "    ", "\t"))
    return ("\n\n" if apart else " ") + f"[{number}]"
