"""A string schema's pattern read as one character class repeated (`^[0-9+*/ ]+$`): the
only shape of pattern the licence and the narrowed grammar reason about; any other may let
a value hold anything, as far as they know."""

from __future__ import annotations

import re
import string
from typing import Any

_ONE_CLASS = re.compile(r"\^(\[(?:\\.|[^\]\\])+\])[+*]\$")
# Sets inside sets are read otherwise by newer Pythons (and warned of): not read here.
_SET_OPERATIONS = ("[", "--", "&&", "~~", "||")


def one_class(pattern: Any, flags: int = 0) -> re.Pattern[str] | None:
    """The class a pattern repeats, compiled to match one character (None: another shape)."""
    found = _ONE_CLASS.fullmatch(pattern) if isinstance(pattern, str) else None
    if found is None or any(op in found.group(1)[1:] for op in _SET_OPERATIONS):
        return None
    try:
        return re.compile(found.group(1), flags)
    except re.error:
        return None


def characters(char: re.Pattern[str]) -> list[str]:
    """The characters a one-character class matches among the printable ASCII ones and
    those its own text names (a class may list "×" and "÷"), in code point order."""
    candidates = set(string.printable) | set(char.pattern)
    return sorted(c for c in candidates if c.isprintable() and char.fullmatch(c))


# llama.cpp's converter reads `\-` in a class but no other escape of these (it accepts any
# string instead), and a quote or a backslash would need JSON's escaping inside the string.
_UNWRITTEN = frozenset('\\[]"')


def as_class(chars: list[str]) -> str | None:
    """Characters written as a class that Python's regex engine and llama.cpp's grammar
    read alike, less the few neither writes plainly (None: none left)."""
    kept = [c for c in chars if c not in _UNWRITTEN]
    # A caret is literal anywhere but first.
    kept = sorted(kept, key=lambda c: c == "^")
    if not kept or kept == ["^"]:
        return None
    return "[" + "".join("\\-" if c == "-" else c for c in kept) + "]"
