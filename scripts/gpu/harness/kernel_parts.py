"""The kernels' parts: pattern diagnostics, the GPU tests, gemm-bench's
ladder, sweep and accuracy, the SASS check and compute-sanitizer (ncu's
parts are in ncu_parts.py)."""
import csv
import os
import shutil

from . import readers

ALL_STEPS = "1,2,3,4,5,6,7,8,9,10"
# The squares and K=1024 shapes of the ladder's targets (ladder_targets.py).
BENCH_SHAPES = "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x1024,16384x16384x1024"


def diagnose(lab, compute_major):
    """Every step on structured probes (gemm/diagnose.h): what a wrong D
    says. On a B200 the whole table is printed, first: it is what to read
    before anything else (kernels/README.md, "Blackwell"); elsewhere only the
    probes that are not exact."""
    rc, _ = lab.run(["gemm-bench", "--diagnose", "--steps", ALL_STEPS], out="diagnose.md", timeout=300)
    rows = readers.diagnose_rows((lab.out / "diagnose.md").read_text(errors="replace"))
    exact = sum(d == "exact" for _, _, d in rows)
    lab.note(f"gemm-bench --diagnose rc={rc} ({exact} probes exact of {len(rows)})")
    if compute_major == 10:
        lab.note(*(lab.out / "diagnose.md").read_text(errors="replace").splitlines())
    else:
        lab.note(*[f"| {s} | {p} | {d} |" for s, p, d in rows if d != "exact"][:40])


GPU_TESTS = ("kernels_gpu_test", "planted_faults_gpu_test", "cuda_engine_gpu_test", "forms_gpu_test", "sketch_check_gpu_test",
             "device_fault_gpu_test", "step_gate_gpu_test")
# Lines of a test's output the summary carries: VERIFICATION_FAST's
# planted-fault table and its sweep, and what the pattern diagnostics said
# of each fault planted in a kernel.
TABLE_LINES = ("planted faults", "  one ", "  two ", "  none ", "sweep: ", "diagnosed: ")


def tests(lab):
    """The GPU test programs, each with its JSON report; GPU_TESTS (names
    separated by spaces) runs only those."""
    for name in os.environ.get("GPU_TESTS", "").split() or GPU_TESTS:
        report = lab.out / f"{name}.json"
        rc, _ = lab.run([name, "--gtest_brief=1", f"--gtest_output=json:{report}"], out=f"{name}.log", timeout=300)
        try:
            counts = readers.gtest_counts(report.read_text())
        except (OSError, ValueError):
            lab.note(f"{name}: rc={rc}, no report (see {name}.log)")
            continue
        failed = f", FAILED: {', '.join(counts['failed'])}" if counts["failed"] else ""
        lab.note(f"{name}: rc={rc} {counts['ran']} ran, {len(counts['failed'])} failed, "
                 f"{counts['skipped']} skipped{failed}")
        log = (lab.out / f"{name}.log").read_text(errors="replace").splitlines()
        lab.note(*[f"  {line}" for line in log if line.startswith(TABLE_LINES)])


def bench(lab):
    """cuBLAS alone at 4096^3, as the server runs it (the ladder keeps the GPU
    under sustained load, whose clocks may differ), then the ladder against
    cuBLAS in one process; and the server's step 0 against both, where the
    service part ran in this call."""
    lab.run(["gemm-bench", "--shapes", "4096x4096x4096", "--steps", "0", "--iters", "30",
             "--csv", lab.out / "cublas_4096.csv"], out="cublas_4096.log", timeout=120)
    shapes = os.environ.get("BENCH_SHAPES", BENCH_SHAPES)
    rc, _ = lab.run(["gemm-bench", "--shapes", shapes, "--steps", os.environ.get("BENCH_STEPS", ALL_STEPS),
                     "--iters", os.environ.get("BENCH_ITERS", "30"), "--csv", lab.out / "bench.csv",
                     "--md", lab.out / "bench.md"], out="bench.log", timeout=300)
    lab.note(f"gemm-bench rc={rc}")
    try:
        server = readers.json_docs((lab.out / "verified_request.json").read_text())[0]["tflops"]
    except (OSError, IndexError):
        return  # the service part did not run in this call
    for name in ("cublas_4096", "bench"):
        try:
            rows = list(csv.DictReader(open(lab.out / f"{name}.csv")))
        except OSError:
            continue
        cublas = [float(r["tflops"]) for r in rows
                  if r["step"] == "0" and (r["m"], r["n"], r["k"]) == ("4096", "4096", "4096")]
        if cublas:
            lab.note(f"server step 0 at 4096^3: {server:.1f} TFLOPS; gemm-bench cuBLAS ({name}.csv) {cublas[0]:.1f}: "
                     f"server/bench = {server / cublas[0]:.3f}")


