#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: GPU tests, the server end to
# end (first request vs steady state, and its TFLOPS against gemm-bench's
# cuBLAS), gemm-bench over the ladder, the SASS check, ncu's cycle counts
# for cuBLAS and steps 8-10. Logs go to $OUT; a short summary is printed
# last. Needs .bundle.tar.xz (scripts/gpu/bundle.sh).
#   BENCH_SHAPES, BENCH_STEPS, BENCH_ITERS override the benchmark's lists.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gemmd-out}
mkdir -p "$OUT"
[[ -d .bundle ]] || tar -xJf .bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.bundle/bin
summary=$OUT/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
gpus=$(nvidia-smi -L | wc -l)

# 1. GPU tests.
for t in kernels_gpu_test cuda_engine_gpu_test device_fault_gpu_test step_gate_gpu_test; do
  timeout 300 "$bin/$t" --gtest_brief=1 >"$OUT/$t.log" 2>&1
  rc=$?
  note "$t: rc=$rc $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]' "$OUT/$t.log" | tr '\n' ' ')"
done

# 2. The server end to end on every GPU.
work=$(mktemp -d)
"$bin/gemmd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/port" --workers 2 \
  2>"$OUT/gemmd.log" &
pid=$!
export GEMM_TARGET
for _ in $(seq 600); do [[ -s $work/port ]] && break; sleep 0.1; done
GEMM_TARGET=127.0.0.1:$(cat "$work/port" 2>/dev/null)
"$bin/gemm-client" health --wait 120 >/dev/null || note "server not SERVING"
grep -E "warm in|unavailable|serving" "$OUT/gemmd.log" | sed 's/^/  /' | tee -a "$summary"
run4096() { "$bin/gemm-client" run --m 4096 --n 4096 --k 4096 --step 0 "$@" --json; }
first=$(run4096 --repeats 1 --no-verify)
echo "$first" >"$OUT/first_request.json"
for i in 1 2 3 4 5; do run4096 --repeats 1 --no-verify; done >"$OUT/steady_requests.json"
# The first request came after an idle gap (GPU clocks drop when idle):
# compare it with steady requests that follow the same gap, too.
for i in 1 2 3; do sleep 1; run4096 --repeats 1 --no-verify; done >"$OUT/idle_requests.json"
verified=$(run4096 --repeats 20)
echo "$verified" >"$OUT/verified_request.json"
python3 - "$OUT" <<'PY' | tee -a "$summary"
import json, re, sys, statistics
out = sys.argv[1]
def docs(path):
    text = open(path).read()
    return [json.loads(m) for m in re.findall(r'\{.*?\n\}', text, re.S)]
first = docs(f"{out}/first_request.json")[0]
steady = docs(f"{out}/steady_requests.json")
ver = docs(f"{out}/verified_request.json")[0]
tot = lambda d: d["timing"]["totalSeconds"]
ker = lambda d: d["timing"]["kernelSeconds"]
st_tot = statistics.median(tot(d) for d in steady)
st_ker = statistics.median(ker(d) for d in steady)
print(f"server 4096^3 step 0: first request total {tot(first)*1e3:.2f} ms vs steady median {st_tot*1e3:.2f} ms "
      f"(x{tot(first)/st_tot:.2f}); kernel {ker(first)*1e3:.3f} vs {st_ker*1e3:.3f} ms (x{ker(first)/st_ker:.2f})")
idle = docs(f"{out}/idle_requests.json")
id_tot = statistics.median(tot(d) for d in idle)
id_ker = statistics.median(ker(d) for d in idle)
print(f"  steady requests after the same 1 s idle gap: total {id_tot*1e3:.2f} ms: first is x{tot(first)/id_tot:.2f}; "
      f"kernel {id_ker*1e3:.3f} ms: first is x{ker(first)/id_ker:.2f}")
print(f"server 4096^3 step 0, 20 repeats, verified={ver['verification']['passed']}: {ver['tflops']:.1f} TFLOPS "
      f"on {ver['device']}")
PY
# Every step through gemm-client, verified against cuBLAS on the server: the
# single-tile steps on their one tile, the rest on 4096^3.
for step in 0 1 2 3 4 5 6 7 8 9 10; do
  case $step in 1) shape="--m 128 --n 128 --k 64" ;; 2) shape="--m 128 --n 128 --k 4096" ;;
    *) shape="--m 4096 --n 4096 --k 4096" ;; esac
  # shellcheck disable=SC2086
  "$bin/gemm-client" run $shape --step $step --repeats 5 --json >"$OUT/served_step$step.json" 2>&1
  python3 - "$OUT/served_step$step.json" "$step" "$?" <<'PY' | tee -a "$summary"
