from desktop.core.messages import Message, ToolCall
from desktop.core.storage.chat_export import markdown_of


def test_a_result_holding_a_fence_stays_inside_its_block() -> None:
    call = ToolCall("c1", "read_file", {"path": "notes.md"})
    result = "before\n```python\nprint(1)\n```\nafter"
    markdown = markdown_of(
        "Notes",
        [
            Message.user("Read it"),
            Message.assistant("", [call]),
            Message.tool("c1", "read_file", result),
        ],
    )
    block = markdown.split("**Tool result: read_file**\n\n", 1)[1]
    fence = block.split("\n", 1)[0]
    assert fence == "````"
    assert block == f"{fence}\n{result}\n{fence}\n"


def test_system_prompt_is_not_exported() -> None:
    markdown = markdown_of("T", [Message.system("secret rules"), Message.user("hi")])
    assert "secret rules" not in markdown and "**You:**\n\nhi" in markdown