def bf16(lab):
    """The ladder in bf16 (A, B and D) against cuBLAS in bf16, one process per
    layout pair (A, B: k for K-contiguous, mn for stored k x m or k x n; k,mn
    is x @ W), and with beta·C where a third field gives beta, each D checked
    against an fp64 product, then timed as the fp16 bench. The pairs other
    than k,k run at BF16_LAYOUT_SHAPES. Every run's rows go into one
    bench_bf16.csv."""
    combined = []
    shapes = os.environ.get("BENCH_SHAPES", BENCH_SHAPES)
    for pair in os.environ.get("BF16_LAYOUTS", "k,k k,mn mn,k mn,mn k,k,1 k,mn,1").split():
        a_layout, b_layout, beta = (pair.split(",") + ["0"])[:3]
        name = "bf16_ak_bk" if pair == "k,k" else f"bf16_a{a_layout}_b{b_layout}" + (
            f"_beta{beta}" if beta != "0" else "")
        pair_shapes = shapes if pair == "k,k" else os.environ.get("BF16_LAYOUT_SHAPES", "4096x4096x4096,8192x8192x8192")
        combined += bench_rows(lab, name, ["--dtype", "bf16", "--a-layout", a_layout, "--b-layout", b_layout,
                                           "--beta", beta, "--shapes", pair_shapes],
                               f"bf16 A {a_layout} B {b_layout} beta {beta}", ("0", "-1", "8", "9", "10"), timeout=400)
    write_rows(lab.out / "bench_bf16.csv", combined)


def bench_rows(lab, name, args, what, steps, timeout):
    """One gemm-bench run (BENCH_STEPS, BENCH_ITERS) writing name.csv and
    name.md; notes its failed checks and `steps`' figures, each line
    starting with `what`; returns its rows."""
    rc, _ = lab.run(["gemm-bench", *args, "--steps", os.environ.get("BENCH_STEPS", ALL_STEPS),
                     "--iters", os.environ.get("BENCH_ITERS", "30"), "--csv", lab.out / f"{name}.csv",
                     "--md", lab.out / f"{name}.md"], out=f"{name}.log", timeout=timeout)
    try:
        rows = list(csv.DictReader(open(lab.out / f"{name}.csv")))
    except OSError:
        rows = []
    failed = [f'{r["m"]}x{r["n"]}x{r["k"]} step {r["step"]}' for r in rows if "FAIL" in r["status"]]
    lab.note(f"gemm-bench {what} rc={rc}, failed checks: {failed or 'none'}")
    lab.note(*[bench_row_line(what, r) for r in rows if r["step"] in steps and r["tflops"]])
    return rows


def bench_row_line(what, row):
    """One gemm-bench CSV row as a summary line: TFLOPS, the ratios to
    cuBLAS and the autotuned cuBLASLt, and with beta·C the TFLOPS over the
    same step's without C in that process (ratio_to_beta0)."""
    line = (f'{what} {row["m"]}x{row["n"]}x{row["k"]} step {row["step"]}: {float(row["tflops"]):.1f} TFLOPS, '
            f'{float(row["ratio_to_cublas"]):.3f} of cuBLAS, '
            f'{float(row["ratio_to_autotuned"] or 0):.3f} of autotuned cuBLASLt')
    if float(row.get("ratio_to_beta0") or 0) > 0:
        line += f', {float(row["ratio_to_beta0"]):.3f} of itself without C'
    return line


def write_rows(path, rows):
    """CSV rows of several gemm-bench runs (one header) into one file."""
    if rows:
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            writer.writerows(rows)