import json, sys
path, step, rc = sys.argv[1:]
try:
    d = json.load(open(path))
    v = d["verification"]
    print(f"served step {step:>2}: verified={v['passed']} mismatches={v.get('mismatches', 0)} "
          f"tflops={d['tflops']:.1f} on {d['device']}")
except Exception as e:  # the client printed an error instead of a report
    print(f"served step {step:>2}: rc={rc} {open(path).read().strip()[:200]}")
PY
done

# Spread over GPUs: a burst of concurrent requests, then the per-device counters.
"$bin/gemm-client" bench --shapes 4096x4096x4096 --concurrency $((4 * gpus)) --count $((40 * gpus)) \
  >"$OUT/server_bench.txt" 2>&1
metrics_port=$(grep -o 'metrics on port [0-9]*' "$OUT/gemmd.log" | grep -o '[0-9]*$')
curl -s "http://127.0.0.1:$metrics_port/metrics" >"$OUT/metrics.txt"
note "kernel runs per device: $(grep '^gemm_kernel_runs_total' "$OUT/metrics.txt" | tr '\n' ' ')"
note "server bench: $(grep '^total' "$OUT/server_bench.txt")"
kill -TERM $pid; wait $pid; note "gemmd exit after SIGTERM: $?"
grep -B2 -A30 "SIGSEGV\|SIGABRT\|\*\*\* " "$OUT/gemmd.log" | head -60 | tee -a "$summary"

# 3. gemm-bench: cuBLAS alone at 4096^3, as the server ran it (the ladder run
# below keeps the GPU under sustained load, whose clocks may differ), then
# the ladder against cuBLAS in one process.
timeout 120 "$bin/gemm-bench" --shapes 4096x4096x4096 --steps 0 --iters 30 --csv "$OUT/cublas_4096.csv" \
  >"$OUT/cublas_4096.log" 2>&1
timeout 300 "$bin/gemm-bench" --shapes "${BENCH_SHAPES:-2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x1024,16384x16384x1024}" \
  --steps "${BENCH_STEPS:-1,2,3,4,5,6,7,8,9,10}" --iters "${BENCH_ITERS:-30}" \
  --csv "$OUT/bench.csv" --md "$OUT/bench.md" >"$OUT/bench.log" 2>&1
note "gemm-bench rc=$?"
# The server's step 0 against gemm-bench's cuBLAS, both at 4096^3 in this call.
python3 - "$OUT" <<'PY' | tee -a "$summary"
import csv, json, re, sys
out = sys.argv[1]
server = json.loads(re.findall(r'\{.*?\n\}', open(f"{out}/verified_request.json").read(), re.S)[0])["tflops"]
for name in ("cublas_4096", "bench"):
    try:
        bench = [float(r["tflops"]) for r in csv.DictReader(open(f"{out}/{name}.csv"))
                 if r["step"] == "0" and (r["m"], r["n"], r["k"]) == ("4096", "4096", "4096")]
    except OSError:
        continue
    if bench:
        print(f"server step 0 at 4096^3: {server:.1f} TFLOPS; gemm-bench cuBLAS ({name}.csv) {bench[0]:.1f}: "
              f"server/bench = {server / bench[0]:.3f}")
PY

# 4. SASS: which ladder kernels use HGMMA, and any local-memory traffic.
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$bin/gemm-bench" >"$OUT/sass.txt" 2>/dev/null
  cuobjdump -res-usage "$bin/gemm-bench" >"$OUT/res_usage.txt" 2>/dev/null
  note "SASS: $(grep -c HGMMA "$OUT/sass.txt") HGMMA, $(grep -cE 'LDL|STL' "$OUT/sass.txt") LDL/STL lines"
  # The Blackwell family's SASS (no B200 here: cuobjdump reads sm_100a all
  # the same): per kernel, its tcgen05 instructions (UTCHMMA: the f16 MMA,
  # UTCBAR: commit to an mbarrier, UTCATOMSWS: TMEM allocation and release,
  # LDTM: TMEM loads), its TMA (UTMALDG / UTMASTG, from step 4) and any
  # local memory.
  awk '/^[ \t]*arch = /{a=$NF} /Function : /{f=$NF}
       a ~ /sm_100/ && f ~ /sm100/ { n = split($0, w, /[ ;]+/); for (i = 1; i <= n; ++i)
         if (w[i] ~ /^(UTC[A-Z0-9]*|UTMA[A-Z0-9]*|LDTM|STTM|LDL|STL)(\.|$)/) { split(w[i], op, "."); c[f " " op[1]]++ } }
       END { for (k in c) print k, c[k] }' "$OUT/sass.txt" | sort >"$OUT/sass_sm100.txt"
  python3 - "$OUT/sass_sm100.txt" <<'PY' | tee -a "$summary"
