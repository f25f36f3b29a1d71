"""pytest set-up for loom's Python package tests: the package of the build tree
(LOOM_PYTHON_DIR, set by ctest) comes first on sys.path."""
import os
import sys

_dir = os.environ.get("LOOM_PYTHON_DIR")
if _dir:
    sys.path.insert(0, os.path.abspath(_dir))
