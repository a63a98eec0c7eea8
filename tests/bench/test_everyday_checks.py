import json

from bench.everyday import DATA, read_set
from bench.everyday_checks import Expected, judge, number_forms, states_result

CLOCK = json.dumps({"iso": "2026-12-04T15:07:09+00:00", "date": "2026-12-04",
                    "time": "15:07:09", "weekday": "Friday", "timezone": "UTC"})  # fmt: skip


def test_the_set_is_two_halves_of_conversations_with_twenty_quiet_turns_each() -> None:
    for half in ("dev", "held-out"):
        conversations = read_set(DATA, half)
        turns = [t for c in conversations for t in c["turns"]]
        assert all(5 <= len(c["turns"]) <= 10 for c in conversations)
        assert len(turns) >= 30
        assert sum(t["tool"] is None for t in turns) >= 20
        assert {t["tool"] for t in turns} <= {None, "calculator", "current_time", "create_chart"}
    assert len(read_set(DATA, "both")) == len(read_set(DATA, "dev")) + len(
        read_set(DATA, "held-out")
    )


def test_a_calculator_result_is_found_however_it_is_written() -> None:
    assert {"7006652", "7,006,652"} <= number_forms("7006652")
    assert "133.8" in number_forms("133.75")
    assert states_result("calculator", '{"expression": "1234 * 5678", "result": 7006652}',
                         "That makes 7,006,652.")  # fmt: skip
    assert not states_result("calculator", '{"result": 7006652}', "Hello! How can I help?")


def test_the_clock_is_used_by_its_weekday_time_or_date() -> None:
    assert states_result("current_time", CLOCK, "Today is Friday.")
    assert states_result("current_time", CLOCK, "It is 3:07 in the afternoon.")
    assert states_result("current_time", CLOCK, "It's December 4, 2026.")
    assert not states_result("current_time", CLOCK, "I'm sorry, I can't assist with that.")


def test_a_right_turn_and_each_way_a_turn_goes_wrong() -> None:
    sum_of = Expected("What is 1234 * 5678?", "calculator", ("7006652", "7,006,652"), True)
    result = {"calculator": '{"result": 7006652}'}
    assert judge(sum_of, ["calculator"], result, "It is 7,006,652.").right
    ignored = judge(sum_of, ["calculator"], result, "Hello! How can I assist you today?")
    assert ignored.result_ignored and ignored.missing and not ignored.right
    missed = judge(sum_of, [], {}, "It is 7006652.")
    assert missed.missed_call and missed.problems() == ["missed call"]
    again = judge(sum_of, ["calculator", "calculator"], result, "7006652", repeats=1)
    assert again.problems() == ["a call made again"]
    hello = Expected("Say hello in five words.", None)
    assert judge(hello, [], {}, "Hello there, how are you?").right
    called = judge(hello, ["current_time", "calculator"], {}, "Hi!")
    assert called.unwanted_calls == ["current_time", "calculator"]


def test_loomchat_formats_and_written_calls_are_caught() -> None:
    hello = Expected("Hi", None)
    transcript = "Earlier in this conversation:\nUser: hi\nYou: hello"
    assert judge(hello, [], {}, transcript).loomchat_format
    assert judge(hello, [], {}, "[Result of calculator] Error: x").loomchat_format
    assert judge(hello, [], {}, 'I called translate with {"input": "x"}').loomchat_format
    assert not judge(hello, [], {}, "I called my mother with the news.").loomchat_format
    fenced = 'I\'ll use the calculator:\n```json\n{"name": "calculator", "arguments": {}}\n```'
    assert judge(hello, [], {}, fenced).call_shaped
    assert judge(hello, [], {}, "I'm sorry, I can't assist with that.").refusal
    assert judge(hello, [], {}, "   ").refusal


def test_a_chart_of_numbers_nobody_gave_is_wrong() -> None:
    chart = Expected("Make a bar chart of those sales.", "create_chart", (), True)
    drew = {"create_chart": "Created a bar chart titled 'Sales' with 3 data points."}
    said = "Our sales this year were: Jan 120, Feb 95, Mar 140, Apr 1,180.\nThanks!"
    theirs = {"type": "bar", "title": "Sales", "labels": ["Jan", "Feb", "Mar", "Apr"],
              "values": [120, 95.0, 140, 1180]}  # fmt: skip
    assert judge(chart, ["create_chart"], drew, "Here it is.", said=said,
                 drawn={"create_chart": theirs}).right  # fmt: skip
    example = {**theirs, "labels": ["Jan", "Feb", "Mar"], "values": [10, 14, 9]}
    copied = judge(chart, ["create_chart"], drew, "Here it is.", said=said,
                   drawn={"create_chart": example})  # fmt: skip
    assert copied.made_up_data and copied.problems() == ["chart of numbers nobody gave"]
    second = {**theirs, "more_series": [{"name": "costs", "values": [1, 2, 3, 4]}]}
    assert judge(chart, ["create_chart"], drew, "Here.", said=said,
                 drawn={"create_chart": second}).made_up_data  # fmt: skip
    assert judge(chart, ["create_chart"], drew, "Here.", said=said + " costs 1, 2, 3, 4",
                 drawn={"create_chart": second}).right  # fmt: skip