def batch(lab):
    """Strided batches against cuBLAS's strided batched call, in one process
    per batch and sharing: BATCH_SHAPES as "entries:MxNxK" (each entry's
    A, B and D their own, then one B for every entry), BATCH_DTYPES fp16
    and bf16; each D checked, then timed as the fp16 bench (TFLOPS count
    every entry). Every run's rows go into one bench_batch.csv (one file
    comes back where eight would crowd out the summary)."""
    combined = []
    for dtype in os.environ.get("BATCH_DTYPES", "fp16 bf16").split():
        for case in os.environ.get("BATCH_SHAPES", "64:512x512x512 16:1024x1024x1024").split():
            entries, shape = case.split(":")
            for shared in (False, True):
                name = f"batch_{dtype}_{entries}x{shape.split('x')[0]}" + ("_shared_b" if shared else "")
                what = f"{dtype} {entries} x {shape}{' sharing B' if shared else ''}"
                combined += bench_rows(lab, name, ["--dtype", dtype, "--batch", entries,
                                                   *(["--shared-b"] if shared else []), "--shapes", shape],
                                       f"batch {what}", ("0", "-1", "6", "8", "9", "10"), timeout=300)
    write_rows(lab.out / "bench_batch.csv", combined)


def sweep(lab):
    """Random shapes in four classes from one seed, every step checked against
    cuBLAS, then timed: with dense operands (the TMA steps copy unaligned ones
    to a 16-byte pitch) and at 16-byte pitches, as the server stores them.
    SWEEP_FORM passes gemm-bench more of the form, e.g. "--dtype bf16
    --b-layout mn" (x @ W); its files then carry a _form suffix."""
    extra = os.environ.get("SWEEP_FORM", "").split()
    for layout in os.environ.get("SWEEP_LAYOUTS", "dense pitched").split():
        name = f"sweep_{layout}" + ("_form" if extra else "")
        rc, _ = lab.run(["gemm-bench", *extra, "--sweep", os.environ.get("SWEEP_SHAPES", "150"),
                         "--seed", os.environ.get("SWEEP_SEED", "1"), "--layout", layout,
                         "--steps", os.environ.get("SWEEP_STEPS", ALL_STEPS), "--csv", lab.out / f"{name}.csv",
                         "--md", lab.out / f"{name}.md"], out=f"{name}.log", timeout=400)
        try:
            rows = list(csv.DictReader(open(lab.out / f"{name}.csv")))
        except OSError:
            rows = []
        failed = sum("FAIL" in r["status"] for r in rows)
        lab.note(f"sweep ({layout} operands{' ' + ' '.join(extra) if extra else ''}): rc={rc} {failed} failed checks")
        log = (lab.out / f"{name}.log").read_text(errors="replace").splitlines()
        lab.note(*[l for l in log if any(l.startswith(f"| {c} | {s} |")
                                        for c in ("all", "mixed", "skinny", "tiny", "long-K") for s in (8, 9, 10))])


def accuracy(lab):
    """Each step's error against the exact (fp64) product at long K, beside
    cuBLAS's, and its check against cuBLAS with and without the bound's
    K-aware term (gemm/tolerance.h; docs/verification.md)."""
    shapes = os.environ.get("ACCURACY_SHAPES",
                            "100x100x4096,100x100x16384,100x100x65536,100x100x131072,2000x2000x4096,2000x2000x65536")
    rc, _ = lab.run(["gemm-bench", "--accuracy", "2", "--shapes", shapes,
                     "--steps", os.environ.get("BENCH_STEPS", ALL_STEPS), "--csv", lab.out / "accuracy.csv"],
                    out="accuracy.md", timeout=300, stderr=False)
    lab.note(f"gemm-bench --accuracy rc={rc}")
    try:
        rows = list(csv.DictReader(open(lab.out / "accuracy.csv")))
    except OSError:
        return
    worst = max((float(r["ratio_to_cublas"]) for r in rows if r["step"] != "0"), default=0)
    failing = [f'{r["m"]}x{r["n"]}x{r["k"]} step {r["step"]}' for r in rows if int(r["mismatches_with_term"]) > 0]
    unbounded = sum(int(r["mismatches_without_term"]) > 0 for r in rows)
    margin = min((float(r["accumulation_atol"]) / float(r["needed_term"]) for r in rows
                  if float(r["needed_term"]) > 0), default=float("inf"))
    lab.note(f"accuracy: {len(rows)} rows; worst step error {worst:.2f}x cuBLAS's; {unbounded} would fail without "
             f"the K-aware term, {len(failing)} fail with it {failing[:6]}; least margin (term / term needed) {margin:.1f}")


