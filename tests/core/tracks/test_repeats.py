import pytest

from desktop.core.tracks.repeats import REPEATING, TIMES, RepeatGuard

ITEM = "**Prepare for the interview**: Practice answering common questions."


def streamed(text: str, size: int = 1) -> tuple[str, RepeatGuard]:
    """`text` fed in chunks of `size`: what was let through, and the guard."""
    guard = RepeatGuard()
    out = "".join(guard.feed(text[i : i + size]) for i in range(0, len(text), size))
    return out + guard.flush(), guard


def numbered(first: int, lines: list[str]) -> str:
    return "".join(f"{n}. {line}\n" for n, line in enumerate(lines, start=first))


def test_a_list_that_loops_ends_after_its_first_saying() -> None:
    head = numbered(1, ["Review the job description.", "Prepare a resume with care."])
    looping = head + numbered(3, [ITEM] * 20)
    for size in (1, 7, len(looping)):
        out, guard = streamed(looping, size)
        assert out == head + f"3. {ITEM}\n"
        assert guard.cut is not None and guard.cut.name == REPEATING
        assert guard.cut.at == len(out)


def test_a_block_of_lines_said_over_and_over_keeps_one_saying() -> None:
    block = "The sky is grey and low today.\nThe snow falls on the quiet town.\n\n"
    out, guard = streamed("A poem:\n" + block * 10)
    assert out == "A poem:\n" + block
    assert guard.cut is not None


def test_a_loop_round_five_items_is_ended_after_its_first_round() -> None:
    items = [f"**Prepare your {what}**: bring it, and know it well." for what in
             ("questions", "materials", "schedule", "attire", "experience")]  # fmt: skip
    head = numbered(1, ["Research the company and its culture."])
    out, guard = streamed(head + numbered(2, items * 6))
    assert out == head + numbered(2, items)
    assert guard.cut is not None


def test_nothing_of_a_cut_saying_is_ever_shown_not_even_its_start() -> None:
    guard = RepeatGuard()
    shown = guard.feed(f"1. {ITEM}\n")
    for n in range(2, 2 + TIMES):
        for piece in (f"{n}", ". ", ITEM[:10], ITEM[10:], "\n"):
            shown += guard.feed(piece)
    assert shown == f"1. {ITEM}\n"
    assert guard.cut is not None


def test_a_line_that_begins_like_the_last_is_held_only_until_it_differs() -> None:
    guard = RepeatGuard()
    assert guard.feed(f"1. {ITEM}\n") == f"1. {ITEM}\n"
    assert guard.feed("2. **Prepare") == ""  # it may be the same item again
    assert guard.feed(" a list of questions**\n") == "2. **Prepare a list of questions**\n"


@pytest.mark.parametrize(
    "answer",
    [
        "\n".join(["I will not talk in class."] * (TIMES - 1)) + "\nDone.",  # asked three times
        "Row, row, row your boat, gently down the stream.\n"
        "Merrily, merrily, merrily, merrily, life is but a dream.\n" * 2,  # a refrain, twice
        "```python\n" + "    self.assertEqual(result, expected)\n" * 8 + "```\n",  # code
        "Yes.\n" * 12,  # too short a line to tell a loop by
        numbered(1, [f"{ITEM} Step {n}." for n in range(12)]),  # alike, not the same
        f"{ITEM}\n{ITEM}\nSomething else entirely, to break the run.\n{ITEM}\n{ITEM}\n",
    ],
)
def test_answers_that_do_not_loop_pass_whole(answer: str) -> None:
    for size in (1, 5, len(answer)):
        out, guard = streamed(answer, size)
        assert out == answer and guard.cut is None


def test_a_loop_the_model_ended_by_itself_is_left_out_too() -> None:
    head = numbered(1, ["Research the job description carefully."])
    out, guard = streamed(head + "\n".join(f"{n}. {ITEM}" for n in range(2, 2 + TIMES)))
    assert out == head + f"2. {ITEM}\n"
    assert guard.cut is not None


def test_a_run_held_when_the_answer_ends_is_shown() -> None:
    answer = f"{ITEM}\n{ITEM}\n{ITEM}"
    out, guard = streamed(answer)
    assert out == answer and guard.cut is None


