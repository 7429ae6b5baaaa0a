"""gemmd's gRPC client: Client.matmul for numpy's and torch's meaning of
a @ b, and GemmClient, its base, for the service's own calls (uploads,
downloads, handles, gemmd's original a @ b.T). Inputs go inline when they
fit one message, else through chunked uploads to handles."""
import json

import grpc
import numpy as np

from ._proto.gemm.v1 import gemm_pb2, gemm_pb2_grpc

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

        verify: True (every element against an independent GEMM), "fast"
        (VERIFICATION_FAST: random projections and samples, docs/verification.md)
        or False.

        benchmark: time the kernel as gemm-bench does (L2 flushed and D
        poisoned before every repeat)."""
        a = np.ascontiguousarray(a, dtype="<f2")
        b = np.ascontiguousarray(b, dtype="<f2")
        (m, k), (n, kb) = a.shape, b.shape
        if k != kb:
            raise ValueError(f"a is {m}x{k} and b is {n}x{kb}: both need k columns")
        req = gemm_pb2.MultiplyRequest(
            shape=gemm_pb2.Shape(m=m, n=n, k=k), step=step, repeats=repeats, benchmark=benchmark,
            verification=_verification(verify))
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


# Wire types by name; numpy holds bf16 and fp8 as their bits (uint16, uint8).
_TYPES = {
    "fp16": (gemm_pb2.FP16, np.dtype("<f2")),
    "bf16": (gemm_pb2.BF16, np.dtype("<u2")),
    "fp32": (gemm_pb2.FP32, np.dtype("<f4")),
    "fp8_e4m3": (gemm_pb2.FP8_E4M3, np.dtype("u1")),
    "fp8_e5m2": (gemm_pb2.FP8_E5M2, np.dtype("u1")),
}
_NUMPY_TYPES = {np.dtype("float16"): "fp16", np.dtype("float32"): "fp32"}


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _torch_types(torch):
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
    for attr, name in (("float8_e4m3fn", "fp8_e4m3"), ("float8_e5m2", "fp8_e5m2")):
        if hasattr(torch, attr):
            names[getattr(torch, attr)] = name
    return names


class _Operand:
    """An input as the wire sees it: its type, its bytes' array (2-D or 3-D,
    the last two axes row-major) and whether those axes are the operand's
    own or transposed."""

    def __init__(self, x, dtype, what):
        self.is_torch = False
        torch = _torch()
        if torch is not None and isinstance(x, torch.Tensor):
            self.is_torch = True
            names = _torch_types(torch)
            if x.dtype not in names:
                raise TypeError(f"{what}: torch dtype {x.dtype} is not one gemmd takes ({', '.join(map(str, names))})")
            self.type = names[x.dtype]
            bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[x.element_size()]
            x = x.detach().cpu().view(bits).numpy().view(_TYPES[self.type][1])
        else:
            x = np.asarray(x)
            if dtype is not None:
                if dtype not in _TYPES:
                    raise TypeError(f"{what}: dtype {dtype!r} is not one of {', '.join(_TYPES)}")
                self.type = dtype
                if x.dtype.itemsize != _TYPES[dtype][1].itemsize:
                    raise TypeError(f"{what}: a {dtype} array is held as {_TYPES[dtype][1]} bits, got {x.dtype}")
                x = x.view(_TYPES[dtype][1])
            elif x.dtype in _NUMPY_TYPES:
                self.type = _NUMPY_TYPES[x.dtype]
            else:
                raise TypeError(f"{what}: numpy {x.dtype} is not float16 or float32; bf16 and fp8 arrays are "
                                f"their bits (uint16, uint8) with dtype='bf16', 'fp8_e4m3' or 'fp8_e5m2'")
        if x.ndim not in (2, 3):
            raise ValueError(f"{what} must be 2-D, or 3-D for a batch; got shape {x.shape}")
        self.array = x

    def rows_cols(self):
        return self.array.shape[-2], self.array.shape[-1]

    def wire(self, transposed=None):
        """(bytes, transposed): the last two axes as stored. The array's own
        order is kept where it is already row-major either way round, so
        nothing is transposed here that the server can read as it is;
        `transposed` True or False asks for that storage whatever it costs."""
        x = self.array
        swapped = np.swapaxes(x, -1, -2)
        if transposed is None:
            if x.flags.c_contiguous:
                return x.tobytes(), False
            if swapped.flags.c_contiguous:
                return swapped.tobytes(), True
            transposed = False
        return np.ascontiguousarray(swapped if transposed else x).tobytes(), transposed


def _verification(verify):
    """The request's check: True, "fast" or False."""
    if verify == "fast":
        return gemm_pb2.VERIFICATION_FAST
    if verify is True or verify is False:
        return gemm_pb2.VERIFICATION_FULL if verify else gemm_pb2.VERIFICATION_NONE
    raise ValueError(f"verify is True, False or 'fast', not {verify!r}")


