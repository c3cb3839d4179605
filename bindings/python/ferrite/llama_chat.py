"""Chat completions (llama-cpp-python's create_chat_completion): messages
through the model's chat template or a named format, JSON output through
the grammar engine, and tool calls parsed from the reply."""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _ferrite
from ._completion import CompletionRequest, piece_text, start_generation
from .llama_grammar import json_schema_gbnf

# llama-cpp-python's chat_format names -> ferrite's built-in templates.
CHAT_FORMATS = {
    "llama-2": "llama2", "llama2": "llama2",
    "llama-3": "llama3", "llama3": "llama3",
    "chatml": "chatml", "qwen": "chatml", "chatml-function-calling": "chatml",
    "mistral-instruct": "mistral", "mistral": "mistral",
    "gemma": "gemma",
    "zephyr": "zephyr",
    "vicuna": "vicuna",
    "phi-3": "phi3", "phi3": "phi3",
}
# What llama-cpp-python uses when the model carries no template.
DEFAULT_CHAT_FORMAT = "llama-2"


def _tool_call_schema(tool: Dict[str, Any]) -> Dict[str, Any]:
    fn = tool["function"]
    params = fn.get("parameters") or {"type": "object"}
    return {"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"]}


def _check_tools(tools: Any) -> List[Dict[str, Any]]:
    if not isinstance(tools, list):
        raise TypeError("tools must be a list of {'type': 'function', 'function': {...}}")
    for t in tools:
        if not isinstance(t, dict) or not isinstance(t.get("function"), dict) or \
                not isinstance(t["function"].get("name"), str):
            raise ValueError("each tool must be {'type': 'function', 'function': {'name': ..., 'parameters': ...}}")
    return tools


def _response_format_gbnf(response_format: Any) -> str:
    if response_format is None:
        return ""
    if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
        raise ValueError("response_format must be a dict with a 'type'")
    kind = response_format["type"]
    if kind == "text":
        return ""
    if kind == "json_object":
        return json_schema_gbnf(response_format.get("schema"))
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict):
            raise ValueError("response_format json_schema needs a 'json_schema' dict")
        return json_schema_gbnf(spec.get("schema", {}))
    raise ValueError(f"response_format type '{kind}' is not one of text, json_object, json_schema")


class ChatMixin:
    """create_chat_completion for Llama (llama.py)."""

    def _init_chat(self, chat_format: Optional[str]) -> None:
        session = self._session
        if chat_format is None:
            if "tokenizer.chat_template" in self.metadata:
                self.chat_format = "chat_template.default"
                self._formatter = _ferrite.ChatFormatter(session, "", "llama2")
            else:
                self.chat_format = DEFAULT_CHAT_FORMAT
                self._formatter = _ferrite.ChatFormatter(session, CHAT_FORMATS[DEFAULT_CHAT_FORMAT])
            return
        if not isinstance(chat_format, str):
            raise TypeError("chat_format must be a str")
        if chat_format in CHAT_FORMATS:
            name = CHAT_FORMATS[chat_format]
        elif os.path.isfile(chat_format):
            name = chat_format  # a Jinja template file
        else:
            raise ValueError(f"Invalid chat format '{chat_format}': use one of {', '.join(sorted(CHAT_FORMATS))}, "
                             "a template file, or None for the model's template")
        self.chat_format = chat_format
        self._formatter = _ferrite.ChatFormatter(session, name)

    def _chat_prompt(self, messages: Any, tools: Optional[List[Dict[str, Any]]]) -> List[int]:
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...}")
        prompt = self._formatter.render(json.dumps(messages), json.dumps(tools) if tools else "", True)
        tokens = self.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        bos = self.token_bos()
        if len(tokens) >= 2 and tokens[0] == bos and tokens[1] == bos:
            tokens = tokens[1:]  # the template wrote BOS itself
        return self._prompt_tokens(tokens)

    def create_chat_completion(
        self,
        messages: List[Dict[str, Any]],
        functions: Optional[List[Dict[str, Any]]] = None,
        function_call: Any = None,
        tools: Optional[List[Dict[str, Any]]] = None,
        tool_choice: Any = None,
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        stream: bool = False,
        stop: Optional[Union[str, List[str]]] = None,
        seed: Optional[int] = None,
        response_format: Optional[Dict[str, Any]] = None,
        max_tokens: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        logits_processor: Any = None,
        grammar: Any = None,
        logit_bias: Optional[Dict[int, float]] = None,
        logprobs: Optional[bool] = None,
        top_logprobs: Optional[int] = None,
        **sampler_options: Any,
    ) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """A chat reply; a dict, or with stream=True an iterator of chunks.
        Every sampler parameter of ferrite is accepted by its name, as in
        create_completion()."""
        from .llama import _sampling, _stop_list  # noqa: PLC0415 (circular at import time)

        self._session  # noqa: B018 (raises LlamaClosedError after close(), as every method does)
        if logits_processor is not None:
            raise ValueError("logits_processor is not supported by ferrite")
        legacy_functions = functions is not None and tools is None
        if legacy_functions:
            tools = [{"type": "function", "function": f} for f in functions]
            if isinstance(function_call, dict) and "name" in function_call:
                tool_choice = {"type": "function", "function": {"name": function_call["name"]}}
            elif function_call is not None:
                tool_choice = function_call
        tools = _check_tools(tools) if tools else None

        forced: Optional[List[Dict[str, Any]]] = None  # tools one of which must be called
        if tools:
            if tool_choice is None or tool_choice == "auto":
                pass
            elif tool_choice == "none":
                tools = None
            elif tool_choice == "required":
                forced = tools
            elif isinstance(tool_choice, dict) and isinstance(tool_choice.get("function"), dict):
                name = tool_choice["function"].get("name")
                forced = [t for t in tools if t["function"]["name"] == name]
                if not forced:
                    raise ValueError(f"tool_choice names '{name}', which is not among the tools")
            else:
                raise ValueError("tool_choice must be 'none', 'auto', 'required' or "
                                 "{'type': 'function', 'function': {'name': ...}}")

        gbnf = _response_format_gbnf(response_format)
        if forced:
            schemas = [_tool_call_schema(t) for t in forced]
            gbnf = json_schema_gbnf(schemas[0] if len(schemas) == 1 else {"anyOf": schemas})
        if grammar is not None:
            gbnf = grammar
        if top_logprobs is not None and not logprobs:
            raise ValueError("top_logprobs requires logprobs=True")

        stops = _stop_list(stop)
        if self._formatter.origin == "chatml":
            stops.append("<|im_end|>")
        req = CompletionRequest(
            llama=self,
            prompt_tokens=self._chat_prompt(messages, tools),
            max_tokens=max_tokens,
            sampling=_sampling(temperature, top_p, min_p, typical_p, top_k, repeat_penalty, frequency_penalty,
                               presence_penalty, mirostat_mode, mirostat_tau, mirostat_eta,
                               self._call_seed(seed), logit_bias, sampler_options),
            stop=stops,
            grammar=gbnf or None,
            logprobs=(top_logprobs or 0) if logprobs else None,
            model=model or self.model_path,
        )
        reply = _ChatReply(self, req, parse_tools=tools is not None, legacy_functions=legacy_functions)
        return reply.stream() if stream else reply.whole()


