"""A real Prometheus scraping a real gemmd: every metric the alert rules and
the Grafana dashboard use exists, every dashboard query returns data, the
rules evaluate without error, and `promtool check metrics` is clean.
Usage: prometheus_integration_test.py GEMMD GEMM_CLIENT"""
import json
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
GEMMD, CLIENT = sys.argv[1], sys.argv[2]
del sys.argv[1:3]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def dashboard_queries():
    d = json.loads((ROOT / "deploy/grafana/gemmd-dashboard.json").read_text())
    return [(p["title"], t["expr"].replace("$__rate_interval", "30s")) for p in d["panels"] for t in p["targets"]]


def rule_exprs():
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]


# Read through NVML: exported only by a server on GPUs with a driver.
GPU_TELEMETRY = {"gemm_gpu_power_watts", "gemm_gpu_power_limit_watts", "gemm_gpu_sm_clock_hertz",
                 "gemm_gpu_clock_event_active", "gemm_gpu_temperature_celsius", "gemm_gpu_utilization_ratio"}


def metric_names(exprs):
    names = set()
    for e in exprs:
        names |= set(re.findall(r"\b(gemm_[a-z_]+|up)\b(?=\s*[{\[)]|\s*(?:==|/|>|$|\s))", e))
    return names


class RealPrometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = pathlib.Path(tempfile.mkdtemp(prefix="gemmd-prom-"))
        cls.procs = []
        port_file = cls.work / "port"
        log = open(cls.work / "gemmd.log", "w+")
        cls.procs.append(subprocess.Popen([GEMMD, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                           "--port-file", str(port_file), "--engine", "cpu"],
                                          stderr=log, stdout=log))
        wait_for(lambda: port_file.exists() and port_file.read_text().strip(), 30, "gemmd")
        cls.target = f"127.0.0.1:{port_file.read_text().strip()}"
        log.seek(0)
        cls.metrics_port = int(re.search(r"metrics on port (\d+)", log.read()).group(1))

        shutil.copy(ROOT / "deploy/prometheus/alerts.yml", cls.work / "alerts.yml")
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "rule_files": ["alerts.yml"],
                  "scrape_configs": [{"job_name": "gemmd",
                                      "static_configs": [{"targets": [f"127.0.0.1:{cls.metrics_port}"]}]}]}
        (cls.work / "prometheus.yml").write_text(yaml.safe_dump(config))
        cls.prom = f"http://127.0.0.1:{free_port()}"
        cls.procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={cls.work / 'prometheus.yml'}", f"--storage.tsdb.path={cls.work / 'tsdb'}",
             f"--web.listen-address={cls.prom[len('http://'):]}"],
            stdout=subprocess.DEVNULL, stderr=open(cls.work / "prometheus.log", "w")))
        wait_for(lambda: urllib.request.urlopen(cls.prom + "/-/ready").status == 200, 60, "Prometheus ready")
        wait_for(lambda: cls.query('up{job="gemmd"}') and cls.query('up{job="gemmd"}')[0]["value"][1] == "1", 30,
                 "the first scrape of gemmd")

        # A burst: successes on several shapes, and a refused request.
        env = {"GEMM_TARGET": cls.target}
        subprocess.run([CLIENT, "bench", "--shapes", "64x64x64,96x80x72", "--steps", "0", "--concurrency", "4",
                        "--count", "40", "--verify"], env=env, check=True, capture_output=True)
        subprocess.run([CLIENT, "run", "--m", "0", "--n", "8", "--k", "8"], env=env, capture_output=True)
        # Two scrapes after the burst.
        scrapes = cls.scrape_count()
        wait_for(lambda: cls.scrape_count() >= scrapes + 2, 30, "two more scrapes")

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            p.terminate()
            p.wait(timeout=30)
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def query(cls, q):
        url = cls.prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        reply = json.load(urllib.request.urlopen(url))
        assert reply["status"] == "success", reply
        return reply["data"]["result"]

    @classmethod
    def scrape_count(cls):
        r = cls.query('count_over_time(up{job="gemmd"}[10m])')
        return int(r[0]["value"][1]) if r else 0

    def test_every_metric_the_rules_and_dashboard_use_exists(self):
        names = metric_names(rule_exprs() + [e for _, e in dashboard_queries()])
        self.assertGreaterEqual(len(names), 10, names)
        for name in sorted(names - GPU_TELEMETRY):
            with self.subTest(metric=name):
                self.assertTrue(self.query(f'count({{__name__="{name}"}})'), f"{name} has no series")
        self.assertTrue(GPU_TELEMETRY <= names, "the dashboard and rules show the GPU telemetry")

    def test_gpu_telemetry_is_absent_without_nvml_never_made_up(self):
        # This server runs the CPU engine: it reads no NVML, so it exports no
        # GPU power, clock or throttle series at all (scripts/gpu/run.sh
        # checks they are there, with real values, on a GPU machine).
        for name in sorted(GPU_TELEMETRY):
            with self.subTest(metric=name):
                self.assertEqual(self.query(f'count({{__name__="{name}"}})'), [])

    def test_every_dashboard_query_returns_data(self):
        for title, expr in dashboard_queries():
            if metric_names([expr]) & GPU_TELEMETRY:
                continue  # absent without NVML (the test above)
            with self.subTest(panel=title, expr=expr):
                self.assertTrue(self.query(expr), "no data")

    def test_tflops_and_request_rate_reflect_the_burst(self):
        ok = self.query('sum(increase(gemm_requests_total{method="Multiply",code="OK"}[1m]))')
        self.assertGreaterEqual(float(ok[0]["value"][1]), 30)  # 40 sent; increase() extrapolates
        bad = self.query('sum(gemm_requests_total{method="Multiply",code="INVALID_ARGUMENT"})')
        self.assertEqual(float(bad[0]["value"][1]), 1)

    def test_alert_rules_load_and_evaluate_cleanly(self):
        reply = json.load(urllib.request.urlopen(self.prom + "/api/v1/rules"))
        rules = [r for g in reply["data"]["groups"] for r in g["rules"]]
        self.assertEqual(len(rules), 8)
        for r in rules:
            self.assertEqual(r["health"], "ok", r)
        firing = [r["name"] for r in rules if r["state"] != "inactive"]
        self.assertEqual(firing, [], "a healthy server fires no alert")

    def test_promtool_check_metrics_is_clean(self):
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read()
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout + r.stderr, b"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
