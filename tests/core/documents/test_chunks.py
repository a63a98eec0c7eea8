from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.core.documents.chunks import chunk
from desktop.core.documents.formats import Section


def test_a_short_section_is_one_passage_with_its_place() -> None:
    (only,) = chunk([Section("Hello there.", 3, "Intro")])
    assert (only.text, only.page, only.heading, only.start, only.end) == (
        "Hello there.",
        3,
        "Intro",
        0,
        12,
    )


def test_long_text_is_cut_at_paragraphs_with_a_little_overlap() -> None:
    paragraphs = [f"Paragraph {n} " + "word " * 60 for n in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = chunk([Section(text)], target=800, overlap=120)
    assert len(chunks) > 3
    for c in chunks:
        assert len(c.text) <= 800
        assert c.text == text[c.start : c.end].strip()
    for before, after in pairwise(chunks):
        assert before.start < after.start <= before.end  # in order, touching or overlapping
        assert before.end - after.start <= 120


def test_passages_never_span_two_sections() -> None:
    chunks = chunk([Section("a " * 400, 1), Section("b " * 400, 2)], target=300)
    assert {c.page for c in chunks if "a" in c.text} == {1}
    assert {c.page for c in chunks if "b" in c.text} == {2}


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=4000), st.integers(50, 1500), st.integers(0, 300))
def test_every_character_is_in_some_passage_and_cutting_ends(
    text: str, target: int, overlap: int
) -> None:
    chunks = chunk([Section(text)], target=target, overlap=overlap)
    covered: set[int] = set()
    for c in chunks:
        assert c.end - c.start <= target
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
