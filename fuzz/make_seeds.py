#!/usr/bin/env python3
"""Writes a seed corpus into DIR: the first bytes of every GGUF file under the
shared data folder, plus hand-made malformed files (bad magic, wrong version,
huge counts, truncations, bad tensor infos) for gguf_fuzz; the chat templates
of the shared tokenizer configs for chat_fuzz; chat request bodies and model
replies with tool calls for server_fuzz; safetensors files and SentencePiece
models (good and broken) for safetensors_fuzz."""
import json
import os
import struct
import sys

HEAD_BYTES = 1 << 16  # the fuzzer mutates headers; tensor bytes add little


def gguf_header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(key, v):
    return gstr(key) + struct.pack("<II", 4, v)


def tensor(name, ne, typ, off):
    return gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", typ, off)


def pad(b, a=32):
    return b + b"\0" * ((-len(b)) % a)


def handmade():
    ok = pad(gguf_header(1, 2) + kv_u32("general.alignment", 32) + gstr("general.architecture") +
             struct.pack("<I", 8) + gstr("llama") + tensor("t", [32, 2], 8, 0)) + b"\1" * 68
    yield "ok", ok
    yield "bad_magic", b"GGUG" + ok[4:]
    yield "v1", gguf_header(0, 0, 1)
    yield "huge_tensors", gguf_header(1 << 60, 0)
    yield "huge_kv", gguf_header(0, (1 << 64) - 1)
    yield "truncated", ok[: len(ok) // 2]
    yield "array", gguf_header(0, 1) + gstr("a") + struct.pack("<IIQ", 9, 4, 3) + struct.pack("<III", 1, 2, 3)
    yield "nested", gguf_header(0, 1) + gstr("a") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 4 + struct.pack("<IQ", 8, 1) + gstr("x")
    yield "bad_type", pad(gguf_header(1, 0) + tensor("t", [32], 4, 0)) + b"\0" * 32
    yield "overlap", pad(gguf_header(2, 0) + tensor("a", [16], 0, 0) + tensor("b", [16], 0, 32)) + b"\0" * 128


def chat_and_server():
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "2"}]
    yield "messages", json.dumps(msgs).encode()
    yield "request_auto", json.dumps({"messages": msgs, "tools": [tool]}).encode()
    yield "request_required", json.dumps({"messages": msgs, "tools": [tool], "tool_choice": "required"}).encode()
    yield "request_named", json.dumps({"messages": msgs, "tools": [tool],
                                       "tool_choice": {"type": "function", "function": {"name": "f"}}}).encode()
    yield "reply_hermes", b'<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call> done'
    yield "reply_llama3", b'<|python_tag|>{"name": "f", "parameters": {"x": 1}}'
    yield "reply_mistral", b'[TOOL_CALLS][{"name": "f", "arguments": {"x": 1}}]'
    yield "template_loop", (b"{% for m in messages %}{{ m.role }}: {{ m.content | trim }}\n{% endfor %}"
                            b"{% if add_generation_prompt %}assistant:{% endif %}")


def safetensors(entries, metadata=None):
    header = {"__metadata__": metadata} if metadata else {}
    at, data = 0, b""
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        at += len(raw)
        data += raw
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def pb_bytes(field, b):
    return varint(field << 3 | 2) + varint(len(b)) + b


def checkpoint_files():
    f32 = struct.pack("<6f", 1, -2, 3.5, 0.25, 8, -0.5)
    good = safetensors([("a", "F32", [2, 3], f32), ("h", "F16", [2], b"\x00\x3c\x00\xc0"),
                        ("b", "BF16", [2], b"\x80\x3f\x00\xc0")], {"format": "pt"})
    yield "st_good", good
    yield "st_truncated", good[: len(good) - 5]
    h = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    yield "st_overlap", struct.pack("<Q", len(h)) + h + f32[:8]
    yield "st_bad_dtype", safetensors([("a", "Q4", [2], f32[:8])])
    yield "st_huge_shape", safetensors([("a", "F32", [1 << 40, 1 << 40], f32[:8])])
    piece = pb_bytes(1, b"\xe2\x96\x81the") + varint(2 << 3 | 5) + struct.pack("<f", -1.5)
    model = pb_bytes(1, piece + varint(3 << 3) + varint(1)) + pb_bytes(1, pb_bytes(1, b"<unk>") + varint(3 << 3) + varint(2))
    model += pb_bytes(2, varint(3 << 3) + varint(2) + varint(35 << 3) + varint(1))
    yield "spm_good", model
    yield "spm_truncated", model[:-3]


def main():
    out, shared = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    n = 0
    for root, _, files in os.walk(shared):
        for name in sorted(files):
            if name.endswith(".gguf"):
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read(HEAD_BYTES)
                with open(os.path.join(out, "shared-" + name), "wb") as f:
                    f.write(data)
                n += 1
    templates = os.path.join(shared, "templates")
    for name in sorted(os.listdir(templates)) if os.path.isdir(templates) else []:
        if name.endswith(".json"):
            with open(os.path.join(templates, name)) as f:
                source = json.load(f).get("chat_template")
            if isinstance(source, str):
                with open(os.path.join(out, "template-" + name), "w") as f:
                    f.write(source)
                n += 1
    for name, data in chat_and_server():
        with open(os.path.join(out, "text-" + name), "wb") as f:
            f.write(data)
        n += 1
    for name, data in checkpoint_files():
        with open(os.path.join(out, "ckpt-" + name), "wb") as f:
            f.write(data)
        n += 1
    for name, data in handmade():
        with open(os.path.join(out, "hand-" + name), "wb") as f:
            f.write(data)
        n += 1
    print(f"make_seeds: {n} seeds in {out}")


if __name__ == "__main__":
    main()
