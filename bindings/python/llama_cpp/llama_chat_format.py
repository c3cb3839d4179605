"""``llama_cpp.llama_chat_format``: the chat_format names Llama() takes.

ferrite renders chats with its own templates (the model's
``tokenizer.chat_template`` through a sandboxed Jinja interpreter, or a
built-in one by name); llama-cpp-python's formatter functions and handler
registry are not provided."""

from __future__ import annotations

from typing import List

from ferrite.llama_chat import CHAT_FORMATS


def chat_format_names() -> List[str]:
    """The chat_format values Llama() accepts (besides a template file)."""
    return sorted(CHAT_FORMATS)
