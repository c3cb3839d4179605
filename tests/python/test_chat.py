"""Chat completions: shapes, templates, streaming, JSON output through the
grammar engine (checked with the independent jsonschema validator), tool
calls."""

from __future__ import annotations

import json

import jsonschema
import pytest

MESSAGES = [{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Tell me one."}]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                       "required": ["city"]},
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"enum": ["utc", "cet"]}},
                                                    "required": ["zone"]}},
}


def test_chat_shape(llm):
    out = llm.create_chat_completion(MESSAGES, max_tokens=8, temperature=0.0)
    assert set(out) == {"id", "object", "created", "model", "choices", "usage"}
    assert out["id"].startswith("chatcmpl-") and out["object"] == "chat.completion"
    (choice,) = out["choices"]
    assert choice["index"] == 0 and choice["logprobs"] is None
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 8


def test_default_chat_format_is_llama2_for_a_model_without_template(llm):
    # llama-cpp-python falls back to "llama-2" when the model has no template.
    assert "tokenizer.chat_template" not in llm.metadata
    assert llm.chat_format == "llama-2"


def test_chatml_prompt_follows_the_format(stories_path):
    from ferrite import Llama

    m = Llama(model_path=stories_path, n_ctx=256, n_threads=1, chat_format="chatml", verbose=False)
    out = m.create_chat_completion([{"role": "user", "content": "hi"}], max_tokens=1, temperature=0.0)
    # ChatML by its definition (OpenAI's Chat Markup Language).
    want = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert out["usage"]["prompt_tokens"] == len(m.tokenize(want.encode(), add_bos=True, special=True))


def test_unknown_chat_format_is_refused(stories_path):
    from ferrite import Llama

    with pytest.raises(ValueError, match="chat format"):
        Llama(model_path=stories_path, chat_format="no-such-format", verbose=False)


def test_chat_streaming_matches_whole(llm):
    whole = llm.create_chat_completion(MESSAGES, max_tokens=16, temperature=0.0)
    chunks = list(llm.create_chat_completion(MESSAGES, max_tokens=16, temperature=0.0, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    for c in chunks:
        assert c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"]
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]


def test_json_object_with_schema(llm):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 120}},
              "required": ["name", "age"]}
    for seed in (1, 2):
        out = llm.create_chat_completion(MESSAGES, max_tokens=80, temperature=0.8, seed=seed,
                                         response_format={"type": "json_object", "schema": schema})
        choice = out["choices"][0]
        assert choice["finish_reason"] == "stop"
        jsonschema.validate(json.loads(choice["message"]["content"]), schema)


def test_json_object_without_schema(llm):
    out = llm.create_chat_completion(MESSAGES, max_tokens=120, temperature=0.8, seed=5,
                                     response_format={"type": "json_object"})
    text = out["choices"][0]["message"]["content"]
    if out["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict)
    else:
        assert text.lstrip().startswith("{")


def test_forced_tool_call(llm):
    out = llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL, TIME_TOOL], max_tokens=80, temperature=0.7,
                                     seed=9, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] is None
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    jsonschema.validate(json.loads(call["function"]["arguments"]), WEATHER_TOOL["function"]["parameters"])


def test_required_tool_call_picks_one_of_the_tools(llm):
    out = llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL, TIME_TOOL], tool_choice="required",
                                     max_tokens=80, temperature=0.7, seed=4)
    (call,) = out["choices"][0]["message"]["tool_calls"]
    tool = {"get_weather": WEATHER_TOOL, "get_time": TIME_TOOL}[call["function"]["name"]]
    jsonschema.validate(json.loads(call["function"]["arguments"]), tool["function"]["parameters"])


def test_tool_calls_parsed_from_hermes_text(llm):
    # A reply in the Hermes/Qwen format (forced here with a grammar).
    reply = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    gbnf = "root ::= " + json.dumps(reply)
    out = llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL], grammar=gbnf, max_tokens=200, temperature=0.0)
    (call,) = out["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    chunks = list(llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL], grammar=gbnf, max_tokens=200,
                                             temperature=0.0, stream=True))
    calls = [c for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_legacy_functions(llm):
    out = llm.create_chat_completion(MESSAGES, functions=[WEATHER_TOOL["function"]],
                                     function_call={"name": "get_weather"}, max_tokens=80, temperature=0.0)
    message = out["choices"][0]["message"]
    assert message["function_call"]["name"] == "get_weather"


def test_tool_choice_none_gives_text(llm):
    out = llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL], tool_choice="none", max_tokens=5,
                                     temperature=0.0)
    assert "tool_calls" not in out["choices"][0]["message"]


def test_chat_logprobs(llm):
    out = llm.create_chat_completion(MESSAGES, max_tokens=4, temperature=0.0, logprobs=True, top_logprobs=2)
    content = out["choices"][0]["logprobs"]["content"]
    assert len(content) == 4
    for entry in content:
        assert entry["logprob"] <= 0.0
        assert len(entry["top_logprobs"]) == 2
        # Greedy: the chosen token is the most likely one.
        assert entry["logprob"] == pytest.approx(entry["top_logprobs"][0]["logprob"])
        assert bytes(entry["bytes"]).decode("utf-8", "ignore") == entry["token"]


def test_chat_bad_arguments(llm):
    with pytest.raises(ValueError):
        llm.create_chat_completion([], max_tokens=1)
    with pytest.raises(ValueError):
        llm.create_chat_completion(MESSAGES, response_format={"type": "xml"})
    with pytest.raises(ValueError):
        llm.create_chat_completion(MESSAGES, tools=[WEATHER_TOOL], tool_choice={"type": "function",
                                                                                "function": {"name": "nope"}})
    with pytest.raises(ValueError):
        llm.create_chat_completion([{"content": "no role"}], max_tokens=1)
    with pytest.raises(ValueError):
        llm.create_chat_completion(MESSAGES, top_logprobs=2)
