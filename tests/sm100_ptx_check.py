#!/usr/bin/env python3
"""Checks the sm_100a ladder's PTX for the forms and fences the PTX ISA
documents and working B200 kernels use. No B200 runs these kernels here, so
what can be read off the instructions is checked on every build:

- steps 9-10 load through `cp.async.bulk.tensor...cta_group::2` with a
  `.shared::cluster` destination (the form CUTLASS's SM100_TMA_2SM_LOAD,
  DeepGEMM and gau-nernst's matmul_v6 use), never `.shared::cta`;
- every `tcgen05.dealloc` follows a `tcgen05.fence::after_thread_sync`
  issued after the barrier before it (PTX ISA, tcgen05 memory consistency:
  the fence after a thread synchronization that orders tcgen05 work);
- no `tcgen05.fence::before_thread_sync` comes straight after an mbarrier
  wait without the `after_thread_sync` fence between them;
- every `tcgen05.alloc` (`.sync.aligned`: the whole warp) comes after a
  `bar.warp.sync` when thread-0-only code (mbarrier.init) precedes it.

Usage: sm100_ptx_check.py NVCC KERNELS_DIR [OUT_DIR]. Prints one line per
finding and "N passed, M failed"; exits non-zero on any finding."""
import os
import re
import subprocess
import sys
import tempfile

STEPS = ["step01_single_tile", "step02_k_loop", "step03_tiled", "step04_tma", "step05_pipelined",
         "step06_persistent", "step07_warp_specialized", "step08_deep_pipeline", "step09_cta_pair",
         "step10_two_consumers"]
BARRIER = re.compile(r"^\s*(bar\.sync|barrier\.sync|barrier\.cluster\.wait)")
WAIT = re.compile(r"^\s*mbarrier\.try_wait")


def functions(ptx):
    """(name, lines) of each .entry/.func body."""
    out, name, body, depth = [], None, [], 0
    for line in ptx.splitlines():
        m = re.match(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(\w+)", line)
        if m and depth == 0:
            name, body = m.group(1), []
        if name is not None:
            body.append(line)
            depth += line.count("{") - line.count("}")
            if depth == 0 and "}" in line:
                out.append((name, body))
                name = None
    return out


def check_function(step, name, lines):
    problems = []
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("cp.async.bulk.tensor") and "cta_group::2" in s and ".shared::cta." in s:
            problems.append(f"{step} {name}: TMA with cta_group::2 into .shared::cta (use .shared::cluster): {s}")
        if s.startswith("tcgen05.dealloc"):
            j = i - 1
            while j >= 0 and not BARRIER.match(lines[j]):
                j -= 1
            if not any("tcgen05.fence::after_thread_sync" in l for l in lines[j + 1:i]):
                problems.append(f"{step} {name}: tcgen05.dealloc without tcgen05.fence::after_thread_sync "
                                f"after its barrier (line {i})")
        if s.startswith("tcgen05.fence::before_thread_sync"):
            j = i - 1
            while j >= 0 and not (WAIT.match(lines[j]) or lines[j].strip().startswith("tcgen05.")):
                j -= 1
            if j >= 0 and WAIT.match(lines[j]):
                problems.append(f"{step} {name}: tcgen05.fence::before_thread_sync straight after an mbarrier wait, "
                                f"with no after_thread_sync fence between (line {i})")
        if s.startswith("tcgen05.alloc"):
            j = i - 1
            while j >= 0 and not lines[j].strip().startswith("mbarrier.init"):
                j -= 1
            if j >= 0 and not any(l.strip().startswith("bar.warp.sync") for l in lines[j + 1:i]):
                problems.append(f"{step} {name}: tcgen05.alloc (.sync.aligned) after thread-0-only code with no "
                                f"bar.warp.sync (__syncwarp) between (line {i})")
    return problems


def main():
    nvcc, kernels = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    passed, failed = 0, 0
    pair_loads = 0
    for step in STEPS:
        ptx_path = os.path.join(out, step + ".ptx")
        cmd = [nvcc, "-std=c++17", "-ptx", "-gencode=arch=compute_100a,code=sm_100a", "--expt-relaxed-constexpr",
               "-I" + os.path.join(kernels, "include"), "-I" + os.path.join(kernels, "src"),
               os.path.join(kernels, "src", "sm100", step + ".cu"), "-o", ptx_path]
        subprocess.run(cmd, check=True)
        with open(ptx_path) as f:
            ptx = f.read()
        pair_loads += len(re.findall(r"cp\.async\.bulk\.tensor\.3d\.cta_group::2\.shared::cluster\.global", ptx))
        problems = []
        for name, lines in functions(ptx):
            problems += check_function(step, name, lines)
        for p in problems:
            print("FAIL", p)
        if problems:
            failed += 1
        else:
            passed += 1
            print("ok  ", step)
    if pair_loads == 0:
        print("FAIL steps 9-10: no cp.async.bulk.tensor.3d.cta_group::2.shared::cluster load found")
        failed += 1
    else:
        passed += 1
        print(f"ok   steps 9-10: {pair_loads} pair loads in the .shared::cluster form")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
