"""The gemmd Python package: `pip install client/python` (in a virtual
environment made with --system-site-packages, beside Debian's python3-grpcio,
python3-protobuf and python3-numpy). Its gRPC stubs are generated from
proto/gemm/v1/gemm.proto at build time by Debian's protoc and
grpc_python_plugin, into gemmd/_proto: nothing is found by PYTHONPATH."""
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "gemmd", "_proto")
        os.makedirs(out, exist_ok=True)
        plugin = shutil.which("grpc_python_plugin")
        protoc = shutil.which("protoc")
        if not plugin or not protoc:
            raise SystemExit("gemmd needs protoc and grpc_python_plugin to build its stubs: "
                             "apt-get install protobuf-compiler protobuf-compiler-grpc")
        subprocess.run([protoc, f"--python_out={out}", f"--grpc_python_out={out}",
                        f"--plugin=protoc-gen-grpc_python={plugin}", "-I", PROTO_ROOT,
                        os.path.join(PROTO_ROOT, "gemm", "v1", "gemm.proto")], check=True)
        # The generated modules import each other as top-level `gemm.v1`:
        # inside this package they are gemmd._proto.gemm.v1.
        grpc_module = os.path.join(out, "gemm", "v1", "gemm_pb2_grpc.py")
        with open(grpc_module) as f:
            text = f.read()
        with open(grpc_module, "w") as f:
            f.write(re.sub(r"^from gemm\.v1 import", "from gemmd._proto.gemm.v1 import", text, flags=re.M))
        for d in (out, os.path.join(out, "gemm"), os.path.join(out, "gemm", "v1")):
            open(os.path.join(d, "__init__.py"), "a").close()


setup(
    name="gemmd",
    version="1.0.0",
    description="Client of gemmd, a GPU GEMM service (gemm.v1 over gRPC)",
    packages=["gemmd"],
    python_requires=">=3.9",
    install_requires=["grpcio", "protobuf", "numpy"],
    cmdclass={"build_py": BuildWithStubs},
)
