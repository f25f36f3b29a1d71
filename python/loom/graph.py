"""Models: import_onnx, load, the graph builder and compile."""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from . import _loom
from ._loom import Graph, Value, onnx_frontend_available
from .tuning import ApplyHistoryBest

__all__ = ["Graph", "Value", "onnx_frontend_available", "Builder", "GraphModule", "import_onnx", "load", "from_json", "compile"]


def import_onnx(path: Union[str, os.PathLike], input_shapes: Optional[Dict[str, Sequence[int]]] = None) -> Graph:
    """Reads an ONNX model; input_shapes gives static shapes to inputs with symbolic dims."""
    shapes = {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()}
    return _loom.graph_import_onnx(os.fspath(path), shapes)


def load(path: Union[str, os.PathLike]) -> Graph:
    """Reads a model file: ONNX, or loom's model JSON."""
    return _loom.graph_load(os.fspath(path))


def from_json(text: str) -> Graph:
    """A graph from loom's model JSON text (constants inline)."""
    return _loom.graph_from_json(text)


class Builder:
    """Builds a small graph: inputs, constants (NumPy arrays), registry operators, outputs.

        b = loom.graph.Builder("mlp")
        x = b.input("x", [1, 64])
        w = b.constant("w", np.ones((32, 64), "float32"))
        b.output(b.op("relu", b.op("dense", x, w)))
        g = b.build()
    """

    def __init__(self, name: str = "graph"):
        self._b = _loom.GraphBuilder(name)

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> Value:
        return self._b.input(name, list(shape), dtype)

    def constant(self, name: str, value) -> Value:
        return self._b.constant(name, np.ascontiguousarray(value))

    def op(self, op: str, *inputs: Value, name: str = "", **attrs) -> Value:
        """A call of a single-output registry operator (attributes as keywords)."""
        outs = self._b.call(op, list(inputs), attrs, name)
        if len(outs) != 1:
            raise _loom.Error(f"operator '{op}' has {len(outs)} outputs: use Builder.call")
        return outs[0]

    def call(self, op: str, *inputs: Value, name: str = "", **attrs) -> List[Value]:
        """A call of a registry operator; every output."""
        return self._b.call(op, list(inputs), attrs, name)

    def output(self, *values: Value) -> None:
        for v in values:
            self._b.output(v)

    def build(self) -> Graph:
        """The finished graph, verified."""
        return self._b.build()


class GraphModule:
    """A compiled model: call it with NumPy arrays (inputs in the graph's order), get NumPy outputs."""

    def __init__(self, module: _loom.Module, graph: Graph, kernels):
        self.module = module
        self.kernels = kernels
        self.input_info = graph.inputs
        self.output_info = graph.outputs
        self._run = module["run"]

    def __call__(self, *inputs, **named):
        if named:
            if inputs:
                raise _loom.Error("run: give the inputs by position or by name, not both")
            missing = [n for n, _, _ in self.input_info if n not in named]
            if missing:
                raise _loom.Error(f"run: missing input(s) {missing}")
            inputs = tuple(named[n] for n, _, _ in self.input_info)
        if len(inputs) != len(self.input_info):
            raise _loom.Error(f"run: the model takes {len(self.input_info)} inputs "
                              f"({', '.join(n for n, _, _ in self.input_info)}), got {len(inputs)}")
        outs = [np.empty(shape, dtype) for _, shape, dtype in self.output_info]
        self._run(*inputs, *outs)
        return outs[0] if len(outs) == 1 else outs

    def export_library(self, path: Union[str, os.PathLike]) -> None:
        self.module.export_library(os.fspath(path))


def compile(graph: Graph, target: str = "llvm", log=None, opt_level: int = 3) -> GraphModule:  # noqa: A001
    """Optimizes, fuses and compiles a model; kernels with a record in `log` (one or more tuning
    logs; default: the apply_history_best in effect) use their tuned config."""
    if log is None:
        cur = ApplyHistoryBest.current()
        logs = cur.logs if cur is not None else []
    elif isinstance(log, (str, os.PathLike)):
        logs = [os.fspath(log)]
    else:
        logs = [os.fspath(p) for p in log]
    module, kernels = _loom.graph_compile(graph, target, logs, opt_level)
    return GraphModule(module, graph, kernels)
