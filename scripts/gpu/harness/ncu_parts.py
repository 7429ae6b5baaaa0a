"""The parts that read the hardware's counters through ncu, clocks aside:
cycles and tensor-pipe activity of the ladder and cuBLAS, what beta·C costs
step 10, the fast check's passes, and where the warps of steps 8-10 wait.
Every part runs gemm-bench and every bin/gemm-bench-before* beside it
(earlier builds or variants added to the bundle by hand)."""
import os
import re
import shutil
import statistics

from . import readers

NCU_CASES = (("4096x4096x4096", "8,9,10"), ("64x64x64", "0,10"), ("432x74x34", "0,10"), ("1000x1001x999", "0,10"))
CYCLES = "sm__cycles_elapsed.max"
TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def ncu(lab):
    """Clocks aside: cycle counts and tensor-pipe activity for cuBLAS and
    steps 8-10 at 4096^3, and for cuBLAS and step 10 on small problems (its
    narrow tile). The power cap moves the clock between runs; cycles do not
    move with it."""
    if not shutil.which("ncu"):
        lab.note("ncu: not here")
        return
    for shape, steps in NCU_CASES:
        ncu_cycles(lab, "gemm-bench", shape, steps)


def ncu_cycles(lab, bench, shape, steps, extra=(), tag=""):
    """One ncu run of `bench` (gemm-bench or an earlier build of it) on
    `shape` and `steps`, one launch each, with gemm-bench's `extra`
    options; notes each kernel's cycles and tensor-pipe activity."""
    name = f"{shape}{tag}"
    log = lab.out / f"ncu_cycles_{name}.csv"
    lab.run(["ncu", "--clock-control", "none", "--csv", "--log-file", log, "--print-kernel-base", "function",
             "--kernel-name-base", "function", "--kernel-name",
             "regex:^(?!.*(FillRandomKernel|CompareKernel|L2Flush|Poison|ReferenceGemm)).*",
             "--metrics", f"{CYCLES},{TENSOR}", lab.tool(bench), "--shapes", shape, "--steps", steps,
             "--warmup", "0", "--iters", "1", "--layout", "pitched", *extra], out=f"ncu_{name}.log", timeout=200)
    try:
        kernels = readers.ncu_csv(log.read_text(errors="replace"))
    except OSError:
        kernels = {}
    if not kernels:
        lab.note(f"ncu {name}: no counters read (see ncu_{name}.log)")
    for kernel, metrics in kernels.items():
        if metrics.get(CYCLES):
            lab.note(f"ncu {name} {kernel[:60]}: {statistics.median(metrics[CYCLES]):,.0f} cycles, tensor pipe "
                     f"{statistics.median(metrics.get(TENSOR, [0])):.1f}% of active cycles")


def beta_ncu(lab):
    """What beta·C costs the ladder, clocks aside: bf16 at 4096^3 with beta 0
    and with beta 1 (D += A·B in place, as gemm-bench times it), for
    gemm-bench and every bin/gemm-bench-before* (earlier builds added by
    hand), each twice. BETA_NCU_STEPS: the steps (default 10; steps 7 and
    8 share a kernel name, so name one of them)."""
    if not shutil.which("ncu"):
        lab.note("ncu: not here")
        return
    steps = os.environ.get("BETA_NCU_STEPS", "10")
    for bench in ["gemm-bench"] + lab.tools_like("gemm-bench-before*"):
        for round_ in (1, 2):
            for beta in ("0", "1"):
                ncu_cycles(lab, bench, "4096x4096x4096", steps, ("--dtype", "bf16", "--beta", beta),
                           f"_{bench}_beta{beta}_{round_}")


# The fast check's line passes in launch order (kernels/src/sketch_check.cu):
# the operands', then D's rows and columns, or one pass of D's tiles in their
# place (DTilesKernel, kernels/src/sketch_d_tiles.cu) where D allows it; where
# B allows, B's two passes are one of B's tiles (OperandTilesKernel) between
# A's two.
FAST_CHECK_OPERAND_PASSES = ("b_rows", "a_columns", "a_rows", "b_columns")
FAST_CHECK_PASSES = FAST_CHECK_OPERAND_PASSES + ("d_rows", "d_columns")
FAST_CHECK_METRICS = {"gpu__time_duration.sum": "ns", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
                      "sm__inst_issued.avg.pct_of_peak_sustained_active": "issue %",
                      "smsp__inst_executed.sum": "warp instructions"}


