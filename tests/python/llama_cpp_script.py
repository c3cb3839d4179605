"""A program written for llama-cpp-python, run unchanged against ferrite's
llama_cpp package (test_llama_cpp_script.py, test_wheel.py): completion,
streaming, chat, embeddings and a grammar, printed as one JSON object.

    python3 llama_cpp_script.py MODEL.gguf EMBEDDING_MODEL.gguf
"""

import json
import sys

from llama_cpp import Llama, LlamaGrammar

model_path, embedding_model_path = sys.argv[1], sys.argv[2]
result = {}

llm = Llama(model_path=model_path, n_ctx=512, seed=42, verbose=False)
out = llm("Once upon a time", max_tokens=16, temperature=0.0)
result["completion"] = out["choices"][0]["text"]
result["completion_tokens"] = out["usage"]["completion_tokens"]

pieces = []
for chunk in llm.create_completion("Once upon a time", max_tokens=16, temperature=0.0, stream=True):
    pieces.append(chunk["choices"][0]["text"])
result["stream"] = "".join(pieces)

chat_llm = Llama(model_path=model_path, n_ctx=512, chat_format="chatml", verbose=False)
reply = chat_llm.create_chat_completion(
    messages=[{"role": "system", "content": "You tell stories."},
              {"role": "user", "content": "Tell me a story."}],
    max_tokens=8, temperature=0.0)
result["chat"] = reply["choices"][0]["message"]
result["chat_finish"] = reply["choices"][0]["finish_reason"]

grammar = LlamaGrammar.from_string('root ::= "The answer is " ("yes" | "no") "."')
out = llm("Question: is the sky blue?\nAnswer:", grammar=grammar, max_tokens=32, temperature=0.0)
result["grammar"] = out["choices"][0]["text"]

embedder = Llama(model_path=embedding_model_path, embedding=True, verbose=False)
result["embedding"] = embedder.embed("hello world")
result["embedding_tokens"] = embedder.tokenize(b"hello world")
emb = embedder.create_embedding(["hello world", "goodbye"])
result["embedding_count"] = len(emb["data"])

print(json.dumps(result))
