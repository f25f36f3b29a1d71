#!/usr/bin/env python3
"""Writes the end-to-end models (python/export_models.py) as cases in ONNX's test layout, with
ONNX Runtime's outputs as the expected ones, so that loom_onnx_node_tests compares loom with
ONNX Runtime on them:

    OUT/<model>/model.onnx
    OUT/<model>/test_data_set_0/input_0.pb    the exporter's input (standard normal, seeded)
    OUT/<model>/test_data_set_0/output_0.pb   ONNX Runtime's output (CPU provider, all optimizations)
    OUT/manifest.json

The sizes are reduced so that loom's reference execution (te::evaluate) stays within seconds:
--image-size (default 32) for ResNet-18 and MobileNetV2 (full channel widths and depth, 10
classes), --seq/--hidden/--heads/--ffn (default 32/128/4/512) for the encoder layer, and the
same with --layers (default 2) for BERT's encoder with its attention mask (bert_base) and a
ViT (vit_b16: the ViT-B/16 structure on a 32x32 image, 5 tokens). --full (or
LOOM_MODEL_CASES=full in the environment, as the ctest onnx_models_vs_ort_full sets it) writes
the models at the issue's sizes instead: 224x224 with 1000 classes, a BERT-base layer and
BERT-base's 12-layer encoder at sequence 128 (hidden 768, 12 heads, FFN 3072) and ViT-B/16 at
224x224, for loom's compiled mode.

The builder models: ResNet-18 and MobileNetV2 as examples/models/models.cc builds them with
loom's C++ graph builder (its own deterministic weights), written by build/examples/write_models
(--write-models, or LOOM_WRITE_MODELS in the environment, as the ctests set it) at the same image
size and classes, converted to ONNX by python/graph_to_onnx.py. ONNX Runtime runs the converted
file; the expected output is compared twice by loom_onnx_node_tests:

    OUT/<model>_builder/model.onnx         loom's import of the converted ONNX file
    OUT/<model>_builder_json/model.json    loom's own model file, loaded directly (no ONNX),
                                           its weights file beside it; the same input and output

    gen_model_cases.py OUT [--full] [--image-size 32] [--seq 32] [--hidden 128] [--heads 4] [--ffn 512]
                       [--layers 2] [--write-models PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import export_models  # noqa: E402
import graph_to_onnx  # noqa: E402
import ort_run  # noqa: E402


def quantized_case(out: str, name: str, model, inputs) -> dict:
    """`name` quantized by ONNX Runtime's own tools (export_models.quantize_qdq: QDQ, uint8
    activations, per-channel int8 weights with reduce_range, calibrated on four seeded
    standard-normal inputs), as bench/e2e's resnet18_int8 and mobilenet_v2_int8 are. The case's
    own tolerance is one quantization step of the output (the scale of its last
    DequantizeLinear): loom computes the convolutions exactly in integers as ONNX Runtime does,
    but its residual adds and average pooling in float, which may round a value to the
    neighbouring step."""
    case = name + "_int8"
    d = os.path.join(out, case)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    export_models.quantize_qdq(model, inputs, path)
    q = onnx.load(path)
    last_dq = next(n for n in reversed(q.graph.node) if n.op_type == "DequantizeLinear")
    step = float(numpy_helper.to_array(next(i for i in q.graph.initializer if i.name == last_dq.input[1])))
    rng = np.random.default_rng(500)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs}
    outs = ort_run.session(path, 1).run(None, feeds)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    for k, (n, _) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(ds, f"input_{k}.pb"))
    for k, o in enumerate(outs):
        onnx.save_tensor(numpy_helper.from_array(o, q.graph.output[k].name), os.path.join(ds, f"output_{k}.pb"))
    print(f"{case}: ONNX Runtime's QDQ quantization, {sum(n.op_type == 'QuantizeLinear' for n in q.graph.node)} "
          f"QuantizeLinear nodes, output step {step:.3g}")
    return {"name": case, "ops": sorted({n.op_type for n in q.graph.node}), "inputs": [n for n, _ in inputs],
            "data_sets": 1, "onnx_rtol": 0.0, "onnx_atol": step * 1.001}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2, help="bert_base's and vit_b16's layers")
    ap.add_argument("--full", action="store_true", default=os.environ.get("LOOM_MODEL_CASES") == "full",
                    help="the full-size models (224x224, 1000 classes; BERT-base at sequence 128)")
    ap.add_argument("--write-models", default=os.environ.get("LOOM_WRITE_MODELS"),
                    help="build/examples/write_models, for the builder models (default: $LOOM_WRITE_MODELS)")
    args = ap.parse_args()
    if not args.write_models:
        ap.error("the builder models need build/examples/write_models: --write-models PATH or LOOM_WRITE_MODELS")
    if args.full:
        args.image_size, args.classes = 224, 1000
        args.seq, args.hidden, args.heads, args.ffn, args.layers = 128, 768, 12, 3072, 12

    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    models = {
        "resnet18": export_models.resnet18(0, args.image_size, args.classes),
        "mobilenet_v2": export_models.mobilenet_v2(1, args.image_size, args.classes),
        "bert_layer": export_models.bert_layer(2, args.seq, args.hidden, args.heads, args.ffn),
        "bert_base": export_models.bert_base(5, args.seq, args.hidden, args.heads, args.ffn, args.layers),
        "vit_b16": export_models.vit(7, args.image_size, 16, args.hidden, args.heads, args.ffn, args.layers,
                                     args.classes),
    }
    # The builder models: loom model files, each also converted to ONNX.
    builder_dir = os.path.join(args.out, "builder_models")
    subprocess.run([args.write_models, builder_dir, "--image", str(args.image_size), "--classes", str(args.classes)],
                   check=True)
    json_models = {}
    for name in ("resnet18", "mobilenet_v2"):
        json_path = os.path.join(builder_dir, name + ".json")
        model = graph_to_onnx.convert_file(json_path)
        models[name + "_builder"] = (model, [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim])
                                             for i in model.graph.input])
        json_models[name + "_builder"] = json_path

    cases = []

    def write_case(case, model, inputs, feeds, outs):
        """The data set and the manifest entry of a case folder that already holds its model."""
        ds = os.path.join(args.out, case, "test_data_set_0")
        os.makedirs(ds)
        for k, (n, _) in enumerate(inputs):
            onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(ds, f"input_{k}.pb"))
        for k, o in enumerate(outs):
            onnx.save_tensor(numpy_helper.from_array(o, model.graph.output[k].name), os.path.join(ds, f"output_{k}.pb"))
        cases.append({"name": case, "ops": sorted({n.op_type for n in model.graph.node}),
                      "inputs": [n for n, _ in inputs], "data_sets": 1, "onnx_rtol": 0.0, "onnx_atol": 0.0})

    for name, (model, inputs) in models.items():
        rng = np.random.default_rng(500)
        feeds = {n: export_models.example_input(n, s, rng) for n, s in inputs}
        os.makedirs(os.path.join(args.out, name))
        path = os.path.join(args.out, name, "model.onnx")
        onnx.save(model, path)
        outs = ort_run.session(path, 1).run(None, feeds)
        write_case(name, model, inputs, feeds, outs)
        if name in json_models:  # loom's model file as write_models wrote it, its weights file beside it
            d = os.path.join(args.out, name + "_json")
            os.makedirs(d)
            with open(json_models[name]) as f:
                weights = json.load(f).get("weights")
            shutil.move(json_models[name], os.path.join(d, "model.json"))
            if weights:
                shutil.move(os.path.join(builder_dir, weights), os.path.join(d, weights))
            write_case(name + "_json", model, inputs, feeds, outs)
        print(f"{name}: {len(model.graph.node)} nodes, input {[s for _, s in inputs]}, ONNX Runtime output "
              f"{outs[0].shape} std {float(np.std(outs[0])):.3g}{' (and its loom model file)' if name in json_models else ''}")
    shutil.rmtree(builder_dir)
    for name in ("resnet18", "mobilenet_v2"):
        cases.append(quantized_case(args.out, name, *models[name]))
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"onnxruntime_version": ort.__version__, "cases": cases}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
