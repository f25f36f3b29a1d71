"""Tests of the integer convolution and matmul import (QDQ Conv and Gemm, QLinearConv,
ConvInteger) through `loom import`, `loom compile` and `loom run`: which loom operators each
form becomes (conv2d_int8 for uint8 x int8 with 16-channel multiples, the data zero point
folded into the bias or padded explicitly; an exact float32 convolution for narrow ones) and
the compiled outputs against ONNX Runtime's, to one quantization step of the output. Models
are made with onnx.helper. Run by ctest as onnx_qnn_import:
    qnn_import_test.py PATH/TO/loom"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LOOM = sys.argv.pop(1) if len(sys.argv) > 1 else "loom"


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def qdq_conv_model(c, k, kernel, pads, group, x_zp, rng, gemm=False):
    """x float [1,c,9,9] -> Q(uint8, x_zp) -> DQ -> Conv(DQ(int8 w per channel), DQ(int32 bias)) -> Q -> DQ,
    or with `gemm` x flattened first and a Gemm (transB=1) to k outputs instead of the Conv."""
    xs, ys = np.float32(0.02), np.float32(0.05)
    wshape = [k, c * 81] if gemm else [k, c // group, kernel, kernel]
    wq = rng.integers(-64, 64, wshape).astype(np.int8)
    ws = (rng.random(k) * 0.01 + 0.002).astype(np.float32)
    bq = rng.integers(-3000, 3000, k).astype(np.int32)
    inits = [init("xs", xs), init("xz", np.uint8(x_zp)), init("wq", wq), init("ws", ws),
             init("wz", np.zeros(k, np.int8)), init("bq", bq), init("bs", (xs * ws).astype(np.float32)),
             init("bz", np.zeros(k, np.int32)), init("ys", ys), init("yz", np.uint8(100))]
    nodes = [helper.make_node("Flatten", ["x"], ["xf"])] if gemm else []
    nodes += [helper.make_node("QuantizeLinear", ["xf" if gemm else "x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], axis=0)]
    if gemm:
        nodes.append(helper.make_node("Gemm", ["xd", "wd", "bd"], ["y"], transB=1))
        out = [1, k]
    else:
        nodes.append(helper.make_node("Conv", ["xd", "wd", "bd"], ["y"], pads=pads, group=group))
        out = None
    nodes += [helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 9, 9])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, out)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), float(ys)


def qdq_conv_chain_model(channels, rng):
    """x float [1,channels[0],9,9] -> Q -> DQ -> (1x1 Conv(DQ(int8 w per channel)) -> Q -> DQ) for each
    further entry of `channels`; activations uint8 with zero point 0 (as after a ReLU)."""
    inits, nodes, prev = [init("s0", np.float32(0.02)), init("z", np.uint8(0))], [], "x"
    nodes.append(helper.make_node("QuantizeLinear", ["x", "s0", "z"], ["q0"]))
    nodes.append(helper.make_node("DequantizeLinear", ["q0", "s0", "z"], ["d0"]))
    for i, (c, k) in enumerate(zip(channels, channels[1:]), start=1):
        inits += [init(f"w{i}", rng.integers(-64, 64, [k, c, 1, 1]).astype(np.int8)),
                  init(f"ws{i}", (rng.random(k) * 0.01 + 0.002).astype(np.float32)), init(f"wz{i}", np.zeros(k, np.int8)),
                  init(f"s{i}", np.float32(0.05 * i))]
        nodes += [helper.make_node("DequantizeLinear", [f"w{i}", f"ws{i}", f"wz{i}"], [f"wd{i}"], axis=0),
                  helper.make_node("Conv", [f"d{i - 1}", f"wd{i}"], [f"y{i}"]),
                  helper.make_node("QuantizeLinear", [f"y{i}", f"s{i}", "z"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", "z"], [f"d{i}"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels[0], 9, 9])],
                          [helper.make_tensor_value_info(f"d{len(channels) - 1}", TensorProto.FLOAT, None)],
                          initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), 0.05 * (len(channels) - 1)


def qlinear_conv_model(c, k, rng, integer=False):
    """QLinearConv (or ConvInteger) of uint8 x [1,c,8,8] (zero point 7) by int8 w [k,c,3,3], pads 1."""
    wq = rng.integers(-100, 100, [k, c, 3, 3]).astype(np.int8)
    if integer:
        inits = [init("wq", wq), init("xz", np.uint8(7))]
        node = helper.make_node("ConvInteger", ["x", "wq", "xz"], ["out"], pads=[1, 1, 1, 1])
        out_t = TensorProto.INT32
    else:
        inits = [init("xs", np.float32(0.03)), init("xz", np.uint8(7)), init("wq", wq),
                 init("ws", (rng.random(k) * 0.01 + 0.001).astype(np.float32)), init("wz", np.zeros(k, np.int8)),
                 init("ys", np.float32(0.4)), init("yz", np.uint8(128)),
                 init("b", rng.integers(-5000, 5000, k).astype(np.int32))]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "wq", "ws", "wz", "ys", "yz", "b"], ["out"],
                                pads=[1, 1, 1, 1])
        out_t = TensorProto.UINT8
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, 8, 8])],
                          [helper.make_tensor_value_info("out", out_t, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


class QnnImportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rng = np.random.default_rng(3)

    def tearDown(self):
        self.tmp.cleanup()

    def run_loom(self, *args):
        r = subprocess.run([LOOM, *args], capture_output=True, text=True, errors="replace", timeout=600)
        self.assertEqual(r.returncode, 0, f"loom {' '.join(args)}\nstdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def check(self, m, x, want_ops, step):
        """The imported operators include `want_ops` (name -> count, 0: absent) and the compiled
        output is ONNX Runtime's to `step` (0: exactly)."""
        path = os.path.join(self.tmp.name, "m.onnx")
        onnx.save(m, path)
        js = os.path.join(self.tmp.name, "m.json")
        self.run_loom("import", path, "-o", js)
        with open(js) as f:
            ops = [n.get("op") for n in json.load(f)["nodes"]]
        for op, count in want_ops.items():
            if count:
                self.assertEqual(ops.count(op), count, f"{op} in {ops}")
            else:
                self.assertNotIn(op, ops)
        so, xin, yout = (os.path.join(self.tmp.name, n) for n in ("m.so", "x.npy", "y.npy"))
        np.save(xin, x)
        self.run_loom("compile", path, "-o", so)
        self.run_loom("run", so, "--input", xin, "--output", yout, "--repeat", "1")
        got = np.load(yout)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        self.assertEqual(got.shape, want.shape)
        err = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
        self.assertLessEqual(err, step * 1.001, f"max error {err}, allowed {step}")
        self.assertGreater(len(np.unique(want)), 10, "a degenerate output would make a weak test")

    def test_qdq_conv_u8s8_is_conv2d_int8(self):
        m, step = qdq_conv_model(32, 48, 3, [1, 1, 1, 1], 1, 0, self.rng)
        x = self.rng.standard_normal([1, 32, 9, 9]).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 1, "conv2d": 0, "pad": 0}, step)

    def test_data_zero_point_pads_explicitly(self):
        m, step = qdq_conv_model(16, 16, 3, [1, 1, 1, 1], 1, 131, self.rng)
        x = self.rng.standard_normal([1, 16, 9, 9]).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 1, "pad": 1}, step)

    def test_data_zero_point_folds_into_the_bias_without_padding(self):
        m, step = qdq_conv_model(16, 32, 1, [0, 0, 0, 0], 1, 131, self.rng)
        x = self.rng.standard_normal([1, 16, 9, 9]).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 1, "pad": 0, "subtract": 0}, step)

    def test_narrow_and_depthwise_convs_are_exact_float32(self):
        for c, k, group in ((3, 16, 1), (24, 24, 24)):
            with self.subTest(c=c, k=k, group=group):
                m, step = qdq_conv_model(c, k, 3, [1, 1, 1, 1], group, 119, self.rng)
                x = self.rng.standard_normal([1, c, 9, 9]).astype(np.float32)
                self.check(m, x, {"conv2d_int8": 0, "conv2d": 1, "requantize": 1}, step)

    def test_qdq_gemm_is_requantized(self):
        # 11 outputs are too far from a multiple of 16 for the int8 template: exact float32.
        m, step = qdq_conv_model(2, 11, 0, None, 1, 120, self.rng, gemm=True)
        x = self.rng.standard_normal([1, 2, 9, 9]).astype(np.float32)
        self.check(m, x, {"matmul": 1, "requantize": 1, "conv2d_int8": 0}, step)

    def test_qdq_gemm_is_an_int8_1x1_conv(self):
        # K = 16·81 fits the int8 template's blocks; the 40 outputs are padded to 48 and cut back.
        m, step = qdq_conv_model(16, 40, 0, None, 1, 120, self.rng, gemm=True)
        x = self.rng.standard_normal([1, 16, 9, 9]).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 1, "matmul": 0, "requantize": 1, "strided_slice": 1, "pad": 0}, step)
        # K = 162 is padded to 176 with zero weights (the data with its zero point).
        m, step = qdq_conv_model(2, 40, 0, None, 1, 120, self.rng, gemm=True)
        x = self.rng.standard_normal([1, 2, 9, 9]).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 1, "matmul": 0, "pad": 1, "strided_slice": 1}, step)

    def test_channels_near_a_block_are_padded_onto_the_int8_template(self):
        # 24 channels (MobileNetV2's narrowest) become 32: zero weights, the data padded with its
        # zero point (with the spatial padding when that is explicit), the outputs cut back.
        for c, k, kernel, pads, x_zp, want_pads in ((24, 24, 1, [0, 0, 0, 0], 0, 1), (24, 40, 3, [1, 1, 1, 1], 131, 1),
                                                    (32, 24, 3, [1, 1, 1, 1], 0, 0)):
            with self.subTest(c=c, k=k, kernel=kernel, x_zp=x_zp):
                m, step = qdq_conv_model(c, k, kernel, pads, 1, x_zp, self.rng)
                x = self.rng.standard_normal([1, c, 9, 9]).astype(np.float32)
                self.check(m, x, {"conv2d_int8": 1, "conv2d": 0, "pad": want_pads,
                                  "strided_slice": 1 if k % 16 else 0}, step)

    def test_padded_channels_pass_between_int8_convs_without_a_pad(self):
        # The second conv reads the first one's 32 padded channels directly: no pad, and the
        # third (24 -> 16 from 24 -> 24) too; the last output is cut once for the graph output.
        m, step = qdq_conv_chain_model([16, 24, 24, 16], self.rng)
        x = np.abs(self.rng.standard_normal([1, 16, 9, 9])).astype(np.float32)
        self.check(m, x, {"conv2d_int8": 3, "pad": 0}, step)

    def test_qlinear_conv_and_conv_integer(self):
        x = self.rng.integers(0, 256, [1, 32, 8, 8]).astype(np.uint8)
        self.check(qlinear_conv_model(32, 16, self.rng), x, {"conv2d_int8": 1, "requantize": 1}, 1)
        self.check(qlinear_conv_model(32, 16, self.rng, integer=True), x, {"conv2d_int8": 1, "requantize": 0}, 0)
        x3 = self.rng.integers(0, 256, [1, 3, 8, 8]).astype(np.uint8)
        self.check(qlinear_conv_model(3, 16, self.rng, integer=True), x3, {"conv2d_int8": 0, "conv2d": 1}, 0)


if __name__ == "__main__":
    unittest.main()