import collections, re, sys
kernels = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name, op, count = line.split()
    m = re.search(r"(step\d\d_[a-z_]+?)_cu", name)
    t = re.search(r"WarpSpecializedKernelILi(\d+)E", name)  # steps 7-10: one template
    short = m.group(1) if m else f"step{int(t.group(1)):02d}_warp_specialized" if t else name
    kernels[short][op] = int(count)
if not kernels:
    print("sm_100a SASS: no sm100 kernel found")
for k, ops in sorted(kernels.items()):
    has_mma, has_ld = any(o.startswith("UTC") and "MMA" in o for o in ops), "LDTM" in ops
    tma_ok = int(k[4:6]) < 4 or ("UTMALDG" in ops and "UTMASTG" in ops) if k.startswith("step") else True
    local = ops.get("LDL", 0) + ops.get("STL", 0)
    verdict = "ok" if has_mma and has_ld and tma_ok and local == 0 else "CHECK"
    print(f"sm_100a {k[:40]:<40} {verdict}: " + ", ".join(f"{o} {c}" for o, c in sorted(ops.items())))
PY
  # Steps 9-10's pair: the full tcgen05 opcodes (with their CTA-group and
  # multicast suffixes) next to step 8's, where the pair must show.
  awk '/^[ \t]*arch = /{a=$NF} /Function : /{f=$NF}
       a ~ /sm_100/ && f ~ /WarpSpecializedKernelILi(8|9|10)E/ { n = split($0, w, /[ ;]+/); for (i = 1; i <= n; ++i)
         if (w[i] ~ /^(UTC|UTMALDG)/) { match(f, /ILi[0-9]+E/); c["step " substr(f, RSTART + 3, RLENGTH - 4) " " w[i]]++ } }
       END { for (k in c) print "sm_100a " k, c[k] }' "$OUT/sass.txt" | sort -V | tee -a "$summary"
  awk '/Function : /{f=$NF} /^[ \t]*arch = /{a=$NF} /[ \t](LDL|STL)(\.[A-Z0-9]+)* /{print "  local memory in " a " " f}' \
    "$OUT/sass.txt" | sort | uniq -c | tee -a "$summary"
fi

# 5. Clocks aside: ncu's cycle counts and tensor-pipe activity for cuBLAS and
# steps 8-10 at 4096^3 (the GPU's power cap moves its clock from run to run;
# cycles do not move with it). Skipped where ncu cannot read the counters.
if command -v ncu >/dev/null; then
  timeout 300 ncu --clock-control none --kernel-name-base function \
    --kernel-name "regex:^(?!.*(FillRandomKernel|CompareKernel)).*" \
    --metrics sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    "$bin/gemm-bench" --shapes 4096x4096x4096 --steps 8,9,10 --warmup 0 --iters 1 >"$OUT/ncu_cycles.txt" 2>&1
  python3 - "$OUT/ncu_cycles.txt" <<'PY' | tee -a "$summary"
import re, statistics, sys
kernels, name = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"  (\S.*?)(\(CUtensorMap|\s\(\d+, \d+, \d+\)x)", line)
    if m:
        name = re.sub(r"^.*::", "", m.group(1).strip())
        kernels.setdefault(name, {"cycles": [], "tensor": []})
    m = re.search(r"sm__cycles_elapsed.max\s+cycle\s+([\d,]+)", line)
    if m and name:
        kernels[name]["cycles"].append(int(m.group(1).replace(",", "")))
    m = re.search(r"pct_of_peak_sustained_active\s+%\s+([\d.]+)", line)
    if m and name:
        kernels[name]["tensor"].append(float(m.group(1)))
if not kernels:
    print("ncu: no counters read (see ncu_cycles.txt)")
for k, v in kernels.items():
    if v["cycles"]:
        print(f"ncu 4096^3 {k[:60]}: {statistics.median(v['cycles']):,.0f} cycles, tensor pipe "
              f"{statistics.median(v['tensor']):.1f}% of active cycles")
PY
fi

tar -czf "$OUT/logs.tar.gz" -C "$OUT" --exclude=logs.tar.gz --exclude=bench.csv --exclude=bench.md \
  --exclude=summary.txt . 2>/dev/null
find "$OUT" -maxdepth 1 -type f ! -name logs.tar.gz ! -name bench.csv ! -name bench.md ! -name summary.txt -delete
echo "================ summary"
cat "$summary"
cat "$OUT/bench.md" 2>/dev/null
