#!/usr/bin/env python3
"""Generates the SDK's gRPC stubs from the repository's proto/ (never checked in): phalanx/v1/*_pb2.py
and *_pb2_grpc.py under OUT (the package tree the SDK is built or installed into).

  gen_stubs.py PROTO_DIR OUT

With grpc_tools installed it uses grpc_tools.protoc, else protoc with grpc_python_plugin (Debian's
protobuf-compiler and protobuf-compiler-grpc)."""
import pathlib
import shutil
import subprocess
import sys

PROTOS = ["common", "experiment", "task", "job", "auth", "allocation", "metrics"]


def main(proto_dir, out):
    proto_dir, out = pathlib.Path(proto_dir), pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [str(proto_dir / "phalanx" / "v1" / f"{p}.proto") for p in PROTOS]
    args = [f"--proto_path={proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", *files]
    try:
        from grpc_tools import protoc  # noqa: F401

        cmd = [sys.executable, "-m", "grpc_tools.protoc", *args]
    except ImportError:
        plugin = shutil.which("grpc_python_plugin")
        if plugin is None or shutil.which("protoc") is None:
            sys.exit("gen_stubs: need grpc_tools, or protoc and grpc_python_plugin")
        cmd = ["protoc", f"--plugin=protoc-gen-grpc_python={plugin}", *args]
    subprocess.run(cmd, check=True)
    (out / "phalanx" / "v1" / "__init__.py").touch()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
