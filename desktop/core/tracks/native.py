"""The native track: the backend's own tool calling, with calls the model wrote as text
found as on the emulated track."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from desktop.core.events import ProviderEvent
from desktop.core.messages import Message
from desktop.core.providers.base import ProviderWrapper, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.emulated import calls_from_text, known_names
from desktop.core.tracks.prompt import emulated_history


class NativeTools(ProviderWrapper):
    """Native tool calling, plus calls the model wrote as JSON text instead of in its
    template's call syntax (which the server then does not recognise): they are found in
    the text as on the emulated track.

    Once tools are withdrawn, the history goes as plain messages, as on the emulated track:
    a model shown its own calls in its template's syntax tends to write one more.
    """

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        withdrawn = not tools and any(m.role == "tool" for m in messages)
        history = emulated_history(messages, []) if withdrawn else messages
        source = self.inner.stream(history, tools, options)
        return calls_from_text(source, known_names(messages, tools))
