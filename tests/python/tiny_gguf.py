"""A tiny BERT written as GGUF from Python, and a plain reference forward.

The model has random weights and the WordPiece vocabulary of
shared/vocab/ggml-vocab-bert-bge.gguf (copied key by key), so the ferrite
tokenizer works on it. ``reference_embedding`` computes the mean-pooled
embedding in double precision, independently of the engine.
"""

from __future__ import annotations

import math
import random
import struct
from array import array
from typing import Dict, List, Tuple

GGUF_MAGIC = b"GGUF"
ALIGNMENT = 32
# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
           U64: "<Q", I64: "<q", F64: "<d"}

EMBD, HEADS, FF, LAYERS, CTX, TYPES = 16, 2, 32, 2, 64, 2
EPS = 1e-12


def _skip_value(buf: bytes, at: int, vtype: int) -> int:
    if vtype in _SCALAR:
        return at + struct.calcsize(_SCALAR[vtype])
    if vtype == STRING:
        (n,) = struct.unpack_from("<Q", buf, at)
        return at + 8 + n
    if vtype == ARRAY:
        elem, n = struct.unpack_from("<IQ", buf, at)
        at += 12
        if elem in _SCALAR:
            return at + n * struct.calcsize(_SCALAR[elem])
        for _ in range(n):
            at = _skip_value(buf, at, elem)
        return at
    raise ValueError(f"unknown GGUF value type {vtype}")


