#!/usr/bin/env python3
"""Runs an ONNX model with ONNX Runtime's CPU provider: the peer of loom's end-to-end tests
and benchmarks.

Inputs are .npy files in the order of the model's graph inputs; each output is written as
OUT/output_<K>.npy (K in graph order). With --repeat N the model runs N more times after
--warmup runs and the latency (median, min, mean, in ms) is printed and, with --json, written
to a file. All graph optimizations are on (ORT_ENABLE_ALL), --threads sets the intra-op
thread count (inter-op: 1, sequential execution).

    ort_run.py model.onnx --inputs x.npy [--out DIR] [--threads 1] [--warmup 5] [--repeat 50] [--json F]

With --serve it stays up for a benchmark that alternates ONNX Runtime with another runtime
(bench/e2e): after writing the outputs and running --warmup times it prints "ready", then for
each line "N" read from stdin runs the model N times and prints one line of the N latencies in
ms; it exits at the end of stdin.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def session(model: str, threads: int) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--inputs", nargs="*", default=[], help=".npy files, one per graph input, in order")
    ap.add_argument("--out", help="folder for output_<K>.npy (made if missing)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=0, help="timed runs after the warm-up (default 0: run once)")
    ap.add_argument("--json", help="write the latency figures to this file")
    ap.add_argument("--serve", action="store_true", help="time blocks of runs on request (see above)")
    args = ap.parse_args()

    sess = session(args.model, args.threads)
    inputs = sess.get_inputs()
    if len(args.inputs) != len(inputs):
        ap.error(f"{args.model} has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}), "
                 f"{len(args.inputs)} .npy files given")
    feeds = {}
    for info, path in zip(inputs, args.inputs):
        a = np.load(path)
        want = [d if isinstance(d, int) else None for d in info.shape]
        if len(want) != a.ndim or any(w is not None and w != s for w, s in zip(want, a.shape)):
            ap.error(f"{path}: shape {list(a.shape)}, input '{info.name}' wants {info.shape}")
        feeds[info.name] = a
    outputs = sess.run(None, feeds)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for k, o in enumerate(outputs):
            np.save(os.path.join(args.out, f"output_{k}.npy"), o)
    for k, (info, o) in enumerate(zip(sess.get_outputs(), outputs)):
        print(f"output {k} '{info.name}': {o.dtype}{list(o.shape)} mean {float(np.mean(o)):.4g} "
              f"std {float(np.std(o)):.4g} max|x| {float(np.max(np.abs(o))):.4g}")
    if args.serve:
        for _ in range(args.warmup):
            sess.run(None, feeds)
        print("ready", flush=True)
        for line in sys.stdin:
            n = int(line)
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                sess.run(None, feeds)
                times.append((time.perf_counter() - t0) * 1e3)
            print(" ".join(f"{t:.6f}" for t in times), flush=True)
        return 0
    if args.repeat > 0:
        for _ in range(args.warmup):
            sess.run(None, feeds)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        result = {"model": os.path.basename(args.model), "runtime": f"onnxruntime {ort.__version__}",
                  "threads": args.threads, "warmup": args.warmup, "repeat": args.repeat,
                  "median_ms": statistics.median(times), "min_ms": min(times), "mean_ms": statistics.fmean(times)}
        print(f"onnxruntime {ort.__version__} {result['model']} threads={args.threads}: median "
              f"{result['median_ms']:.3f} ms, min {result['min_ms']:.3f} ms, mean {result['mean_ms']:.3f} ms "
              f"({args.repeat} runs after {args.warmup} warm-up)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
