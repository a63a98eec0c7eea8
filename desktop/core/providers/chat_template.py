"""Render a conversation into one prompt string with the model's own chat template.

For backends that take a raw prompt (KoboldCPP's KoboldAI API). The template is the
Jinja text the model ships (as llama.cpp and KoboldCPP report it in `/props`); it runs in
Jinja's sandbox. Without one, or if it fails, ChatML is used: most instruct models today
were trained on it or tolerate it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from desktop.core.messages import Message

CHATML_STOP = "<|im_end|>"


def _raise(message: str) -> NoReturn:
    raise TemplateError(message)


def chatml(messages: Sequence[Message]) -> str:
    turns = [f"<|im_start|>{m.role}\n{m.text}<|im_end|>\n" for m in messages]
    return "".join(turns) + "<|im_start|>assistant\n"


def render_prompt(
    messages: Sequence[Message],
    template: str | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
) -> tuple[str, bool]:
    """(prompt, whether the model's own template was used)."""
    if template:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise
        wire: list[dict[str, Any]] = [{"role": m.role, "content": m.text} for m in messages]
        try:
            prompt = env.from_string(template).render(
                messages=wire,
                add_generation_prompt=True,
                bos_token=bos_token,
                eos_token=eos_token,
            )
            return prompt, True
        except Exception:  # any fault in a model's template: fall back, never fail the turn
            pass
    return chatml(messages), False
