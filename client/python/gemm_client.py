#!/usr/bin/env python3
"""A small Python client of gemmd (gemm.v1): multiply two numpy arrays.

    from gemm_client import GemmClient
    with GemmClient("localhost:50051") as c:
        d, reply = c.multiply(a, b)        # a: (m, k), b: (n, k) -> d = a @ b.T

Needs python3-grpcio, python3-protobuf and python3-numpy (Debian), and the
stubs CMake generates into build/python (put it on PYTHONPATH). Inputs go
inline when they fit one message, else through chunked uploads to handles.
"""
import argparse
import json
import sys

import grpc
import numpy as np

from gemm.v1 import gemm_pb2, gemm_pb2_grpc

_OVERHEAD = 64 * 1024


# The same policy as the C++ client's (client/gemm_client.cpp, kRetryServiceConfig):
# refusals that mean the server did not do the work are retried with
# exponential backoff and jitter, within a throttling budget. UploadMatrix is
# left out: a retry would need the whole stream kept to send again.
_RETRIED = ("Multiply", "ListKernels", "ListMatrices", "DeleteMatrix", "DownloadMatrix")
RETRY_SERVICE_CONFIG = json.dumps({
    "methodConfig": [{
        "name": [{"service": "gemm.v1.GemmService", "method": m} for m in _RETRIED],
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "2s",
                        "backoffMultiplier": 2.5, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "CANCELLED"]},
    }],
    "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1.0},
})


