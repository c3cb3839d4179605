"""What a Llama raises once close() has released its model."""

from __future__ import annotations


class LlamaClosedError(RuntimeError):
    """The Llama was closed (close(), or the end of its ``with`` block)."""

    def __init__(self) -> None:
        super().__init__("this Llama is closed (close() or its with-block ended): create a new Llama to use the model")
