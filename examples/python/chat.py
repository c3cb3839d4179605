#!/usr/bin/env python3
"""A chat loop: one user message per input line, the reply streamed back.

    python3 examples/python/chat.py MODEL.gguf [--max-tokens N] [--system TEXT]
    echo "Hello" | python3 examples/python/chat.py MODEL.gguf

Ends at end of input (Ctrl-D) or on Ctrl-C. Runs the same with
llama-cpp-python: replace the import with `from llama_cpp import Llama`.
"""

import argparse
import sys

from ferrite import Llama


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=-1)
    ap.add_argument("--system", default="")
    ap.add_argument("--chat-format", default=None)
    args = ap.parse_args()

    llm = Llama(model_path=args.model, n_ctx=args.n_ctx, seed=args.seed, chat_format=args.chat_format,
                verbose=False)
    messages = [{"role": "system", "content": args.system}] if args.system else []
    interactive = sys.stdin.isatty()
    try:
        while True:
            if interactive:
                print("> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            messages.append({"role": "user", "content": line})
            reply = []
            for chunk in llm.create_chat_completion(messages, max_tokens=args.max_tokens,
                                                    temperature=args.temperature, stream=True):
                text = chunk["choices"][0]["delta"].get("content")
                if text:
                    reply.append(text)
                    print(text, end="", flush=True)
            print(flush=True)
            messages.append({"role": "assistant", "content": "".join(reply)})
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
