"""Interruption (KeyboardInterrupt between tokens), the GIL released while
the model runs, reset, and save_state/load_state."""

from __future__ import annotations

import _thread
import threading

import pytest


def _long_request(llm):
    # EOS banned so the generation runs until the context is full.
    return dict(max_tokens=None, temperature=0.0, logit_bias={llm.token_eos(): float("-inf")})


def test_keyboard_interrupt_stops_generation(stories_path):
    from ferrite import Llama

    llm = Llama(model_path=stories_path, n_ctx=4096, n_threads=1, verbose=False)
    n_prompt = len(llm.tokenize(b"Once upon a time"))
    started = threading.Event()
    finished = threading.Event()

    def interrupter():
        # Wait (by polling the engine, no sleeps) until generation is under way.
        while llm.n_tokens <= n_prompt + 8 and not finished.is_set():
            pass
        if not finished.is_set():
            started.set()
            _thread.interrupt_main()

    t = threading.Thread(target=interrupter)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            llm("Once upon a time", **_long_request(llm))
    finally:
        finished.set()
        t.join()
    assert started.is_set()
    assert n_prompt + 8 < llm.n_tokens < 4096
    # The Llama stays usable and deterministic afterwards.
    a = llm("Once upon a time", max_tokens=10, temperature=0.0)["choices"][0]["text"]
    llm.reset()
    b = llm("Once upon a time", max_tokens=10, temperature=0.0)["choices"][0]["text"]
    assert a == b


def test_breaking_out_of_a_stream(llm):
    stream = llm("Once upon a time", max_tokens=50, temperature=0.0, stream=True)
    for i, _ in enumerate(stream):
        if i == 3:
            break
    out = llm("Once upon a time", max_tokens=5, temperature=0.0)
    assert out["usage"]["completion_tokens"] == 5
    # The abandoned stream was superseded: stepping it again is an error, not a crash.
    with pytest.raises(ValueError, match="another call"):
        next(stream)


def test_gil_is_released_while_evaluating(stories_path):
    from ferrite import Llama

    llm = Llama(model_path=stories_path, n_ctx=512, n_threads=1, verbose=False)
    done = threading.Event()

    def generate():
        llm("Once upon a time", **_long_request(llm))
        done.set()

    t = threading.Thread(target=generate)
    t.start()
    # The session is busy only inside a call into the engine. Were the GIL
    # held there, this thread could run only between calls and never see it
    # busy; released around evaluation, this thread gets the GIL exactly when
    # the generating thread starts a step. A bare flag read: this thread
    # never waits on the engine, so it cannot fall in step with it.
    seen_busy = False
    while not done.is_set() and not seen_busy:
        seen_busy = llm._session.busy
    t.join()
    assert seen_busy


def test_reset_forgets_the_context(llm):
    llm("Once upon a time", max_tokens=3, temperature=0.0)
    assert llm.n_tokens > 0
    llm.reset()
    assert llm.n_tokens == 0 and llm.input_ids == []


def test_save_and_load_state(llm):
    llm.reset()
    llm("Once upon a time", max_tokens=12, temperature=0.0)
    state = llm.save_state()
    assert state.n_tokens == llm.n_tokens == len(state.input_ids)
    cont = llm(state.input_ids, max_tokens=8, temperature=0.0)["choices"][0]["text"]
    llm.reset()
    llm.load_state(state)
    assert llm.input_ids == state.input_ids
    again = llm(state.input_ids, max_tokens=8, temperature=0.0)["choices"][0]["text"]
    assert cont == again
    with pytest.raises(TypeError):
        llm.load_state("not a state")


def test_prefix_reuse_gives_the_same_text(llm):
    llm.reset()
    cold = llm("Once upon a time there", max_tokens=10, temperature=0.0)["choices"][0]["text"]
    llm.reset()
    llm("Once upon a time", max_tokens=2, temperature=0.0)
    warm = llm("Once upon a time there", max_tokens=10, temperature=0.0)["choices"][0]["text"]
    assert cold == warm