def test_a_stretch_said_over_and_over_in_one_line_ends_the_answer() -> None:
    """A model may loop inside a line ("= 7777..." until its budget runs out): the answer
    ends there, its first saying kept; of the rest, no more than a second saying's first
    characters are shown (before they could be told from the next word)."""
    for stretch in ("7", "ha", "and so "):
        said = "1234 * 5678 = " + stretch
        for size in (1, 5, len(said) + 200 * len(stretch)):
            out, guard = streamed(said + stretch * 200, size)
            assert out.startswith(said) and len(out) < len(said) + len(stretch), (stretch, size)
            assert guard.cut is not None and guard.cut.name == REPEATING
            assert guard.cut.at == len(out)


def test_a_short_run_in_a_line_is_held_only_until_it_ends() -> None:
    guard = RepeatGuard()
    shown = guard.feed("A billion is 1")
    shown += guard.feed("000000")
    assert shown == "A billion is 10"  # the zeros may be a loop
    shown += guard.feed("000 (nine zeros).")
    assert shown == "A billion is 1000000000 (nine zeros)."
    out, guard = streamed("Ha" + "ha" * 10 + "! Good one.\n" + "-" * 80 + "\n| --- " * 20)
    assert out.startswith("Hahahahahahahahahahaha! Good one.\n" + "-" * 80)
    assert guard.cut is None  # punctuation runs (a rule, a table) are left alone
    assert streamed("It costs 1000000")[0] == "It costs 1000000"  # shown when it ends


SENTENCE = "The gear shaft is also connected to the gear seat housing, which is metal."


def test_a_sentence_said_over_and_over_in_one_paragraph_ends_the_answer() -> None:
    """A paragraph that loops never ends its line: its sentences are counted as lines."""
    head = "A bicycle gear turns the wheel. It has a disc and a housing. "
    looping = head + " ".join([SENTENCE] * 40)
    for size in (1, 7, len(looping)):
        out, guard = streamed(looping, size)
        assert out == f"{head}{SENTENCE} ", size
        assert guard.cut is not None and guard.cut.name == REPEATING
        assert guard.cut.at == len(out)


def test_a_round_of_sentences_in_one_paragraph_keeps_one_round() -> None:
    first, second = (
        "The disc turns the chain round and round.",
        "The chain turns the wheel at the back!",
    )
    out, guard = streamed("Here is how. " + f"{first} {second} " * 10)
    assert out == f"Here is how. {first} {second} "
    assert guard.cut is not None


def test_a_clause_said_over_and_over_in_a_sentence_that_never_ends_ends_the_answer() -> None:
    clause = "it is a natural process that occurs when a volcano erupts, "
    looping = "A volcano erupts when a volcano erupts, " + clause * 40
    for size in (1, 7, len(looping)):
        out, guard = streamed(looping, size)
        assert out == "A volcano erupts when a volcano erupts, " + clause, size
        assert guard.cut is not None


def test_a_paragraph_loop_the_model_ended_by_itself_is_left_out_too() -> None:
    out, guard = streamed("Gears:\n" + " ".join([SENTENCE] * TIMES) + "\nThat is all.")
    assert out == f"Gears:\n{SENTENCE} "
    assert guard.cut is not None


@pytest.mark.parametrize(
    "answer",
    [
        " ".join(["I will not talk in class again."] * (TIMES - 1)) + " Done.",  # asked thrice
        "Yes. " * 12 + "No.",  # too short a sentence to tell a loop by
        "The disc is metal. The housing is metal. The seat is metal. The chain is metal.",
        f"{SENTENCE} Then the chain moves. {SENTENCE} Then the wheel turns. {SENTENCE}",
        "Steps: 1. Open the lid of the box. 2. Take out the gear. 3. Close the lid again.",
        "```\n" + "assert total == 4. " * 8 + "\n```\n",  # code
        "Row, row, row your boat, gently down the stream; merrily, merrily, merrily, merrily.",
        "I packed a towel, a towel for the beach, a hat, a hat for the sun, and sunscreen.",
        "It costs 1,000,000 dollars: 1,000,000 is a lot, and 1,000,000 is what it costs.",
    ],
)
def test_paragraphs_that_do_not_loop_pass_whole(answer: str) -> None:
    for size in (1, 5, len(answer)):
        out, guard = streamed(answer, size)
        assert out == answer and guard.cut is None


def test_a_sentence_that_begins_like_an_earlier_one_is_held_only_until_it_differs() -> None:
    guard = RepeatGuard()
    assert guard.feed(f"{SENTENCE} ") == f"{SENTENCE} "
    assert guard.feed("The gear") == ""  # it may be the same sentence again
    assert guard.feed(" disc is plastic.") == "The gear disc is plastic."
