"""``llama_cpp.llama_types``: names of llama-cpp-python's response and
request types, for annotations. ferrite returns plain dicts of the same
shapes; these names are aliases of ``Dict[str, Any]``."""

from typing import Any, Dict

CreateCompletionResponse = Dict[str, Any]
CreateCompletionStreamResponse = Dict[str, Any]
Completion = Dict[str, Any]
CompletionChunk = Dict[str, Any]
CreateChatCompletionResponse = Dict[str, Any]
CreateChatCompletionStreamResponse = Dict[str, Any]
ChatCompletion = Dict[str, Any]
ChatCompletionChunk = Dict[str, Any]
ChatCompletionRequestMessage = Dict[str, Any]
ChatCompletionRequestResponseFormat = Dict[str, Any]
ChatCompletionTool = Dict[str, Any]
CreateEmbeddingResponse = Dict[str, Any]
Embedding = Dict[str, Any]
