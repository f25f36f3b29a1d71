"""Tuning a matmul and deploying it.

Tunes loom's matmul template for one shape (progress on stderr, every trial in the log), builds
the best config, exports it as a self-contained library, and loads that library back the way a
deployment would, checking it against NumPy and timing it against the untuned default.

  PYTHONPATH=build/python build/venv/bin/python examples/python/tune_matmul.py [--size N] [--trials N] [--log FILE]
"""
import argparse
import os
import tempfile
import time

import numpy as np

import loom


def timed(f, *args, number=10):
    f(*args)
    t0 = time.perf_counter()
    for _ in range(number):
        f(*args)
    return (time.perf_counter() - t0) / number


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--log", default="matmul.jsonl")
    ap.add_argument("--quick", action="store_true", help="short measurements (tests)")
    args = ap.parse_args()
    n = args.size

    task = loom.Task("matmul", [n, n, n], target="llvm")
    print(f"task {task.key}: {task.space_size} configs")
    extra = dict(repeat=1, min_repeat_ms=1, confirm=0, jobs=2) if args.quick else {}
    result = loom.tune(task, trials=args.trials, log=args.log, **extra)
    print(f"tuned: {result.trials} trials, best {result.best_gflops:.1f} GFLOP/s (config {result.best.config_index})")

    with loom.apply_history_best(args.log):
        tuned = loom.build_best(task)
    default = loom.build_best(task, loom.apply_history_best([]))  # the template's default config

    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.empty((n, n), "float32")

    # Deploy: one shared library with its C header; loading it needs no compiler.
    with tempfile.TemporaryDirectory() as d:
        lib_path = os.path.join(d, "matmul.so")
        tuned.export_library(lib_path)
        lib = loom.runtime.load_module(lib_path)
        lib["matmul"](a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3)
        gflop = 2 * n ** 3 / 1e9
        t_lib, t_def = timed(lib["matmul"], a, b, c), timed(default, a, b, c)
        print(f"deployed library: correct, {gflop / t_lib:.1f} GFLOP/s; untuned default {gflop / t_def:.1f} GFLOP/s")
    print(loom.records.format_summary(args.log))


if __name__ == "__main__":
    main()
