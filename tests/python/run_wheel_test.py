#!/usr/bin/env python3
"""Builds the Python package as a user does, from a copy of the checkout, installs it into a
fresh virtual environment and runs tests/python against the installed package.

  run_wheel_test.py --source-dir SRC --work-dir WORK --python PY [--isolated] [--jobs N]
                    [--c-compiler CC --cxx-compiler CXX]

The copy (WORK/src) holds the checkout's files only (git's tracked and untracked-but-not-ignored
files), so nothing of a build tree comes along. Then:

  default           PY -m pip wheel --no-build-isolation: PY's environment must have the build
                    requirements (the build tree's venv has python/requirements.txt's pins, the
                    versions pyproject.toml asks for; tests/python/test_packaging.py checks that);
                    the wheel goes into a fresh venv (pip install loom-*.whl).
  --isolated        with pip's default build isolation, as `pip install .` in a checkout: a fresh
                    venv of PY runs `pip install WORK/src` (pip fetches scikit-build-core, nanobind
                    and NumPy from PyPI into a throw-away build environment), and a second fresh
                    venv installs the wheel of `pip wheel WORK/src`; that venv is tested again
                    with the oldest NumPy pyproject.toml allows.

PY may be "python3.10" and the like: an interpreter of that version is looked for on PATH and
among pyenv's versions; without one the test is skipped (exit 77), saying so.

--c-compiler/--cxx-compiler set CC and CXX for the build (scikit-build-core otherwise takes the
compilers Python was built with, e.g. x86_64-linux-gnu-g++ where the build tree has c++; the
compiler cache keys on the compiler's name).

In every venv, from a folder outside the checkout and with no PYTHONPATH, `import loom` must come
from the venv, and pytest runs tests/python (with pytest, onnx and onnxruntime installed at
python/requirements.txt's versions for the tutorials). The compiler cache makes the compile
cheap after scripts/build: CMake's ccache launcher sets base_dir to the source tree, and the
wheel's build directory (WORK/src/build-pip) lies as deep in the copy as build/ in the checkout.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

SKIP = 77


def log(msg):
    print(f"wheel_test: {msg}", flush=True)


def run(cmd, cwd=None, env=None, out=None, check=True):
    """Runs cmd; its output goes to the file `out` (printed in full on failure) or here."""
    t0 = time.time()
    log(f"$ {' '.join(map(str, cmd))}")
    if out is None:
        r = subprocess.run(list(map(str, cmd)), cwd=cwd, env=env)
    else:
        with open(out, "w") as f:
            r = subprocess.run(list(map(str, cmd)), cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    log(f"  ({time.time() - t0:.0f} s, exit {r.returncode}{', output in ' + str(out) if out else ''})")
    if check and r.returncode != 0:
        if out:
            with open(out) as f:
                sys.stdout.write(f.read()[-20000:])
        sys.exit(f"wheel_test: FAILED: {' '.join(map(str, cmd))} exited {r.returncode}")
    return r.returncode


def find_python(spec):
    """An interpreter: a path, or pythonX.Y found on PATH or among pyenv's versions."""
    if os.sep in spec:
        return spec if os.access(spec, os.X_OK) else None
    m = re.fullmatch(r"python(\d+)\.(\d+)", spec)
    candidates = [shutil.which(spec)] if shutil.which(spec) else []
    if m:
        roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
        for root in filter(None, roots):
            candidates += sorted(glob.glob(os.path.join(root, "versions", f"{m[1]}.{m[2]}.*", "bin", spec)), reverse=True)
    for c in candidates:  # a pyenv shim of a version not selected fails: try the next
        try:
            v = subprocess.run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                               text=True, timeout=60)
        except OSError:
            continue
        if v.returncode == 0 and (not m or v.stdout.strip() == f"{m[1]}.{m[2]}"):
            return c
    return None


