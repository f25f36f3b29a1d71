"""Compiling an ONNX model and comparing it with ONNX Runtime.

Writes a small CNN (conv, batch norm, relu, pooling, dense, softmax) as an ONNX model with
onnx's helpers, imports it into loom with a static batch size, compiles it (the operators fused
into kernels, each scheduled by its template), runs it on NumPy inputs and compares the output
and the time with ONNX Runtime's.

  PYTHONPATH=build/python build/venv/bin/python examples/python/onnx_model.py [--model FILE] [--batch N] [--log FILE]
"""
import argparse
import os
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import loom


def small_cnn(path):
    rng = np.random.default_rng(0)

    def const(name, shape, scale=0.1):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype("float32"), name)

    inits = [const("w1", (16, 3, 3, 3)), const("b1", (16,)),
             const("gamma", (16,), 1.0), const("beta", (16,)), const("mean", (16,)),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype("float32"), "var"),
             const("w2", (32, 16, 3, 3)), const("fc", (32, 10)), const("fcb", (10,))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def timed(f, number=20):
    f()
    t0 = time.perf_counter()
    for _ in range(number):
        f()
    return (time.perf_counter() - t0) / number


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="an ONNX model with one float input (default: a small CNN written here)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--log", help="a tuning log for the model's kernels")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        path = args.model or os.path.join(d, "small_cnn.onnx")
        if not args.model:
            small_cnn(path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        shape = [args.batch if not isinstance(s, int) else s for s in inp.shape]

        graph = loom.graph.import_onnx(path, input_shapes={inp.name: shape})
        model = loom.graph.compile(graph, log=args.log)
        print(f"{graph.name}: {graph.num_ops} operators, {len(model.kernels)} kernels")
        for k in model.kernels:
            print(f"  {k.name}: {k.ops}")

        x = np.random.rand(*shape).astype("float32")
        ours = model(x)
        theirs = sess.run(None, {inp.name: x})[0]
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        print(f"loom and ONNX Runtime agree (max difference {np.abs(ours - theirs).max():.2e})")
        t_loom = timed(lambda: model(x))
        t_ort = timed(lambda: sess.run(None, {inp.name: x}))
        print(f"loom {t_loom * 1e3:.3f} ms, ONNX Runtime {t_ort * 1e3:.3f} ms per run")


if __name__ == "__main__":
    main()
