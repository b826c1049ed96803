"""Build of the optional native recorder (tracers/charm/_recorder.c); everything else is in pyproject.toml.

`optional=True`: without a C compiler (or Python headers) the install goes on without it and the
charm tracer uses its pure-Python recorder (tracers/charm/native.py says which one runs).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracers.charm._recorder", ["tracers/charm/_recorder.c"],
                             extra_compile_args=["-O2"], optional=True)])
