#!/usr/bin/env python3
"""The installed gemmd package against a real gemmd (GEMM_TARGET, set by
with_server.sh): GemmClient's calls, and Client.matmul on every type,
layout, C and batch, each result checked here against numpy in fp64 (not
by the server's verification)."""
import os
import unittest

import grpc
import numpy as np

from gemmd import Client, GemmClient
from gemmd._proto.gemm.v1 import gemm_pb2

try:
    import torch
except ImportError:
    torch = None

# Each D type's unit roundoff: its rounding moves a value by at most this
# much relative. fp32 sums of k terms add up to k·2^-24 of Σ|a·b| each side.
UNIT = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "fp32": 2.0 ** -24}


def bf16_bits(x):
    """float32 -> bf16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def fp8_e4m3_values(codes):
    """The OCP E4M3 value of each code (no infinities; 0x7f/0xff NaN)."""
    c = np.asarray(codes, np.uint8).astype(np.int64)
    e, m = (c >> 3) & 0xF, c & 7
    v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7))
    return np.where(c & 0x80, -v, v)


class MatmulTest(unittest.TestCase):
    """Client.matmul: alpha·(a @ b) + beta·c as numpy means it."""

    def setUp(self):
        self.client = Client(os.environ["GEMM_TARGET"], max_message_bytes=4 << 20)
        self.rng = np.random.default_rng(7)

    def tearDown(self):
        self.client.__exit__(None, None, None)

    def values(self, shape):
        return self.rng.uniform(-1, 1, shape)

    def expect_close(self, got, a, b, c=None, alpha=1.0, beta=0.0, d="fp16", sum_unit=2.0 ** -23):
        """sum_unit: each term's share of the sums' rounding: fp32's, or
        2^-13 for fp8, whose tensor-core sums keep about 14 bits on Hopper
        between promotions to fp32 (docs/verification.md)."""
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        want = alpha * np.matmul(a64, b64)
        magnitude = np.abs(alpha) * np.matmul(np.abs(a64), np.abs(b64))
        if c is not None:
            want = want + beta * np.asarray(c, np.float64)
            magnitude = magnitude + np.abs(beta * np.asarray(c, np.float64))
        k = a64.shape[-1]
        bound = UNIT[d] * np.abs(want) + (k + 2) * sum_unit * magnitude + 1e-30
        err = np.abs(np.asarray(got, np.float64) - want)
        self.assertEqual(got.shape, want.shape)
        self.assertTrue(np.all(err <= bound), f"worst {np.max(err / bound):.2f} of the bound")

    def test_fp16_and_fp32_arrays_with_numpys_meaning_of_matmul(self):
        for dtype, d in ((np.float16, "fp16"), (np.float32, "fp32")):
            a = self.values((37, 50)).astype(dtype)
            b = self.values((50, 23)).astype(dtype)
            got, reply = self.client.matmul(a, b, reply=True)
            self.assertEqual(got.dtype, dtype)
            self.assertTrue(reply.verification.passed)
            self.expect_close(got, a, b, d=d)

    def test_transposed_views_go_as_they_are_stored(self):
        a = self.values((50, 37)).astype(np.float16).T  # a 37x50 view, stored 50x37
        b = self.values((23, 50)).astype(np.float16).T  # a 50x23 view, stored 23x50 (n x k)
        self.assertFalse(a.flags.c_contiguous)
        got, reply = self.client.matmul(a, b, reply=True)
        self.expect_close(got, a, b)

    def test_bf16_x_at_w_plus_beta_c_batched_with_a_shared_w(self):
        x = bf16_bits(self.values((4, 24, 72)))
        w = bf16_bits(self.values((72, 40)))
        r = bf16_bits(self.values((4, 24, 40)))
        got, reply = self.client.matmul(x, w, c=r, beta=0.5, dtype="bf16", reply=True)
        self.assertEqual(got.dtype, np.uint16)
        self.assertEqual(reply.batch_count, 4)
        self.assertTrue(reply.verification.passed)
        self.expect_close(bf16_values(got), bf16_values(x), bf16_values(w), bf16_values(r), beta=0.5, d="bf16")

    def test_the_fast_check_is_asked_for_and_reported(self):
        x = bf16_bits(self.values((4, 24, 72)))
        w = bf16_bits(self.values((72, 40)))
        got, reply = self.client.matmul(x, w, dtype="bf16", verify="fast", reply=True)
        self.assertTrue(reply.verification.passed)
        self.assertEqual(reply.verification.mode, gemm_pb2.VERIFICATION_FAST)  # the package's own stubs
        self.assertGreater(reply.verification.sure_error, 0)
        self.expect_close(bf16_values(got), bf16_values(x), bf16_values(w), d="bf16")
        with self.assertRaisesRegex(ValueError, "True, False or 'fast'"):
            self.client.matmul(x, w, dtype="bf16", verify="quick")

    def test_alpha_beta_and_an_fp32_c_broadcast_over_the_batch(self):
        a = self.values((3, 16, 30)).astype(np.float16)
        b = self.values((3, 30, 12)).astype(np.float16)
        c = self.values((16, 12)).astype(np.float32)
        got = self.client.matmul(a, b, c=c, alpha=-0.75, beta=2.0)
        self.expect_close(got, a, b, np.broadcast_to(c, (3, 16, 12)), alpha=-0.75, beta=2.0)

    def test_fp8_with_scales(self):
        a = self.rng.integers(0, 0x7F, (32, 64), dtype=np.uint8)  # positive codes below NaN
        b = (self.rng.integers(0, 0x7F, (64, 16), dtype=np.uint8) | 0x80).astype(np.uint8)  # negative
        a[a > 0x5F] = 0x38  # keep values small (1.0) so that sums stay well inside bf16
        b[(b & 0x7F) > 0x5F] = 0xB8
        got = self.client.matmul(a, b, dtype="fp8_e4m3", a_scale=0.5, b_scale=2.0)
        self.assertEqual(got.dtype, np.uint16)  # bf16 bits
        self.expect_close(bf16_values(got), fp8_e4m3_values(a), fp8_e4m3_values(b), d="bf16", sum_unit=2.0 ** -13)

    def test_larger_than_one_message_goes_through_handles(self):
        a = self.values((700, 1200)).astype(np.float32)  # 3.4 MB, with B and D past 4 MiB
        b = self.values((1200, 300)).astype(np.float32)
        got = self.client.matmul(a, b, allow_tf32=True)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(got - a64 @ b64)
        self.assertLess(err.max(), 2.0 ** -10 * np.max(np.abs(a64) @ np.abs(b64)) + 1e-3)

    def test_what_cannot_be_multiplied_says_why(self):
        with self.assertRaisesRegex(ValueError, "a's columns must be b's rows"):
            self.client.matmul(np.ones((4, 5), np.float16), np.ones((4, 5), np.float16))
        with self.assertRaisesRegex(TypeError, "not float16 or float32"):
            self.client.matmul(np.ones((4, 4), np.float64), np.ones((4, 4), np.float64))
        with self.assertRaisesRegex(ValueError, "does not broadcast"):
            self.client.matmul(np.ones((2, 4, 4), np.float16), np.ones((3, 4, 4), np.float16))
        with self.assertRaises(grpc.RpcError) as e:  # the server's refusal, with its sentence
            self.client.matmul(np.ones((4, 4), np.float16), np.ones((4, 4), np.float32))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("both operands must have one type", e.exception.details())

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_tensors_of_each_dtype_come_back_as_tensors(self):
        for dtype, d in ((torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            a = torch.rand(2, 20, 33, dtype=torch.float32).mul(2).sub(1).to(dtype)
            b = torch.rand(33, 18, dtype=torch.float32).mul(2).sub(1).to(dtype)
            c = torch.rand(2, 20, 18, dtype=torch.float32).to(dtype)
            got = self.client.matmul(a, b, c=c, beta=1.0)
            self.assertIsInstance(got, torch.Tensor)
            self.assertEqual(got.dtype, dtype)
            self.expect_close(got.float().numpy(), a.float().numpy(), b.float().numpy(), c.float().numpy(),
                              beta=1.0, d=d)


class GemmClientTest(unittest.TestCase):
    def setUp(self):
        self.client = GemmClient(os.environ["GEMM_TARGET"], max_message_bytes=4 << 20)
        self.rng = np.random.default_rng()

    def tearDown(self):
        self.client.__exit__(None, None, None)

    def check(self, m, n, k):
        a = self.rng.uniform(-1, 1, (m, k)).astype(np.float16)
        b = self.rng.uniform(-1, 1, (n, k)).astype(np.float16)
        d, reply = self.client.multiply(a, b)
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        self.assertEqual(d.shape, (m, n))
        err = np.abs(d.astype(np.float64) - ref)
        self.assertTrue(np.all(err <= 1e-2 + 1e-3 * np.abs(ref)), f"max err {err.max()}")
        self.assertTrue(reply.verification.passed)
        return reply

    def test_small_inline(self):
        reply = self.check(64, 48, 80)
        self.assertEqual(reply.engine, "cpu")

    def test_benchmark_timing_and_phases(self):
        a = self.rng.uniform(-1, 1, (40, 30)).astype(np.float16)
        b = self.rng.uniform(-1, 1, (20, 30)).astype(np.float16)
        _, reply = self.client.multiply(a, b, repeats=3, benchmark=True)
        t = reply.timing
        self.assertTrue(reply.verification.passed)
        self.assertEqual(t.repeats, 3)
        phases = (t.prepare_seconds + t.queue_seconds + t.upload_seconds + t.compute_seconds + t.download_seconds
                  + t.reply_seconds)
        self.assertLessEqual(phases, t.total_seconds * 1.001)
        self.assertGreaterEqual(phases, t.total_seconds * 0.95)

    def test_ragged(self):
        self.check(1, 1, 1)
        self.check(129, 77, 1000)

    def test_larger_than_one_message_goes_through_handles(self):
        self.check(1500, 1100, 1536)  # A 4.4 MiB, D 3.1 MiB: chunked both ways

    def test_errors_carry_status_and_message(self):
        a = np.ones((4, 4), np.float16)
        with self.assertRaises(grpc.RpcError) as e:
            self.client.multiply(a, a, step=7)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("step 7 runs on NVIDIA", e.exception.details())
        with self.assertRaises(ValueError):
            self.client.multiply(a, np.ones((4, 5), np.float16))

    def test_byte_ranges_of_a_stored_matrix(self):
        m = self.rng.uniform(-1, 1, (300, 70)).astype(np.float16)
        handle = self.client.upload(m, chunk_bytes=10000)
        try:
            whole = m.astype("<f2").tobytes()
            self.assertTrue(np.array_equal(self.client.download(handle), m))
            self.assertEqual(self.client.download_bytes(handle, 12346, 20000), whole[12346:32346])
            self.assertEqual(self.client.download_bytes(handle, 40000), whole[40000:])
            with self.assertRaises(grpc.RpcError) as e:
                self.client.download_bytes(handle, len(whole) - 2, 4)
            self.assertEqual(e.exception.code(), grpc.StatusCode.OUT_OF_RANGE)
            self.assertIn(f"which has {len(whole)} bytes", e.exception.details())
        finally:
            self.client.delete(handle)

    def test_a_transient_upload_round_trips(self):
        m = self.rng.uniform(-1, 1, (30, 20)).astype(np.float16)
        handle = self.client.upload(m, label="scratch", transient=True)
        try:
            self.assertTrue(np.array_equal(self.client.download(handle), m))
        finally:
            self.client.delete(handle)

    def test_list_kernels(self):
        r = self.client.list_kernels()
        self.assertEqual(len(r.kernels), 11)
        self.assertTrue(r.kernels[0].available)


if __name__ == "__main__":
    unittest.main(verbosity=2)
