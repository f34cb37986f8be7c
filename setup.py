"""The C scanner of the batch line parser (flaketui/_linescan.c); everything else is
in pyproject.toml. ``optional``: where it can't be compiled, flaketui reads with msgspec alone."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("flaketui._linescan", ["flaketui/_linescan.c"],
                             extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
                             optional=True)])
