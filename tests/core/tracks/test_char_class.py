import re

import pytest

from desktop.core.tracks.char_class import as_class, characters, one_class


def test_a_pattern_of_one_class_repeated_is_read_as_that_class() -> None:
    char = one_class(r"^[0-9+\-*/ ]+$")
    assert char is not None and char.fullmatch("-") and not char.fullmatch("a")
    assert one_class("^[a-z]*$", re.IGNORECASE) is not None


@pytest.mark.parametrize("pattern", ["^(\\d+|x)$", "^[a-z]+", "[a-z]+$", "^[[a-z]]+$", 7, None])
def test_any_other_pattern_is_not(pattern: object) -> None:
    assert one_class(pattern) is None


def test_a_class_is_written_back_so_that_it_matches_the_same_characters() -> None:
    """Less those llama.cpp's converter would not read (it would take any string)."""
    char = one_class(r"^[0-9.\-\]\\^×÷ ]+$")
    assert char is not None
    chars = characters(char)
    assert {"×", "÷", "-", "]", "\\", "^", " ", "."} <= set(chars) and "a" not in chars
    written = as_class(chars)
    assert written is not None and "\\^" not in written and not written.startswith("[^")
    again = re.compile(written)
    assert all(again.fullmatch(c) for c in chars if c not in "]\\")
    assert not again.fullmatch("a") and not again.fullmatch("]") and not again.fullmatch("\\")
    assert as_class(["^"]) is None and as_class(['"']) is None
