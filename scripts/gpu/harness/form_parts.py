"""Step 0's forms beyond fp16 A·Bᵀ (cuBLASLt): each form's first request
against its steady state (target <= 1.2x), its kernel time and TFLOPS beside
the plain fp16 GEMM of the same shape in the same server, and its full and
fast checks' times (medians of three after a first). Each form runs at its
main shape, which the start-up warm-up (gemm/vendor_forms.h) ran, and at
3000x2000x1008, which it did not."""
import re
import statistics

from . import readers
from .capacity_parts import delivered_tflops
from .service_part import bench_row, docs

# (label, shape, gemm-client options). The plain fp16 row is the baseline:
# the path gemmd had before the forms (cuBLAS through its plan).
FORMS = (
    ("fp16 (plain)", (4096, 4096, 4096), ()),
    ("fp16, B k x n", (4096, 4096, 4096), ("--b-layout", "kxn")),
    ("bf16", (4096, 4096, 4096), ("--type", "bf16")),
    ("bf16 x @ W + 0.5 C", (4096, 4096, 4096), ("--type", "bf16", "--b-layout", "kxn", "--beta", "0.5")),
    ("bf16 batch 8, W shared", (1024, 4096, 4096), ("--type", "bf16", "--b-layout", "kxn", "--batch", "8",
                                                    "--stride-b", "0")),
    ("fp32", (4096, 4096, 4096), ("--type", "fp32")),
    ("fp32, tf32 allowed", (4096, 4096, 4096), ("--type", "fp32", "--tf32")),
    ("fp8 e4m3 -> bf16", (4096, 4096, 4096), ("--type", "fp8_e4m3")),
    ("fp8 e4m3 x e5m2 -> fp16", (4096, 4096, 4096), ("--type", "fp8_e4m3", "--b-type", "fp8_e5m2", "--d-type", "fp16")),
    ("fp8 e4m3 -> bf16 + 0.5 C", (4096, 4096, 4096), ("--type", "fp8_e4m3", "--beta", "0.5")),
)
# Long K over few output tiles, where cuBLASLt splits K: at their main
# shapes only (the plan's grid holds them too).
LONG_K = (
    ("bf16, long K", (128, 512, 16384), ("--type", "bf16")),
    ("bf16 x @ W, long K", (256, 1024, 8192), ("--type", "bf16", "--b-layout", "kxn")),
)
STEADY = 8
CHECKED = 3  # verified requests timed after the first, each mode
UNWARMED = (3000, 2000, 1008)


def forms(lab):
    """The forms' table for this build, and for each earlier one added to
    the bundle by hand (bin/gemmd-before*)."""
    for binary in ["gemmd"] + lab.tools_like("gemmd-before*"):
        forms_of_build(lab, binary)


