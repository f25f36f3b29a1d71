#!/usr/bin/env python3
"""Writes every ONNX backend node test case, in ONNX's usual layout.

The `onnx` wheel ships the node test cases as code (onnx.backend.test.case.node), not as
data. This script collects them (`collect_testcases(None)`) and writes every node case (each has a model) as

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_<N>/input_<K>.pb     (TensorProto, K-th graph input)
    OUT/<case>/test_data_set_<N>/output_<K>.pb    (TensorProto, expected K-th graph output)

which is the layout of onnx/backend/test/data/node and of ONNX's own `backend-test-tools
generate-data`. No case is dropped here: the runner (node_test_runner.cc) decides, per case,
pass, fail or skip with its category (node_test_skips.txt, or an operator loom does not
import).

OUT/manifest.json lists the cases written (name, operators, opset, graph input names, data
sets, ONNX's own tolerances). Every written file is read back and compared with the case in memory, and every
model passes onnx.checker. With the same onnx version and the same script the folder is left
as it is (OUT/.stamp), so a rerun costs nothing.

    gen_node_tests.py OUT [--force] [--list] [--check-ort]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
import warnings

FORMAT_VERSION = 2  # of the layout and manifest this script writes; part of the stamp


def ops_of(model) -> list[str]:
    return [n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node]


def selected(case) -> bool:
    if case.kind != "node" or case.model is None:
        return False
    return bool(ops_of(case.model))


def onnx_opset(model) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def to_proto(value, value_info):
    """The serialized form of one input or output, as ONNX's generate-data writes it."""
    from onnx import TensorProto, numpy_helper

    t = value_info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, value_info.name)


def same_data(written: bytes, proto) -> bool:
    """`written` parses back into a message equal to `proto`."""
    back = type(proto)()
    back.ParseFromString(written)
    return back == proto


def write_case(case, out_dir: str) -> dict:
    import onnx

    case_dir = os.path.join(out_dir, case.name)
    os.makedirs(case_dir)
    model_bytes = case.model.SerializeToString()
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(model_bytes)
    onnx.checker.check_model(onnx.load_from_string(model_bytes))
    graph = case.model.graph
    for n, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(case_dir, f"test_data_set_{n}")
        os.makedirs(ds)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            if len(values) != len(infos):
                raise RuntimeError(f"{case.name}: {len(values)} {kind}s in the data set, {len(infos)} in the graph")
            for k, (value, info) in enumerate(zip(values, infos)):
                proto = to_proto(value, info)
                path = os.path.join(ds, f"{kind}_{k}.pb")
                data = proto.SerializeToString()
                with open(path, "wb") as f:
                    f.write(data)
                with open(path, "rb") as f:
                    if not same_data(f.read(), proto):
                        raise RuntimeError(f"{path}: does not read back as written")
    return {
        "name": case.name,
        "ops": ops_of(case.model),
        "opset": onnx_opset(case.model),
        "inputs": [i.name for i in graph.input],
        "data_sets": len(case.data_sets),
        "onnx_rtol": case.rtol,
        "onnx_atol": case.atol,
    }


