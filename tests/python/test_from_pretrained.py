"""Llama.from_pretrained through ferrite's pull, against a local stand-in for
the Hugging Face hub (the file listing and resolve/ downloads), with the
download cache in a temporary folder."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO_ID = "test-owner/tiny-stories"


class _Hub(BaseHTTPRequestHandler):
    files: dict = {}  # path in the repository -> bytes
    requests: list = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.requests.append(self.path)
        listing = f"/api/models/{REPO_ID}/tree/main"
        resolve = f"/{REPO_ID}/resolve/main/"
        if self.path.split("?")[0] == listing:
            body = json.dumps([{"type": "file", "path": p, "size": len(b)} for p, b in self.files.items()])
            self._send(200, body.encode(), {"Content-Type": "application/json"})
        elif self.path.startswith(resolve) and self.path[len(resolve):] in self.files:
            data = self.files[self.path[len(resolve):]]
            self._send(200, data, {"ETag": '"' + hashlib.sha256(data).hexdigest() + '"'})
        else:
            self._send(404, b"not found", {})


@pytest.fixture()
def hub(stories_path, tmp_path, monkeypatch):
    _Hub.files = {"README.md": b"# tiny stories\n", "stories260K.gguf": Path(stories_path).read_bytes()}
    _Hub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv("FERRITE_HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("FERRITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FERRITE_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield tmp_path / "cache"
    server.shutdown()
    thread.join()
    server.server_close()


def test_from_pretrained_by_glob_downloads_into_the_cache(hub, stories_path):
    from llama_cpp import Llama

    llm = Llama.from_pretrained(REPO_ID, "*260K.gguf", n_ctx=64, verbose=False)
    cached = hub / REPO_ID / "stories260K.gguf"
    assert Path(llm.model_path) == cached
    assert cached.read_bytes() == Path(stories_path).read_bytes()
    assert llm.tokenize(b"Once upon a time") == Llama(model_path=stories_path, vocab_only=True,
                                                      verbose=False).tokenize(b"Once upon a time")


def test_from_pretrained_reuses_the_cache_offline(hub, monkeypatch):
    from llama_cpp import Llama

    Llama.from_pretrained(REPO_ID, "stories260K.gguf", vocab_only=True, verbose=False)
    n = len(_Hub.requests)
    monkeypatch.setenv("FERRITE_OFFLINE", "1")
    llm = Llama.from_pretrained(REPO_ID, "stories260K.gguf", vocab_only=True, verbose=False)
    assert len(_Hub.requests) == n and llm.n_vocab() == 512


def test_from_pretrained_without_filename_takes_the_only_gguf(hub, tmp_path):
    from llama_cpp import Llama

    llm = Llama.from_pretrained(REPO_ID, local_dir=str(tmp_path / "mine"), vocab_only=True, verbose=False)
    assert Path(llm.model_path) == tmp_path / "mine" / REPO_ID / "stories260K.gguf"


def test_from_pretrained_errors(hub):
    from llama_cpp import Llama

    with pytest.raises(ValueError, match="no file of .* matches"):
        Llama.from_pretrained(REPO_ID, "*Q4_K_M.gguf", verbose=False)
    with pytest.raises(ValueError, match="several files"):
        Llama.from_pretrained(REPO_ID, "*", verbose=False)
    with pytest.raises(ValueError, match="owner/name"):
        Llama.from_pretrained("not-a-repo", "x.gguf", verbose=False)
    with pytest.raises(RuntimeError, match="404"):
        Llama.from_pretrained(REPO_ID, "missing.gguf", verbose=False)
