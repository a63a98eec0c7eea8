import json

import pytest

from desktop.core.messages import (
    Image,
    Message,
    TextPart,
    ToolCall,
    call_fingerprint,
    sniff_image_mime,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_conversation_round_trips_through_json() -> None:
    conversation = [
        Message.system("be brief"),
        Message.user("what is this?", [Image.from_bytes(PNG)]),
        Message.assistant("let me look", [ToolCall("c1", "zoom", {"factor": 2, "at": [1, 2]})]),
        Message.tool("c1", "zoom", '{"ok": true}'),
        Message.assistant("a dot"),
    ]
    text = json.dumps([m.to_dict() for m in conversation])
    restored = [Message.from_dict(raw) for raw in json.loads(text)]
    assert restored == conversation
    assert restored[1].images[0].data == PNG
    assert restored[2].tool_calls[0].arguments == {"factor": 2, "at": [1, 2]}
    assert restored[3].tool_call_id == "c1" and restored[3].name == "zoom"


def test_text_joins_text_parts_and_skips_images() -> None:
    message = Message("user", [TextPart("a"), Image.from_bytes(PNG), TextPart("b")])
    assert message.text == "ab"
    assert len(message.images) == 1


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0rest", "image/jpeg"),
        (b"GIF89a....", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"<svg xmlns=...>", None),
        (b"BM\x00\x00", None),
    ],
)
def test_image_sniffing(data: bytes, mime: str | None) -> None:
    assert sniff_image_mime(data) == mime


def test_image_from_unknown_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="not a PNG"):
        Image.from_bytes(b"<svg/>")


def test_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="role"):
        Message.from_dict({"role": "function", "parts": []})


def test_image_data_url() -> None:
    assert Image.from_bytes(PNG).data_url().startswith("data:image/png;base64,iVBORw0KGgo")


def test_fingerprint_ignores_key_order() -> None:
    """Edge case 14: {a:1,b:2} and {b:2,a:1} are the same call."""
    fingerprint = call_fingerprint
    assert fingerprint("t", {"a": 1, "b": 2}) == fingerprint("t", {"b": 2, "a": 1})
    assert fingerprint("t", {"a": {"x": 1, "y": 2}}) == fingerprint("t", {"a": {"y": 2, "x": 1}})
    assert fingerprint("t", {"a": 1}) != fingerprint("u", {"a": 1})
    assert fingerprint("t", {"a": 1}) != fingerprint("t", {"a": "1"})


def test_a_messages_meta_is_typed_and_stored_as_it_always_was() -> None:
    """The meta of each kind of message, as versions before the typed record stored it, reads
    into the record and writes back the same JSON; keys a newer version adds are kept."""
    from desktop.core.messages import Image, Message, MessageMeta

    png = Image.from_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 30)
    stored = [
        {"duration_ms": 12.5, "error": None, "images": [png.to_dict()]},
        {"duration_ms": 3.0, "error": "Tool x timed out", "images": [png.to_dict()],
         "sent_to_model": False},
        {"stage": "repeat"},
        {"step_notes": 2},
        {"tool_images": 1, "sent_to_model": True},
        {"stopped": True},
        {"stage": "denied", "from_a_newer_version": [1, 2]},
    ]  # fmt: skip
    for meta in stored:
        message = Message.from_dict({"role": "tool", "parts": [], "meta": meta})
        assert isinstance(message.meta, MessageMeta)
        assert message.to_dict()["meta"] == meta
    odd = Message.from_dict({"role": "tool", "parts": [], "meta": {"duration_ms": "slow"}})
    assert odd.meta.duration_ms is None and odd.meta.other == {}


def test_the_fences_around_quotes_are_taken_away_for_a_person_and_only_they() -> None:
    from desktop.core.messages import fenced, unfenced

    inner = "a\n```\nits own fence stays\n```\nb"
    text = f"exit code 0\noutput:\n{fenced(inner)}\nerrors:\n{fenced('oops')}"
    assert unfenced(text) == f"exit code 0\noutput:\n{inner}\nerrors:\noops"
    assert unfenced("```\nnever closed") == "```\nnever closed"
    assert unfenced("no quotes") == "no quotes"