class _ChatReply:
    def __init__(self, llama: Any, req: CompletionRequest, parse_tools: bool, legacy_functions: bool) -> None:
        self.llama = llama
        self.req = req
        self.parse_tools = parse_tools
        self.legacy_functions = legacy_functions
        self.id = f"chatcmpl-{uuid.uuid4()}"
        self.created = int(time.time())
        req.tool_calls = parse_tools  # the engine's generation step parses them at the end
        self.gen = start_generation(req)

    def _logprob_entry(self, token: int, piece: bytes, logprob: float, top: List[Tuple[int, float]]) -> Dict[str, Any]:
        def one(t: int, p: bytes, lp: float) -> Dict[str, Any]:
            return {"token": piece_text(p), "logprob": lp, "bytes": list(p)}
        entry = one(token, piece, logprob)
        entry["top_logprobs"] = [one(t, self.llama._session.detokenize([t], False), lp) for t, lp in top]
        return entry

    def _tool_calls(self, text: str) -> Tuple[str, List[Dict[str, Any]]]:
        # The generation step parsed the whole reply (text) when it ended.
        content, calls = self.gen.reply if self.gen.done else _ferrite.parse_tool_calls(text)
        out = []
        for i, (name, arguments) in enumerate(calls):
            out.append({"id": f"call__{i}_{name}_{self.id}", "type": "function",
                        "function": {"name": name, "arguments": arguments}})
        return content, out

    def _message(self, text: str) -> Tuple[Dict[str, Any], bool]:
        if self.parse_tools:
            content, calls = self._tool_calls(text)
            if calls:
                message: Dict[str, Any] = {"role": "assistant", "content": content or None, "tool_calls": calls}
                if self.legacy_functions:
                    message["function_call"] = calls[0]["function"]
                return message, True
        return {"role": "assistant", "content": text}, False

    def whole(self) -> Dict[str, Any]:
        steps = self.gen.run()
        text = "".join(s[2] for s in steps)
        finish = steps[-1][5] if steps else "length"
        message, called = self._message(text)
        logprobs = None
        if self.req.logprobs is not None:
            logprobs = {"content": [self._logprob_entry(t, p, lp, top) for t, p, _, lp, top, _ in steps if t >= 0],
                        "refusal": None}
        n_prompt, n_gen = len(self.req.prompt_tokens), self.gen.n_generated
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.req.model,
            "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                         "finish_reason": "tool_calls" if called else finish}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen, "total_tokens": n_prompt + n_gen},
        }

    def _chunk(self, delta: Dict[str, Any], finish: Optional[str], logprobs: Any = None) -> Dict[str, Any]:
        return {
            "id": self.id,
            "model": self.req.model,
            "created": self.created,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        }

    def stream(self) -> Iterator[Dict[str, Any]]:
        def chunks() -> Iterator[Dict[str, Any]]:
            yield self._chunk({"role": "assistant"}, None)
            held: List[str] = []  # with tools the reply is parsed whole before it is sent
            finish = "length"
            while not self.gen.done:
                token, piece, text, logprob, top, step_finish = self.gen.step()
                finish = step_finish or finish
                lp = None
                if self.req.logprobs is not None and token >= 0:
                    lp = {"content": [self._logprob_entry(token, piece, logprob, top)], "refusal": None}
                if self.parse_tools:
                    held.append(text)
                elif text or lp:
                    yield self._chunk({"content": text}, None, lp)
            if self.parse_tools:
                message, called = self._message("".join(held))
                if called:
                    calls = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
                    yield self._chunk({"tool_calls": calls}, None)
                    finish = "tool_calls"
                else:
                    yield self._chunk({"content": message["content"]}, None)
            yield self._chunk({}, finish)

        return chunks()
