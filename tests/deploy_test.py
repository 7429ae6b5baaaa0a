"""Static checks of deploy/ and the Dockerfile: promtool on the Prometheus
config and rules (and the rules' unit tests), yamllint, and the conventions
the manifests must keep. Usage: deploy_test.py GEMMD_BINARY"""
import json
import pathlib
import subprocess
import sys
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
GEMMD = sys.argv.pop(1) if len(sys.argv) > 1 else "gemmd"


def run(*cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def manifests():
    out = {}
    for f in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            out[doc["kind"]] = doc
    return out


class PrometheusFiles(unittest.TestCase):
    def test_config_and_rules_pass_promtool(self):
        for cmd in (["promtool", "check", "config", "prometheus.yml"], ["promtool", "check", "rules", "alerts.yml"],
                    ["promtool", "test", "rules", "alerts_test.yml"]):
            r = run(*cmd, cwd=DEPLOY / "prometheus")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_issue_alert_exists(self):
        rules = yaml.safe_load((DEPLOY / "prometheus/alerts.yml").read_text())
        names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
        self.assertEqual(names, {"GemmdDown", "GemmdHighErrorRatio", "GemmdHighP99Latency",
                                 "GemmdVerificationFailures", "GemmdGpuUnhealthy", "GemmdQueueSaturated", "GemmdGpuPowerCapped",
                                 "GemmdStepWithdrawn"})


class Manifests(unittest.TestCase):
    def test_yamllint_is_clean(self):
        r = run("yamllint", "-c", str(DEPLOY / ".yamllint"), "k8s", "prometheus", cwd=DEPLOY)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_kustomization_lists_every_manifest(self):
        k = yaml.safe_load((DEPLOY / "k8s/kustomization.yaml").read_text())
        files = {p.name for p in (DEPLOY / "k8s").glob("*.yaml")} - {"kustomization.yaml"}
        self.assertEqual(set(k["resources"]), files)

    def test_deployment_requests_a_gpu_and_probes_grpc_health(self):
        d = manifests()["Deployment"]
        pod = d["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertEqual(c["resources"]["limits"]["nvidia.com/gpu"], 1)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            self.assertEqual(c[probe]["grpc"]["port"], 50051, probe)
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"grpc": 50051, "metrics": 9464})
        # Long enough for gemmd's drain after SIGTERM.
        config = manifests()["ConfigMap"]["data"]
        self.assertGreater(pod["terminationGracePeriodSeconds"], float(config["GEMMD_SHUTDOWN_GRACE_SECONDS"]))

    def test_service_is_headless_and_pdb_selects_the_pods(self):
        m = manifests()
        labels = m["Deployment"]["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(m["Service"]["spec"]["clusterIP"], "None")
        for kind in ("Service", "PodDisruptionBudget"):
            sel = m[kind]["spec"]["selector"]
            sel = sel.get("matchLabels", sel)
            self.assertTrue(sel.items() <= labels.items(), kind)

    def test_configmap_sets_only_variables_gemmd_reads(self):
        help_text = run(GEMMD, "--help").stdout
        for name in manifests()["ConfigMap"]["data"]:
            self.assertIn(name, help_text, f"{name} is not a gemmd environment variable")


class Dashboard(unittest.TestCase):
    def test_dashboard_covers_what_ops_need(self):
        d = json.loads((DEPLOY / "grafana/gemmd-dashboard.json").read_text())
        exprs = " ".join(t["expr"] for p in d["panels"] for t in p["targets"])
        for metric in ("gemm_requests_total", "gemm_request_duration_seconds_bucket",
                       "gemm_floating_point_operations_total", "gemm_kernel_duration_seconds_sum",
                       "gemm_verification_failures_total", "gemm_queue_depth", "gemm_device_memory_used_bytes",
                       "gemm_device_healthy", "gemm_batch_size_count", "gemm_request_phase_seconds_sum",
                       "gemm_device_cache_lookups_total", "gemm_device_cache_bytes"):
            self.assertIn(metric, exprs)
        self.assertEqual(len({p["id"] for p in d["panels"]}), len(d["panels"]))


class Dockerfile(unittest.TestCase):
    def test_builds_with_the_setup_scripts_runs_as_non_root_and_checks_health(self):
        text = (ROOT / "Dockerfile").read_text()
        self.assertIn("scripts/install-deps.sh build", text)
        self.assertIn("scripts/build.sh", text)
        self.assertRegex(text, r"(?m)^USER \S+")
        self.assertNotRegex(text, r"(?m)^USER (root|0)\b")
        self.assertRegex(text, r"(?m)^HEALTHCHECK .*gemm-client.*\bhealth\b")
        self.assertRegex(text, r"(?m)^EXPOSE 50051 9464")
        self.assertGreaterEqual(len([l for l in text.splitlines() if l.startswith("FROM ")]), 2)
        for script in ("scripts/install-deps.sh", "scripts/build.sh"):
            self.assertTrue((ROOT / script).exists(), script)


if __name__ == "__main__":
    unittest.main(verbosity=2)
