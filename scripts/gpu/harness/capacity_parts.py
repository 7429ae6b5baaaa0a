"""What the GPU's capacity reaches a client as: verification's cost beside
the kernel's, delivered TFLOPS by input mode and by worker lanes, and
Multiply by stored handles kept on the device. Each part measures the
earlier builds added to the bundle (bin/gemmd-before*, and for the fast
check's kernels bin/gemm-bench-before*) in turn with this one; every build
measured must offer VERIFICATION_FAST."""
import csv
import statistics

from . import readers
from .service_part import bench_row, docs, median_by


# gemm-client bench's input modes for the delivered figures, and their names.
DELIVERED_MODES = {"": "unverified", "--verify": "verified", "--fast-verify": "fast-verified (VERIFICATION_FAST)",
                   "--stored": "by stored handles, unverified"}


# gemm-bench --fast-check's forms beside the plain fp16 GEMM: operands stored
# MN-contiguous (clustered samples) and C read (D's passes that read C).
FAST_CHECK_FORMS = ("", "--a-layout mn", "--b-layout mn", "--a-layout mn --b-layout mn", "--dtype bf16 --beta 0.5",
                    "--dtype bf16 --b-layout mn --beta 0.5")


def run_delivered(lab, name, size, in_flight, *options):
    """gemm-client bench against the server started last: step 10 at
    size^3, `in_flight` requests kept in flight for 3 s, with `options`
    (a delivered mode); its results in NAME.json and NAME.txt under $OUT."""
    lab.client("bench", "--shapes", f"{size}x{size}x{size}", "--steps", "10", "--concurrency", in_flight,
               "--duration", "3", *options, "--json", lab.out / f"{name}.json", out=f"{name}.txt")


def delivered_tflops(rate, size):
    """What size^3 GEMMs at `rate` requests a second deliver: the rate
    times each one's 2·size³ operations, in TFLOPS."""
    return rate * 2 * size ** 3 / 1e12


def step10_capacity(lab, name):
    """The kernel's capacity in this call: gemm-bench's step 10 TFLOPS at
    4096^3 and 8192^3, by size (NAME.csv and NAME.log under $OUT)."""
    lab.run(["gemm-bench", "--shapes", "4096x4096x4096,8192x8192x8192", "--steps", "10", "--iters", "30",
             "--csv", lab.out / f"{name}.csv"], out=f"{name}.log", timeout=120)
    try:
        return {int(r["m"]): float(r["tflops"]) for r in csv.DictReader(open(lab.out / f"{name}.csv"))
                if r["step"] == "10"}
    except OSError:
        return {}


def back_to_back(lab, name):
    """The most a server can deliver in this call: gemm-bench's step 10 run
    back to back for 3 s at 4096^3 and 8192^3, alone and with A and B
    generated before each run (gemm-bench --back-to-back; NAME.md under
    $OUT). By size: (alone, generated) TFLOPS."""
    lab.run(["gemm-bench", "--back-to-back", "3", "--shapes", "4096x4096x4096,8192x8192x8192", "--steps", "10"],
            out=f"{name}.md", timeout=120)
    return readers.back_to_back_limits((lab.out / f"{name}.md").read_text(errors="replace"))


def limit_text(tflops, size, capacity, limits):
    """A delivered figure beside gemm-bench's step 10 and the back-to-back limits."""
    cap = capacity.get(size, 0.0)
    alone, generated = limits.get(size, (0.0, 0.0))
    return (f"x{tflops / cap if cap else 0:.2f} of gemm-bench's {cap:.0f}; back to back {alone:.0f} alone, "
            f"{generated:.0f} with inputs generated: x{tflops / generated if generated else 0:.2f} of that")


def other_builds(lab):
    """Earlier builds added to the bundle by hand (bin/gemmd-before*), each
    measured in turn with this one."""
    return lab.tools_like("gemmd-before*")


