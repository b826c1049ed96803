"""Build of the what-if replay's event loop (paradise/whatif/_replay.c), of the optional native
recorders (tracers/charm/_recorder.c, tracers/torch/_hooks.c), and the license; everything else is
in pyproject.toml.

The replay is required: paradise needs a C compiler at install (Debian: gcc, python3-dev).
The recorders are `optional=True`: without a C compiler (or Python headers) the install goes on without them and the
tracers use their pure-Python recorders (tracers/charm/rowbuf.py, tracers/torch/native.py say which runs).

The license is given here (pyproject.toml: `dynamic`) because no one form in pyproject.toml suits
every setuptools: before 77 it refuses `license = "MIT"` (so `pip install -e . --no-build-isolation`
failed with the venv's setuptools 65), from 77 on it deprecates `license = {text = "MIT"}`.
"""

import setuptools
from setuptools import Extension, setup

SPDX = int(setuptools.__version__.split(".")[0]) >= 77
"""Whether this setuptools takes the license as an SPDX expression (core metadata License-Expression)."""

setup(ext_modules=[Extension("tracers.charm._recorder", ["tracers/charm/_recorder.c"],
                             extra_compile_args=["-O2"], optional=True),
                   Extension("tracers.torch._hooks", ["tracers/torch/_hooks.c"],
                             extra_compile_args=["-O2"], optional=True),
                   Extension("paradise.whatif._replay", ["paradise/whatif/_replay.c"],
                             extra_compile_args=["-O2"])],
      **({"license_expression": "MIT"} if SPDX else {"license": "MIT"}))