def forms_of_build(lab, binary):
    rows = []
    tag = "" if binary == "gemmd" else f"_{binary}"
    with lab.gemmd(f"forms{tag}", "--keep-warm-ms", "2", binary=binary) as server:
        log = server.log.read_text(errors="replace").splitlines()
        lab.note(*[f"  {re.sub(r'^.*] ', '', l)}" for l in log if "other forms" in l])
        # Warm the plain path once: the service part measures start-up.
        lab.client("run", "--m", "1024", "--n", "1024", "--k", "1024", "--no-verify", "--json")
        cases = [(label, shape, options) for label, shape, options in FORMS]
        cases += [(label, UNWARMED, options) for label, _, options in FORMS]
        cases += list(LONG_K)
        for i, (label, (m, n, k), options) in enumerate(cases):
            name = f"forms{tag}_{i}.json"
            shape = ("--m", m, "--n", n, "--k", k)
            for _ in range(1 + STEADY):
                lab.client("run", *shape, *options, "--no-verify", "--repeats", "5", "--json", out=name, append=True)
            for _ in range(1 + CHECKED):
                lab.client("run", *shape, *options, "--json", out=f"forms{tag}_{i}_verified.json", append=True)
                lab.client("run", *shape, *options, "--fast-verify", "--json", out=f"forms{tag}_{i}_fast.json",
                           append=True)
            reports = docs(lab, name)
            checked = docs(lab, f"forms{tag}_{i}_verified.json")
            fast = docs(lab, f"forms{tag}_{i}_fast.json")
            if len(reports) < 1 + STEADY or not checked:
                lab.note(f"  forms {label}: no reply (see {name})")
                continue
            first, steady = reports[0], reports[1:]
            total = statistics.median(r["timing"]["totalSeconds"] for r in steady)
            kernel = statistics.median(r["timing"]["kernelSeconds"] for r in steady)
            tflops = statistics.median(r["tflops"] for r in steady)
            # Every check must pass; their times are the medians after the
            # first (which loads the reference's kernels).
            passed = all(r["verification"].get("passed", False) for r in checked)
            err = max(r["verification"].get("maxAbsError", 0) for r in checked)
            verify = statistics.median(r["timing"].get("verifySeconds", 0) for r in checked[1:] or checked)
            fast_ms = statistics.median(r["timing"].get("verifySeconds", 0) for r in fast[1:] or fast) * 1e3 \
                if fast else float("nan")
            fast_ok = bool(fast) and all(r["verification"].get("passed", False) for r in fast)
            rows.append((label, m, n, k, first["timing"]["totalSeconds"] / total, kernel * 1e3, tflops, passed, err,
                         verify, fast_ms, fast_ok))
    if not rows:
        return
    base = rows[0][6]
    lab.note(f"forms through {binary}:")
    lab.note("  form | shape | first/steady total | kernel ms | TFLOPS | vs plain fp16 | verified (max err, verify ms) "
             "| fast-verified (verify ms)")
    for label, m, n, k, first, kernel, tflops, passed, err, verify, fast_ms, fast_ok in rows:
        lab.note(f"  {label} | {m}x{n}x{k} | x{first:.2f} | {kernel:.3f} | {tflops:.0f} | {tflops / base:.2f} | "
                 f"{'passed' if passed else 'FAILED'} ({err:.3g}, {verify * 1e3:.1f}) | "
                 f"{'passed' if fast_ok else 'FAILED'} ({fast_ms:.2f})")
    worst = max(r[4] for r in rows)
    failed = [r[0] for r in rows if not r[7]]
    lab.note(f"forms ({binary}): worst first request x{worst:.2f} of steady (target <= 1.2); "
             f"{len(rows) - len(failed)} of {len(rows)} verified" + (f"; FAILED: {', '.join(failed)}" if failed else ""))


def python_package(lab):
    """The clients' own checks of the whole GEMM against gemmd on this GPU,
    step 0: gemm-client's (tests/cli_forms_test.sh) and the gemmd Python
    package's matmul tests (tests/python_client_test.py, MatmulTest: every
    type, layout, C and batch it sends), each D checked with numpy in fp64;
    the package as pip built it, carried in the bundle."""
    package = lab.root / ".bundle" / "python"
    if not (package / "gemmd").is_dir():
        lab.note("python package: not in the bundle (the build had no python3-venv, grpcio or numpy)")
        return
    env = {"PYTHONPATH": str(package)}
    with lab.gemmd("python"):
        env["GEMM_TARGET"] = lab.env["GEMM_TARGET"]
        rc, _ = lab.run(["python3", "tests/python_client_test.py", "MatmulTest", "-v"], out="python_package.log",
                        timeout=300, env=env)
        cli_rc, _ = lab.run(["bash", "tests/cli_forms_test.sh", lab.tool("gemm-client")], out="cli_forms.log",
                            timeout=120, env={"PYTHON": "python3"})
    log = (lab.out / "python_package.log").read_text(errors="replace")
    ran = [l for l in log.splitlines() if l.startswith("Ran ")]
    lab.note(f"python package on step 0 (cuda): rc={rc}; {ran[-1] if ran else 'no tests ran'}; "
             + ("OK" if rc == 0 else "FAILED (python_package.log)"),
             "gemm-client's bf16 x @ W + 0.5 r on step 0 (cuda), checked with numpy (tests/cli_forms_test.sh): "
             + ("OK" if cli_rc == 0 else f"FAILED, rc={cli_rc} (cli_forms.log)"))


def forms_cache(lab):
    """bf16 x @ W by handles stored once (gemm-client bench --stored), 4096³,
    8 in flight, unverified: with the device cache (the default) and
    without it (--device-cache-bytes 0), in turn, two rounds."""
    options = ("--type", "bf16", "--b-layout", "kxn")
    rates = {"on": [], "off": []}
    for round_ in (1, 2):
        for cache, extra in (("off", ("--device-cache-bytes", "0")), ("on", ())):
            with lab.gemmd(f"formscache_{cache}_{round_}", *extra):
                name = f"formscache_{cache}_{round_}"
                lab.client("bench", "--shapes", "4096x4096x4096", "--steps", "0", "--concurrency", "8", "--duration",
                           "4", "--stored", *options, "--json", lab.out / f"{name}.json", out=f"{name}.txt")
                row = bench_row(lab, name)
                rates[cache].append((row["rate"], row["server"]))
    for cache in ("on", "off"):
        tflops = ", ".join(f"{delivered_tflops(r, 4096):.0f}" for r, _ in rates[cache])
        lab.note(f"bf16 x @ W by stored handles, 4096^3, 8 in flight, device cache {cache}: {tflops} TFLOPS "
                 f"in two rounds; {rates[cache][-1][1]}")


