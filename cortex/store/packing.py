"""Vectors as they cross the storage port: float32 little-endian bytes, whatever the machine."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any


def pack(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes (also the format sqlite-vec stores)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> tuple[float, ...]:
    """Inverse of `pack`."""
    return struct.unpack(f"<{len(blob) // 4}f", blob)


def unit_rows(blobs: Sequence[bytes], dtype: str = "float32") -> Any:
    """Packed vectors (one dimension for all) as a numpy matrix of unit-norm rows in `dtype`;
    a zero vector stays zero."""
    import numpy as np

    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1).astype(dtype)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(dtype, copy=False)