class GemmClient:
    def __init__(self, target, max_message_bytes=128 << 20, timeout=300.0, *, tls=False,
                 root_certificates=None, certificate_chain=None, private_key=None,
                 server_name=None, token=None, retries=True):
        """TLS when `tls` or any PEM (bytes) is given: root_certificates is the CA
        that signed the server (None: the system's), certificate_chain and
        private_key the client's for mutual TLS. `token` is sent on every call
        as 'authorization: Bearer <token>'. `retries`: gRPC retries refusals
        (UNAVAILABLE, RESOURCE_EXHAUSTED) with backoff, as gemm-client does.
        `timeout`: each call's deadline in seconds (None: none); within it,
        once connected, a call waits out a server restart."""
        opts = [("grpc.max_send_message_length", max_message_bytes),
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.lb_policy_name", "round_robin"),
                # Reconnect within 0.1-1 s of a lost connection, as gemm-client does.
                ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000)]
        if retries:
            opts += [("grpc.enable_retries", 1), ("grpc.service_config", RETRY_SERVICE_CONFIG)]
        if tls or root_certificates or certificate_chain:
            if server_name:
                opts.append(("grpc.ssl_target_name_override", server_name))
            creds = grpc.ssl_channel_credentials(root_certificates, private_key, certificate_chain)
            self._channel = grpc.secure_channel(target, creds, options=opts)
        else:
            self._channel = grpc.insecure_channel(target, options=opts)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._stub = gemm_pb2_grpc.GemmServiceStub(self._channel)
        self._max = max_message_bytes
        self._timeout = timeout
        self._retries = retries
        # Once a call has reached the server, later calls with a deadline
        # wait out a restart instead of failing (gRPC's wait-for-ready), as
        # gemm-client's do; before that a call fails fast (a wrong address
        # is not a restart).
        self._reached = False

    def _call(self, method, request, **kwargs):
        wait = self._retries and self._reached and self._timeout is not None
        result = method(request, timeout=self._timeout, metadata=self._metadata, wait_for_ready=wait, **kwargs)
        self._reached = True
        return result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._channel.close()

    def list_kernels(self):
        return self._call(self._stub.ListKernels, gemm_pb2.ListKernelsRequest())

    def upload(self, matrix, label="", chunk_bytes=1 << 20, transient=False):
        """Uploads a 2-D array as fp16 in chunks; returns its handle.

        transient: kept in the server's memory only, never in its matrix
        directory (quicker to store; lost when the server restarts)."""
        data = np.ascontiguousarray(matrix, dtype="<f2").tobytes()
        rows, cols = matrix.shape

        def chunks():
            header = gemm_pb2.MatrixHeader(rows=rows, cols=cols, label=label, transient=transient)
            for off in range(0, max(len(data), 1), chunk_bytes):
                yield gemm_pb2.UploadMatrixRequest(header=header if off == 0 else None,
                                                   data=data[off:off + chunk_bytes])
        return self._call(self._stub.UploadMatrix, chunks()).handle

    def download(self, handle):
        """A stored matrix as a float16 array."""
        data, info = self._download(handle, 0, 0)
        return np.frombuffer(data, dtype="<f2").reshape(info.rows, info.cols)

    def download_bytes(self, handle, offset=0, length=0):
        """Bytes [offset, offset + length) of a stored matrix (length 0: to
        the end). Ranges on separate channels fetch one matrix over several
        connections at once; past the end is OUT_OF_RANGE."""
        return self._download(handle, offset, length)[0]

    def _download(self, handle, offset, length):
        parts, info = [], None
        req = gemm_pb2.DownloadMatrixRequest(handle=handle, offset=offset, length=length)
        for chunk in self._stub.DownloadMatrix(req, timeout=self._timeout, metadata=self._metadata):
            if chunk.HasField("info"):
                info = chunk.info
            if chunk.offset != offset + sum(len(p) for p in parts):
                raise ValueError(f"download chunk at {chunk.offset} out of order")
            parts.append(chunk.data)
        return b"".join(parts), info

    def delete(self, handle):
        self._call(self._stub.DeleteMatrix, gemm_pb2.DeleteMatrixRequest(handle=handle))

    def multiply(self, a, b, step=0, verify=True, repeats=1, benchmark=False):
        """Returns (D as float16 (m, n), the MultiplyResponse) for D = a @ b.T.

        benchmark: time the kernel as gemm-bench does (L2 flushed and D
        poisoned before every repeat)."""
        a = np.ascontiguousarray(a, dtype="<f2")
        b = np.ascontiguousarray(b, dtype="<f2")
        (m, k), (n, kb) = a.shape, b.shape
        if k != kb:
            raise ValueError(f"a is {m}x{k} and b is {n}x{kb}: both need k columns")
        req = gemm_pb2.MultiplyRequest(
            shape=gemm_pb2.Shape(m=m, n=n, k=k), step=step, repeats=repeats, benchmark=benchmark,
            verification=gemm_pb2.VERIFICATION_FULL if verify else gemm_pb2.VERIFICATION_NONE)
        uploaded = []
        try:
            if a.nbytes + b.nbytes + _OVERHEAD <= self._max:
                req.a.data, req.b.data = a.tobytes(), b.tobytes()
            else:
                for op, mat in ((req.a, a), (req.b, b)):
                    op.handle = self.upload(mat)
                    uploaded.append(op.handle)
            inline = m * n * 2 + _OVERHEAD <= self._max
            req.output = gemm_pb2.OUTPUT_INLINE if inline else gemm_pb2.OUTPUT_HANDLE
            reply = self._call(self._stub.Multiply, req)
        finally:
            for h in uploaded:
                self.delete(h)
        if inline:
            d = np.frombuffer(reply.d, dtype="<f2").reshape(m, n)
        else:
            d = self.download(reply.d_handle)
            self.delete(reply.d_handle)
        return d, reply


def main():
    p = argparse.ArgumentParser(description="multiply two random numpy arrays on gemmd and check with numpy")
    p.add_argument("--target", default="localhost:50051")
    p.add_argument("--m", type=int, default=256)
    p.add_argument("--n", type=int, default=192)
    p.add_argument("--k", type=int, default=320)
    p.add_argument("--step", type=int, default=0)
    args = p.parse_args()
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (args.m, args.k)).astype(np.float16)
    b = rng.uniform(-1, 1, (args.n, args.k)).astype(np.float16)
    with GemmClient(args.target) as c:
        d, reply = c.multiply(a, b, step=args.step)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    bad = int(np.sum(np.abs(d.astype(np.float64) - ref) > 1e-2 + 1e-3 * np.abs(ref)))
    print(f"{args.m}x{args.n}x{args.k} step {args.step} on {reply.device}: server verification "
          f"{'passed' if reply.verification.passed else 'FAILED'}, numpy check {bad} mismatches, "
          f"{reply.tflops:.3f} TFLOPS")
    return 0 if bad == 0 and reply.verification.passed else 1


if __name__ == "__main__":
    sys.exit(main())