def fast_check_passes(kernels):
    """ncu_csv's kernels of one fast check: per pass of FAST_CHECK_PASSES (or
    of the operands' tiles and "d_tiles", where tiles ran) and for the
    sampled elements, {metric: value}. Where every operand pass ran by
    tiles, their launches are A's columns, B's tiles, A's rows. Where some
    ran by lines, the capture does not tell which pass each launch was
    (ncu_csv keeps the order within a kernel only): they are numbered."""
    lines = kernels.get("LinesKernel", {})
    tiles = kernels.get("DTilesKernel", {})
    operand_tiles = kernels.get("OperandTilesKernel", {})
    # Single samples where both operands run along K, clusters where one is stored MN-contiguous.
    samples = kernels.get("SamplesKernel") or kernels.get("ClusterSamplesKernel", {})
    if not operand_tiles:
        tile_names, line_names = (), FAST_CHECK_OPERAND_PASSES
    elif not lines:
        tile_names, line_names = ("a_columns", "b_tiles", "a_rows"), ()
    else:
        tile_names, line_names = ("operand_tiles_1", "operand_tiles_2"), ("operand_lines_1", "operand_lines_2")
    passes = {}
    for i, name in enumerate(line_names + (() if tiles else FAST_CHECK_PASSES[4:])):
        passes[name] = {m: values[i] for m, values in lines.items() if i < len(values)}
    for i, name in enumerate(tile_names):
        passes[name] = {m: values[i] for m, values in operand_tiles.items() if i < len(values)}
    if tiles:
        passes["d_tiles"] = {m: values[0] for m, values in tiles.items() if values}
    passes["samples"] = {m: values[0] for m, values in samples.items() if values}
    return passes


def fast_check_ncu(lab):
    """VERIFICATION_FAST's kernels under ncu, one check a shape, for
    gemm-bench and every bin/gemm-bench-* (earlier builds or variants added
    by hand): each pass's time, DRAM throughput, issue slots busy and warp
    instructions. FAST_CHECK_FORM passes gemm-bench the form checked, e.g.
    "--dtype bf16 --b-layout mn --beta 0.5" (x @ W + 0.5·C); fp16 A·Bᵀ
    where it is empty. FAST_CHECK_SHAPES: the shapes, comma-separated
    (default 4096x4096x4096; the passes' balance moves with size, so
    8192x8192x8192 is worth a look where a change targets the largest)."""
    if not shutil.which("ncu"):
        lab.note("ncu: not here")
        return
    benches = ["gemm-bench"] + lab.tools_like("gemm-bench-*")
    form = os.environ.get("FAST_CHECK_FORM", "").split()
    shapes = [s for s in os.environ.get("FAST_CHECK_SHAPES", "4096x4096x4096").split(",") if s]
    for shape in shapes:
        m, n, k = shape.split("x")
        what = (f"{m}^3" if m == n == k else shape) + (f" {' '.join(form)}" if form else "")
        for bench in benches:
            tag = f"{bench}" if shape == "4096x4096x4096" else f"{bench}_{shape}"
            log = lab.out / f"ncu_fast_check_{tag}.csv"
            lab.run(["ncu", "--clock-control", "none", "--csv", "--log-file", log, "--print-kernel-base", "function",
                     "--kernel-name-base", "function", "--kernel-name",
                     "regex:^(LinesKernel|DTilesKernel|OperandTilesKernel|SamplesKernel|ClusterSamplesKernel)$",
                     "--launch-count", len(FAST_CHECK_PASSES) + 1, "--metrics", ",".join(FAST_CHECK_METRICS),
                     lab.tool(bench), "--fast-check", "--shapes", shape, *form],
                    out=f"ncu_fast_check_{tag}.log", timeout=200)
            try:
                passes = fast_check_passes(readers.ncu_csv(log.read_text(errors="replace")))
            except OSError:
                passes = {}
            for name, metrics in passes.items():
                if not metrics:
                    lab.note(f"ncu fast check {what} {bench} {name}: no counters read")
                    continue
                lab.note(f"ncu fast check {what} {bench:18s} {name:9s}: "
                         f"{metrics.get('gpu__time_duration.sum', 0) / 1e3:6.1f} us, "
                         + ", ".join(f"{label} {metrics.get(m, 0):,.0f}" for m, label in FAST_CHECK_METRICS.items()
                                     if label != "ns"))