def copy_checkout(src, dst):
    """The files of the checkout (no build trees, nothing ignored) copied to dst."""
    if os.path.isdir(os.path.join(src, ".git")) or os.path.isfile(os.path.join(src, ".git")):
        listed = subprocess.run(["git", "-C", src, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                                capture_output=True, check=True).stdout.decode().split("\0")
        files = [f for f in listed if f and os.path.isfile(os.path.join(src, f))]
    else:  # an unpacked source archive
        files = []
        for root, dirs, names in os.walk(src):
            dirs[:] = [d for d in dirs if not (d == ".git" or d == "build" or d.startswith("build-"))]
            files += [os.path.relpath(os.path.join(root, n), src) for n in names]
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
        shutil.copy2(os.path.join(src, f), os.path.join(dst, f), follow_symlinks=False)
    log(f"copied {len(files)} files of {src} to {dst}")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LOOM_PYTHON_DIR", "VIRTUAL_ENV", "PYTHONHOME", "LD_LIBRARY_PATH")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def make_venv(python, path, work):
    run([python, "-m", "venv", path], out=os.path.join(work, os.path.basename(path) + "-venv.log"))
    return os.path.join(path, "bin", "python")


def check_wheel(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    want = ["loom/__init__.py", "loom/py.typed", "loom/_loom.pyi", "loom/libloom.so", "loom/te.py", "loom/graph.py"]
    missing = [w for w in want if w not in names]
    if not any(re.fullmatch(r"loom/_loom\.cpython-[^/]+\.so", n) for n in names):
        missing.append("loom/_loom.cpython-*.so")
    if missing:
        sys.exit(f"wheel_test: FAILED: {os.path.basename(wheel)} lacks {missing} (it has {sorted(names)})")
    log(f"{os.path.basename(wheel)}: {len(names)} files, the extension, libloom, the stubs and py.typed among them")


def check_in_venv(venv_python, args, work, name, install_test_deps=True):
    """`import loom` from the venv, then tests/python on it, from a folder outside the checkout."""
    env = clean_env()
    reqs = os.path.join(args.source_dir, "python", "requirements.txt")
    if install_test_deps:
        run([venv_python, "-m", "pip", "install", "-c", reqs, "pytest", "onnx", "onnxruntime"], env=env,
            out=os.path.join(work, f"{name}-test-deps.log"))
    here = os.path.join(work, f"{name}-run")
    os.makedirs(here, exist_ok=True)
    venv = os.path.dirname(os.path.dirname(venv_python))
    where = subprocess.run([venv_python, "-c", "import loom, numpy, sys; print(loom.__file__, sys.version.split()[0], numpy.__version__)"],
                           cwd=here, env=env, capture_output=True, text=True)
    if where.returncode != 0:
        sys.exit(f"wheel_test: FAILED: `import loom` in {venv}:\n{where.stderr}")
    path, version, numpy_version = where.stdout.split()
    if not os.path.realpath(path).startswith(os.path.realpath(venv) + os.sep):
        sys.exit(f"wheel_test: FAILED: `import loom` found {path}, not the package installed in {venv}")
    log(f"{name}: Python {version} (NumPy {numpy_version}) imports loom from {os.path.dirname(path)}")
    run([venv_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(args.source_dir, "tests", "python")],
        cwd=here, env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--python", required=True, help="the interpreter to build with (a path or pythonX.Y)")
    ap.add_argument("--isolated", action="store_true", help="pip's default build isolation (PyPI)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("LOOM_JOBS", "2")))
    ap.add_argument("--c-compiler", help="CC for the build (default: scikit-build-core's choice)")
    ap.add_argument("--cxx-compiler", help="CXX for the build")
    args = ap.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    python = find_python(args.python)
    if python is None:
        print(f"SKIPPED: no {args.python} on PATH or among pyenv's versions")
        return SKIP
    work = os.path.abspath(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src = os.path.join(work, "src")
    copy_checkout(args.source_dir, src)
    dist = os.path.join(work, "dist")
    build_env = clean_env(CMAKE_BUILD_PARALLEL_LEVEL=str(args.jobs))
    for var, value in (("CC", args.c_compiler), ("CXX", args.cxx_compiler)):
        if value:
            build_env[var] = value
    t0 = time.time()
    venvs = []
    if args.isolated:
        # `pip install .` as in a checkout: pip builds in an isolated environment.
        py = make_venv(python, os.path.join(work, "venv-install"), work)
        run([py, "-m", "pip", "install", "-v", src], env=build_env, out=os.path.join(work, "pip-install.log"))
        venvs.append((py, "pip-install"))
        builder = make_venv(python, os.path.join(work, "venv-builder"), work)
        run([builder, "-m", "pip", "wheel", "-v", "--no-deps", "-w", dist, src], env=build_env,
            out=os.path.join(work, "pip-wheel.log"))
    else:
        run([python, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", dist, src], env=build_env,
            out=os.path.join(work, "pip-wheel.log"))
    wheels = glob.glob(os.path.join(dist, "loom-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"wheel_test: FAILED: expected one loom wheel in {dist}, found {wheels}")
    check_wheel(wheels[0])
    py = make_venv(python, os.path.join(work, "venv-wheel"), work)
    run([py, "-m", "pip", "install", "-c", os.path.join(args.source_dir, "python", "requirements.txt"), wheels[0]],
        env=clean_env(), out=os.path.join(work, "wheel-install.log"))
    venvs.append((py, "wheel"))
    log(f"built and installed in {time.time() - t0:.0f} s")
    for venv_python, name in venvs:
        check_in_venv(venv_python, args, work, name)
    if args.isolated:
        # the oldest NumPy the package declares (pyproject.toml's numpy>=X), in the wheel's venv
        with open(os.path.join(args.source_dir, "pyproject.toml")) as f:
            oldest = re.search(r'"numpy>=([0-9.]+)"', f.read())
        if not oldest:
            sys.exit("wheel_test: FAILED: pyproject.toml's dependencies have no numpy>=X")
        version = oldest[1] + ".0" * (2 - oldest[1].count("."))
        run([py, "-m", "pip", "install", f"numpy=={version}"], env=clean_env(),
            out=os.path.join(work, "oldest-numpy.log"))
        check_in_venv(py, args, work, f"wheel-numpy-{version}", install_test_deps=False)
        venvs.append((py, f"wheel with NumPy {version}"))
    log(f"passed: {', '.join(n for _, n in venvs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
