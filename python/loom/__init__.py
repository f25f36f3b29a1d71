"""loom from Python: tensor expressions, schedules, build, tuning and models.

A thin layer over loom's C++ API, named as TVM users expect::

    import loom
    from loom import te
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = loom.create_schedule(B)
    f = loom.build(s, [A, B], "llvm")
    f(a, b)                       # NumPy arrays or any DLPack object, not copied

Every failure inside loom raises loom.Error with loom's message.
"""
from ._loom import Error, Module, Function, Schedule, Stage, LoweredFunc
from . import te, nd, runtime, records, graph
from .build import build, lower, create_schedule
from .tuning import Task, tune, apply_history_best, build_best, template_names, TuneResult

__version__ = "0.1.0"

__all__ = [
    "Error", "Module", "Function", "Schedule", "Stage", "LoweredFunc",
    "te", "nd", "runtime", "records", "graph",
    "build", "lower", "create_schedule",
    "Task", "tune", "apply_history_best", "build_best", "template_names", "TuneResult",
]

Error.__module__ = "loom"
