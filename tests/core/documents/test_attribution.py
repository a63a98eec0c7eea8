"""The app's citation: the passage an answer's own words point to, where it cites none."""

from desktop.core.documents.attribution import app_citation, drawn_from, passages_in
from desktop.core.documents.index import Hit
from desktop.core.documents.tool import NAME, passages_text
from desktop.core.messages import Message, ToolCall


def hit(path: str, text: str, heading: str = "") -> Hit:
    return Hit(0, "docs", path, None, heading, 0, len(text), text, 1.0)


PASSAGES = [
    hit("/docs/shutil.html", "shutil offers high-level operations on files: copying and removal."),
    hit("/docs/os.html", "os gives a portable way of using operating system functionality."),
    hit("/docs/glob.html", "glob finds pathnames matching a pattern, like the Unix shell."),
]
REQUEST = "Which module copies files and removes trees? Answer with its name."


def turn(answer_passages: list[Hit] = PASSAGES, request: str = REQUEST) -> list[Message]:
    call = ToolCall("c1", NAME, {"query": request})
    return [
        Message.user(request),
        Message.assistant("", [call]),
        Message.tool("c1", NAME, passages_text(request, answer_passages)),
    ]


def test_passages_are_read_back_as_the_tool_wrote_them_even_with_fences_inside() -> None:
    tricky = hit("/docs/x.md", "before\n```\nnot the end\n```\nafter [9] still text")
    written = passages_text("q", [PASSAGES[0], tricky])
    assert passages_in(written) == {1: PASSAGES[0].text, 2: tricky.text}
    assert passages_in("no passages here [1] at all") == {}


def test_the_passage_the_answers_words_point_to_is_cited() -> None:
    assert app_citation("It is shutil.", turn()) == " [1]"
    assert app_citation("The os module, for operating system calls.", turn()) == " [2]"


def test_nothing_is_cited_where_the_answer_cites_or_draws_on_no_passage() -> None:
    assert app_citation("It is shutil [1].", turn()) == ""  # the model's own citation
    assert app_citation("I do not know.", turn()) == ""  # no word of any passage
    # The request's own words are no evidence: every passage was found by them.
    assert app_citation("A module that copies files.", turn()) == ""
    assert app_citation("It is shutil.", turn()[:1]) == ""  # no search in this turn
    assert app_citation("", turn()) == ""


def test_an_answer_split_between_passages_gets_no_source() -> None:
    # "shutil" points to [1] and "glob" to [3]: neither holds more than half.
    assert drawn_from("shutil or glob", REQUEST, passages_in(turn()[2].text)) is None
    # A word two passages hold is shared by how often each holds it.
    passages = {1: "zip zip zip archive", 2: "zip files"}
    assert drawn_from("zip", "", passages) == 1
    assert drawn_from("zip files", "", passages) == 2  # 3/4 + 0 against 1/4 + 1


def test_the_citation_goes_on_a_line_of_its_own_after_a_block() -> None:
    assert app_citation("Use shutil:\n```\nshutil.copy(a, b)\n```", turn()) == "\n\n[1]"
    assert app_citation("shutil\n", turn()) == "\n\n[1]"


def test_only_the_turns_latest_search_is_cited() -> None:
    again = [*turn(), Message.assistant("", [ToolCall("c2", NAME, {"query": "pathnames"})])]
    again.append(Message.tool("c2", NAME, passages_text("pathnames", [PASSAGES[2]])))
    assert app_citation("glob does that.", again) == " [1]"  # the later search's numbering
    assert app_citation("It is shutil.", again) == ""  # not among the later passages


def test_the_passages_of_one_page_vote_together() -> None:
    passages = {1: "pipes pipes shell", 2: "pipes shell", 3: "shell shell shell"}
    # Alone, no passage holds more than half of the two votes (1 has 2/3 + 1/5)...
    assert drawn_from("pipes shell", "", passages) is None
    # ...but 1 and 2 are one page: together they do, and the one with more votes is cited.
    same_page = {1: ("/docs/pipes.html", None), 2: ("/docs/pipes.html", None), 3: "other"}
    assert drawn_from("pipes shell", "", passages, same_page) == 1
