#!/usr/bin/env python3
"""The Python client against a real gemmd (GEMM_TARGET, set by with_server.sh)."""
import os
import unittest

import grpc
import numpy as np

from gemm_client import GemmClient


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
