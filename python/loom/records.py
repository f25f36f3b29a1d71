"""Tuning logs: the tools of `loom records` (read, summary, merge, distill, best curve)."""
from __future__ import annotations

import os
import sys
from typing import List, Sequence, Tuple, Union

from . import _loom
from ._loom import Record

__all__ = ["Record", "read_log", "summary", "format_summary", "merge", "distill", "best_curve"]

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


def _paths(p: Paths) -> List[str]:
    if isinstance(p, (str, os.PathLike)):
        return [os.fspath(p)]
    return [os.fspath(x) for x in p]


def read_log(path: Union[str, os.PathLike], warn: bool = True) -> List[Record]:
    """Every well-formed record of the log; skipped lines are printed to stderr when warn."""
    records, warnings = _loom.records_read_log(os.fspath(path))
    if warn:
        for w in warnings:
            print(w, file=sys.stderr)
    return records


def summary(paths: Paths) -> List[dict]:
    """One dict per (workload, target): trials, valid, errors, best_gflops, best_config, ..."""
    return _loom.records_summary(_paths(paths))[0]


def format_summary(paths: Paths) -> str:
    """The summary as `loom records summary` prints it."""
    return _loom.records_summary(_paths(paths))[1]


def merge(paths: Paths, out: Union[str, os.PathLike]) -> dict:
    """Writes the logs' records to `out`, one per config (its median record)."""
    return _loom.records_merge(_paths(paths), os.fspath(out))


def distill(paths: Paths, out: Union[str, os.PathLike]) -> int:
    """Writes the best record of each (workload, target) to `out`; returns how many."""
    return _loom.records_distill(_paths(paths), os.fspath(out))


def best_curve(path: Union[str, os.PathLike], workload_key: str = "") -> List[float]:
    """Best-so-far GFLOP/s after each trial."""
    return _loom.records_best_curve(os.fspath(path), workload_key)
