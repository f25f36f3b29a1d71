"""The package's claims that the other tests cannot see on this interpreter: every Python file
of the package, its tests, tutorials and benchmark (and the type stubs) is Python 3.10 syntax and
uses no standard-library name newer than 3.10, and pyproject.toml's build requirements are the
versions python/requirements.txt pins (what the build tree's package is built and tested with).
tests/python/run_wheel_test.py builds, installs and tests the wheel itself, on 3.10 too."""
import ast
import os
import re

import pytest

import loom

try:
    import tomllib
except ImportError:  # Python 3.10: the back-port python/requirements.txt pins
    import tomli as tomllib

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OLDEST = (3, 10)

# Standard-library names added after 3.10 (modules, and names imported from a module).
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_NAMES = {
    "typing": {"Self", "LiteralString", "Never", "assert_never", "assert_type", "reveal_type", "Required",
               "NotRequired", "TypeVarTuple", "Unpack", "dataclass_transform", "get_overloads", "clear_overloads",
               "override", "TypeAliasType", "ReadOnly", "TypeIs", "NoDefault"},
    "enum": {"StrEnum", "ReprEnum", "EnumCheck", "FlagBoundary", "verify", "member", "nonmember", "global_enum",
             "show_flag_values", "property"},
    "datetime": {"UTC"},
    "asyncio": {"TaskGroup", "Runner", "timeout", "timeout_at", "Timeout"},
    "contextlib": {"chdir"},
    "hashlib": {"file_digest"},
    "itertools": {"batched"},
    "operator": {"call"},
    "inspect": {"markcoroutinefunction", "getmembers_static"},
}
NEWER_BUILTINS = {"ExceptionGroup", "BaseExceptionGroup"}


def python_files():
    files = []
    for folder in ["python/loom", "tests/python", "examples/python"]:
        for name in sorted(os.listdir(os.path.join(SOURCE, folder))):
            if name.endswith((".py", ".pyi")):
                files.append(os.path.join(SOURCE, folder, name))
    files.append(os.path.join(SOURCE, "bench", "python_overhead.py"))
    stub = os.path.join(os.path.dirname(loom.__file__), "_loom.pyi")
    if os.path.exists(stub):  # written by nanobind's stubgen at build time
        files.append(stub)
    return files


def guarded(tree):
    """The nodes under a `try:` whose handler catches ImportError (a fallback for older versions)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers):
            ids.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return ids


def newer_than_oldest(tree):
    found = []
    skip = guarded(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name in NEWER_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in NEWER_MODULES:
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if a.name in NEWER_NAMES.get(node.module, ())]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in NEWER_NAMES.get(node.value.id, ()):
                found.append(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in NEWER_BUILTINS:
            found.append(node.id)
    return found


def test_requires_python_is_the_oldest_checked():
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["requires-python"] == ">=%d.%d" % OLDEST


@pytest.mark.parametrize("path", python_files(), ids=lambda p: os.path.relpath(p, SOURCE))
def test_python_3_10_syntax_and_library(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # feature_version rejects the grammar of later versions (except*, type aliases, PEP 695
    # generics, ...); the walk finds the library names they added.
    tree = ast.parse(text, filename=path, feature_version=OLDEST)
    uses = newer_than_oldest(tree)
    assert not uses, f"{path} uses {uses}, which Python {OLDEST[0]}.{OLDEST[1]} does not have"


def test_the_check_finds_what_3_10_lacks():
    with pytest.raises(SyntaxError):
        ast.parse("try:\n    pass\nexcept* ValueError:\n    pass\n", feature_version=OLDEST)
    assert newer_than_oldest(ast.parse("from typing import Self\nimport tomllib\nx = enum.StrEnum\n")) == \
        ["typing.Self", "tomllib", "enum.StrEnum"]
    assert newer_than_oldest(ast.parse("try:\n    import tomllib\nexcept ImportError:\n    import tomli\n")) == []


def pins(lines):
    """name -> [(version, marker)] of `name==version[; marker]` lines."""
    out = {}
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^;\s]+)\s*(?:;\s*(.+))?$", line.split("#")[0])
        if m:
            out.setdefault(m.group(1).lower().replace("_", "-"), []).append(
                (m.group(2), (m.group(3) or "").replace("'", '"').strip()))
    return out


def test_build_requirements_are_the_pinned_versions():
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        requires = tomllib.load(f)["build-system"]["requires"]
    with open(os.path.join(SOURCE, "python", "requirements.txt")) as f:
        pinned = pins(f)
    build = pins(requires)
    assert set(build) == {"scikit-build-core", "nanobind", "numpy"}, requires
    assert sum(map(len, build.values())) == len(requires), f"every build requirement is pinned with ==: {requires}"
    for name, versions in build.items():
        assert sorted(versions) == sorted(pinned[name]), f"{name}: pyproject.toml {versions}, requirements.txt {pinned[name]}"
