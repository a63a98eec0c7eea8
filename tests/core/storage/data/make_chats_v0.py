"""How chats-v0.db was made: with the ChatStore of commit cf33ccb (before branches), loaded
from that commit's desktop/core/storage/chats.py given as the first argument:

    git show cf33ccb:desktop/core/storage/chats.py > /tmp/chats_v0.py
    python tests/core/storage/data/make_chats_v0.py /tmp/chats_v0.py tests/core/storage/data/chats-v0.db
"""

import importlib.util
import sys
from pathlib import Path

from desktop.core.messages import Image, Message, ToolCall

spec = importlib.util.spec_from_file_location("chats_v0", sys.argv[1])
assert spec is not None and spec.loader is not None
old = importlib.util.module_from_spec(spec)
sys.modules["chats_v0"] = old  # dataclasses look their module up
spec.loader.exec_module(old)
target = Path(sys.argv[2])
target.unlink(missing_ok=True)
store = old.ChatStore(target)
first = store.create_conversation("Arithmetic")
for n in range(12):
    store.append(first, Message.user(f"What is {n} times 3?"))
    call = ToolCall(f"c{n}", "calculator", {"expression": f"{n}*3"})
    store.append(first, Message.assistant("", [call]))
    store.append(first, Message.tool(f"c{n}", "calculator", str(n * 3)))
    store.append(first, Message.assistant(f"{n} times 3 is {n * 3}."))
second = store.create_conversation("A picture")
png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
store.append(second, Message.user("What is in it?", [Image(png, "image/png")]))
store.append(second, Message.assistant("A test pattern."))
store.create_conversation("Empty")
store.close()
