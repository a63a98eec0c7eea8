"""Words that say nothing of what a request is about: left out where requests are matched
against text by their words (a call's licence, a document search); and how a number is
written in text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

# A number as a person writes it: "7,006,652", "12.5", "95".
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def numbers_in(text: str) -> Iterator[Decimal]:
    """The numbers a text writes, as values: "7,006,652" and "7006652.0" are one."""
    for match in NUMBER.findall(text):
        yield Decimal(match.replace(",", ""))


_STOPWORDS_TEXT = """a about above after again all also am an and any are as at back be been
    before being below between both but by can could did do does doing done down during each
    even etc few first for from further get given got had has have having he her here hers him
    his how i if in instead into is it its just know let like made make me might more most much
    must my need new no nor not now of off on once one only or other our out over own per please
    same shall she should so some still such tell than that the their them then there these
    they thing things this those three through to too two under until up use used user using
    very via was way we well were what when where which while who whom why will with would you
    your yours yourself"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


# How people greet, thank, praise and take leave: words that ask nothing of a tool, so a
# request made only of these (and stopwords) is for the model's words alone.
_PLEASANTRIES = re.compile(
    r"\b(?:good (?:morning|afternoon|evening|night|day|one)|nice one|take care|see you|"
    r"hi|hello|hey|hiya|howdy|greetings|bye|goodbye|farewell|thanks?|thx|cheers|"
    r"appreciated?|welcome|cool|great|awesome|nice|perfect|wonderful|lovely|good|"
    r"ha(?:ha)*|lol|wow)\b",
    re.IGNORECASE,
)


def without_pleasantries(text: str) -> str:
    """The text with its greetings, thanks and goodbyes taken out: "Thanks, bye!" -> ", !"."""
    return _PLEASANTRIES.sub(" ", text)
