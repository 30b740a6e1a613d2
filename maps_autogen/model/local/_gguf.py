"""A minimal GGUF reader: header, metadata and tensor table, no tensor data, no dependencies.

The parent checks a model file with it before spawning llama.cpp, so a wrong or damaged file
gives one precise line instead of a generic load failure in llama.cpp's log.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO


class GGUFFormatError(ValueError):
    """The file is not a well-formed GGUF file (random bytes, truncated, unsupported version)."""


@dataclass(frozen=True)
class GGUFInfo:
    """What we need from a GGUF file: its metadata (arrays reduced to their lengths) and size checks."""

    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(repr=False)

    @property
    def architecture(self) -> str | None:
        """The model architecture, e.g. "llama" (None for files that do not declare one)."""
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def context_length(self) -> int | None:
        """The context length the model was trained with, if the file records it."""
        value = self.metadata.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) else None

    @property
    def chat_template(self) -> str | None:
        """The Jinja chat template stored in the file, if any."""
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value.strip() else None


_GGUF_MAGIC = b"GGUF"
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_SCALARS: dict[int, str] = {
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d",
}
_GGUF_MAX_DIMS = 8
MMPROJ_ARCHITECTURE = "clip"  # what llama.cpp's mmproj converters write as general.architecture


# ggml tensor types: (elements per block, bytes per block), from ggml's type traits. A type not
# listed (a newer one) is checked by its start offset only.
_GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2),
}


def tensor_bytes(ggml_type: int, elements: int) -> int:
    """Bytes a tensor of `elements` values of `ggml_type` takes in the file (0: unknown type)."""
    per_block, block_bytes = _GGML_BLOCKS.get(ggml_type, (1, 0))
    return -(-elements // per_block) * block_bytes


class _GGUFReader:
    """Sequential little-endian reads that fail with GGUFFormatError instead of garbage."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self._stream = stream
        self._size = size

    def tell(self) -> int:
        return self._stream.tell()

    def take(self, n: int) -> bytes:
        if n < 0 or self.tell() + n > self._size:
            raise GGUFFormatError("the file ends early (truncated?)")
        return self._stream.read(n)

    def skip(self, n: int) -> None:
        if n < 0 or self.tell() + n > self._size:
            raise GGUFFormatError("the file ends early (truncated?)")
        self._stream.seek(n, os.SEEK_CUR)

    def scalar(self, fmt: str) -> Any:
        width = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self.take(width))[0]

    def string(self) -> str:
        return self.take(self.scalar("Q")).decode("utf-8", errors="replace")

    def value(self, type_id: int) -> Any:
        if type_id in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[type_id])
        if type_id == _GGUF_STRING:
            return self.string()
        if type_id == _GGUF_ARRAY:
            item_type, count = self.scalar("I"), self.scalar("Q")
            if item_type in _GGUF_SCALARS:
                self.skip(struct.calcsize("<" + _GGUF_SCALARS[item_type]) * count)
            elif item_type == _GGUF_STRING:
                for _ in range(count):
                    self.skip(self.scalar("Q"))
            else:
                raise GGUFFormatError(f"unsupported array item type {item_type}")
            return count  # arrays (vocabularies, merges) are large and not needed: keep the length
        raise GGUFFormatError(f"unknown metadata value type {type_id}")


def read_gguf_info(path: Path) -> GGUFInfo:
    """Parse a GGUF file's header, metadata and tensor table without loading tensor data.

    Raises GGUFFormatError when the file is not GGUF, is truncated before or inside its tensor
    data (the end of the last tensor is computed from its shape and type), or uses an
    unsupported version. Takes ~60 ms for a 49k-token vocabulary.
    """
    size = path.stat().st_size
    with path.open("rb") as stream:
        reader = _GGUFReader(stream, size)
        if stream.read(4) != _GGUF_MAGIC:
            raise GGUFFormatError("it does not start with the GGUF magic bytes")
        version = reader.scalar("I")
        if version not in (2, 3):
            raise GGUFFormatError(f"unsupported GGUF version {version}")
        tensor_count, kv_count = reader.scalar("Q"), reader.scalar("Q")
        if tensor_count == 0:
            raise GGUFFormatError("it contains no tensors")
        values: dict[str, Any] = {}
        for _ in range(kv_count):
            key = reader.string()
            values[key] = reader.value(reader.scalar("I"))
        max_offset = data_end = 0
        for _ in range(tensor_count):
            reader.string()  # tensor name
            n_dims = reader.scalar("I")
            if n_dims > _GGUF_MAX_DIMS:
                raise GGUFFormatError(f"a tensor has {n_dims} dimensions")
            elements = math.prod(reader.scalar("Q") for _ in range(n_dims))
            ggml_type = reader.scalar("I")
            offset = reader.scalar("Q")
            max_offset = max(max_offset, offset)
            data_end = max(data_end, offset + tensor_bytes(ggml_type, elements))
        alignment = values.get("general.alignment", 32)
        if not isinstance(alignment, int) or alignment <= 0:
            raise GGUFFormatError(f"invalid alignment {alignment!r}")
        data_start = -(-reader.tell() // alignment) * alignment
        if data_start + max_offset >= size or data_start + data_end > size:
            raise GGUFFormatError("the tensor data is cut short (truncated download?)")
    return GGUFInfo(version=version, tensor_count=tensor_count, metadata=values)
