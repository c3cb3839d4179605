"""Text completions in llama-cpp-python's shapes, whole or streamed.

A generation step from the engine is a tuple
``(token, piece, text, logprob, top, finish)``: the sampled token (-1 when
the step only ends the generation), its bytes, the text that may be shown
now, log p(token), the best alternatives ``[(id, logprob)]`` and the finish
reason (None while generating, else "stop" or "length").
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .llama_grammar import grammar_text

Step = Tuple[int, bytes, str, float, List[Tuple[int, float]], Optional[str]]


@dataclass
class CompletionRequest:
    llama: Any
    prompt_tokens: List[int]
    max_tokens: Optional[int]
    sampling: Dict[str, Any]
    stop: List[str] = field(default_factory=list)
    grammar: Any = None          # LlamaGrammar, GBNF text or None
    logprobs: Optional[int] = None
    echo: bool = False
    model: str = ""
    prompt_text: Optional[str] = None  # the prompt as given, when given as text (echo prints it exactly)
    tool_calls: bool = False           # parse tool calls out of the reply at the end
    ignore_eos: bool = False           # generate past end-of-generation tokens (Llama.generate)


def start_generation(req: CompletionRequest) -> Any:
    """Evaluates the prompt and returns the engine's Generation."""
    max_tokens = req.max_tokens
    if max_tokens is None or max_tokens <= 0:
        # As llama-cpp-python: what the context has left after the prompt.
        max_tokens = max(req.llama.n_ctx() - len(req.prompt_tokens), 0)
    n_logprobs = -1 if req.logprobs is None else req.logprobs
    return req.llama._session.generate(req.prompt_tokens, req.sampling, max_tokens, req.stop,
                                       grammar_text(req.grammar), n_logprobs, req.ignore_eos,
                                       req.tool_calls)


def piece_text(piece: bytes) -> str:
    return piece.decode("utf-8", errors="ignore")


class LogprobsBuilder:
    """The completions-style logprobs block: tokens, text_offset,
    token_logprobs, top_logprobs (dicts of piece -> logprob)."""

    def __init__(self, llama: Any, offset: int) -> None:
        self.llama = llama
        self.offset = offset
        self.block: Dict[str, List[Any]] = {"tokens": [], "text_offset": [], "token_logprobs": [],
                                            "top_logprobs": []}

    def _piece(self, token: int) -> str:
        return piece_text(self.llama._session.detokenize([token], False))

    def add(self, token: int, piece: bytes, logprob: Optional[float], top: Optional[List[Tuple[int, float]]]) -> None:
        s = piece_text(piece)
        self.block["tokens"].append(s)
        self.block["text_offset"].append(self.offset)
        self.block["token_logprobs"].append(logprob)
        if top is None:
            self.block["top_logprobs"].append(None)
        else:
            entry = {self._piece(t): lp for t, lp in top}
            entry[s] = logprob
            self.block["top_logprobs"].append(entry)
        self.offset += len(s)

    def add_prompt(self, tokens: List[int], n_top: int) -> None:
        """The prompt's own tokens (echo): the first has no logprob."""
        scored = self.llama._session.prompt_logprobs(tokens, n_top)
        # As detokenize(): with BOS first, the text loses one leading space.
        strip = bool(tokens) and tokens[0] == self.llama.token_bos()
        for i, t in enumerate(tokens):
            piece = self.llama._session.detokenize([t], False)
            if strip and piece:
                piece = piece[1:] if piece.startswith(b" ") else piece
                strip = False
            if i == 0:
                self.add(t, piece, None, None)
            else:
                lp, top = scored[i - 1]
                self.add(t, piece, lp, top)

    def take(self) -> Dict[str, List[Any]]:
        block = self.block
        self.block = {k: [] for k in block}
        return block


def _prompt_text(req: CompletionRequest) -> str:
    """What echo prints: the prompt exactly as given, or the text of its token ids."""
    if req.prompt_text is not None:
        return req.prompt_text
    return piece_text(req.llama.detokenize(req.prompt_tokens))


def _usage(n_prompt: int, n_completion: int) -> Dict[str, int]:
    return {"prompt_tokens": n_prompt, "completion_tokens": n_completion, "total_tokens": n_prompt + n_completion}


def _begin(req: CompletionRequest) -> Tuple[str, int, str, Optional[LogprobsBuilder], Any]:
    """(id, created, echoed prefix, logprobs builder, generation): the
    prompt's part of a completion, and its generation started."""
    prefix = _prompt_text(req) if req.echo else ""
    lp: Optional[LogprobsBuilder] = None
    if req.logprobs is not None:
        lp = LogprobsBuilder(req.llama, 0)
        if req.echo:
            lp.add_prompt(req.prompt_tokens, req.logprobs)
    return f"cmpl-{uuid.uuid4()}", int(time.time()), prefix, lp, start_generation(req)


def run_completion(req: CompletionRequest) -> Dict[str, Any]:
    cmpl_id, created, prefix, lp, gen = _begin(req)
    steps: List[Step] = gen.run()
    text = prefix + "".join(s[2] for s in steps)
    finish = steps[-1][5] if steps else "length"
    if lp is not None:
        for token, piece, _, logprob, top, _ in steps:
            if token >= 0 and lp.offset < len(text):
                lp.add(token, piece, logprob, top)
    return {
        "id": cmpl_id,
        "object": "text_completion",
        "created": created,
        "model": req.model,
        "choices": [{"text": text, "index": 0, "logprobs": lp.take() if lp else None, "finish_reason": finish}],
        "usage": _usage(len(req.prompt_tokens), gen.n_generated),
    }


def stream_completion(req: CompletionRequest) -> Iterator[Dict[str, Any]]:
    """Starts the generation now (so bad requests raise here) and returns
    the iterator of chunks."""
    cmpl_id, created, prefix, lp, gen = _begin(req)

    def chunk(text: str, logprobs: Any, finish: Optional[str]) -> Dict[str, Any]:
        return {
            "id": cmpl_id,
            "object": "text_completion",
            "created": created,
            "model": req.model,
            "choices": [{"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}],
        }

    def chunks() -> Iterator[Dict[str, Any]]:
        if prefix:
            yield chunk(prefix, lp.take() if lp else None, None)
        while not gen.done:
            token, piece, text, logprob, top, finish = gen.step()
            if lp is not None and token >= 0:
                lp.add(token, piece, logprob, top)
            if text or finish:
                yield chunk(text, lp.take() if lp else None, finish)

    return chunks()