BATCHED_FORMS = (
    ("fp16", ()),
    ("bf16 x @ W + 0.5 C", ("--type", "bf16", "--b-layout", "kxn", "--beta", "0.5")),
    ("fp32", ("--type", "fp32")),
    ("fp8 e4m3", ("--type", "fp8_e4m3")),
)


def forms_batching(lab):
    """Small requests of one form through the server's batching (--batch-max):
    64^3 step 0, 32 in flight, verified (the default), per form with batching
    on (the engine's default) and off, in turn, two rounds; the mean batch
    the server formed, from its gemm_batch_size metric."""
    for label, options in BATCHED_FORMS:
        rates = {"on": [], "off": []}
        mean_batch = 0.0
        for round_ in (1, 2):
            for batching, extra in (("off", ("--batch-max", "1")), ("on", ())):
                name = f"formbatch_{label.split()[0]}_{batching}_{round_}"
                with lab.gemmd(name, *extra) as server:
                    lab.client("bench", "--shapes", "64x64x64", "--steps", "0", "--concurrency", "32", "--duration",
                               "3", *options, "--json", lab.out / f"{name}.json", out=f"{name}.txt")
                    if batching == "on":
                        samples = readers.metric_samples(server.metrics())
                        launches = readers.metric_sum(samples, "gemm_batch_size_count")
                        mean_batch = readers.metric_sum(samples, "gemm_batch_size_sum") / max(launches, 1)
                rates[batching].append(bench_row(lab, name)["rate"])
        lab.note(f"form batching, 64^3 step 0 {label}, 32 in flight, verified: batching on "
                 f"{', '.join(f'{r:.0f}' for r in rates['on'])} req/s (mean batch {mean_batch:.1f}), off "
                 f"{', '.join(f'{r:.0f}' for r in rates['off'])} req/s")


# gemm-bench --vendor-padding's forms and shapes: ragged squares from 257³ to
# 4001³ and x @ W's 2470x3725x3100, then batches small and large, shared B
# and not. Each row is the form dense, on padded copies, and aligned.
PADDING_SQUARES = ("257x383x301,517x733x611,769x771x773,1001x1003x1005,1200x1201x1199,1500x1501x1499,"
                   "2047x2049x2051,2470x3725x3100,4001x4003x4005")
PADDING_RUNS = (
    (PADDING_SQUARES, "--dtype bf16 --b-layout mn"),
    (PADDING_SQUARES, "--dtype bf16 --a-layout mn"),
    (PADDING_SQUARES, "--dtype bf16 --beta 0.5"),
    (PADDING_SQUARES, "--dtype bf16 --b-layout mn --beta 0.5"),
    ("1001x1003x1005,509x511x513,257x255x263,127x129x131", "--dtype bf16 --b-layout mn --batch 16"),
    ("1001x1003x1005,509x511x513,257x255x263", "--dtype bf16 --b-layout mn --batch 16 --shared-b"),
    ("509x511x513,257x255x263,127x129x131", "--dtype bf16 --batch 64"),
    ("2470x3725x3100", "--dtype fp16 --b-layout mn"),
)


def padding(lab):
    """Step 0's forms on ragged shapes, on their dense operands against
    padded copies (kernels/src/vendor_form_padding.h), with the aligned
    shape's own time beside them: where padding starts to pay, which sets
    the problem size from which the server pads."""
    for i, (shapes, form) in enumerate(PADDING_RUNS):
        name = f"vendor_padding_{i}.md"
        lab.run(["gemm-bench", "--vendor-padding", "--shapes", shapes, *form.split()], out=name, timeout=180)
        text = (lab.out / name).read_text(errors="replace")
        rows = readers.vendor_padding_rows(text)
        slower = [f"{r['shape']} x{r['batch']}" for r in rows if r["padded"] is not None and r["padded"] > r["dense"]]
        lab.note(f"step 0 on ragged shapes, dense and padded (gemm-bench --vendor-padding {form}):",
                 *[f"  {line}" for line in text.splitlines() if readers.vendor_padding_rows(line)],
                 f"  padded slower than dense: {', '.join(slower) or 'none'}")
