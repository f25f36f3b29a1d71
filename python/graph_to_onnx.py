#!/usr/bin/env python3
"""Converts a loom model file (MODEL.json and the weights file it names, as save_graph and
build/examples/write_models write them) into an ONNX model (opset 17, built with onnx.helper).

Every loom operator is mapped to ONNX operators with the same semantics; constants become
initializers. Mapped (the operators the builder models of examples/models use, and a few
more elementwise ones):

  conv2d (NCHW; groups, dilation, bias)   Conv
  batch_norm (axis 1)                     BatchNormalization
  relu, sigmoid, tanh, exp, log, sqrt,    Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Abs, Neg, Erf
    abs, negative, erf
  clip (min, max)                         Clip (bounds as initializers)
  add, subtract, multiply, divide         Add, Sub, Mul, Div (both numpy broadcasting)
  bias_add (axis)                         Add (bias reshaped to broadcast along the axis)
  max_pool2d, avg_pool2d (NCHW)           MaxPool, AveragePool (count_include_pad)
  global_avg_pool2d (NCHW)                GlobalAveragePool
  flatten (axis)                          Flatten
  dense (data [N,K], weight [M,K], bias)  Gemm (transB=1)
  softmax (axis)                          Softmax

Anything else (another operator, a channel-blocked layout such as NCHW16c from a graph that
was already optimized, an attribute value ONNX cannot express the same way) is an error naming
the node and its operator, exit status 1. The weights file's magic and each constant's size are
checked; its checksums are not (loom's own reader checks them).

    graph_to_onnx.py MODEL.json OUT.onnx
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # as python/export_models.py: what opset 17 was released with
WEIGHTS_MAGIC = b"LOOMWGT1"
DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
          "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16,
          "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_}
UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
         "abs": "Abs", "negative": "Neg", "erf": "Erf"}
BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div"}


class Unsupported(Exception):
    """A node this converter cannot map; the message names it."""


def np_dtype(name: str, where: str):
    if name not in DTYPES:
        raise Unsupported(f"{where}: element type {name} has no ONNX counterpart here")
    return DTYPES[name]


def read_constants(doc: dict, json_path: str) -> dict[str, np.ndarray]:
    """Every constant node's array, from its inline data or the weights file."""
    weights = None
    if "weights" in doc:
        wpath = doc["weights"]
        if not os.path.isabs(wpath):
            wpath = os.path.join(os.path.dirname(os.path.abspath(json_path)), wpath)
        with open(wpath, "rb") as f:
            weights = f.read()
        if weights[:8] != WEIGHTS_MAGIC:
            raise ValueError(f"{wpath} is not a loom weights file (it does not start with LOOMWGT1)")
    out = {}
    for n in doc["nodes"]:
        if n.get("kind") != "constant":
            continue
        where = f"{json_path}: constant '{n['name']}'"
        dt = np.dtype(np_dtype(n["type"]["dtype"], where))
        shape = tuple(n["type"]["shape"])
        if "data" in n:
            a = np.array(n["data"], dtype=dt).reshape(shape)
        else:
            if weights is None:
                raise ValueError(f"{where}: its data is in a weights file, but the model names none")
            off, nbytes = int(n["offset"]), int(n["nbytes"])
            if nbytes != dt.itemsize * int(np.prod(shape, dtype=np.int64)) or off < 8 or off + nbytes > len(weights):
                raise ValueError(f"{where}: bytes [{off}, {off + nbytes}) do not fit its type or the weights file")
            a = np.frombuffer(weights, dtype=dt, count=nbytes // dt.itemsize, offset=off).reshape(shape)
        out[n["name"]] = a
    return out


def ref_name(ref) -> str:
    """A value reference: "node" (output 0) or ["node", index]."""
    if isinstance(ref, str):
        return ref
    name, index = ref
    if index != 0:
        raise Unsupported(f"output {index} of '{name}': no mapped operator has more than one output")
    return name


class Converter:
    def __init__(self, doc: dict, constants: dict[str, np.ndarray]):
        self.doc = doc
        self.constants = constants
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.used = {n["name"] for n in doc["nodes"]}
        self.types = {}  # value name -> (shape, dtype name)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def init(self, base: str, array: np.ndarray) -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def emit(self, op: str, inputs: list[str], output: str, name: str, **attrs) -> None:
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))

    def convert(self) -> onnx.ModelProto:
        inputs = []
        for n in self.doc["nodes"]:
            kind = n.get("kind", "op")
            if kind == "input":
                t = n["type"]
                if t.get("layout", "") not in ("", "NCHW"):
                    raise Unsupported(f"input '{n['name']}': layout {t['layout']} (ONNX models are NCHW)")
                self.types[n["name"]] = (t["shape"], t["dtype"])
                elem = helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype(t["dtype"], f"input '{n['name']}'")))
                inputs.append(helper.make_tensor_value_info(n["name"], elem, t["shape"]))
            elif kind == "constant":
                self.inits.append(numpy_helper.from_array(np.ascontiguousarray(self.constants[n["name"]]), n["name"]))
                self.types[n["name"]] = (n["type"]["shape"], n["type"]["dtype"])
            else:
                self.op(n)
        outputs = []
        for ref in self.doc["outputs"]:
            name = ref_name(ref)
            shape, dt = self.types[name]
            if name not in {o for node in self.nodes for o in node.output}:  # an input or constant as output
                copy = self.fresh(name + ".output")
                self.emit("Identity", [name], copy, copy)
                name = copy
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype(dt, f"output '{name}'")))
            outputs.append(helper.make_tensor_value_info(name, elem, shape))
        graph = helper.make_graph(self.nodes, self.doc.get("name", "loom_graph"), inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="loom python/graph_to_onnx.py")
        model.ir_version = IR_VERSION
        return model

    def op(self, n: dict) -> None:
        name, op, at = n["name"], n["op"], n.get("attrs", {})
        ins = [ref_name(r) for r in n["inputs"]]
        where = f"node '{name}' ({op})"
        types = n.get("types")
        if types is None:
            raise Unsupported(f"{where}: the model file has no output types (save it with write_types on)")
        if len(types) != 1:
            raise Unsupported(f"{where}: {len(types)} outputs")
        self.types[name] = (types[0]["shape"], types[0]["dtype"])
        layout = at.get("layout", "")
        if layout not in ("", "NCHW"):
            raise Unsupported(f"{where}: layout \"{layout}\" (only NCHW maps to ONNX)")

        if op in UNARY:
            self.emit(UNARY[op], ins, name, name)
        elif op in BINARY:
            self.emit(BINARY[op], ins, name, name)
        elif op == "clip":
            dt = np_dtype(self.types[ins[0]][1], where)
            lo = self.init(name + ".min", np.array(at["min"], dtype=dt))
            hi = self.init(name + ".max", np.array(at["max"], dtype=dt))
            self.emit("Clip", [ins[0], lo, hi], name, name)
        elif op == "conv2d":
            w = self.types[ins[1]][0]
            pads = list(at["padding"])
            if len(pads) == 2:
                pads = pads * 2  # {h, w} -> ONNX's [top, left, bottom, right], as loom's 4-value form
            self.emit("Conv", ins, name, name, kernel_shape=list(w[2:]), strides=list(at["strides"]), pads=pads,
                      dilations=list(at["dilation"]), group=int(at["groups"]))
        elif op == "batch_norm":
            if at["axis"] != 1:
                raise Unsupported(f"{where}: axis {at['axis']} (ONNX's BatchNormalization normalizes axis 1)")
            self.emit("BatchNormalization", ins, name, name, epsilon=float(at["epsilon"]))
        elif op in ("max_pool2d", "avg_pool2d"):
            pads = list(at["padding"])
            if len(pads) == 2:
                pads = pads * 2
            extra = {"count_include_pad": int(at["count_include_pad"])} if op == "avg_pool2d" else {}
            self.emit("MaxPool" if op == "max_pool2d" else "AveragePool", ins, name, name,
                      kernel_shape=list(at["pool_size"]), strides=list(at["strides"]), pads=pads, **extra)
        elif op == "global_avg_pool2d":
            self.emit("GlobalAveragePool", ins, name, name)
        elif op == "flatten":
            self.emit("Flatten", ins, name, name, axis=int(at["axis"]))
        elif op == "dense":
            if len(self.types[ins[0]][0]) != 2:
                raise Unsupported(f"{where}: data of rank {len(self.types[ins[0]][0])} (Gemm takes 2-D)")
            self.emit("Gemm", ins, name, name, transB=1)
        elif op == "bias_add":
            rank = len(self.types[ins[0]][0])
            axis = at["axis"] % rank
            shape = np.array([-1] + [1] * (rank - axis - 1), dtype=np.int64)
            bias = ins[1]
            if len(shape) > 1:
                bias = self.fresh(name + ".bias")
                self.emit("Reshape", [ins[1], self.init(name + ".bias_shape", shape)], bias, bias)
            self.emit("Add", [ins[0], bias], name, name)
        elif op == "softmax":
            self.emit("Softmax", ins, name, name, axis=int(at["axis"]))
        else:
            raise Unsupported(f"{where}: no ONNX mapping for operator '{op}'")


def convert_file(json_path: str) -> onnx.ModelProto:
    """The ONNX model of a loom model file; raises Unsupported naming the node it cannot map."""
    with open(json_path) as f:
        doc = json.load(f)
    if doc.get("format") != "loom.graph" or doc.get("version") != 1:
        raise ValueError(f"{json_path} is not a loom model file of version 1 "
                         f"(format {doc.get('format')!r}, version {doc.get('version')!r})")
    model = Converter(doc, read_constants(doc, json_path)).convert()
    onnx.checker.check_model(model)
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="loom model file (JSON; its weights file beside it)")
    ap.add_argument("out", help="the ONNX file to write")
    args = ap.parse_args(argv)
    try:
        model = convert_file(args.model)
    except Unsupported as e:
        print(f"graph_to_onnx: {args.model}: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as e:
        print(f"graph_to_onnx: {args.model}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    onnx.save(model, args.out)
    print(f"{args.out}: {len(model.graph.node)} ONNX nodes, {len(model.graph.initializer)} initializers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