def verification_cost(lab):
    """What VERIFICATION_FULL costs next to the kernel it checks: steps 0 and
    10 at 4096^3 and 8192^3, requests one at a time with server-generated
    inputs, the medians of the reply's kernel and verify times, and the
    delivered figures beside the kernel's limits (back_to_back)."""
    builds = ["gemmd"] + other_builds(lab)
    cases = [(size, step) for size in (4096, 8192) for step in (0, 10)]
    for round in (1, 2):
        for build in builds if round == 1 else builds[::-1]:
            with lab.gemmd(f"verify_{build}_{round}", binary=build):
                for size, step in cases:
                    for check in ("", "--fast-verify"):
                        for _ in range(5):
                            lab.client("run", "--m", size, "--n", size, "--k", size, "--step", step,
                                       *([check] if check else []), "--json",
                                       out=f"verify_{build}_{size}_{step}{check}.json", append=True)
                # Delivered: step 10 at 8 in flight, verified and not, and
                # by stored handles (uploaded once) unverified.
                for size in (4096, 8192):
                    for mode in DELIVERED_MODES:
                        run_delivered(lab, f"delivered_{build}_{size}{mode}_{round}", size, 8,
                                      *([mode] if mode else []))
    capacity = step10_capacity(lab, "verify_capacity")
    limits = back_to_back(lab, "verify_back_to_back")
    # The fast check's own cost beside cuBLAS's GEMM, kernels alone (gemm-bench --fast-check),
    # the plain GEMM's and the forms' (docs/verification.md's tables).
    benches = ["gemm-bench"] + lab.tools_like("gemm-bench-before*")
    for bench in benches:
        for i, form in enumerate(FAST_CHECK_FORMS):
            name = f"fast_check_{bench}" + (f"_form{i}" if form else "")
            lab.run([bench, "--fast-check", "--shapes", "1024x1024x1024,4096x4096x4096,8192x8192x8192", *form.split()],
                    out=f"{name}.md", timeout=120)
            table = (lab.out / f"{name}.md").read_text(errors="replace").splitlines()
            lab.note(f"VERIFICATION_FAST's check beside the GEMM it checks ({bench} --fast-check {form}):"
                     if form else f"VERIFICATION_FAST's check beside the GEMM it checks ({bench} --fast-check):",
                     *[f"  {line}" for line in table if form == "" or line[2:3].isdigit()])
    for build in builds:
        for size in (4096, 8192):
            for mode in DELIVERED_MODES:
                tflops = [delivered_tflops(bench_row(lab, f"delivered_{build}_{size}{mode}_{r}")["rate"], size)
                          for r in (1, 2)]
                lab.note(f"delivered, {build:12s} {size}^3 step 10, 8 in flight, {DELIVERED_MODES[mode]}:"
                         f" {', '.join(f'{t:.0f}' for t in tflops)} TFLOPS in two rounds: "
                         + limit_text(statistics.median(tflops), size, capacity, limits))
    for build in builds:
        for size, step in cases:
            for check in ("", "--fast-verify"):
                runs = [d for d in docs(lab, f"verify_{build}_{size}_{step}{check}.json")
                        if d["verification"]["passed"]]
                label = f"{build}{' fast' if check else ''}"
                if not runs:
                    lab.note(f"verification cost, {label}, {size}^3 step {step}: no verified reply")
                    continue
                kernel, verify = median_by(runs, "kernelSeconds") * 1e3, median_by(runs, "verifySeconds") * 1e3
                compute = median_by(runs, "computeSeconds") * 1e3
                v = runs[0]["verification"]
                fast = v.get("mode") == "VERIFICATION_FAST"
                sure = f", sure to catch one element off by {v.get('sureError', 0):.3g}" if fast else ""
                lab.note(f"verification cost, {label:17s} {size}^3 step {step:>2}, median of {len(runs)}: kernel "
                         f"{kernel:.3f} ms, verify {verify:.3f} ms (x{verify / kernel:.2f} the kernel), compute "
                         f"phase {compute:.3f} ms; reference {v['reference']}{sure}")


