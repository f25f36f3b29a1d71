"""Tensor expressions: placeholder, compute, reduce_axis, sum/max/min and the math functions.

Expressions take Python operators: + - * / // % (// and % round toward minus infinity, / is
true division for floats and truncating for integers, as in C), comparisons, & | ~.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

from . import _loom
from ._loom import (Expr, IterVar, Operation, Tensor, TensorIntrin, Var, cast, compute as _compute, const, exp, erf,
                    floor, ceil, floordiv, floormod, if_then_else, log, placeholder, power, prod, round, sigmoid,
                    sqrt, tanh, thread_axis, truncdiv, truncmod, var, max_value, min_value)
from ._loom import abs as _abs
from ._loom import reduce_axis as _reduce_axis

ExprLike = Union[Expr, IterVar, int, float]

__all__ = ["Expr", "IterVar", "Operation", "Tensor", "TensorIntrin", "Var", "placeholder", "compute", "reduce_axis",
           "thread_axis", "sum", "max", "min", "prod", "var", "const", "cast", "if_then_else", "exp", "log", "sqrt",
           "tanh", "sigmoid", "abs", "floor", "ceil", "round", "erf", "power", "floordiv", "floormod", "truncdiv",
           "truncmod", "max_value", "min_value", "intrin", "create_schedule"]


def compute(shape: Sequence[ExprLike], fcompute: Callable[..., Union[ExprLike, Sequence[ExprLike]]],
            name: str = "compute", tag: str = "", attrs: Optional[dict] = None):
    """A tensor whose element at (i, j, ...) is fcompute(i, j, ...).

    The body may be a reduction at the top (te.sum(..., axis=k)). When fcompute returns a
    tuple, one tensor per value is returned (tuple reductions).
    """
    return _compute(list(shape) if not isinstance(shape, (int, Expr)) else [shape], fcompute, name, tag, attrs or {})


def create_schedule(outputs):
    """loom.create_schedule, under TVM's other name for it (te.create_schedule)."""
    return _loom.create_schedule(outputs)


def reduce_axis(dom, name: str = "rv") -> IterVar:
    """A reduction axis over dom: (begin, end) as TVM's, or an extent n for 0..n-1."""
    return _reduce_axis(dom, name)


def _is_axis(x) -> bool:
    return isinstance(x, IterVar) or (isinstance(x, (list, tuple)) and all(isinstance(a, IterVar) for a in x))


def sum(expr: ExprLike, axis, where: Optional[ExprLike] = None) -> Expr:  # noqa: A001
    """The sum of expr over the reduce axis (or list of axes) `axis`, where `where` holds."""
    return _loom.sum(expr, axis, where)


def max(a: ExprLike, b=None, axis=None, where: Optional[ExprLike] = None) -> Expr:  # noqa: A001
    """max(expr, axis=k): a max-reduction (as TVM's te.max); max(a, b): the larger of two."""
    if axis is None and _is_axis(b):
        axis, b = b, None
    if axis is not None:
        return _loom.max_reduce(a, axis, where)
    if b is None:
        raise _loom.Error("te.max: give a reduce axis (te.max(x, axis=k)) or two values (te.max(a, b))")
    return _loom.max2(a, b)


def min(a: ExprLike, b=None, axis=None, where: Optional[ExprLike] = None) -> Expr:  # noqa: A001
    """min(expr, axis=k): a min-reduction (as TVM's te.min); min(a, b): the smaller of two."""
    if axis is None and _is_axis(b):
        axis, b = b, None
    if axis is not None:
        return _loom.min_reduce(a, axis, where)
    if b is None:
        raise _loom.Error("te.min: give a reduce axis (te.min(x, axis=k)) or two values (te.min(a, b))")
    return _loom.min2(a, b)


def abs(x: ExprLike) -> Expr:  # noqa: A001
    return _abs(x)


class intrin:
    """The tensor intrinsics loom ships, for Stage.tensorize."""

    @staticmethod
    def dot_u8s8s32(lanes: int = 16) -> TensorIntrin:
        """u8 x s8 -> s32 dot products, 4 deep, `lanes` of them (AVX-512 VNNI's vpdpbusd)."""
        return _loom.intrin_dot_u8s8s32(lanes)

    wmma_load_a = staticmethod(_loom.intrin_wmma_load_a)
    wmma_load_b = staticmethod(_loom.intrin_wmma_load_b)
    wmma_mma = staticmethod(_loom.intrin_wmma_mma)
    wmma_store = staticmethod(_loom.intrin_wmma_store)
    mma_load_a = staticmethod(_loom.intrin_mma_load_a)
    mma_load_b = staticmethod(_loom.intrin_mma_load_b)
    mma_m16n8k16 = staticmethod(_loom.intrin_mma_m16n8k16)
    mma_store = staticmethod(_loom.intrin_mma_store)