def test_load_state_restores_the_cache_without_evaluating(stories_path):
    from ferrite import Llama, LlamaState

    a = Llama(model_path=stories_path, n_ctx=256, n_threads=1, seed=7, verbose=False)
    prompt = a.tokenize(b"Once upon a time there was a girl")
    a.eval(prompt)
    state = a.save_state()
    assert isinstance(state.llama_state, bytes) and state.llama_state_size == len(state.llama_state) > 0
    assert state.input_ids == prompt and state.n_tokens == len(prompt) and state.seed == 7
    nxt = a.tokenize(b" named", add_bos=False)[0]
    want = a._session.eval([nxt])  # the logits after one more token, uninterrupted

    # Another Llama of the same model: the state loads with no evaluation,
    # and the next token's logits are the same bits.
    b = Llama(model_path=stories_path, n_ctx=256, n_threads=1, verbose=False)
    b.load_state(state)
    assert b._session.n_evaluated == 0
    assert b.input_ids == prompt and b.n_tokens == len(prompt)
    assert b._session.eval([nxt]) == want
    assert b._session.n_evaluated == 1

    # The same Llama after other work, back to the saved point.
    a("Something else entirely", max_tokens=4, temperature=0.0)
    before = a._session.n_evaluated
    a.load_state(state)
    assert a._session.n_evaluated == before
    assert a._session.eval([nxt]) == want

    # A hand-built state (no cache bytes) is restored by evaluating its tokens.
    c = Llama(model_path=stories_path, n_ctx=256, n_threads=1, verbose=False)
    c.load_state(LlamaState(prompt, None, len(prompt), b"", 0, 5))
    assert c._session.n_evaluated == len(prompt)
    assert c._session.eval([nxt]) == pytest.approx(want, abs=1e-5)


def test_load_state_refuses_damaged_bytes(stories_path):
    from ferrite import Llama, LlamaState

    llm = Llama(model_path=stories_path, n_ctx=256, n_threads=1, verbose=False)
    llm.eval(llm.tokenize(b"Once upon a time"))
    state = llm.save_state()
    cut = state.llama_state[:-3]
    with pytest.raises(ValueError):  # size does not match llama_state_size
        llm.load_state(LlamaState(state.input_ids, None, state.n_tokens, cut, state.llama_state_size, 0))
    with pytest.raises(ValueError):  # the engine's FormatError
        llm.load_state(LlamaState(state.input_ids, None, state.n_tokens, cut, len(cut), 0))
    assert llm.n_tokens == 0  # a failed load leaves the context empty
    llm.load_state(state)
    assert llm.input_ids == state.input_ids


def test_state_survives_pickling(stories_path):
    import pickle

    from ferrite import Llama

    llm = Llama(model_path=stories_path, n_ctx=256, n_threads=1, verbose=False)
    llm.eval(llm.tokenize(b"Once upon a time"))
    state = pickle.loads(pickle.dumps(llm.save_state()))
    llm.reset()
    llm.load_state(state)
    assert llm.input_ids == state.input_ids and llm._session.n_evaluated == len(state.input_ids)


def test_n_gpu_layers_is_accepted(stories_path, capsys):
    from ferrite import Llama, _ferrite

    for n in (-1, 0, 99):
        llm = Llama(model_path=stories_path, n_gpu_layers=n, n_ctx=64, n_threads=1, verbose=True)
        out = llm("Once upon a time", max_tokens=3, temperature=0.0)
        assert out["usage"]["completion_tokens"] == 3
    err = capsys.readouterr().err
    if not _ferrite.gpu_offload_available():
        assert "n_gpu_layers is ignored" in err
    with pytest.raises(ValueError):
        Llama(model_path=stories_path, n_gpu_layers=-2, verbose=False)