def random_halves(path, elements, seed):
    """A raw fp16 file of `elements` values in (-1, 1): random bits with the
    exponent capped (no zeros-only data, no Inf or NaN)."""
    import random
    rng = random.Random(seed)
    bits = rng.getrandbits(16 * elements).to_bytes(2 * elements, "little")
    mask = (0xBBFF).to_bytes(2, "little") * elements  # sign, exponent below 15, mantissa
    path.write_bytes((int.from_bytes(bits, "little") & int.from_bytes(mask, "little")).to_bytes(2 * elements, "little"))


def device_cache(lab):
    """Multiply by handles stored once, again and again, as a model server
    multiplies by its weights: step 10, unverified, the server's total
    against the kernel."""
    builds = ["gemmd"] + other_builds(lab)
    for size in (4096, 8192):
        for name in ("a", "b"):
            random_halves(lab.work / f"{name}{size}.bin", size * size, size + ord(name))
    for build in builds:
        with lab.gemmd(f"cache_{build}", "--max-message-bytes", "256M", binary=build) as server:
            for size in (4096, 8192):
                handles = []
                for name in ("a", "b"):
                    path = lab.work / f"{name}{size}.bin"
                    out = lab.text([lab.tool("gemm-client"), "--target", server.target, "upload", "--rows", size,
                                    "--cols", size, "--file", path, "--label", f"{name} {size}"])
                    handles.append(out.strip().splitlines()[-1] if out.strip() else "")
                name = f"cache_{build}_{size}.json"
                for _ in range(8):
                    lab.client("run", "--m", size, "--n", size, "--k", size, "--step", "10", "--no-verify",
                               "--a-handle", handles[0], "--b-handle", handles[1], "--json", out=name, append=True)
                runs = docs(lab, name)[1:]  # the first fills the device's copies
                if not runs:
                    lab.note(f"by stored handles, {build} {size}^3: no reply (see {name})")
                    continue
                total, kernel = median_by(runs, "totalSeconds") * 1e3, median_by(runs, "kernelSeconds") * 1e3
                phases = " ".join(f"{p} {median_by(runs, p + 'Seconds') * 1e3:.3f}"
                                  for p in ("prepare", "queue", "upload", "compute", "download", "reply"))
                lab.note(f"by stored handles, {build:12s} {size}^3 step 10, median of {len(runs)} after the first: "
                         f"server total {total:.2f} ms, kernel {kernel:.3f} ms: total x{total / kernel:.2f} the "
                         f"kernel; phases (ms) {phases}")
                # The same Multiply repeated by one client that keeps its
                # connection, the next request sent as the last reply lands
                # (the runs above each start a client process, so the
                # server idles between them).
                name = f"cache_{build}_{size}_repeated"
                lab.client("bench", "--shapes", f"{size}x{size}x{size}", "--steps", "10", "--concurrency", "1",
                           "--count", "40", "--stored", "--json", lab.out / f"{name}.json", out=f"{name}.txt")
                row = bench_row(lab, name)
                phases = row.get("server_p50_ms", {})
                if phases and row.get("kernel_median_ms"):
                    total, kernel = phases["server total"], row["kernel_median_ms"]
                    lab.note(f"by stored handles, {build:12s} {size}^3 step 10, one client repeating it, p50 of "
                             f"{row['ok']}: server total {total:.2f} ms, kernel {kernel:.3f} ms: total x{total / kernel:.2f} "
                             f"the kernel; {row['server']}")
                else:
                    lab.note(f"by stored handles, {build} {size}^3, one client repeating it: no result (see {name}.txt)")
            samples = readers.metric_samples(server.metrics())
            lookups = {l.get("result"): v for n, l, v in samples if n == "gemm_device_cache_lookups_total"}
            if lookups:
                lab.note(f"  {build}: device cache lookups {lookups}, "
                         f"{readers.metric_sum(samples, 'gemm_device_cache_bytes') / 2**20:.0f} MiB held")