class Client(GemmClient):
    def upload_typed(self, array, dtype, label="", chunk_bytes=1 << 20, transient=False):
        """Uploads a 2-D array of the wire type `dtype` in chunks; returns its handle."""
        type_id, held = _TYPES[dtype]
        data = np.ascontiguousarray(array).view(held).tobytes()
        rows, cols = array.shape

        def chunks():
            header = gemm_pb2.MatrixHeader(rows=rows, cols=cols, label=label, transient=transient, type=type_id)
            for off in range(0, max(len(data), 1), chunk_bytes):
                yield gemm_pb2.UploadMatrixRequest(header=header if off == 0 else None,
                                                   data=data[off:off + chunk_bytes])
        return self._call(self._stub.UploadMatrix, chunks()).handle

    def matmul(self, a, b, c=None, alpha=1.0, beta=0.0, step=0, *, dtype=None, b_dtype=None, out_dtype=None,
               c_dtype=None, a_scale=None, b_scale=None, allow_tf32=False, verify=True, reply=False):
        """alpha · (a @ b) + beta · c, with numpy's meaning of @: a is m×k,
        b is k×n, and 3-D arrays are batches broadcast as numpy broadcasts
        them (a 2-D b is shared by every entry of a 3-D a). Returns the kind
        of object given (a numpy array, or a torch tensor), of D's type:
        the inputs' (bf16 for fp8), or out_dtype ('fp16', 'bf16', 'fp32').

        dtype names the wire type of numpy arrays held as bits ('bf16' for a
        uint16 view, 'fp8_e4m3' or 'fp8_e5m2' for uint8), b_dtype B's where
        it differs, c_dtype C's; fp8 operands take a_scale and b_scale
        (default 1). verify: True (the full check), "fast" (VERIFICATION_FAST)
        or False. With reply=True, returns (D, the MultiplyResponse)."""
        A = _Operand(a, dtype, "a")
        B = _Operand(b, b_dtype if b_dtype is not None else dtype, "b")
        (m, k), (kb, n) = A.rows_cols(), B.rows_cols()
        if k != kb:
            raise ValueError(f"a is {m}x{k} and b is {kb}x{n}: a's columns must be b's rows")
        batches = [x.array.shape[0] for x in (A, B) if x.array.ndim == 3]
        batch = max(batches, default=0)
        for x, name in ((A, "a"), (B, "b")):
            if x.array.ndim == 3 and x.array.shape[0] not in (1, batch):
                raise ValueError(f"{name}'s batch of {x.array.shape[0]} does not broadcast against {batch}")
        req = gemm_pb2.MultiplyRequest(
            shape=gemm_pb2.Shape(m=m, n=n, k=k), step=step,
            verification=_verification(verify),
            a_type=_TYPES[A.type][0], b_type=_TYPES[B.type][0], allow_tf32=allow_tf32)
        if out_dtype is not None:
            req.d_type = _TYPES[out_dtype][0]
        if alpha != 1.0:
            req.alpha = alpha
        fp8 = ("fp8_e4m3", "fp8_e5m2")
        if A.type in fp8:
            req.a_scale = 1.0 if a_scale is None else a_scale
        if B.type in fp8:
            req.b_scale = 1.0 if b_scale is None else b_scale
        # A as stored m×k is K contiguous; stored k×m (a transposed view) M
        # contiguous. B as stored k×n is N contiguous, n×k K contiguous.
        # fp8 goes K contiguous whatever its storage: the one form GPUs take
        # it in (cuBLASLt's fp8 matmul), so B is transposed here.
        fp8_operands = A.type in fp8 or B.type in fp8
        a_bytes, a_t = A.wire(False if fp8_operands else None)
        b_bytes, b_t = B.wire(True if fp8_operands else None)
        req.a_layout = gemm_pb2.LAYOUT_MN_CONTIGUOUS if a_t else gemm_pb2.LAYOUT_K_CONTIGUOUS
        req.b_layout = gemm_pb2.LAYOUT_K_CONTIGUOUS if b_t else gemm_pb2.LAYOUT_MN_CONTIGUOUS
        operands = [(req.a, a_bytes, A, (k, m) if a_t else (m, k)), (req.b, b_bytes, B, (n, k) if b_t else (k, n))]
        C = None
        if c is not None and beta != 0:
            declared = c_dtype
            if declared is None and not (isinstance(c, np.ndarray) and c.dtype in _NUMPY_TYPES):
                declared = dtype if dtype in ("fp16", "bf16", "fp32") else None
            C = _Operand(c, declared, "c")
            if C.rows_cols() != (m, n):
                raise ValueError(f"c is {C.rows_cols()[0]}x{C.rows_cols()[1]}; a @ b is {m}x{n}")
            if C.array.ndim == 3 and C.array.shape[0] not in (1, batch):
                raise ValueError(f"c's batch of {C.array.shape[0]} does not broadcast against {batch}")
            req.beta = beta
            req.c_type = _TYPES[C.type][0]
            c_bytes = np.ascontiguousarray(C.array).tobytes()
            operands.append((req.c, c_bytes, C, (m, n)))
        if batch:
            req.batch.count = batch
            for (op, _, x, _), stride in zip(operands, ("stride_a", "stride_b", "stride_c")):
                if x.array.ndim == 2 or x.array.shape[0] == 1:
                    setattr(req.batch, stride, 0)  # one matrix for every entry
        entries = max(batch, 1)
        d_name = out_dtype or ("bf16" if A.type in fp8 else A.type)
        d_held = _TYPES[d_name][1]
        d_bytes = entries * m * n * d_held.itemsize
        uploaded = []
        try:
            inline = sum(len(x[1]) for x in operands) + _OVERHEAD <= self._max
            for op, data, x, (rows, cols) in operands:
                if inline:
                    op.data = data
                else:
                    stacked = len(data) // (cols * _TYPES[x.type][1].itemsize)
                    op.handle = self.upload_typed(np.frombuffer(data, _TYPES[x.type][1]).reshape(stacked, cols),
                                                  x.type, transient=True)
                    uploaded.append(op.handle)
            inline_d = d_bytes + _OVERHEAD <= self._max
            req.output = gemm_pb2.OUTPUT_INLINE if inline_d else gemm_pb2.OUTPUT_HANDLE
            req.transient_output = not inline_d
            response = self._call(self._stub.Multiply, req)
        finally:
            for h in uploaded:
                self.delete(h)
        if inline_d:
            raw = response.d
        else:
            raw = self._download(response.d_handle, 0, 0)[0]
            self.delete(response.d_handle)
        shape = (batch, m, n) if batch else (m, n)
        d = np.frombuffer(raw, dtype=d_held).reshape(shape).copy()
        if A.is_torch or B.is_torch:
            torch = _torch()
            back = {v: k for k, v in _torch_types(torch).items()}
            bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[d_held.itemsize]
            d = torch.from_numpy(d.view({1: np.uint8, 2: np.int16, 4: np.int32}[d_held.itemsize])).view(bits)
            d = d.view(back[d_name])
        elif d_name == "fp16":
            d = d.view(np.float16)
        elif d_name == "fp32":
            d = d.view(np.float32)
        return (d, response) if reply else d
