"""Tuning: tasks, loom.tune, apply_history_best and build_best."""
from __future__ import annotations

import os
from typing import List, Optional, Sequence, Union

from . import _loom
from ._loom import Module, Task, TuneResult

__all__ = ["Task", "TuneResult", "tune", "apply_history_best", "ApplyHistoryBest", "build_best", "template_names"]

_loom.install_record_check()


def template_names() -> List[str]:
    """The operators loom can tune (its schedule templates)."""
    return _loom.template_names()


def tune(task: Union[Task, str, Sequence[_loom.Tensor]], shape: Optional[Sequence[int]] = None, *,
         trials: int = 200, log: Union[str, os.PathLike], inputs: Optional[Sequence] = None, name: str = "",
         tuner: str = "xgb", target: str = "llvm", dtype: str = "float32", attrs: Optional[dict] = None,
         resume: bool = False, early_stopping: int = -1, batch: int = 0, jobs: int = 0, timeout: float = 10.0,
         repeat: int = 3, min_repeat_ms: float = 100.0, check: bool = True, confirm: int = 5, seed: int = 0,
         quiet: bool = False) -> TuneResult:
    """Tunes a task, appending every trial to `log`. The task is one of:

    - a loom.Task;
    - a template's name with `shape` (loom.template_names()), e.g. tune("matmul", [1024] * 3, ...);
    - a registry operator's name with `inputs` (shapes or types such as "float32[128,768]", one per
      input; `attrs` its attributes): auto-scheduled, as `loom tune --op NAME --input ...`, also for
      an operator that has a template, to compare the two;
    - the tensors of any te computation, inputs then outputs (`name` names it in the log):
      auto-scheduled from the computation itself, no template needed.

    As `loom tune`: progress on stderr (trials, best GFLOP/s, errors, ETA), the tuner
    ("xgb", "random", "grid", "ga"), resume, early stopping and the confirm step. The GIL is
    released while measuring; Ctrl-C stops the job after the batch being measured, every
    trial so far in the log, and raises KeyboardInterrupt.
    """
    if isinstance(task, (list, tuple)):
        if not task or not all(isinstance(t, _loom.Tensor) for t in task):
            raise _loom.Error("tune: a list names a te computation's tensors (inputs, then outputs), "
                              "each a loom.te.Tensor")
        task = Task.from_tensors(list(task), name or "te_compute", target)
    elif isinstance(task, str):
        if inputs is not None and shape is not None:
            raise _loom.Error(f"tune: '{task}': give shape= (a template's sizes) or inputs= (the operator's "
                              f"input types, auto-scheduled), not both")
        if inputs is not None:
            task = Task.from_operator(task, list(inputs), dict(attrs or {}), target, dtype)
        elif shape is None:
            raise _loom.Error(f"tune: an operator name ('{task}') needs shape= (a template's sizes) or inputs= "
                              f"(the input shapes of a registry operator, auto-scheduled)")
        else:
            task = Task(task, list(shape), target, dtype, {k: str(v) for k, v in (attrs or {}).items()})
    elif not isinstance(task, Task):
        raise _loom.Error(f"tune: expected a loom.Task, an operator name or a list of te tensors, "
                          f"not {type(task).__name__}")
    return _loom.tune(task, trials, os.fspath(log), tuner, resume, early_stopping, batch, jobs, timeout, repeat,
                      min_repeat_ms, check, confirm, seed, quiet)


class ApplyHistoryBest:
    """The best configs of tuning logs. As a context manager (`with loom.apply_history_best(log):`)
    it is what build_best and loom.graph.compile use when given no log."""

    _stack: List["ApplyHistoryBest"] = []

    def __init__(self, logs: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]):
        self.logs = [os.fspath(logs)] if isinstance(logs, (str, os.PathLike)) else [os.fspath(p) for p in logs]
        self._best = _loom.ApplyHistoryBest(self.logs)

    def query(self, task: Task):
        """The best record of `task` (a Record), or None."""
        return self._best.query(task)

    def records(self):
        """The best record of every (workload, target)."""
        return self._best.records()

    def __len__(self) -> int:
        return len(self._best)

    def __enter__(self) -> "ApplyHistoryBest":
        ApplyHistoryBest._stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        ApplyHistoryBest._stack.remove(self)

    @staticmethod
    def current() -> Optional["ApplyHistoryBest"]:
        return ApplyHistoryBest._stack[-1] if ApplyHistoryBest._stack else None


def apply_history_best(logs) -> ApplyHistoryBest:
    """The best configs of one or more tuning logs (a context manager, as TVM's)."""
    return ApplyHistoryBest(logs)


def build_best(task: Task, best: Optional[ApplyHistoryBest] = None, name: str = "",
               check_bounds: bool = False) -> Module:
    """Builds `task` with its best config in `best` (default: the apply_history_best in effect);
    without a record, the template's default config, saying so on stderr."""
    best = best if best is not None else ApplyHistoryBest.current()
    return _loom.build_best(task, best._best if best is not None else None, name, check_bounds)
