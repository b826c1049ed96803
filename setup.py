"""Build of the optional native recorders (tracers/charm/_recorder.c, tracers/torch/_hooks.c); everything
else is in pyproject.toml.

`optional=True`: without a C compiler (or Python headers) the install goes on without them and the
tracers use their pure-Python recorders (tracers/charm/rowbuf.py, tracers/torch/native.py say which runs).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracers.charm._recorder", ["tracers/charm/_recorder.c"],
                             extra_compile_args=["-O2"], optional=True),
                   Extension("tracers.torch._hooks", ["tracers/torch/_hooks.c"],
                             extra_compile_args=["-O2"], optional=True)])