def lanes(lab):
    """Delivered TFLOPS by worker lanes per device (--workers): with two or
    more, one lane's inputs are generated and its D copied while another's
    GEMM runs, and its GEMM is queued behind the other's (GEMMs still one at
    a time: ComputeTurn). Step 10, server-generated inputs, 8 in flight,
    verified and not, beside gemm-bench's step 10 in the same call; the
    replies' median kernel time shows what the overlap costs the GEMM
    itself. Earlier builds in the bundle (bin/gemmd-before*) are measured
    too (1 and 2 lanes)."""
    capacity = step10_capacity(lab, "lanes_capacity")
    limits = back_to_back(lab, "lanes_back_to_back")
    runs = [("gemmd", w) for w in (1, 2, 3)] + [(b, w) for b in other_builds(lab) for w in (1, 2)]
    for build, workers in runs:
        with lab.gemmd(f"lanes_{build}_{workers}", "--workers", workers, binary=build):
            for size in (4096, 8192):
                for verify in ("", "--verify"):
                    name = f"lanes_{build}_{workers}_{size}{verify}"
                    run_delivered(lab, name, size, 8, *([verify] if verify else []))
                    row = bench_row(lab, name)
                    tflops = delivered_tflops(row["rate"], size)
                    lab.note(f"{build:12s} lanes {workers}, {size}^3 step 10, 8 in flight, "
                             f"{'verified' if verify else 'unverified'}: {tflops:.0f} TFLOPS, "
                             + limit_text(tflops, size, capacity, limits)
                             + f"; kernel median {row.get('kernel_median_ms', 0):.3f} ms")


def scaling(lab, gpus):
    """What the host's other GPUs add: gemm-client bench, step 10, 4096^3 and
    8192^3, every delivered mode, from a server on one GPU
    (CUDA_VISIBLE_DEVICES=0) at 8 in flight, and from one on every GPU at 8
    in flight in all and at 8 a GPU, two rounds. Each GPU of the second
    server at 8 has the load the single GPU had; at 8 in all it has less."""
    if gpus < 2:
        lab.note(f"scaling: this host has {gpus} GPU; the part needs two or more")
        return
    configs = ((1, 8), (gpus, 8), (gpus, 8 * gpus))
    tflops = {}
    for round_ in (1, 2):
        for used, in_flight in configs:
            if used == 1:
                lab.env["CUDA_VISIBLE_DEVICES"] = "0"
            try:
                with lab.gemmd(f"scaling_{used}gpu_{in_flight}_{round_}"):
                    for size in (4096, 8192):
                        for mode in DELIVERED_MODES:
                            name = f"scaling_{used}gpu_{in_flight}_{size}{mode}_{round_}"
                            run_delivered(lab, name, size, in_flight, *([mode] if mode else []))
                            tflops.setdefault((used, in_flight, size, mode), []).append(
                                delivered_tflops(bench_row(lab, name)["rate"], size))
            finally:
                lab.env.pop("CUDA_VISIBLE_DEVICES", None)
    lab.note(f"delivered TFLOPS, step 10, rounds 1 and 2; {gpus} GPUs over one (medians):",
             f"  | shape | mode | one GPU, 8 in flight | {gpus} GPUs, 8 in flight "
             f"| {gpus} GPUs, {8 * gpus} in flight |",
             "  | --- | --- | ---: | ---: | ---: |")
    for size in (4096, 8192):
        for mode, label in DELIVERED_MODES.items():
            one = statistics.median(tflops[(1, 8, size, mode)])
            cells = []
            for used, in_flight in configs:
                runs = tflops[(used, in_flight, size, mode)]
                figures = ", ".join(f"{t:.0f}" for t in runs)
                ratio = f": x{statistics.median(runs) / one:.2f}" if used > 1 and one else ""
                cells.append(figures + ratio)
            lab.note(f"  | {size}^3 | {label} | {' | '.join(cells)} |")