def read_kv_raw(path: str) -> List[Tuple[str, bytes]]:
    """Every metadata entry of a GGUF file as (key, raw bytes of type+value)."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:4] != GGUF_MAGIC:
        raise ValueError(f"{path}: not GGUF")
    _, _, n_kv = struct.unpack_from("<IQQ", buf, 4)
    at = 24
    out = []
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, at)
        key = buf[at + 8:at + 8 + klen].decode()
        at += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, at)
        end = _skip_value(buf, at + 4, vtype)
        out.append((key, buf[at:end]))
        at = end
    return out


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _kv(key: str, vtype: int, value) -> Tuple[str, bytes]:
    return key, struct.pack("<I", vtype) + struct.pack(_SCALAR[vtype], value)


class TinyBert:
    def __init__(self, vocab_path: str, out_path: str, pooling: int = 1, seed: int = 7) -> None:
        self.path = out_path
        tokenizer_kv = [(k, v) for k, v in read_kv_raw(vocab_path) if k.startswith("tokenizer.")]
        tokens_raw = dict(tokenizer_kv)["tokenizer.ggml.tokens"]
        (self.n_vocab,) = struct.unpack_from("<Q", tokens_raw, 8)
        rng = random.Random(seed)
        self.t: Dict[str, List[float]] = {}
        order: List[Tuple[str, List[int]]] = []

        def add(name: str, ne: List[int], offset: float = 0.0) -> None:
            n = math.prod(ne)
            self.t[name] = [offset + rng.gauss(0.0, 0.5) for _ in range(n)]
            order.append((name, ne))

        add("token_embd.weight", [EMBD, self.n_vocab])
        add("token_types.weight", [EMBD, TYPES])
        add("position_embd.weight", [EMBD, CTX])
        add("token_embd_norm.weight", [EMBD], 1.0)
        add("token_embd_norm.bias", [EMBD])
        for il in range(LAYERS):
            p = f"blk.{il}."
            for m in ("attn_q", "attn_k", "attn_v", "attn_output"):
                add(p + m + ".weight", [EMBD, EMBD])
                add(p + m + ".bias", [EMBD])
            add(p + "attn_output_norm.weight", [EMBD], 1.0)
            add(p + "attn_output_norm.bias", [EMBD])
            add(p + "ffn_up.weight", [EMBD, FF])
            add(p + "ffn_up.bias", [FF])
            add(p + "ffn_down.weight", [FF, EMBD])
            add(p + "ffn_down.bias", [EMBD])
            add(p + "layer_output_norm.weight", [EMBD], 1.0)
            add(p + "layer_output_norm.bias", [EMBD])

        kvs = [
            ("general.architecture", struct.pack("<I", STRING) + _string("bert")),
            _kv("bert.context_length", U32, CTX),
            _kv("bert.embedding_length", U32, EMBD),
            _kv("bert.feed_forward_length", U32, FF),
            _kv("bert.block_count", U32, LAYERS),
            _kv("bert.attention.head_count", U32, HEADS),
            _kv("bert.attention.layer_norm_epsilon", F32, EPS),
            _kv("bert.attention.causal", BOOL, False),
            _kv("bert.pooling_type", U32, pooling),
        ] + tokenizer_kv
        header = bytearray(GGUF_MAGIC + struct.pack("<IQQ", 3, len(order), len(kvs)))
        for key, raw in kvs:
            header += _string(key) + raw
        offset = 0
        blobs = []
        for name, ne in order:
            header += _string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            header += struct.pack("<IQ", 0, offset)  # type F32, offset in the data section
            blob = array("f", self.t[name]).tobytes()
            pad = (-len(blob)) % ALIGNMENT
            blobs.append(blob + b"\0" * pad)
            offset += len(blob) + pad
        header += b"\0" * ((-len(header)) % ALIGNMENT)
        with open(out_path, "wb") as f:
            f.write(header)
            for b in blobs:
                f.write(b)
        # The reference computes with the float32-rounded weights the file holds.
        for name in self.t:
            self.t[name] = list(array("f", self.t[name]))

    def _linear(self, x: List[List[float]], name: str, n_in: int, n_out: int) -> List[List[float]]:
        w, b = self.t[name + ".weight"], self.t[name + ".bias"]
        return [[b[o] + sum(row[c] * w[o * n_in + c] for c in range(n_in)) for o in range(n_out)] for row in x]

    def _norm(self, x: List[List[float]], name: str) -> List[List[float]]:
        w, b = self.t[name + ".weight"], self.t[name + ".bias"]
        out = []
        for row in x:
            mean = sum(row) / len(row)
            var = sum((v - mean) ** 2 for v in row) / len(row)
            inv = 1.0 / math.sqrt(var + EPS)
            out.append([(v - mean) * inv * w[d] + b[d] for d, v in enumerate(row)])
        return out

    def states(self, tokens: List[int]) -> List[List[float]]:
        te, ty, po = self.t["token_embd.weight"], self.t["token_types.weight"], self.t["position_embd.weight"]
        x = [[te[tok * EMBD + d] + ty[d] + po[i * EMBD + d] for d in range(EMBD)] for i, tok in enumerate(tokens)]
        x = self._norm(x, "token_embd_norm")
        hd = EMBD // HEADS
        n = len(tokens)
        for il in range(LAYERS):
            p = f"blk.{il}."
            q = self._linear(x, p + "attn_q", EMBD, EMBD)
            k = self._linear(x, p + "attn_k", EMBD, EMBD)
            v = self._linear(x, p + "attn_v", EMBD, EMBD)
            a = [[0.0] * EMBD for _ in range(n)]
            for i in range(n):
                for h in range(HEADS):
                    s = [sum(q[i][h * hd + d] * k[j][h * hd + d] for d in range(hd)) / math.sqrt(hd) for j in range(n)]
                    m = max(s)
                    e = [math.exp(z - m) for z in s]
                    tot = sum(e)
                    for j in range(n):
                        for d in range(hd):
                            a[i][h * hd + d] += e[j] / tot * v[j][h * hd + d]
            o = self._linear(a, p + "attn_output", EMBD, EMBD)
            x = self._norm([[xi + oi for xi, oi in zip(xr, orow)] for xr, orow in zip(x, o)], p + "attn_output_norm")
            up = self._linear(x, p + "ffn_up", EMBD, FF)
            up = [[0.5 * u * (1 + math.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3))) for u in r] for r in up]
            down = self._linear(up, p + "ffn_down", FF, EMBD)
            x = self._norm([[xi + di for xi, di in zip(xr, dr)] for xr, dr in zip(x, down)], p + "layer_output_norm")
        return x

    def reference_embedding(self, tokens: List[int]) -> List[float]:
        """Mean pooling of the final states."""
        st = self.states(tokens)
        return [sum(r[d] for r in st) / len(st) for d in range(EMBD)]