# ncu's warp-state breakdown: for each reason, the warps stalled for it per
# instruction issued (the WarpStateStats section's metrics).
STALL_METRICS = r"regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$"
STALL_NAME = re.compile(r"^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio$")
# The ladder's kernels of the cases below, and cuBLAS's (nvjet_*: gemm-bench
# times it beside every step, and its beta·C kernel pays about 2% where step
# 10 pays about 5%); the helpers' are left out.
STALL_KERNEL_NAMES = "regex:^(TwoConsumers|WarpSpecialized|ClusterMulticast|nvjet)"
# The source page only for ours: cuBLAS's SASS carries no names to read.
LADDER_KERNEL_NAMES = "regex:^(TwoConsumers|WarpSpecialized|ClusterMulticast)"
# (tag, shape, steps, gemm-bench's options): what C's read changes in step
# 10, and why step 9 trails step 8 on the H100 (kernels/README.md).
STALL_CASES = (("step10_bf16_beta0", "4096x4096x4096", "10", ("--dtype", "bf16", "--beta", "0")),
               ("step10_bf16_beta1", "4096x4096x4096", "10", ("--dtype", "bf16", "--beta", "1")),
               ("steps8_9_fp16", "4096x4096x4096", "8,9", ()))
STALLS_SHOWN = 6


def stall_reasons(kernels):
    """ncu_csv's kernels -> {kernel: {reason: warps stalled per issued
    instruction}}, each the median over the kernel's launches, the largest
    reason first; kernels without the breakdown are left out."""
    out = {}
    for kernel, metrics in kernels.items():
        reasons = {}
        for name, values in metrics.items():
            match = STALL_NAME.match(name)
            if match and values:
                reasons[match.group(1)] = statistics.median(values)
        if reasons:
            out[kernel] = dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def stall_changes(before, after):
    """{reason: after - before} over the reasons either has, the largest
    change (either sign) first."""
    reasons = set(before) | set(after)
    changes = {r: after.get(r, 0.0) - before.get(r, 0.0) for r in reasons}
    return dict(sorted(changes.items(), key=lambda kv: (-abs(kv[1]), kv[0])))


def stall_ncu(lab):
    """Where the warps of steps 8-10 wait, clocks aside: ncu's stall reasons
    (warps stalled per issued instruction, by reason) for step 10 at bf16
    4096^3 with beta 0 and with beta 1 (D += A·B in place), the change beta
    1 brings, and steps 8 and 9 at fp16 4096^3, each beside cuBLAS's kernel
    of the same run. Each case's source page, the stall samples by SASS
    instruction of our kernels (ncu --page source), goes to the logs as
    ncu_source_*.csv."""
    if not shutil.which("ncu"):
        lab.note("ncu: not here")
        return
    for bench in ["gemm-bench"] + lab.tools_like("gemm-bench-before*"):
        by_case = {}
        for tag, shape, steps, extra in STALL_CASES:
            name = f"{bench}_{tag}"
            run = [lab.tool(bench), "--shapes", shape, "--steps", steps, "--warmup", "0", "--iters", "1",
                   "--layout", "pitched", "--no-autotune", *extra]
            log = lab.out / f"ncu_stalls_{name}.csv"
            lab.run(["ncu", "--clock-control", "none", "--csv", "--log-file", log, "--print-kernel-base", "function",
                     "--kernel-name-base", "function", "--kernel-name", STALL_KERNEL_NAMES,
                     "--metrics", f"{CYCLES},{STALL_METRICS}", *run], out=f"ncu_stalls_{name}.log", timeout=200)
            try:
                reasons = stall_reasons(readers.ncu_csv(log.read_text(errors="replace")))
            except OSError:
                reasons = {}
            if not reasons:
                lab.note(f"stalls {name}: no counters read (see ncu_stalls_{name}.log)")
            for kernel, by_reason in reasons.items():
                lab.note(f"stalls {name} {kernel[:60]}: " +
                         ", ".join(f"{r} {v:.2f}" for r, v in list(by_reason.items())[:STALLS_SHOWN]))
            by_case[tag] = reasons
            report = lab.work / f"ncu_source_{name}"
            lab.run(["ncu", "--clock-control", "none", "--kernel-name-base", "function", "--kernel-name",
                     LADDER_KERNEL_NAMES, "--section", "SourceCounters", "--section", "WarpStateStats",
                     "--export", report, "--force-overwrite", *run], out=f"ncu_source_{name}.log", timeout=200)
            lab.run(["ncu", "--import", f"{report}.ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
                    out=f"ncu_source_{name}.csv", timeout=120)
        beta0, beta1 = by_case.get("step10_bf16_beta0", {}), by_case.get("step10_bf16_beta1", {})
        for kernel in beta1:
            if kernel in beta0:
                changes = list(stall_changes(beta0[kernel], beta1[kernel]).items())[:STALLS_SHOWN]
                lab.note(f"stalls {bench} {kernel}, beta 1 against beta 0: " +
                         ", ".join(f"{r} {v:+.2f}" for r, v in changes))
