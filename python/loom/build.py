"""create_schedule, lower and build."""
from __future__ import annotations

from typing import Sequence, Union

from . import _loom
from ._loom import LoweredFunc, Module, Schedule
from .te import Operation, Tensor


def create_schedule(outputs: Union[Tensor, Operation, Sequence[Union[Tensor, Operation]]]) -> Schedule:
    """A schedule computing `outputs` (tensors or their ops), every stage at the root."""
    return _loom.create_schedule(outputs)


def lower(s: Schedule, args: Sequence[Tensor], name: str = "default_function", target: str = "llvm",
          simple_mode: bool = True) -> LoweredFunc:
    """The loop IR of the schedule computing `args` (inputs and outputs, in call order).

    print() shows it. With simple_mode=False the argument checks and unpacking of the
    compiled function's entry are included.
    """
    return _loom.lower(s, list(args), name, target, not simple_mode)


def build(s: Schedule, args: Sequence[Tensor], target: str = "llvm", name: str = "default_function",
          check_bounds: bool = False) -> Module:
    """Compiles the schedule into a module with one function, `name`.

    Call the module (or module[name]) with arrays in the order of `args`: NumPy arrays,
    loom.nd arrays or any object with __dlpack__, read and written in place. The GIL is
    released while compiling and while the function runs.
    """
    return _loom.build(s, list(args), target, name, check_bounds)
