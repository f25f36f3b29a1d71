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
  bert_base     BERT-base's encoder, all 12 layers, with its attention mask (inputs the
                embeddings' output [1, seq, 768] and attention_mask [1, seq], 1 keep, 0 pad; the
                mask becomes (1 - mask) * -10000 added to the scores, as transformers exports it)
  bert_base_384 the same at sequence 384
  vit_b16       ViT-B/16 at 224x224 (timm's VisionTransformer: 16x16 patch convolution, class
                token, 12 pre-LayerNorm blocks whose attention splits one qkv projection with a
                Reshape/Transpose/Gather and scales Q, GELU, 1000 classes)
  resnet18_int8, mobilenet_v2_int8
                the two CNNs quantized by ONNX Runtime's own tools (quantize_qdq: QDQ, uint8
                activations, per-channel int8 weights with reduce_range), as the test cases
                of tests/onnx/gen_model_cases.py are

Weights are drawn from one numpy generator seeded with --seed, scaled so that activations
keep roughly unit variance through the network (He-normal convolutions, batch-norm statistics
near identity, the last batch norm of each residual branch scaled by 0.5, encoder projections
with variance 1/fan_in). For each model OUT/<name>.onnx and one input, OUT/<name>.input_0.npy
(standard normal, same seed), are written (bert_base's attention_mask, OUT/<name>.input_1.npy,
is 1 but for the last eighth of the positions). Smaller variants for tests: --image-size, --seq,
--hidden, --heads, --ffn, --layers.

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
MODELS = ("resnet18", "mobilenet_v2", "bert_layer", "resnet18_int8", "mobilenet_v2_int8", "bert_base", "bert_base_384",
          "vit_b16")


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

    def layer_norm(self, x: str, c: int, name: str, eps: float = 1e-12) -> str:
        g = self.const(f"{name}.weight", self.uniform((c,), 0.9, 1.1))
        b = self.const(f"{name}.bias", self.normal((c,), 0.02))
        return self.node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=eps)

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


def head_split_shape(net: Net, x: str, heads: int, head: int, prefix: str) -> str:
    """The head split's target shape from the input's own shape, as torch exports a
    view(batch, seq, heads, head_size): Shape -> Gather -> Unsqueeze -> Concat."""
    i64 = lambda name, v: net.const(name, np.array(v, np.int64))
    shape = net.node("Shape", [x], f"{prefix}.shape")
    dims = [net.node("Unsqueeze", [net.node("Gather", [shape, i64(f"{prefix}.dim_index", d)], f"{prefix}.dim", axis=0),
                                   i64(f"{prefix}.unsqueeze_axes", [0])], f"{prefix}.dim_unsqueeze")
            for d in (0, 1)]
    return net.node("Concat", dims + [i64(f"{prefix}.head_dims", [heads, head])], f"{prefix}.split_shape", axis=0)


def gelu(net: Net, h: str, prefix: str) -> str:
    """GELU(x) = x * 0.5 * (1 + erf(x / sqrt(2)))."""
    e = net.node("Erf", [net.node("Div", [h, net.const("gelu.sqrt2", np.array(math.sqrt(2.0), np.float32))],
                                  f"{prefix}.gelu.div")], f"{prefix}.gelu.erf")
    e = net.node("Add", [e, net.const("gelu.one", np.array(1.0, np.float32))], f"{prefix}.gelu.add")
    g = net.node("Mul", [h, e], f"{prefix}.gelu.mul")
    return net.node("Mul", [g, net.const("gelu.half", np.array(0.5, np.float32))], f"{prefix}.gelu")


