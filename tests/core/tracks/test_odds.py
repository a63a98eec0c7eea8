def test_the_arguments_odds_are_the_mean_of_their_word_tokens() -> None:
    """From the first "arguments" on, tokens with letters or digits: parameter names and
    values; the tool's name and the JSON around them do not count."""
    import math

    from desktop.core.tracks.odds import arguments_odds

    tokens = [("[{", 0.1), ('"name', 0.2), ('":"', 0.3), ("search", 0.05), ('","', 0.4),
              ("arguments", 0.5), ('":{"', 0.01), ("query", 0.9), ('":"', 0.02), ("rust", 0.4),
              ('"}}]', 0.03)]  # fmt: skip
    assert math.isclose(arguments_odds(tokens) or 0, math.sqrt(0.9 * 0.4))
    assert arguments_odds([("[]", 0.5)]) is None
    assert arguments_odds([('{"arguments":{}}', 0.9)]) is None


def test_an_answer_goes_on_only_from_a_prose_opening() -> None:
    """A word may begin an answer the server continues; a call's opening, a tag (a
    thinking model's), bare space or a character cut in two may not."""
    from desktop.core.tracks.odds import prose_opening

    for token in ("The", " Leonardo", "4", "¡Hola"):
        assert prose_opening(token) == token
    for token in ("", " ", "\n", "{", ' {"', "[", "```", "<think>", "\ufffd", "!", "word " * 100):
        assert prose_opening(token) == "", token
