"""Readers for what the harness's programs write: each takes a file's text
and returns data, so that the summaries compute instead of grepping, and
tests/gpu_harness_test.py checks each on recorded output."""
import collections
import csv
import io
import json
import re


def json_docs(text):
    """The JSON objects gemm-client run --json prints, one after another."""
    return [json.loads(m) for m in re.findall(r"^\{.*?^\}", text, re.S | re.M)]


def key_values(line):
    """A line of key=value pairs (grpc-echo-bench, transfer-limits) as a dict;
    words without '=' are left out."""
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


def echo_records(text):
    """grpc-echo-bench's result lines, each a dict; other lines are left out."""
    return [key_values(line) for line in text.splitlines() if line.startswith("mode=")]


# The server-side phases gemm-client bench reports, in a request's order.
SERVER_PHASES = ("prepare", "queue", "upload", "compute", "download", "reply", "server total")


def bench_results(text):
    """gemm-client bench --json: one dict per (shape, step), with 'rate'
    (req/s), 'p50_us' and 'server' (its server-side p50 phases, one line)."""
    doc = json.loads(text)
    rows = []
    for r in doc["results"]:
        phases = r.get("server_p50_ms", {})
        server = ""
        if phases:
            server = "server p50 ms: " + " ".join(f"{k} {phases[k]:.3f}" for k in SERVER_PHASES if k in phases)
        rows.append({**r, "rate": r["requests_per_second"], "p50_us": r["latency_p50_ms"] * 1e3, "server": server,
                     "connections": doc.get("connections")})
    return rows


def gtest_counts(text):
    """A test program's --gtest_output=json report: tests run, failed and
    skipped, and the names of those that failed."""
    doc = json.loads(text)
    failed, skipped, ran = [], 0, 0
    for suite in doc.get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("result") == "SKIPPED":
                skipped += 1
                continue
            ran += 1
            if case.get("failures"):
                failed.append(f"{suite['name']}.{case['name']}")
    return {"ran": ran, "failed": failed, "skipped": skipped}


def metric_samples(text):
    """Prometheus text exposition: (name, labels, value) per sample."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)', line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def metric_sum(samples, name):
    return sum(v for n, _, v in samples if n == name)


def table_cells(line):
    """A markdown table row's cells, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def diagnose_rows(text):
    """gemm-bench --diagnose's table: (step, probe, diagnosis) per probe."""
    rows = []
    for line in text.splitlines():
        cells = table_cells(line)
        if len(cells) >= 3 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1], "|".join(cells[2:]).strip()))
    return rows


def vendor_padding_rows(text):
    """gemm-bench --vendor-padding's table: per shape, its batch, the dense
    and padded ms (padded None where the build did not pad it), and the
    aligned shape's ms."""
    rows = []
    for line in text.splitlines():
        cells = table_cells(line)
        if len(cells) == 7 and cells[0][:1].isdigit():
            padded = None if cells[3] == "not padded" else float(cells[3])
            rows.append({"shape": cells[0], "batch": int(cells[1]), "dense": float(cells[2]), "padded": padded,
                         "aligned": float(cells[6])})
    return rows


def back_to_back_limits(text, step=10):
    """gemm-bench --back-to-back's table: {m: (alone, generated)} TFLOPS of
    `step` by shape's first dimension."""
    limits = {}
    for line in text.splitlines():
        cells = table_cells(line)
        if len(cells) == 6 and cells[1] == str(step):
            try:
                limits[int(cells[0].split("x")[0])] = (float(cells[2]), float(cells[4]))
            except ValueError:
                pass
    return limits


def ncu_csv(text):
    """ncu --csv output: {kernel: {metric: [values]}} in launch order."""
    start = text.find('"ID"')
    kernels = collections.OrderedDict()
    if start < 0:
        return kernels
    for row in csv.DictReader(io.StringIO(text[start:])):
        name = row.get("Kernel Name", "")
        value = row.get("Metric Value", "").replace(",", "")
        try:
            number = float(value)
        except ValueError:
            continue
        kernels.setdefault(name, collections.defaultdict(list))[row["Metric Name"]].append(number)
    return kernels


# The ladder's kernels by the names compute-sanitizer reports them under.
LADDER_KERNELS = {"SingleTileKernel": 1, "KLoopKernel": 2, "TiledKernel": 3, "TmaKernel": 4, "PipelinedKernel": 5,
                  "PersistentKernel": 6, "WarpSpecializedKernel<2>": 7, "WarpSpecializedKernel<3>": 8,
                  "ClusterMulticastKernel": 9, "TwoConsumersKernel": 10, "TwoConsumersSoloKernel": 10,
                  "TwoConsumersSplitKKernel": 10}


def sanitizer_findings(text):
    """compute-sanitizer's report: the count it printed, and the findings
    split into the ladder's (by step or helper) and cuBLAS's (by kernel)."""
    summary = re.search(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard", text)
    reported = next((g for g in summary.groups() if g), "?") if summary else "?"
    ours, vendor = collections.Counter(), collections.Counter()
    # A report on a host call (cudaMemcpy reading device memory) counts
    # against the first of our functions on its host stack.
    for report in re.split(r"^========= (?=\S)", text, flags=re.M):
        if report.startswith("Host API"):
            frame = re.search(r"Host Frame: (?:\S+ )?(gemm::[\w:]+)", report)
            ours["host call in " + ("::".join(frame.group(1).split("::")[-2:]) if frame else "?")] += 1
    kernels = re.findall(r"^=========\s+at\s+(?:0x[0-9a-f]+ in )?([^(\n]+)\(", text, re.M)
    kernels += re.findall(r"Race reported between .*? in ([^(\n]+)\(", text)
    for kernel in kernels:
        step = next((n for k, n in LADDER_KERNELS.items() if k in kernel), None)
        if step is not None:
            ours[f"step {step}"] += 1
        elif "gemm::" in kernel:
            ours[kernel.split("::")[-1][:40]] += 1
        else:
            vendor[kernel[:40]] += 1
    return reported, ours, vendor


SASS_OPS = re.compile(r"^(UTC[A-Z0-9]*|UTMA[A-Z0-9]*|LDTM|STTM|LDL|STL|HGMMA)(\.|$)")


def sass_opcodes(text):
    """cuobjdump -sass: {(arch, function): Counter of full opcodes} for the
    tensor-core, TMA and local-memory instructions."""
    counts = collections.defaultdict(collections.Counter)
    arch = function = None
    for line in text.splitlines():
        m = re.match(r"\s*arch = (\S+)", line)
        if m:
            arch = m.group(1)
            continue
        m = re.search(r"Function : (\S+)", line)
        if m:
            function = m.group(1)
            continue
        if function is None:
            continue
        for word in re.split(r"[ ;]+", line):
            if SASS_OPS.match(word):
                counts[(arch, function)][word] += 1
    return counts


def sm100_kernel_name(function):
    """A short name for an sm_100a ladder kernel's mangled name: step07_warp_specialized."""
    m = re.search(r"(step\d\d_[a-z_]+?)_cu", function)
    if m:
        return m.group(1)
    m = re.search(r"WarpSpecializedKernelILi(\d+)E", function)  # steps 7-10: one template
    return f"step{int(m.group(1)):02d}_warp_specialized" if m else function


def task_ticks(stat_text):
    """CPU ticks (user + system) from a /proc/PID[/task/TID]/stat line, read
    past the name's closing parenthesis (a name may hold spaces)."""
    fields = stat_text[stat_text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])
