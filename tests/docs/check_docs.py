#!/usr/bin/env python3
"""Checks the code blocks of README.md and docs/*.md against an installed loom.

Every fenced block of a code language (cpp, c, sh, cmake) carries a marker, an HTML comment on
the line(s) just before its fence (GitHub does not show it):

    <!-- check: compile -->          C++: compiled against the installed package
    <!-- check: run -->              C++: compiled and run; sh: every command run; python: run
    <!-- check: skip (reason) -->    not checked, and why

A marker may span lines; after its first line come any of
    setup: LINE        C++: a statement before the snippet (inside main); sh: a command run first
    after: LINE        C++: a statement after the snippet (e.g. lower() of what it scheduled)
    replace: A => B    text replaced in the snippet before it is checked (smaller sizes, fewer trials)
    expect: TEXT       sh, python: the output must contain TEXT

A C++ snippet without `int main(` is a fragment: its #include lines go to the top and the rest
into `int main() try { … }` after `#include <loom/loom.h>` and `using namespace loom;`, with
#line directives so that compiler errors name the markdown file and line. sh commands run with
bash in a scratch folder of their own, the installed bin/ first on PATH; lines ending in `\\`
continue. Python blocks run, each on its own, with --python and the package folder --python-path
(the build tree's python/) first on sys.path; without --python they are counted as skipped,
saying so. A block of a code language without a marker, a skip without a reason, or a marker
with no block after it is an error, as is any snippet that fails: each failure names the file,
the line and the compiler's or command's output.

  check_docs.py --source-dir REPO --prefix INSTALL_PREFIX --work-dir SCRATCH
                [--generator G] [--cxx-compiler CXX] [--env NAME=VALUE …] [--list]
                [--python PYTHON --python-path DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

CODE_LANGS = {"cpp": "cpp", "c++": "cpp", "cc": "cpp", "c": "c", "sh": "sh", "bash": "sh",
              "shell": "sh", "console": "sh", "cmake": "cmake", "python": "python", "py": "python"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)\s*$")
MARKER_START = re.compile(r"^\s*<!--\s*check:\s*(.*)$")
WRAP_HEADERS = ["cstdio", "cstdlib", "exception", "iostream", "optional", "string", "vector"]
CMD_TIMEOUT = 300


class Block:
    def __init__(self, path, line, lang, text, marker, marker_line):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.marker, self.marker_line = marker, marker_line
        self.mode, self.reason = None, None
        self.setup, self.after, self.replace, self.expect = [], [], [], []

    def where(self):
        return f"{self.path}:{self.line}"


def read_marker(lines, end):
    """The marker comment ending at lines[end] (or None): (first line index, text)."""
    if not lines[end].rstrip().endswith("-->"):
        return None
    start = end
    while start >= 0 and not MARKER_START.match(lines[start]):
        if start < end and "-->" in lines[start]:
            return None
        start -= 1
    if start < 0:
        return None
    text = "\n".join(lines[start:end + 1]).strip()
    text = re.sub(r"^<!--\s*check:\s*", "", text)
    text = re.sub(r"\s*-->$", "", text)
    return start, text


def parse_docs(source_dir):
    files = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(source_dir, "docs")) if f.endswith(".md"))
    blocks, errors = [], []
    for rel in files:
        with open(os.path.join(source_dir, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
        i, used_markers = 0, set()
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            fence, lang, start = m.group(2), m.group(3).lower(), i
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
                j += 1
            if j >= len(lines):
                errors.append(f"{rel}:{start + 1}: a fenced block that is never closed")
                break
            text = "\n".join(lines[start + 1:j])
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            marker = read_marker(lines, k) if k >= 0 else None
            if marker:
                used_markers.add(marker[0])
            if lang in CODE_LANGS or marker:
                b = Block(rel, start + 2, CODE_LANGS.get(lang, lang), text,
                          marker[1] if marker else None, marker[0] + 1 if marker else None)
                blocks.append(b)
            i = j + 1
        for n, line in enumerate(lines):
            if MARKER_START.match(line) and n not in used_markers:
                errors.append(f"{rel}:{n + 1}: a check marker with no fenced block right after it")
    for b in blocks:
        errors.extend(parse_marker(b))
    return blocks, errors


def parse_marker(b):
    where = f"{b.path}:{b.line - 1}"
    if b.marker is None:
        return [f"{where}: a ```{b.lang} block without a marker: put <!-- check: compile -->, "
                f"<!-- check: run --> or <!-- check: skip (reason) --> before it (docs/testing.md)"]
    head, *rest = b.marker.split("\n")
    head = head.strip()
    errors = []
    m = re.match(r"^skip\s*\((.+)\)\s*$", head)
    if m:
        b.mode, b.reason = "skip", m.group(1).strip()
    elif head in ("compile", "run"):
        b.mode = head
    else:
        return [f"{where}: the marker '{head}' is none of compile, run, skip (reason)"]
    for extra in rest:
        extra = extra.strip()
        if not extra:
            continue
        key, _, value = extra.partition(":")
        value = value.strip()
        if key == "setup":
            b.setup.append(value)
        elif key == "after":
            b.after.append(value)
        elif key == "replace" and "=>" in value:
            old, new = (s.strip() for s in value.split("=>", 1))
            if old not in b.text:
                errors.append(f"{where}: replace: '{old}' is not in the block")
            b.replace.append((old, new))
        elif key == "expect":
            b.expect.append(value)
        else:
            errors.append(f"{where}: cannot read the marker line '{extra}' (setup:, after:, replace: A => B, expect:)")
    if b.mode != "skip" and b.lang not in ("cpp", "sh", "python"):
        errors.append(f"{where}: only cpp, sh and python blocks can be checked ({b.mode}); mark this ```{b.lang} block skip (reason)")
    if b.mode == "compile" and b.lang in ("sh", "python"):
        errors.append(f"{where}: an {b.lang} block is run or skipped, not compiled")
    if b.expect and b.lang not in ("sh", "python"):
        errors.append(f"{where}: expect: is for sh and python blocks")
    if b.after and b.lang != "cpp":
        errors.append(f"{where}: after: is for C++ blocks")
    return errors


def block_text(b):
    text = b.text
    for old, new in b.replace:
        text = text.replace(old, new)
    return text


def cpp_source(b):
    text = block_text(b)
    lines = text.split("\n")
    if re.search(r"\bint\s+main\s*\(", text):
        return f'#line {b.line} "{b.path}"\n{text}\n'
    hoisted = [f'#line {b.line + n} "{b.path}"\n{l}' for n, l in enumerate(lines) if l.lstrip().startswith("#include")]
    body = ["" if l.lstrip().startswith("#include") else l for l in lines]
    out = ["#include <loom/loom.h>"] + [f"#include <{h}>" for h in WRAP_HEADERS] + hoisted
    out += ["using namespace loom;", "int main() try {"]
    if b.setup:
        out += [f'#line {b.marker_line} "{b.path}"'] + b.setup
    out += [f'#line {b.line} "{b.path}"'] + body
    if b.after:
        out += [f'#line {b.marker_line} "{b.path}"'] + b.after
    out += ["  return 0;", "} catch (const std::exception& e) {",
            '  std::fprintf(stderr, "error: %s\\n", e.what());', "  return 1;", "}", ""]
    return "\n".join(out)


def tail(text, n=40):
    lines = text.rstrip().split("\n")
    return "\n".join(("    " + l) for l in lines[-n:])


def compile_cpp(blocks, args, work):
    """Builds every C++ snippet in one outside project; returns {block: error text}."""
    proj = os.path.join(work, "cpp")
    os.makedirs(proj)
    cm = ["cmake_minimum_required(VERSION 3.20)", "project(loom_docs_snippets LANGUAGES CXX)",
          "find_package(loom CONFIG REQUIRED)"]
    for n, b in enumerate(blocks):
        with open(os.path.join(proj, f"snippet_{n}.cpp"), "w") as f:
            f.write(cpp_source(b))
        cm += [f"add_executable(snippet_{n} snippet_{n}.cpp)  # {b.where()}",
               f"target_link_libraries(snippet_{n} PRIVATE loom::loom)"]
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(cm) + "\n")
    build = os.path.join(work, "cpp-build")
    configure = ["cmake", "-S", proj, "-B", build, f"-DCMAKE_PREFIX_PATH={args.prefix}"]
    if args.generator:
        configure += ["-G", args.generator]
    if args.cxx_compiler:
        configure += [f"-DCMAKE_CXX_COMPILER={args.cxx_compiler}"]
    r = subprocess.run(configure, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        return {b: "configuring the outside project failed:\n" + tail(r.stdout) for b in blocks}
    cmd = ["cmake", "--build", build, "-j", str(args.jobs)]
    cmd += ["--", "-k", "0"] if "Ninja" in (args.generator or "") else ["--", "-k"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failures = {}
    if r.returncode == 0:
        return failures
    # Attribute each failed edge's output to its snippet.
    segments, cur = [], []
    for line in r.stdout.split("\n"):
        if re.match(r"^\[\d+/\d+\]", line) or line.startswith("FAILED:") or line.startswith("ninja:"):
            segments.append(cur)
            cur = []
        cur.append(line)
    segments.append(cur)
    for n, b in enumerate(blocks):
        exe = os.path.join(build, f"snippet_{n}")
        if os.path.exists(exe):
            continue
        mine = [s for s in segments if s and s[0].startswith("FAILED:") and re.search(rf"\bsnippet_{n}\b", s[0])]
        text = "\n".join("\n".join(s[2:] if len(s) > 2 else s) for s in mine) or r.stdout
        failures[b] = "does not compile:\n" + tail(text, 60)
    return failures


def run(cmd, cwd, env, shell=False):
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, shell=shell, executable="/bin/bash" if shell else None,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=CMD_TIMEOUT)
        return r.returncode, r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"timed out after {CMD_TIMEOUT} s", out


def sh_commands(b):
    """(markdown line, command) for each command of a block, continuation lines joined."""
    cmds, cur, first = [], "", None
    for n, line in enumerate(block_text(b).split("\n")):
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if first is None:
            first = b.line + n
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cmds.append((first, cur + line))
        cur, first = "", None
    return cmds


def run_sh(b, env, scratch):
    os.makedirs(scratch)
    output = ""
    steps = [(b.marker_line, s, "setup") for s in b.setup] + [(l, c, "") for l, c in sh_commands(b)]
    for line, cmd, kind in steps:
        rc, out = run(cmd, scratch, env, shell=True)
        output += out
        if rc != 0:
            what = f"the marker's setup command" if kind else "the command"
            return f"{b.path}:{line}: {what} `{cmd.strip()}` failed ({rc}):\n{tail(out)}"
    for e in b.expect:
        if e not in output:
            return f"{b.where()}: the commands' output has no '{e}':\n{tail(output)}"
    return None


def run_python(b, args, env, scratch):
    """Runs a Python block (its setup: lines first) with the build tree's package."""
    os.makedirs(scratch)
    script = os.path.join(scratch, "snippet.py")
    with open(script, "w") as f:
        f.write("".join(l + "\n" for l in b.setup) + "\n" * max(0, b.line - 1 - len(b.setup)) + block_text(b) + "\n")
    penv = dict(env)
    penv["PYTHONPATH"] = os.path.abspath(args.python_path) + os.pathsep + penv.get("PYTHONPATH", "")
    rc, out = run([args.python, script], scratch, penv)
    if rc != 0:
        return f"{b.where()}: the Python snippet failed ({rc}) (line numbers are the markdown file's):\n{tail(out)}"
    for e in b.expect:
        if e not in out:
            return f"{b.where()}: the Python snippet's output has no '{e}':\n{tail(out)}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--prefix", help="an installed loom (bin/loom, the CMake package)")
    ap.add_argument("--work-dir")
    ap.add_argument("--generator")
    ap.add_argument("--cxx-compiler")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the sh commands")
    ap.add_argument("--list", action="store_true", help="only check the markers and list the blocks")
    ap.add_argument("--python", help="the interpreter that runs the Python blocks (the build tree's venv)")
    ap.add_argument("--python-path", help="the folder holding the package loom (<build>/python)")
    args = ap.parse_args()

    blocks, errors = parse_docs(args.source_dir)
    if errors:
        print("docs check: markers:\n" + "\n".join("  " + e for e in errors))
        return 1
    if args.list:
        for b in blocks:
            print(f"{b.where():28} {b.lang:5} {b.mode}" + (f" ({b.reason})" if b.reason else ""))
        return 0
    if not args.prefix or not args.work_dir:
        ap.error("--prefix and --work-dir are required unless --list")
    work = os.path.abspath(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.abspath(args.prefix)
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PATH"] = os.path.join(prefix, "bin") + os.pathsep + env.get("PATH", "")
    env["LOOM_SOURCE_DIR"] = os.path.abspath(args.source_dir)
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v

    failures = []
    t0 = time.time()
    cpp = [b for b in blocks if b.lang == "cpp" and b.mode in ("compile", "run")]
    broken = compile_cpp(cpp, args, work)
    for b in cpp:
        if b in broken:
            failures.append(f"{b.where()}: the C++ snippet {broken[b]}")
    print(f"docs check: compiled {len(cpp) - len(broken)} of {len(cpp)} C++ snippets ({time.time() - t0:.0f} s)")
    nrun = 0
    for n, b in enumerate(cpp):
        if b.mode != "run" or b in broken:
            continue
        scratch = os.path.join(work, "run", f"cpp_{n}")
        os.makedirs(scratch)
        t = time.time()
        rc, out = run([os.path.join(work, "cpp-build", f"snippet_{n}")], scratch, env)
        nrun += 1
        print(f"  ran {b.where()} ({time.time() - t:.1f} s): " + ("ok" if rc == 0 else f"FAILED ({rc})"))
        if rc != 0:
            failures.append(f"{b.where()}: the C++ snippet compiled but failed when run ({rc}):\n{tail(out)}")
    for n, b in enumerate(blocks):
        if b.lang != "sh" or b.mode != "run":
            continue
        t = time.time()
        err = run_sh(b, env, os.path.join(work, "run", f"sh_{n}"))
        nrun += 1
        print(f"  ran {b.where()} ({time.time() - t:.1f} s): " + ("ok" if not err else "FAILED"))
        if err:
            failures.append(err)
    py = [b for b in blocks if b.lang == "python" and b.mode == "run"]
    if py and not args.python:
        print(f"docs check: {len(py)} Python blocks not run: no --python (the Python package was not built)")
    for n, b in enumerate(py if args.python else []):
        t = time.time()
        err = run_python(b, args, env, os.path.join(work, "run", f"py_{n}"))
        nrun += 1
        print(f"  ran {b.where()} ({time.time() - t:.1f} s): " + ("ok" if not err else "FAILED"))
        if err:
            failures.append(err)
    skipped = sum(1 for b in blocks if b.mode == "skip") + (0 if args.python else len(py))
    print(f"docs check: {len(blocks)} marked blocks: {len(cpp) - len(broken)} of {len(cpp)} C++ compiled, {nrun} run, {skipped} skipped; "
          f"{len(failures)} failed ({time.time() - t0:.0f} s)")
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
