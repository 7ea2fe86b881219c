"""pip install sdk/python: the package phalanx, with its gRPC stubs generated from the repository's
proto/ while it is built (gen_stubs.py), so that an install never carries stale ones."""
import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py

import gen_stubs

HERE = pathlib.Path(__file__).resolve().parent


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        gen_stubs.main(HERE.parents[1] / "proto", self.build_lib)


setup(
    name="phalanx",
    version="0.1.0",
    description="Python SDK of phalanx-master: trial context and client",
    packages=["phalanx"],
    python_requires=">=3.9",
    install_requires=["grpcio>=1.51", "protobuf>=4.21"],
    cmdclass={"build_py": BuildWithStubs},
)
