"""gemmd's Python client.

    from gemmd import Client
    with Client("localhost:50051") as c:
        y = c.matmul(x, w)                 # x @ w, as numpy means it
        y = c.matmul(x, w, c=r, beta=0.5)  # x @ w + 0.5 * r

numpy arrays (float16, float32, or bf16 as a uint16 view with dtype="bf16")
and, where torch is installed, torch tensors; the result is of the kind given.
"""
from .client import Client, GemmClient, RETRY_SERVICE_CONFIG

__all__ = ["Client", "GemmClient", "RETRY_SERVICE_CONFIG"]
