"""The GPU harness: everything the GPU machine runs in one device call.

    PARTS="tests bench" python3 -m harness     (from scripts/gpu; run.sh does this)
    python3 -m harness --list                  (every part and what it measures)

Runs the parts PARTS names (default all, in the order of PARTS_IN_ORDER),
writes logs and results under $OUT, and prints a short summary last. On a
B200 (compute capability 10) the pattern diagnostics always run first.
Needs .bundle.tar.xz (scripts/gpu/bundle.sh). Each part's environment knobs
are in its function's module: BENCH_*, SWEEP_*, ACCURACY_SHAPES, TINY_*,
SOAK_*, GPU_TESTS. A device call has 600 s and the whole harness needs about two:
split it, e.g. PARTS="tests service soak sass".
"""
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from . import (capacity_parts, form_parts, kernel_parts, ladder_targets, ncu_parts, service_part, startup_parts,
               transport_parts)
from .lab import Lab

# Every part in the order they run: its function, and what of the machine
# it takes besides the lab (the GPU count, or the compute capability's
# major number). Each function's docstring says what the part measures.
PARTS = {
    "diagnose": (kernel_parts.diagnose, ("compute_major",)),
    "tests": (kernel_parts.tests, ()),
    "service": (service_part.service, ("gpus",)),
    "forms": (form_parts.forms, ()),
    "formscache": (form_parts.forms_cache, ()),
    "formbatch": (form_parts.forms_batching, ()),
    "python": (form_parts.python_package, ()),
    "padding": (form_parts.padding, ()),
    "verify": (capacity_parts.verification_cost, ()),
    "cache": (capacity_parts.device_cache, ()),
    "lanes": (capacity_parts.lanes, ()),
    "scaling": (capacity_parts.scaling, ("gpus",)),
    "tiny": (transport_parts.tiny, ()),
    "grpcfloor": (transport_parts.grpcfloor, ()),
    "firsttouch": (startup_parts.firsttouch, ()),
    "soak": (startup_parts.soak, ()),
    "bench": (kernel_parts.bench, ()),
    "bf16": (kernel_parts.bf16, ()),
    "batch": (kernel_parts.batch, ()),
    "accuracy": (kernel_parts.accuracy, ()),
    "sweep": (kernel_parts.sweep, ()),
    "targets": (ladder_targets.targets, ()),
    "sass": (kernel_parts.sass, ()),
    "sanitize": (kernel_parts.sanitize, ()),
    "ncu": (ncu_parts.ncu, ()),
    "fastncu": (ncu_parts.fast_check_ncu, ()),
    "betancu": (ncu_parts.beta_ncu, ()),
    "stallncu": (ncu_parts.stall_ncu, ()),
}
PARTS_IN_ORDER = tuple(PARTS)
# What $OUT keeps loose (the rest goes into logs.tar.gz).
KEPT = ("summary.txt", "bench.csv", "bench.md", "bench_bf16.csv", "bench_batch.csv")


def parts_to_run(requested, compute_major):
    """The parts in their order; diagnose first on a B200 whatever was asked."""
    names = requested.split() if requested else list(PARTS_IN_ORDER)
    unknown = [n for n in names if n not in PARTS_IN_ORDER]
    if unknown:
        raise SystemExit(f"unknown part(s) {unknown}; the parts are: {' '.join(PARTS_IN_ORDER)}")
    if compute_major == 10 and "diagnose" not in names:
        names.insert(0, "diagnose")
    return sorted(names, key=PARTS_IN_ORDER.index)


def gpu_facts(lab):
    query = "index,name,memory.total,driver_version,clocks.sm,clocks.max.sm"
    text = lab.text(["nvidia-smi", f"--query-gpu={query}", "--format=csv"])
    (lab.out / "gpu.txt").write_text(text)
    print(text, end="")
    gpus = max(1, len(text.strip().splitlines()) - 1)
    cap = lab.text(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]).strip().split("\n")[0]
    return gpus, int(cap.split(".")[0]) if cap[:1].isdigit() else 0


def pack_logs(out):
    """Everything but the summary and the benchmark tables into logs.tar.gz."""
    loose = [p for p in out.iterdir() if p.is_file() and p.name != "logs.tar.gz"
             and not (p.name in KEPT or (p.name.startswith("sweep_") and p.suffix in (".csv", ".md")))]
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for p in sorted(loose):
            tar.add(p, arcname=p.name)
    for p in loose:
        p.unlink()


def part_summaries():
    """(name, the first paragraph of its function's docstring on one line)
    for every part, in order: what `--list` prints."""
    out = []
    for name, (function, _) in PARTS.items():
        first = (function.__doc__ or "").strip().split("\n\n")[0]
        out.append((name, " ".join(first.split())))
    return out


def main():
    if sys.argv[1:] == ["--list"]:
        for name, summary in part_summaries():
            print(f"{name:11s} {summary}")
        return
    root = Path(__file__).resolve().parents[3]
    os.chdir(root)
    out = Path(os.environ.get("OUT", "/tmp/gemmd-out"))
    out.mkdir(parents=True, exist_ok=True)
    if not (root / ".bundle").is_dir():
        subprocess.run(["tar", "-xJf", ".bundle.tar.xz"], check=True)
    lab = Lab(root, out)
    gpus, compute_major = gpu_facts(lab)
    # The host's kernel names its runtime (a gVisor sandbox reports 4.4.0),
    # and with it what a syscall costs every gRPC call on both sides.
    lab.note(f"host: kernel {os.uname().release}, {os.cpu_count()} cores")
    machine = {"gpus": gpus, "compute_major": compute_major}
    for name in parts_to_run(os.environ.get("PARTS", " ".join(sys.argv[1:])), compute_major):
        lab.note(f"---- {name} (at {lab.elapsed()} s)")
        function, takes = PARTS[name]
        try:
            function(lab, *(machine[t] for t in takes))
        except Exception as e:  # one part's failure must not cost the others' results
            import traceback
            (out / f"harness_error_{name}.txt").write_text(traceback.format_exc())
            lab.note(f"{name}: the harness failed: {type(e).__name__}: {e} (harness_error_{name}.txt)")
    pack_logs(out)
    lab.cleanup()
    lab.note(f"---- done (at {lab.elapsed()} s)")
    print("================ summary")
    print(lab.summary.read_text(), end="")
    if (out / "bench.md").exists():
        print((out / "bench.md").read_text(), end="")


if __name__ == "__main__":
    main()
