"""llama-cpp-python's low-level token loop on Llama: generate() (a token
generator), and the logits of the context (scores, eval_logits).

ferrite does not keep the logits of every evaluation. ``scores`` and
``eval_logits`` are computed when read, from the tokens the context holds:
with ``Llama(logits_all=True)`` every position's row (the context evaluated
afresh), otherwise only the row after the last token (that token evaluated
again); rows not computed are zero, as llama-cpp-python leaves them."""

from __future__ import annotations

from array import array
from collections import deque
from typing import Any, Deque, Iterator, List, Optional, Sequence, Tuple


class TokenLoopMixin:
    """generate(), scores, _scores, eval_logits for Llama (llama.py)."""

    _logits_all: bool = False
    _logits_memo: Optional[Tuple[Tuple[int, ...], bytes]] = None  # (tokens, float32 rows)

    def generate(
        self,
        tokens: Sequence[int],
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        temp: float = 0.80,
        repeat_penalty: float = 1.0,
        reset: bool = True,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        penalize_nl: bool = True,
        logits_processor: Any = None,
        stopping_criteria: Any = None,
        grammar: Any = None,
    ) -> Iterator[int]:
        """Yields sampled tokens one at a time after evaluating `tokens`
        (appended to the context when ``reset=False``), end-of-generation
        tokens included: the caller stops (as with llama-cpp-python). The
        generator ends when the context is full. tfs_z and penalize_nl do
        nothing (llama.cpp removed them). Reading scores or eval_logits, or
        starting another completion, ends an unfinished generator (the
        next step raises)."""
        from .llama import _sampling  # noqa: PLC0415 (circular at import time)
        from ._completion import CompletionRequest, start_generation  # noqa: PLC0415

        if logits_processor is not None or stopping_criteria is not None:
            raise ValueError("logits_processor and stopping_criteria are not supported by ferrite")
        prompt = list(tokens) if reset else self.input_ids + list(tokens)
        prompt = self._prompt_tokens(prompt)
        sampling = _sampling(temp, top_p, min_p, typical_p, top_k, repeat_penalty, frequency_penalty,
                             presence_penalty, mirostat_mode, mirostat_tau, mirostat_eta, self._call_seed(None),
                             None)
        req = CompletionRequest(llama=self, prompt_tokens=prompt, max_tokens=None, sampling=sampling,
                                grammar=grammar, ignore_eos=True)

        def tokens_out() -> Iterator[int]:
            gen = start_generation(req)
            while not gen.done:
                token = gen.step()[0]
                if token >= 0:
                    sent = yield token
                    if sent is not None:
                        raise ValueError("generate() takes no values sent into it (ferrite)")

        return tokens_out()

    # -- logits of the context -------------------------------------------------

    def _context_logits(self) -> Tuple[int, bytes]:
        """(first row, float32 rows from there to the last token)."""
        tokens = tuple(self._session.cached_tokens)
        if not tokens:
            return 0, b""
        if self._logits_memo is None or self._logits_memo[0] != tokens:
            if self._logits_all:
                rows = self._session.all_logits(list(tokens))
            else:
                rows = array("f", self._session.eval([])).tobytes()
            self._logits_memo = (tokens, rows)
        rows = self._logits_memo[1]
        return (0 if self._logits_all else len(tokens) - 1), rows

    @property
    def scores(self) -> Any:
        """numpy float32 [n_ctx, n_vocab]: row i holds the logits after
        token i of the context (see the module's note for which rows)."""
        try:
            import numpy as np  # noqa: PLC0415 (only this needs numpy)
        except ImportError as e:
            raise ImportError("Llama.scores needs numpy (Debian: python3-numpy)") from e
        first, rows = self._context_logits()
        out = np.zeros((self.n_ctx(), self.n_vocab()), dtype=np.single)
        if rows:
            data = np.frombuffer(rows, dtype=np.single).reshape(-1, self.n_vocab())
            out[first:first + data.shape[0]] = data
        return out

    @property
    def _scores(self) -> Any:
        """scores' rows of the tokens the context holds."""
        return self.scores[: self.n_tokens, :]

    @property
    def eval_logits(self) -> Deque[List[float]]:
        """Rows of logits as lists: every position's with logits_all
        (maxlen n_ctx), else only the last one (maxlen 1)."""
        _, rows = self._context_logits()
        n_vocab = self.n_vocab()
        flat = array("f", rows)
        out: Deque[List[float]] = deque(maxlen=self.n_ctx() if self._logits_all else 1)
        if self._logits_all:
            out.extend(flat[i:i + n_vocab].tolist() for i in range(0, len(flat), n_vocab))
        elif flat:
            out.append(flat.tolist())
        return out