def bert_encoder_layer(net: Net, x: str, prefix: str, hidden: int, heads: int, ffn: int,
                       mask: str | None = None) -> str:
    """One post-LayerNorm BERT layer as transformers exports it; `mask` is added to the scores."""
    head = hidden // heads
    split_shape = head_split_shape(net, x, heads, head, f"{prefix}attention")

    def heads_of(name: str, perm: list[int]) -> str:
        y = net.linear(x, hidden, hidden, f"{prefix}attention.self.{name}")
        y = net.node("Reshape", [y, split_shape], f"{prefix}attention.self.{name}.split")
        return net.node("Transpose", [y], f"{prefix}attention.self.{name}.heads", perm=perm)

    q = heads_of("query", [0, 2, 1, 3])           # [B, H, S, D]
    k = heads_of("key", [0, 2, 3, 1])             # [B, H, D, S]
    v = heads_of("value", [0, 2, 1, 3])           # [B, H, S, D]
    scores = net.node("MatMul", [q, k], f"{prefix}attention.self.scores")
    scores = net.node("Div", [scores, net.const("attention.self.scale", np.array(math.sqrt(head), np.float32))],
                      f"{prefix}attention.self.scaled")
    if mask is not None:
        scores = net.node("Add", [scores, mask], f"{prefix}attention.self.masked")
    probs = net.node("Softmax", [scores], f"{prefix}attention.self.softmax", axis=-1)
    ctx = net.node("MatMul", [probs, v], f"{prefix}attention.self.context")
    ctx = net.node("Transpose", [ctx], f"{prefix}attention.self.context.merge", perm=[0, 2, 1, 3])
    merge = net.const("attention.self.merge_shape", np.array([0, 0, hidden], np.int64))
    ctx = net.node("Reshape", [ctx, merge], f"{prefix}attention.self.context.flat")
    attn = net.linear(ctx, hidden, hidden, f"{prefix}attention.output.dense")
    attn = net.layer_norm(net.node("Add", [attn, x], f"{prefix}attention.output.residual"), hidden,
                          f"{prefix}attention.output.LayerNorm")
    g = gelu(net, net.linear(attn, hidden, ffn, f"{prefix}intermediate.dense"), f"{prefix}intermediate")
    out = net.linear(g, ffn, hidden, f"{prefix}output.dense")
    return net.layer_norm(net.node("Add", [out, attn], f"{prefix}output.residual"), hidden, f"{prefix}output.LayerNorm")


def bert_layer(seed: int, seq: int, hidden: int = 768, heads: int = 12, ffn: int = 3072
               ) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
    net = Net("bert_layer", seed)
    x = "hidden_states"
    out = bert_encoder_layer(net, x, "", hidden, heads, ffn)
    shape_in = [1, seq, hidden]
    return net.model([(x, shape_in)], [(out, shape_in)]), [(x, shape_in)]


def bert_base(seed: int, seq: int, hidden: int = 768, heads: int = 12, ffn: int = 3072, layers: int = 12
              ) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    """BERT's encoder: `layers` layers over the embeddings' output, with the attention mask
    extended as transformers does: (1 - mask[:, None, None, :]) * -10000."""
    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
    net = Net("bert_base", seed)
    x, mask = "hidden_states", "attention_mask"
    m = net.node("Unsqueeze", [mask, net.const("mask.axes", np.array([1, 2], np.int64))], "extended_mask.unsqueeze")
    m = net.node("Sub", [net.const("mask.one", np.array(1.0, np.float32)), m], "extended_mask.invert")
    m = net.node("Mul", [m, net.const("mask.min", np.array(-10000.0, np.float32))], "extended_mask")
    for i in range(layers):
        x = bert_encoder_layer(net, x, f"encoder.layer.{i}.", hidden, heads, ffn, m)
    inputs = [("hidden_states", [1, seq, hidden]), (mask, [1, seq])]
    return net.model(inputs, [(x, [1, seq, hidden])]), inputs


