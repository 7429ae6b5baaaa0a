"""The ladder's performance targets (kernels/README.md, "Targets"), judged
from the gemm-bench CSVs one call wrote: bench.csv (fp16, K-contiguous),
bench_bf16.csv (bf16 in every layout pair and with beta = 1), bench_batch.csv
and sweep_pitched_form.csv (the sweep with SWEEP_FORM="--dtype bf16
--b-layout mn"). A target whose rows the call did not write is "not
measured", never met."""
import csv
import statistics

K, MN = "K-contiguous", "MN-contiguous"
SOURCES = ("bench.csv", "bench_bf16.csv", "bench_batch.csv")
SWEEP = "sweep_pitched_form.csv"


def read_rows(out):
    """Every row of the call's gemm-bench CSVs under `out`, and the bf16
    x @ W sweep's rows apart (its shapes are random, not the targets')."""
    rows, sweep = [], []
    for name in SOURCES + (SWEEP,):
        try:
            with open(out / name) as f:
                (sweep if name == SWEEP else rows).extend(csv.DictReader(f))
        except OSError:
            pass
    return rows, sweep


def cube(size):
    return (size, size, size)


def find(rows, step, shape, dtype, a=K, b=K, beta="0", batch="1", shared="0"):
    """The row of `step` at `shape` in that form, or None."""
    for r in rows:
        if (r["step"] == str(step) and (int(r["m"]), int(r["n"]), int(r["k"])) == shape and r["dtype"] == dtype
                and r["a_layout"] == a and r["b_layout"] == b and float(r["beta"]) == float(beta)
                and r["batch"] == str(batch) and r["shared_b"] == str(shared) and r["tflops"]):
            return r
    return None


def shape_text(shape):
    m, n, k = shape
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


def judge(label, threshold, cases):
    """One target: `cases` are (name, value or None); met when every value
    is at or above `threshold`. Returns (label, text, met), met None where
    a case was not measured."""
    missing = [name for name, value in cases if value is None]
    measured = [(value, name) for name, value in cases if value is not None]
    if missing or not measured:
        return label, f"not measured: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}", None
    worst, where = min(measured)
    return label, f"lowest {worst:.3f} ({where}), {len(measured)} cases", worst >= threshold


def ratio(row, column):
    return float(row[column]) if row and row.get(column) else None


def quotient(top, bottom):
    return float(top["tflops"]) / float(bottom["tflops"]) if top and bottom else None


def beta_cost(rows, a, b):
    """Step 10's bf16 TFLOPS at 4096^3 with beta 1 over beta 0: from the
    beta 1 run's own runs without C (ratio_to_beta0, one process) where
    gemm-bench wrote them, else from the two runs' rows."""
    with_c = find(rows, 10, cube(4096), "bf16", a, b, beta="1")
    if with_c and float(with_c.get("ratio_to_beta0") or 0) > 0:
        return float(with_c["ratio_to_beta0"])
    return quotient(with_c, find(rows, 10, cube(4096), "bf16", a, b))


def verdicts(rows, sweep):
    """Each target's (label, text, met)."""
    out = []
    big = (cube(4096), cube(8192))
    out.append(judge("step 10 / cuBLAS, bf16 K,K at 4096^3 and 8192^3 >= 1.0", 1.0,
                     [(f"bf16 {shape_text(s)}", ratio(find(rows, 10, s, "bf16"), "ratio_to_cublas")) for s in big]))
    out.append(judge("step 10 / autotuned cuBLASLt, fp16 and bf16 K,K at 4096^3, 8192^3, 4096x4096x1024 >= 1.0", 1.0,
                     [(f"{t} {shape_text(s)}", ratio(find(rows, 10, s, t), "ratio_to_autotuned"))
                      for t in ("fp16", "bf16") for s in big + ((4096, 4096, 1024),)]))
    layouts = ((K, MN, "K,MN"), (MN, K, "MN,K"), (MN, MN, "MN,MN"))
    out.append(judge("bf16 step 10 in the other layouts / its K,K TFLOPS, 4096^3 and 8192^3 >= 0.95", 0.95,
                     [(f"{name} {shape_text(s)}", quotient(find(rows, 10, s, "bf16", a, b), find(rows, 10, s, "bf16")))
                      for a, b, name in layouts for s in big]))
    out.append(judge("bf16 step 10 with beta = 1 / beta = 0, 4096^3 >= 0.95", 0.95,
                     [(f"{name}", beta_cost(rows, a, b)) for a, b, name in ((K, K, "K,K"), (K, MN, "K,MN"))]))
    out.append(judge("batched step 10 / cuBLAS's strided batched call >= 1.0", 1.0,
                     [(f"{t} {entries} x {shape_text(cube(size))}{' one B' if shared else ''}",
                       ratio(find(rows, 10, cube(size), t, batch=entries, shared=int(shared)), "ratio_to_cublas"))
                      for t in ("fp16", "bf16") for entries, size in ((64, 512), (16, 1024)) for shared in (0, 1)]))
    out.append(judge("step 10 at 1024^3 and 2048^3 / cuBLAS and / autotuned cuBLASLt >= 0.95", 0.95,
                     [(f"{t} {shape_text(cube(size))} / {column.split('_')[-1]}",
                       ratio(find(rows, 10, cube(size), t), column))
                      for t in ("fp16", "bf16") for size in (1024, 2048)
                      for column in ("ratio_to_cublas", "ratio_to_autotuned")]))
    out.append(judge("step 9 / step 8 TFLOPS at 4096^3 and 8192^3 >= 1.0", 1.0,
                     [(f"{t} {shape_text(s)}", quotient(find(rows, 9, s, t), find(rows, 8, s, t)))
                      for t in ("fp16", "bf16") for s in big]))
    ratios = [float(r["ratio_to_cublas"]) for r in sweep if r["step"] == "10" and r["ratio_to_cublas"]]
    out.append(judge("the bf16 x @ W sweep (pitched): step 10's median / cuBLAS >= 1.0", 1.0,
                     [(f"median of {len(ratios)} shapes", statistics.median(ratios) if ratios else None)]))
    return out


def targets(lab):
    """The ladder's performance targets (kernels/README.md, "Targets") judged
    from the gemm-bench CSVs this call's bench, bf16, batch and sweep parts
    wrote: met, missed with its worst case, or not measured, each in the
    summary."""
    rows, sweep = read_rows(lab.out)
    results = verdicts(rows, sweep)
    met = sum(1 for _, _, ok in results if ok)
    unmeasured = sum(1 for _, _, ok in results if ok is None)
    lab.note(f"ladder targets: {met} of {len(results)} met, {unmeasured} not measured in this call")
    for label, text, ok in results:
        lab.note(f"  {'met' if ok else 'not measured' if ok is None else 'MISSED':12s} {label}: {text}")
