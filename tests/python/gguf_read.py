"""A minimal GGUF reader for the tests, independent of the engine: tensor
infos, F32 tensor data, and a copy of a file with one more u32 metadata key
(for example ``llama.pooling_type``)."""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass
from typing import Dict, List, Tuple

from tiny_gguf import GGUF_MAGIC, STRING, U32, _skip_value

DEFAULT_ALIGNMENT = 32
GGML_TYPE_F32 = 0


@dataclass
class TensorInfo:
    name: str
    ne: List[int]
    type: int
    offset: int  # relative to the data section


@dataclass
class Gguf:
    buf: bytes
    kv_end: int  # end of the metadata entries
    n_kv: int
    kv_raw: Dict[str, bytes]  # key -> type + value bytes
    tensors: Dict[str, TensorInfo]
    infos_end: int
    data_start: int

    def get_string(self, key: str) -> str:
        raw = self.kv_raw[key]
        assert struct.unpack_from("<I", raw, 0)[0] == STRING
        (n,) = struct.unpack_from("<Q", raw, 4)
        return raw[12:12 + n].decode()

    def f32(self, name: str) -> array:
        t = self.tensors[name]
        if t.type != GGML_TYPE_F32:
            raise ValueError(f"{name} is not F32")
        count = 1
        for n in t.ne:
            count *= n
        start = self.data_start + t.offset
        out = array("f")
        out.frombytes(self.buf[start:start + 4 * count])
        return out


def read_gguf(path: str) -> Gguf:
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:4] != GGUF_MAGIC:
        raise ValueError(f"{path}: not GGUF")
    _, n_tensors, n_kv = struct.unpack_from("<IQQ", buf, 4)
    at = 24
    kv_raw: Dict[str, bytes] = {}
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, at)
        key = buf[at + 8:at + 8 + klen].decode()
        at += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, at)
        end = _skip_value(buf, at + 4, vtype)
        kv_raw[key] = buf[at:end]
        at = end
    kv_end = at
    tensors: Dict[str, TensorInfo] = {}
    for _ in range(n_tensors):
        (nlen,) = struct.unpack_from("<Q", buf, at)
        name = buf[at + 8:at + 8 + nlen].decode()
        at += 8 + nlen
        (n_dims,) = struct.unpack_from("<I", buf, at)
        ne = list(struct.unpack_from(f"<{n_dims}Q", buf, at + 4))
        at += 4 + 8 * n_dims
        ttype, offset = struct.unpack_from("<IQ", buf, at)
        at += 12
        tensors[name] = TensorInfo(name, ne, ttype, offset)
    align = DEFAULT_ALIGNMENT
    if "general.alignment" in kv_raw:
        align = struct.unpack_from("<I", kv_raw["general.alignment"], 4)[0]
    data_start = (at + align - 1) // align * align
    return Gguf(buf, kv_end, n_kv, kv_raw, tensors, at, data_start)


def copy_with_u32(src: str, dst: str, key: str, value: int) -> None:
    """Writes `src` to `dst` with the metadata key `key` = u32 `value` added
    (the tensor data section copied unchanged)."""
    g = read_gguf(src)
    if key in g.kv_raw:
        raise ValueError(f"{src} already has {key}")
    kb = key.encode()
    extra = struct.pack("<Q", len(kb)) + kb + struct.pack("<II", U32, value)
    head = bytearray(g.buf[:24])
    struct.pack_into("<Q", head, 16, g.n_kv + 1)
    header = bytes(head) + g.buf[24:g.kv_end] + extra + g.buf[g.kv_end:g.infos_end]
    align = DEFAULT_ALIGNMENT
    if "general.alignment" in g.kv_raw:
        align = struct.unpack_from("<I", g.kv_raw["general.alignment"], 4)[0]
    pad = (-len(header)) % align
    with open(dst, "wb") as f:
        f.write(header + b"\0" * pad + g.buf[g.data_start:])


def output_matrix(g: Gguf) -> Tuple[List[array], int]:
    """Rows [n_vocab][n_embd] of the output matrix (tied: token embeddings)."""
    name = "output.weight" if "output.weight" in g.tensors else "token_embd.weight"
    n_embd, n_vocab = g.tensors[name].ne[0], g.tensors[name].ne[1]
    flat = g.f32(name)
    return [flat[v * n_embd:(v + 1) * n_embd] for v in range(n_vocab)], n_embd
