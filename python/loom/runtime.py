"""Loading exported libraries."""
from __future__ import annotations

from . import _loom
from ._loom import Function, Module

__all__ = ["Module", "Function", "load_module", "data_pointer"]


def load_module(path: str) -> Module:
    """Loads a library written by Module.export_library; call its functions as build()'s."""
    return _loom.load_module(str(path))


def data_pointer(array) -> int:
    """The address a compiled function receives for `array` (NumPy array or DLPack object)."""
    return _loom.array_data_pointer(array)