def sass(lab):
    """Which ladder kernels use HGMMA, and any local-memory traffic; for the
    sm_100a family (no B200 here: cuobjdump reads its SASS all the same),
    each kernel's tcgen05 instructions (UTCHMMA: the MMA, UTCBAR: commit to
    an mbarrier, UTCATOMSWS: TMEM allocation, LDTM: TMEM loads) and TMA
    (UTMALDG / UTMASTG, from step 4), and steps 8-10's full opcodes, where
    the pair's CTA-group and multicast suffixes must show."""
    if not shutil.which("cuobjdump"):
        lab.note("sass: no cuobjdump here")
        return
    text = lab.text(["cuobjdump", "-sass", lab.tool("gemm-bench")])
    (lab.out / "sass.txt").write_text(text)
    (lab.out / "res_usage.txt").write_text(lab.text(["cuobjdump", "-res-usage", lab.tool("gemm-bench")]))
    counts = readers.sass_opcodes(text)
    hgmma = sum(c for ops in counts.values() for op, c in ops.items() if op.startswith("HGMMA"))
    local = sum(c for ops in counts.values() for op, c in ops.items() if op.split(".")[0] in ("LDL", "STL"))
    lab.note(f"SASS: {hgmma} HGMMA, {local} LDL/STL")
    for line in sm100_verdicts(counts):
        lab.note(line)
    for (arch, function), ops in sorted(counts.items()):
        n = sum(c for op, c in ops.items() if op.split(".")[0] in ("LDL", "STL"))
        if n:
            lab.note(f"  local memory in {arch} {function}: {n}")


def sm100_verdicts(counts):
    """Per sm_100a ladder kernel: ok when it has an MMA, a TMEM load, TMA from
    step 4 on and no local memory; then steps 8-10's full opcodes."""
    kernels, pair = {}, []
    for (arch, function), ops in counts.items():
        if not (arch or "").startswith("sm_100") or "sm100" not in function:
            continue
        short = readers.sm100_kernel_name(function)
        base = kernels.setdefault(short, {})
        for op, c in ops.items():
            base[op.split(".")[0]] = base.get(op.split(".")[0], 0) + c
        step = short[4:6] if short.startswith("step") else ""
        if step in ("08", "09", "10"):
            pair += [(int(step), op, c) for op, c in ops.items() if op.startswith(("UTC", "UTMALDG"))]
    if not kernels:
        return ["sm_100a SASS: no sm100 kernel found"]
    lines = []
    for name, ops in sorted(kernels.items()):
        has_mma = any(o.startswith("UTC") and "MMA" in o for o in ops)
        tma_ok = not name.startswith("step") or int(name[4:6]) < 4 or ("UTMALDG" in ops and "UTMASTG" in ops)
        local = ops.get("LDL", 0) + ops.get("STL", 0)
        verdict = "ok" if has_mma and "LDTM" in ops and tma_ok and local == 0 else "CHECK"
        lines.append(f"sm_100a {name[:40]:<40} {verdict}: " + ", ".join(f"{o} {c}" for o, c in sorted(ops.items())))
    merged = {}
    for step, op, c in pair:
        merged[(step, op)] = merged.get((step, op), 0) + c
    lines += [f"sm_100a step {s} {op} {c}" for (s, op), c in sorted(merged.items())]
    return lines



def sanitize(lab):
    """compute-sanitizer over every step and cuBLAS, on one square and two
    ragged shapes; findings split into the ladder's and cuBLAS's (the
    reference gemm-bench checks against, not ours)."""
    if not shutil.which("compute-sanitizer"):
        lab.note("sanitize: no compute-sanitizer here")
        return
    for tool in ("memcheck", "racecheck", "synccheck", "initcheck"):
        # Every report is kept in the work folder to be counted; $OUT gets the
        # first 300 lines and the last 40.
        full = lab.work / f"sanitizer_{tool}.txt"
        rc, _ = lab.run(["compute-sanitizer", "--tool", tool, "--print-limit", "1000000", lab.tool("gemm-bench"),
                         "--shapes", "256x256x256,200x130x70,129x257x13", "--steps", ALL_STEPS,
                         "--warmup", "0", "--iters", "1"], out=full, timeout=120)
        text = full.read_text(errors="replace")
        lines = text.splitlines()
        (lab.out / f"sanitizer_{tool}.txt").write_text("\n".join(lines[:300] + ["..."] + lines[-40:]) + "\n")
        reported, ours, vendor = readers.sanitizer_findings(text)
        lab.note(f"compute-sanitizer {tool}: rc={rc}, {reported} reported (by kernel or host call): in the ladder "
                 f"and its helpers {dict(ours) or 'none'}; in cuBLAS {dict(vendor) or 'none'}")