def vit(seed: int, image: int, patch: int = 16, hidden: int = 768, heads: int = 12, mlp: int = 3072,
        layers: int = 12, classes: int = 1000) -> tuple[onnx.ModelProto, list[tuple[str, list[int]]]]:
    """timm's VisionTransformer (vit_base_patch16_224) as torch.onnx exports it."""
    if image % patch or hidden % heads:
        raise ValueError(f"--image-size {image} must be a multiple of {patch}, --hidden {hidden} of --heads {heads}")
    net = Net("vit_b16", seed)
    head = hidden // heads
    tokens = (image // patch) ** 2 + 1
    i64 = lambda name, v: net.const(name, np.array(v, np.int64))
    w = net.const("patch_embed.proj.weight", net.normal((hidden, 3, patch, patch), math.sqrt(1.0 / (3 * patch * patch))))
    b = net.const("patch_embed.proj.bias", net.normal((hidden,), 0.02))
    x = net.node("Conv", ["data", w, b], "patch_embed.proj", kernel_shape=[patch, patch], strides=[patch, patch],
                 pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
    x = net.node("Reshape", [x, i64("patch_embed.flat_shape", [1, hidden, tokens - 1])], "patch_embed.flatten")
    x = net.node("Transpose", [x], "patch_embed.transpose", perm=[0, 2, 1])
    cls = net.const("cls_token", net.normal((1, 1, hidden), 0.02))
    x = net.node("Concat", [cls, x], "cls_concat", axis=1)
    x = net.node("Add", [x, net.const("pos_embed", net.normal((1, tokens, hidden), 0.02))], "pos_add")
    scale = net.const("attn.scale", np.array(head ** -0.5, np.float32))
    for i in range(layers):
        p = f"blocks.{i}."
        y = net.layer_norm(x, hidden, f"{p}norm1", eps=1e-6)
        qkv = net.linear(y, hidden, 3 * hidden, f"{p}attn.qkv")
        qkv = net.node("Reshape", [qkv, i64(f"{p}attn.qkv_shape", [1, tokens, 3, heads, head])], f"{p}attn.qkv.split")
        qkv = net.node("Transpose", [qkv], f"{p}attn.qkv.permute", perm=[2, 0, 3, 1, 4])   # [3, B, H, N, D]
        q, k, v = (net.node("Gather", [qkv, i64(f"{p}attn.index{j}", j)], f"{p}attn.{n}", axis=0)
                   for j, n in enumerate("qkv"))
        q = net.node("Mul", [q, scale], f"{p}attn.q_scaled")
        kt = net.node("Transpose", [k], f"{p}attn.k_t", perm=[0, 1, 3, 2])
        a = net.node("Softmax", [net.node("MatMul", [q, kt], f"{p}attn.scores")], f"{p}attn.softmax", axis=-1)
        o = net.node("MatMul", [a, v], f"{p}attn.context")
        o = net.node("Transpose", [o], f"{p}attn.merge", perm=[0, 2, 1, 3])
        o = net.node("Reshape", [o, i64(f"{p}attn.merge_shape", [1, tokens, hidden])], f"{p}attn.flat")
        x = net.node("Add", [x, net.linear(o, hidden, hidden, f"{p}attn.proj")], f"{p}residual1")
        y = net.layer_norm(x, hidden, f"{p}norm2", eps=1e-6)
        y = net.linear(gelu(net, net.linear(y, hidden, mlp, f"{p}mlp.fc1"), f"{p}mlp"), mlp, hidden, f"{p}mlp.fc2")
        x = net.node("Add", [x, y], f"{p}residual2")
    x = net.layer_norm(x, hidden, "norm", eps=1e-6)
    x = net.node("Gather", [x, i64("cls_index", 0)], "cls_pool", axis=1)                  # [B, hidden]
    wh = net.const("head.weight", net.normal((classes, hidden), 1.0 / math.sqrt(hidden)))
    bh = net.const("head.bias", net.normal((classes,), 0.01))
    logits = net.node("Gemm", [x, wh, bh], "head", alpha=1.0, beta=1.0, transB=1)
    shape = [1, 3, image, image]
    return net.model([("data", shape)], [(logits, [1, classes])]), [("data", shape)]


def example_input(name: str, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    """An input of the models: standard normal, but an attention mask is 1 with the last eighth
    of the positions 0 (padding)."""
    if name == "attention_mask":
        a = np.ones(shape, np.float32)
        a[..., shape[-1] - shape[-1] // 8:] = 0
        return a
    return rng.standard_normal(shape).astype(np.float32)


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
    ap.add_argument("--layers", type=int, default=12, help="bert_base's and vit_b16's layers (default 12)")
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
        elif base in ("bert_base", "bert_base_384"):
            seq = 384 if base == "bert_base_384" else args.seq
            model, inputs = bert_base(seed, seq, args.hidden, args.heads, args.ffn, args.layers)
        elif base == "vit_b16":
            model, inputs = vit(seed, args.image_size, 16, args.hidden, args.heads, args.ffn, args.layers, args.classes)
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
        for k, (name, shape) in enumerate(inputs):
            np.save(os.path.join(args.out, f"{m}.input_{k}.npy"), example_input(name, shape, rng))
        params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print(f"{path}: {len(model.graph.node)} nodes, {params / 1e6:.2f} M parameters, opset {OPSET}, "
              f"input {' '.join(str(s) for _, s in inputs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
