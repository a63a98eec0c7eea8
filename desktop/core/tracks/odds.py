"""The odds a model showed for a call, read off its tokens' probabilities: of opening
one, and of the arguments it wrote."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_CALL_OPENERS = ("{", "[", "`")


def call_odds(alternatives: Iterable[tuple[str, float]]) -> float:
    """The probability that a token opens a call (`{`, `[` or a code fence)."""
    return sum(p for token, p in alternatives if token.lstrip().startswith(_CALL_OPENERS))


_ARGUMENTS_KEY = '"arguments"'
_WORDLIKE = re.compile(r"[^\W_]")


def arguments_odds(tokens: Iterable[tuple[str, float]]) -> float | None:
    """How sure the model was of the arguments it wrote under the grammar: the geometric
    mean of the probabilities (before the grammar) of the tokens with letters or digits
    from the first `"arguments"` on, parameter names and values. A model that calls where
    no tool fits makes its values up, and is unsure of them; values copied from the
    request are sure (docs/experiments/per-model-calibration.md). None if there were no
    such tokens."""
    text = ""
    logs = []
    for token, probability in tokens:
        if _ARGUMENTS_KEY in text and _WORDLIKE.search(token):
            logs.append(math.log(max(probability, 1e-12)))
        text += token
    return math.exp(sum(logs) / len(logs)) if logs else None


# Longer than any one token of a tokenizer: a server that sent more did not send a token.
_LONGEST_TOKEN = 64


def prose_opening(token: str) -> str:
    """`token` where an answer may go on from it as prose (a word, not a call's opening,
    a tag, bare space, part of a character or more than a token), else ""."""
    start = token.lstrip()
    if not _WORDLIKE.search(token) or start.startswith((*_CALL_OPENERS, "<")) or "\ufffd" in token:
        return ""
    return token if len(token) <= _LONGEST_TOKEN else ""
