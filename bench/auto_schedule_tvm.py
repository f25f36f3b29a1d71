"""TVM MetaSchedule as bench/auto_schedule's peer: tunes each kernel of a spec and times it.

    python auto_schedule_tvm.py SPEC.json RESULTS.json
    python auto_schedule_tvm.py --check     exit status 0 when TVM and MetaSchedule import

SPEC (written by bench/auto_schedule): {"trials": N, "threads": [1, 2], "repeat": R,
"work_dir": DIR, "kernels": [{"label": ..., "kernel": {"op": "layer_norm", "shape": [...]}}]}.
Each kernel is written with TVM's te/topi as loom's registry computes it, tuned by
MetaSchedule (evolutionary search, XGB cost model) for N trials on a target with as many
cores as the largest thread count, then timed at each thread count (median of R repeats).
RESULTS: {"tvm": version, "results": [{"label", "threads", "seconds"}]}. Needs apache-tvm
(tvm.meta_schedule, or tvm.s_tir.meta_schedule from 0.27 on) and xgboost.
"""
import json
import math
import os
import sys

import numpy as np
import tvm
from tvm import te, topi

try:
    from tvm.s_tir import meta_schedule as ms
except ImportError:
    from tvm import meta_schedule as ms


def computation(k):
    """The kernel's te computation: its arguments, inputs then output."""
    op, shape = k["op"], k.get("shape")
    if op == "layer_norm":
        x = te.placeholder(shape, name="x")
        g = te.placeholder(shape[-1:], name="gamma")
        b = te.placeholder(shape[-1:], name="beta")
        return [x, g, b, topi.nn.layer_norm(x, g, b, axis=[-1], epsilon=1e-5)]
    if op == "softmax":
        x = te.placeholder(shape, name="x")
        return [x, topi.nn.softmax(x, axis=-1)]
    if op == "bias_gelu":
        x = te.placeholder(shape, name="x")
        b = te.placeholder(shape[-1:], name="bias")
        y = te.compute(shape, lambda i, j: x[i, j] + b[j], name="add")
        out = te.compute(shape, lambda i, j: 0.5 * y[i, j] * (1 + te.erf(y[i, j] / math.sqrt(2.0))), name="gelu")
        return [x, b, out]
    if op == "transpose":
        x = te.placeholder(shape, name="x")
        return [x, topi.transpose(x, k["axes"])]
    if op == "reduce_mean":
        x = te.placeholder(shape, name="x")
        return [x, topi.mean(x, axis=-1, keepdims=True)]
    if op == "global_avg_pool2d":
        x = te.placeholder(shape, name="x")
        return [x, topi.nn.global_pool(x, "avg", layout="NCHW")]
    raise ValueError(f"unknown kernel op {op}")


def host_mcpu():
    """An LLVM CPU name for this machine's vector features (TVM rejects -mcpu=native)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if "avx512f" in flags:
        return "skylake-avx512"
    if "avx2" in flags and "fma" in flags:
        return "haswell"
    return "x86-64"


def shape_of(t):
    return [int(d) for d in t.shape]


def main():
    if sys.argv[1:] == ["--check"]:
        import xgboost  # noqa: F401  (MetaSchedule's XGB cost model)
        return
    spec = json.load(open(sys.argv[1]))
    threads = spec["threads"]
    cores = max(threads)
    target = tvm.target.Target({"kind": "llvm", "mcpu": host_mcpu(), "num-cores": cores})
    config_threads = tvm.get_global_func("runtime.config_threadpool")
    dev = tvm.cpu()
    results = []
    for n, entry in enumerate(spec["kernels"]):
        args = computation(entry["kernel"])
        func = te.create_prim_func(args).with_attr("global_symbol", "main")
        work = os.path.join(spec["work_dir"], f"k{n}")
        os.makedirs(work, exist_ok=True)
        db = ms.tune_tir(func, target, work, max_trials_global=spec["trials"],
                         num_trials_per_iter=min(64, spec["trials"]), cost_model="xgb", database="memory")
        sch = ms.tir_integration.compile_tir(db, func, target)
        if sch is None:
            raise RuntimeError(f"{entry['label']}: MetaSchedule measured no valid schedule in {spec['trials']} "
                               f"trials (see its logs in {work})")
        lib = tvm.compile(sch.mod, target=target)
        rng = np.random.default_rng(n)
        arrays = [tvm.runtime.tensor(rng.uniform(-1, 1, shape_of(t)).astype("float32"), dev) for t in args]
        for nt in threads:
            config_threads(1, nt)
            ev = lib.time_evaluator(lib.entry_name, dev, repeat=spec["repeat"], min_repeat_ms=50)
            r = ev(*arrays)
            results.append({"label": entry["label"], "threads": nt, "seconds": float(np.median(r.results))})
            print(f"[tvm] {entry['label']}, {nt} thread(s): {r.median * 1e3:.3f} ms", file=sys.stderr)
    json.dump({"tvm": tvm.__version__, "results": results}, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
