#!/usr/bin/env python3
"""Writes the end-to-end models as ONNX files, with deterministic random weights.

Built with onnx.helper and numpy alone (no torch, no network access), in the form
torch.onnx.export gives them at opset 17: NCHW convolutions without bias followed by unfused
BatchNormalization, ReLU6 as Clip with min/max inputs, the classifier as Flatten + Gemm
(transB=1), linear layers of the encoder as MatMul + Add, the head split as a Reshape whose
shape comes from Shape/Gather/Unsqueeze/Concat, GELU through Erf.

  resnet18      torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]), 1000 classes
  mobilenet_v2  torchvision's MobileNetV2 (width 1.0), 1000 classes
  bert_layer    one BERT-base encoder layer: hidden 768, 12 heads, FFN 3072, post-LayerNorm
  resnet18_int8, mobilenet_v2_int8
                the two CNNs quantized by ONNX Runtime's own tools (quantize_qdq: QDQ, uint8
                activations, per-channel int8 weights with reduce_range), as the test cases
                of tests/onnx/gen_model_cases.py are

Weights are drawn from one numpy generator seeded with --seed, scaled so that activations
keep roughly unit variance through the network (He-normal convolutions, batch-norm statistics
near identity, the last batch norm of each residual branch scaled by 0.5, encoder projections
with variance 1/fan_in). For each model OUT/<name>.onnx and one input, OUT/<name>.input_0.npy
(standard normal, same seed), are written. Smaller variants for tests: --image-size, --seq,
--hidden, --heads, --ffn.

    export_models.py OUT [--models resnet18,mobilenet_v2,bert_layer] [--image-size 224] [--seq 128]
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # what opset 17 was released with; every ONNX Runtime since 1.13 reads it
MODELS = ("resnet18", "mobilenet_v2", "bert_layer", "resnet18_int8", "mobilenet_v2_int8")


class Net:
    """Collects nodes and initializers of one graph, naming values uniquely."""

    def __init__(self, name: str, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.counts: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def const(self, name: str, array: np.ndarray) -> str:
        name = self.fresh(name)
        self.inits.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, n_out: int = 1, **attrs) -> str | list[str]:
        name = self.fresh(name)
        outs = [name] if n_out == 1 else [f"{name}:{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def normal(self, shape, std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def uniform(self, shape, lo: float, hi: float) -> np.ndarray:
        return self.rng.uniform(lo, hi, shape).astype(np.float32)

    # ---- layers, as torch exports them
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int = 0, groups: int = 1,
             name: str = "conv") -> str:
        fan_in = cin // groups * k * k
        w = self.const(f"{name}.weight", self.normal((cout, cin // groups, k, k), math.sqrt(2.0 / fan_in)))
        return self.node("Conv", [x, w], name, dilations=[1, 1], group=groups, kernel_shape=[k, k],
                         pads=[pad] * 4, strides=[stride, stride])

    def batch_norm(self, x: str, c: int, name: str, gamma_scale: float = 1.0) -> str:
        gamma = self.const(f"{name}.weight", self.uniform((c,), 0.8, 1.2) * gamma_scale)
        beta = self.const(f"{name}.bias", self.normal((c,), 0.05))
        mean = self.const(f"{name}.running_mean", self.normal((c,), 0.05))
        var = self.const(f"{name}.running_var", self.uniform((c,), 0.8, 1.2))
        return self.node("BatchNormalization", [x, gamma, beta, mean, var], name, epsilon=1e-5, momentum=0.9)

    def relu(self, x: str, name: str) -> str:
        return self.node("Relu", [x], name)

    def relu6(self, x: str, name: str) -> str:
        lo = self.const(f"{name}.min", np.array(0.0, np.float32))
        hi = self.const(f"{name}.max", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi], name)

    def classifier(self, x: str, features: int, classes: int) -> str:
        pooled = self.node("GlobalAveragePool", [x], "avgpool")
        flat = self.node("Flatten", [pooled], "flatten", axis=1)
        w = self.const("fc.weight", self.normal((classes, features), 1.0 / math.sqrt(features)))
        b = self.const("fc.bias", self.normal((classes,), 0.01))
        return self.node("Gemm", [flat, w, b], "fc", alpha=1.0, beta=1.0, transB=1)

    def linear(self, x: str, fin: int, fout: int, name: str) -> str:
        w = self.const(f"{name}.weight", self.normal((fin, fout), 1.0 / math.sqrt(fin)))
        b = self.const(f"{name}.bias", self.normal((fout,), 0.02))
        y = self.node("MatMul", [x, w], f"{name}.matmul")
        return self.node("Add", [y, b], name)

    def layer_norm(self, x: str, c: int, name: str) -> str:
        g = self.const(f"{name}.weight", self.uniform((c,), 0.9, 1.1))
        b = self.const(f"{name}.bias", self.normal((c,), 0.02))
        return self.node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-12)

    def model(self, inputs: list[tuple[str, list[int]]], outputs: list[tuple[str, list[int]]]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="loom-export",
                              ir_version=IR_VERSION)
        onnx.checker.check_model(m, full_check=True)
        return m


def resnet18(seed: int, image: int, classes: int = 1000) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    net = Net("resnet18", seed)
    x = net.conv("data", 3, 64, 7, stride=2, pad=3, name="conv1")
    x = net.relu(net.batch_norm(x, 64, "bn1"), "relu")
    x = net.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    cin = 64
    for stage, (cout, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], start=1):
        for block in range(2):
            s = stride if block == 0 else 1
            p = f"layer{stage}.{block}"
            y = net.relu(net.batch_norm(net.conv(x, cin, cout, 3, s, 1, name=f"{p}.conv1"), cout, f"{p}.bn1"),
                         f"{p}.relu1")
            y = net.batch_norm(net.conv(y, cout, cout, 3, 1, 1, name=f"{p}.conv2"), cout, f"{p}.bn2", gamma_scale=0.5)
            shortcut = x
            if s != 1 or cin != cout:
                shortcut = net.batch_norm(net.conv(x, cin, cout, 1, s, 0, name=f"{p}.downsample.0"), cout,
                                          f"{p}.downsample.1")
            x = net.relu(net.node("Add", [y, shortcut], f"{p}.add"), f"{p}.relu2")
            cin = cout
    logits = net.classifier(x, 512, classes)
    shape = [1, 3, image, image]
    return net.model([("data", shape)], [(logits, [1, classes])]), [("data", shape)]


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: channel counts rounded to multiples of 8."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def mobilenet_v2(seed: int, image: int, classes: int = 1000) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    net = Net("mobilenet_v2", seed)
    cin = make_divisible(32)
    x = net.relu6(net.batch_norm(net.conv("data", 3, cin, 3, 2, 1, name="features.0.0"), cin, "features.0.1"),
                  "features.0.2")
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]
    index = 1
    for t, c, n, s in settings:
        cout = make_divisible(c)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            residual = stride == 1 and cin == cout
            p = f"features.{index}.conv"
            y, layer = x, 0
            if t != 1:
                y = net.conv(y, cin, hidden, 1, name=f"{p}.{layer}.0")
                y = net.relu6(net.batch_norm(y, hidden, f"{p}.{layer}.1"), f"{p}.{layer}.2")
                layer += 1
            y = net.conv(y, hidden, hidden, 3, stride, 1, groups=hidden, name=f"{p}.{layer}.0")
            y = net.relu6(net.batch_norm(y, hidden, f"{p}.{layer}.1"), f"{p}.{layer}.2")
            y = net.conv(y, hidden, cout, 1, name=f"{p}.{layer + 1}")
            y = net.batch_norm(y, cout, f"{p}.{layer + 2}", gamma_scale=0.5 if residual else 1.0)
            x = net.node("Add", [x, y], f"features.{index}.add") if residual else y
            cin = cout
            index += 1
    last = make_divisible(1280)
    x = net.conv(x, cin, last, 1, name=f"features.{index}.0")
    x = net.relu6(net.batch_norm(x, last, f"features.{index}.1"), f"features.{index}.2")
    logits = net.classifier(x, last, classes)
    shape = [1, 3, image, image]
    return net.model([("data", shape)], [(logits, [1, classes])]), [("data", shape)]


def bert_layer(seed: int, seq: int, hidden: int = 768, heads: int = 12, ffn: int = 3072
               ) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
    head = hidden // heads
    net = Net("bert_layer", seed)
    x = "hidden_states"
    i64 = lambda name, v: net.const(name, np.array(v, np.int64))

    # The head split's target shape from the input's own shape, as torch exports a
    # view(batch, seq, heads, head_size): Shape -> Gather -> Unsqueeze -> Concat.
    shape = net.node("Shape", [x], "attention.shape")
    dims = [net.node("Unsqueeze", [net.node("Gather", [shape, i64("attention.dim_index", d)], "attention.dim", axis=0),
                                   i64("attention.unsqueeze_axes", [0])], "attention.dim_unsqueeze")
            for d in (0, 1)]
    split_shape = net.node("Concat", dims + [i64("attention.head_dims", [heads, head])], "attention.split_shape", axis=0)

    def heads_of(name: str, perm: list[int]) -> str:
        y = net.linear(x, hidden, hidden, f"attention.self.{name}")
        y = net.node("Reshape", [y, split_shape], f"attention.self.{name}.split")
        return net.node("Transpose", [y], f"attention.self.{name}.heads", perm=perm)

    q = heads_of("query", [0, 2, 1, 3])           # [B, H, S, D]
    k = heads_of("key", [0, 2, 3, 1])             # [B, H, D, S]
    v = heads_of("value", [0, 2, 1, 3])           # [B, H, S, D]
    scores = net.node("MatMul", [q, k], "attention.self.scores")
    scores = net.node("Div", [scores, net.const("attention.self.scale", np.array(math.sqrt(head), np.float32))],
                      "attention.self.scaled")
    probs = net.node("Softmax", [scores], "attention.self.softmax", axis=-1)
    ctx = net.node("MatMul", [probs, v], "attention.self.context")
    ctx = net.node("Transpose", [ctx], "attention.self.context.merge", perm=[0, 2, 1, 3])
    ctx = net.node("Reshape", [ctx, i64("attention.self.merge_shape", [0, 0, hidden])], "attention.self.context.flat")
    attn = net.linear(ctx, hidden, hidden, "attention.output.dense")
    attn = net.layer_norm(net.node("Add", [attn, x], "attention.output.residual"), hidden, "attention.output.LayerNorm")

    # GELU(x) = x * 0.5 * (1 + erf(x / sqrt(2)))
    h = net.linear(attn, hidden, ffn, "intermediate.dense")
    e = net.node("Erf", [net.node("Div", [h, net.const("gelu.sqrt2", np.array(math.sqrt(2.0), np.float32))],
                                  "intermediate.gelu.div")], "intermediate.gelu.erf")
    e = net.node("Add", [e, net.const("gelu.one", np.array(1.0, np.float32))], "intermediate.gelu.add")
    g = net.node("Mul", [h, e], "intermediate.gelu.mul")
    g = net.node("Mul", [g, net.const("gelu.half", np.array(0.5, np.float32))], "intermediate.gelu")
    out = net.linear(g, ffn, hidden, "output.dense")
    out = net.layer_norm(net.node("Add", [out, attn], "output.residual"), hidden, "output.LayerNorm")
    shape_in = [1, seq, hidden]
    return net.model([(x, shape_in)], [(out, shape_in)]), [(x, shape_in)]


def quantize_qdq(model: onnx.ModelProto, inputs: list[tuple[str, list[int]]], path: str) -> None:
    """`model` quantized by ONNX Runtime's own tools as its docs say, written to `path`:
    quant_pre_process (shape inference, batch norms folded), then quantize_static in QDQ format,
    uint8 activations and int8 weights per channel with reduce_range (7-bit weights, as ONNX
    Runtime advises for x86 without VNNI, where its u8s8 kernels' 16-bit pair sums saturate
    otherwise), calibrated on four seeded standard-normal inputs."""
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(7)
            self.feeds = iter([{n: rng.standard_normal(s).astype(np.float32) for n, s in inputs} for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, pre = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "pre.onnx")
        onnx.save(model, src)
        quant_pre_process(src, pre, skip_symbolic_shape=True)  # static shapes: onnx shape inference suffices
        quantize_static(pre, path, Calibration(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write <model>.onnx and <model>.input_0.npy into (made if missing)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--image-size", type=int, default=224, help="H = W of the CNNs' input (default 224)")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--seq", type=int, default=128, help="the encoder's sequence length (default 128)")
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ffn", type=int, default=3072)
    args = ap.parse_args()

    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            ap.error(f"unknown model '{m}' (known: {', '.join(MODELS)})")
    if args.image_size < 32:
        ap.error("--image-size must be at least 32 (five stride-2 stages)")
    os.makedirs(args.out, exist_ok=True)
    for i, m in enumerate(names):
        base = m.removesuffix("_int8")
        seed = args.seed * 1000 + MODELS.index(base)
        if base == "bert_layer":
            model, inputs = bert_layer(seed, args.seq, args.hidden, args.heads, args.ffn)
        elif base == "resnet18":
            model, inputs = resnet18(seed, args.image_size, args.classes)
        else:
            model, inputs = mobilenet_v2(seed, args.image_size, args.classes)
        path = os.path.join(args.out, f"{m}.onnx")
        if m == base:
            onnx.save(model, path)
        else:
            quantize_qdq(model, inputs, path)
            model = onnx.load(path)
        rng = np.random.default_rng(seed + 500)
        for k, (_, shape) in enumerate(inputs):
            np.save(os.path.join(args.out, f"{m}.input_{k}.npy"), rng.standard_normal(shape).astype(np.float32))
        params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print(f"{path}: {len(model.graph.node)} nodes, {params / 1e6:.2f} M parameters, opset {OPSET}, "
              f"input {' '.join(str(s) for _, s in inputs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