def stamp_text() -> str:
    import onnx

    with open(__file__, "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"onnx {onnx.__version__} script {script} format {FORMAT_VERSION}\n"


def check_ort(out_dir: str, manifest: dict) -> None:
    """Runs every written case with ONNX Runtime and compares with the expected outputs
    (ONNX's tolerances): a check of the written data against a second implementation."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    agree, disagree, cannot = 0, 0, 0
    for c in manifest["cases"]:
        case_dir = os.path.join(out_dir, c["name"])
        model = onnx.load(os.path.join(case_dir, "model.onnx"))
        try:
            sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception as e:  # ORT lacks some opsets and types
            cannot += 1
            print(f"ORT-CANNOT {c['name']}: {str(e).splitlines()[0][:160]}")
            continue
        ok = True
        for n in range(c["data_sets"]):
            ds = os.path.join(case_dir, f"test_data_set_{n}")
            feeds = {}
            for k, info in enumerate(model.graph.input):
                t = onnx.TensorProto()
                with open(os.path.join(ds, f"input_{k}.pb"), "rb") as f:
                    t.ParseFromString(f.read())
                feeds[info.name] = numpy_helper.to_array(t)
            try:
                got = sess.run(None, feeds)
            except Exception as e:
                ok = False
                print(f"ORT-ERROR {c['name']}: {str(e).splitlines()[0][:160]}")
                break
            for k, g in enumerate(got):
                t = onnx.TensorProto()
                with open(os.path.join(ds, f"output_{k}.pb"), "rb") as f:
                    t.ParseFromString(f.read())
                want = numpy_helper.to_array(t)
                if g.shape != want.shape or not np.allclose(g, want, rtol=c["onnx_rtol"], atol=c["onnx_atol"], equal_nan=True):
                    ok = False
                    print(f"ORT-DIFFERS {c['name']} output {k}")
        agree += ok
        disagree += not ok
    print(f"ONNX Runtime {ort.__version__}: agrees on {agree}, differs on {disagree}, cannot load {cannot}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write the cases into (made if missing)")
    ap.add_argument("--force", action="store_true", help="rewrite even if the stamp says the folder is current")
    ap.add_argument("--list", action="store_true", help="only list the cases that would be written")
    ap.add_argument("--check-ort", action="store_true", help="also run every case with ONNX Runtime")
    args = ap.parse_args()

    try:
        import onnx
        from onnx.backend.test.case.node import collect_testcases
    except ImportError as e:
        print(f"gen_node_tests: cannot import onnx ({e}); run scripts/python_env and use <build>/venv/bin/python",
              file=sys.stderr)
        return 2

    out_dir = os.path.abspath(args.out)
    stamp_path = os.path.join(out_dir, ".stamp")
    manifest_path = os.path.join(out_dir, "manifest.json")
    stamp = stamp_text()
    if (not args.force and not args.list and os.path.exists(manifest_path) and os.path.exists(stamp_path)
            and open(stamp_path).read() == stamp):
        manifest = json.load(open(manifest_path))
        print(f"gen_node_tests: {out_dir} is current ({len(manifest['cases'])} cases, onnx {onnx.__version__})")
    else:
        start = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the case definitions' own numpy overflow warnings
            cases = collect_testcases(None)
        kept = sorted((c for c in cases if selected(c)), key=lambda c: c.name)
        if len(set(c.name for c in kept)) != len(kept):
            raise RuntimeError("two ONNX node cases have the same name")
        if args.list:
            for c in kept:
                print(c.name, " ".join(ops_of(c.model)))
            print(f"{len(kept)} of {len(cases)} node cases")
            return 0
        # Written next to OUT and moved into place, so that a reader never sees half a folder.
        tmp_dir = f"{out_dir}.tmp-{os.getpid()}"
        if os.path.exists(tmp_dir):
            shutil.rmtree(tmp_dir)
        os.makedirs(tmp_dir)
        manifest = {
            "onnx_version": onnx.__version__,
            "node_cases_in_onnx": len(cases),
            "cases": [write_case(c, tmp_dir) for c in kept],
        }
        with open(os.path.join(tmp_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        with open(os.path.join(tmp_dir, ".stamp"), "w") as f:
            f.write(stamp)
        old_dir = f"{out_dir}.old-{os.getpid()}"
        if os.path.exists(out_dir):
            os.rename(out_dir, old_dir)
        os.rename(tmp_dir, out_dir)
        if os.path.exists(old_dir):
            shutil.rmtree(old_dir)
        single = sum(len(c["ops"]) == 1 for c in manifest["cases"])
        print(f"gen_node_tests: wrote {len(kept)} of ONNX {onnx.__version__}'s {len(cases)} node cases "
              f"({single} single-node, {len(kept) - single} composite) to {out_dir} in {time.time() - start:.1f} s")
    if args.check_ort:
        check_ort(out_dir, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
