"""Arrays: loom.nd.array / empty / from_dlpack, exchanged with NumPy and other frameworks
through DLPack both ways without copying."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _loom

__all__ = ["NDArray", "array", "empty", "from_dlpack"]


class NDArray:
    """A loom array (host memory, 64-byte aligned, or memory imported through DLPack).

    It has __dlpack__ and __dlpack_device__, so numpy.from_dlpack(a) (and torch's, jax's, ...)
    share its memory; a.numpy() is such a NumPy view. Compiled functions take it directly.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: Any):
        self._handle = handle

    def __dlpack__(self, **kwargs):
        return self._handle.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._handle.__dlpack_device__()

    def numpy(self) -> np.ndarray:
        """A NumPy array sharing this array's memory, writable (through the buffer protocol:
        NumPy before 2.2.5 makes arrays taken with from_dlpack read-only)."""
        return np.asarray(self._handle)

    @property
    def shape(self) -> tuple:
        return self.numpy().shape

    @property
    def dtype(self) -> str:
        return str(self.numpy().dtype)

    @property
    def data_pointer(self) -> int:
        """The address of the first element."""
        return _loom.array_data_pointer(self._handle)

    def copyfrom(self, source) -> "NDArray":
        """Copies `source` (a NumPy array or DLPack object of the same shape) into this array."""
        dst = self.numpy()
        src = np.asarray(source) if not hasattr(source, "__dlpack__") else np.from_dlpack(source)
        if src.shape != dst.shape:
            raise _loom.Error(f"copyfrom: shape {src.shape} differs from this array's {dst.shape}")
        np.copyto(dst, src, casting="same_kind")
        return self

    def __repr__(self) -> str:
        return f"loom.nd.NDArray(shape={self.shape}, dtype={self.dtype})\n{self.numpy()!r}"


def empty(shape: Sequence[int], dtype: str = "float32") -> NDArray:
    """A new uninitialized host array."""
    return NDArray(_loom.nd_empty(list(shape), str(np.dtype(dtype)) if dtype != "bool" else "bool"))


def array(source, dtype: str | None = None) -> NDArray:
    """A new loom array holding a copy of `source` (a NumPy array, list or DLPack object)."""
    src = np.from_dlpack(source) if hasattr(source, "__dlpack__") and not isinstance(source, np.ndarray) \
        else np.asarray(source, dtype=dtype)
    if dtype is not None:
        src = src.astype(dtype, copy=False)
    out = empty(src.shape, str(src.dtype))
    np.copyto(out.numpy(), src)
    return out


def from_dlpack(obj) -> NDArray:
    """The array of a DLPack object (NumPy, PyTorch, ...), sharing its memory."""
    return NDArray(_loom.nd_import(obj))
