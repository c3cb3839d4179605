"""Writes a wheel (the binary distribution format, PEP 427 / the packaging
spec): the files, then <name>-<version>.dist-info with METADATA, WHEEL and
RECORD (every file's SHA-256, urlsafe base64 without padding, and size)."""

from __future__ import annotations

import base64
import hashlib
import os
import time
import zipfile
from typing import List, Tuple

GENERATOR = "ferrite_build"


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _zip_time() -> Tuple[int, int, int, int, int, int]:
    """SOURCE_DATE_EPOCH when set (reproducible wheels), else 1980-01-01."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return time.gmtime(max(int(epoch), 315532800))[:6]
    return (1980, 1, 1, 0, 0, 0)


class WheelWriter:
    def __init__(self, path: str, dist_info: str) -> None:
        self.path = path
        self.dist_info = dist_info
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._records: List[str] = []
        self._when = _zip_time()

    def add_bytes(self, arcname: str, data: bytes, executable: bool = False) -> None:
        info = zipfile.ZipInfo(arcname, self._when)
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        self._records.append(f"{arcname},{record_hash(data)},{len(data)}")

    def add_file(self, arcname: str, source: str) -> None:
        with open(source, "rb") as f:
            data = f.read()
        self.add_bytes(arcname, data, executable=os.access(source, os.X_OK) and arcname.endswith(".so"))

    def close(self, metadata: str, tag: str) -> None:
        self.add_bytes(f"{self.dist_info}/METADATA", metadata.encode("utf-8"))
        self.add_bytes(f"{self.dist_info}/WHEEL", wheel_file_text(tag).encode("utf-8"))
        record_name = f"{self.dist_info}/RECORD"
        record = "\n".join(self._records + [f"{record_name},,"]) + "\n"
        info = zipfile.ZipInfo(record_name, self._when)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, record.encode("utf-8"))
        self._zip.close()


def wheel_file_text(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\nRoot-Is-Purelib: false\nTag: {tag}\n"
