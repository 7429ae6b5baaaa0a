"""Readers for what run.sh's parts write under $OUT, shared by its summaries."""
import json
import re


def json_docs(path):
    """The JSON objects in a file, one after another, as gemm-client --json prints them."""
    return [json.loads(m) for m in re.findall(r'\{.*?\n\}', open(path).read(), re.S)]


def echo_records(path):
    """A file of grpc-echo-bench lines, each a dict of its key=value pairs."""
    return [dict(kv.split("=") for kv in line.split()) for line in open(path)]


def client_ms(runs, key):
    """One client field of each run (gemm-client run --json), in ms: "31.2, 28.0, 29.5"."""
    return ", ".join(f"{r['client'][key] * 1e3:.1f}" for r in runs)


def batch_sizes(path):
    """(launches, requests) from gemm_batch_size_count and _sum lines scraped off /metrics."""
    m = dict(l.split() for l in open(path) if l.strip())
    return float(m.get("gemm_batch_size_count", 0)), float(m.get("gemm_batch_size_sum", 0))
