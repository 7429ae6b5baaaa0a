#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: GPU tests, the server end to
# end (first request vs steady state, and its TFLOPS against gemm-bench's
# cuBLAS), the soak across kills and rolling restarts, gemm-bench over the
# ladder, the SASS check, compute-sanitizer, ncu's cycle counts for cuBLAS
# and steps 8-10. Logs go to $OUT; a short summary is printed
# last. Needs .bundle.tar.xz (scripts/gpu/bundle.sh).
#   BENCH_SHAPES, BENCH_STEPS, BENCH_ITERS override the benchmark's lists.
#   SWEEP_SHAPES, SWEEP_SEED, SWEEP_STEPS, SWEEP_LAYOUTS shape the sweep.
#   PARTS picks sections (default all, in this order): tests service tiny
#   grpcfloor firsttouch soak bench accuracy sweep sass sanitize ncu, after
#   diagnose, which a B200 (compute capability 10) always runs first. A device call has 600 s;
#   the whole script needs about two, so split it, e.g. PARTS="tests service
#   soak sass".
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gemmd-out}
mkdir -p "$OUT"
[[ -d .bundle ]] || tar -xJf .bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.bundle/bin
export PYTHONPATH=$PWD/scripts/gpu${PYTHONPATH:+:$PYTHONPATH}  # gemm_reports.py, for the summaries
summary=$OUT/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
all_parts="diagnose tests service tiny grpcfloor firsttouch soak bench accuracy sweep sass sanitize ncu"
# part NAME: whether PARTS asks for this section; notes the time it starts at.
part() {
  [[ " ${PARTS:-$all_parts} " == *" $1 "* ]] || return 1
  note "---- $1 (at ${SECONDS} s)"
}
work=$(mktemp -d)
# start_gemmd NAME [ARGS...]: a gemmd on loopback ports, logging to
# $OUT/gemmd_NAME.log; sets gemmd_pid and GEMM_TARGET, and waits until SERVING.
# GEMMD_BIN: another gemmd binary to start.
start_gemmd() {
  local name=$1
  shift
  "${GEMMD_BIN:-$bin/gemmd}" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/port_$name" "$@" \
    2>"$OUT/gemmd_$name.log" &
  gemmd_pid=$!
  for _ in $(seq 600); do [[ -s $work/port_$name ]] && break; sleep 0.1; done
  export GEMM_TARGET=127.0.0.1:$(cat "$work/port_$name" 2>/dev/null)
  "$bin/gemm-client" health --wait 120 >/dev/null || note "gemmd $name is not SERVING"
}
# CPU ticks: a process's, the machine's (busy, idle), and each thread's.
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
machine_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
# thread_ticks PID: each thread's name, id and CPU ticks (gemmd names its
# own: server/thread_name.h), read past the name's closing parenthesis.
thread_ticks() {
  local t ticks
  for t in /proc/$1/task/*; do
    # A thread that ended between the listing and the read is left out.
    ticks=$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')
    [[ -n $ticks ]] && printf '%s\t%s\t%s\n' "$(cat "$t/comm" 2>/dev/null)" "${t##*/}" "$ticks"
  done
}
# metrics_of NAME: that gemmd's /metrics.
metrics_of() { curl -s "http://127.0.0.1:$(grep -o 'metrics on port [0-9]*' "$OUT/gemmd_$1.log" | grep -o '[0-9]*$')/metrics"; }
# The bare echo under gemmd's own transport model: the poll poller and a
# completion-queue thread per quarter of the cores (1-4), as gemmd serves
# Multiply.
queue_threads=$(($(nproc) / 4)); ((queue_threads < 1)) && queue_threads=1; ((queue_threads > 4)) && queue_threads=4
echo_as_gemmd() { GRPC_POLL_STRATEGY=poll "$bin/grpc-echo-bench" --server-api async --server-threads $queue_threads "$@"; }
# start_echo_server: that echo in a process of its own, as gemmd is; sets
# echo_pid and echo_target (host:port).
start_echo_server() {
  rm -f "$work/echo_port"
  echo_as_gemmd --serve "$work/echo_port" &
  echo_pid=$!
  for _ in $(seq 100); do [[ -s $work/echo_port ]] && break; sleep 0.1; done
  echo_target=127.0.0.1:$(cat "$work/echo_port")
}

nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
gpus=$(nvidia-smi -L | wc -l)
# The host's kernel names its runtime (a gVisor sandbox reports 4.4.0), and
# with it what a syscall costs every gRPC call on both sides.
note "host: kernel $(uname -r), $(nproc) cores"

# 0. The pattern diagnostics (gemm/diagnose.h): every step on structured
# probes, and what a wrong D says. On a B200 they come first, whatever PARTS
# says, and the whole table is printed: it is what to read before anything
# else (kernels/README.md, "Blackwell"). Elsewhere only the rows that are not
# exact are.
compute_major=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | cut -d. -f1)
if [[ $compute_major == 10 && " ${PARTS:-$all_parts} " != *" diagnose "* ]]; then PARTS="diagnose ${PARTS:-$all_parts}"; fi
if part diagnose; then
timeout 300 "$bin/gemm-bench" --diagnose --steps 1,2,3,4,5,6,7,8,9,10 >"$OUT/diagnose.md" 2>&1
note "gemm-bench --diagnose rc=$? ($(grep -c '| exact |' "$OUT/diagnose.md") probes exact of $(grep -cE '^\| [0-9]+ \| [a-z]' "$OUT/diagnose.md"))"
if [[ $compute_major == 10 ]]; then
  tee -a "$summary" <"$OUT/diagnose.md"
else
  grep -E '^\| [0-9]+ \|' "$OUT/diagnose.md" | grep -v '| exact |' | head -40 | tee -a "$summary"
fi
fi

if part tests; then
# 1. GPU tests.
for t in kernels_gpu_test cuda_engine_gpu_test device_fault_gpu_test step_gate_gpu_test; do
  timeout 300 "$bin/$t" --gtest_brief=1 >"$OUT/$t.log" 2>&1
  rc=$?
  note "$t: rc=$rc $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]' "$OUT/$t.log" | tr '\n' ' ')"
done

fi

if part service; then
# 2. The server end to end on every GPU.
start_gemmd main --workers 2 --max-message-bytes 256M
pid=$gemmd_pid
grep -E "warm in|unavailable|serving" "$OUT/gemmd_main.log" | sed 's/^/  /' | tee -a "$summary"
run4096() { "$bin/gemm-client" run --m 4096 --n 4096 --k 4096 --step 0 "$@" --json; }
first=$(run4096 --repeats 1 --no-verify)
echo "$first" >"$OUT/first_request.json"
for i in 1 2 3 4 5; do run4096 --repeats 1 --no-verify; done >"$OUT/steady_requests.json"
# The first request came after an idle gap (GPU clocks drop when idle):
# compare it with steady requests that follow the same gap, too.
for i in 1 2 3; do sleep 1; run4096 --repeats 1 --no-verify; done >"$OUT/idle_requests.json"
verified=$(run4096 --repeats 20 --benchmark)
echo "$verified" >"$OUT/verified_request.json"
python3 - "$OUT" <<'PY' | tee -a "$summary"
import sys, statistics
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
docs = json_docs
first = docs(f"{out}/first_request.json")[0]
steady = docs(f"{out}/steady_requests.json")
ver = docs(f"{out}/verified_request.json")[0]
tot = lambda d: d["timing"]["totalSeconds"]
ker = lambda d: d["timing"]["kernelSeconds"]
st_tot = statistics.median(tot(d) for d in steady)
st_ker = statistics.median(ker(d) for d in steady)
print(f"server 4096^3 step 0: first request total {tot(first)*1e3:.2f} ms vs steady median {st_tot*1e3:.2f} ms "
      f"(x{tot(first)/st_tot:.2f}); kernel {ker(first)*1e3:.3f} vs {st_ker*1e3:.3f} ms (x{ker(first)/st_ker:.2f})")
# Whether a slow first kernel is the clock's (the reply's SM clock, from the
# telemetry sample nearest it) or a one-time cost (the requests after it).
clock = lambda d: d.get("smClockMhz", 0)
print(f"  SM clock (MHz) first {clock(first)}, steady {[clock(d) for d in steady]}; kernels in order (ms) "
      f"{[round(ker(d) * 1e3, 3) for d in [first] + steady]}")
idle = docs(f"{out}/idle_requests.json")
id_tot = statistics.median(tot(d) for d in idle)
id_ker = statistics.median(ker(d) for d in idle)
print(f"  steady requests after the same 1 s idle gap: total {id_tot*1e3:.2f} ms: first is x{tot(first)/id_tot:.2f}; "
      f"kernel {id_ker*1e3:.3f} ms: first is x{ker(first)/id_ker:.2f}")
print(f"server 4096^3 step 0, 20 repeats, verified={ver['verification']['passed']}: {ver['tflops']:.1f} TFLOPS "
      f"on {ver['device']}")
PY

# 2b. The service path against its floors, measured here and now: bare gRPC
# over loopback (grpc-echo-bench), tiny requests through gemmd, and an
# inline 4096^3 request (64 MiB up, 32 MiB down) phase by phase.
# echo_floors ECHO-COMMAND...: its p50 at one call in flight, its rate at 32, and
# the inline 4096^3 request's bytes moved once; a line each.
echo_floors() {
  "$@" --mode latency --concurrency 1 --seconds 3 --up-bytes 64 --down-bytes 256
  "$@" --mode latency --concurrency 32 --seconds 3 --up-bytes 64 --down-bytes 256
  "$@" --mode transfer --up-bytes 67108864 --down-bytes 33554432 --count 5
}
echo_floors "$bin/grpc-echo-bench" >"$OUT/echo.txt"
# The same three under gemmd's own transport model (echo_as_gemmd, above).
# On some hosts this floor is the lower one, so the targets
# are judged against the lowest of the floors.
echo_floors echo_as_gemmd >"$OUT/echo_as_gemmd.txt"
# And with the server in a process of its own, as gemmd and gemm-client
# are (the client on gRPC's default poller, as gemm-client is).
start_echo_server
echo_floors "$bin/grpc-echo-bench" --target "$echo_target" >"$OUT/echo_two_processes.txt"
# 32 in flight over eight connections, as gemm-client bench spreads them
# by default (one per four in flight): the floor for its rate.
"$bin/grpc-echo-bench" --target "$echo_target" --mode latency --concurrency 32 --connections 8 \
  --seconds 3 --up-bytes 64 --down-bytes 256 >"$OUT/echo_two_processes_c32x8.txt"
# And with bench's own client: a thread per connection
# keeping its four in flight (--pipelined), instead of a thread per call.
"$bin/grpc-echo-bench" --target "$echo_target" --mode latency --concurrency 32 --connections 8 \
  --seconds 3 --up-bytes 64 --down-bytes 256 --pipelined >>"$OUT/echo_two_processes_c32x8.txt"
kill "$echo_pid"; wait "$echo_pid"
# A one-shot client (gemm-client run) moves its bytes on a new connection
# into memory it has never touched: the echo doing the same took 81-103 ms
# where a warm one took 43-58. Its floor is this one; a warm
# client's (bench --inline, below) is the warm transfer above.
"$bin/grpc-echo-bench" --mode transfer --up-bytes 67108864 --down-bytes 33554432 --count 5 --fresh-connection \
  >"$OUT/echo_fresh.txt"
echo_as_gemmd --mode transfer --up-bytes 67108864 --down-bytes 33554432 --count 5 --fresh-connection \
  >>"$OUT/echo_fresh.txt"
"$bin/transfer-limits" --bytes 100663296 >"$OUT/transfer_limits.txt" 2>&1
"$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 5 >"$OUT/tiny_c1.txt" 2>&1
"$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 --duration 5 >"$OUT/tiny_c32.txt" 2>&1
"$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 --connections 1 --duration 5 \
  >"$OUT/tiny_c32_one_connection.txt" 2>&1
clients_in_turn() { if (($1 % 2)); then echo gemm-client-before gemm-client; else echo gemm-client gemm-client-before; fi; }
# A bundle with bin/gemm-client-before (an earlier client, added by hand)
# runs the same two benchmarks with it too, alternately with this one, with
# each client's CPU time.
if [[ -x $bin/gemm-client-before ]]; then
  for i in 1 2 3; do
    for client in $(clients_in_turn "$i"); do
      "$bin/$client" bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 3 >>"$OUT/tiny_c1_$client.txt" 2>&1
      { TIMEFORMAT='%U %S'; time "$bin/$client" bench --shapes 64x64x64 --steps 0 --concurrency 32 --duration 3 \
          >>"$OUT/tiny_c32_$client.txt" 2>&1; } 2>>"$OUT/tiny_c32_$client.cpu"
    done
  done
fi
# A client that polls for its reply instead of sleeping (--busy-poll), and
# the echo's client doing the same: what one thread wake-up costs here.
"$bin/grpc-echo-bench" --mode latency --concurrency 1 --seconds 3 --up-bytes 64 --down-bytes 256 --busy-poll \
  >"$OUT/echo_polling.txt"
"$bin/gemm-client" --busy-poll bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 5 >"$OUT/tiny_c1_polling.txt" 2>&1
head -c 33554432 /dev/zero >"$work/a4096" && cp "$work/a4096" "$work/b4096"
for i in 1 2 3; do
  "$bin/gemm-client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" --b "$work/b4096" \
    --transport inline --out "$work/d4096" --json
done >"$OUT/inline4096.json"
# The same request from a warm client: one process, one connection, one in
# flight, A and B sent as run sends them and D gathered into the same memory.
"$bin/gemm-client" --max-message-bytes 256M bench --shapes 4096x4096x4096 --steps 0 --inline --verify --concurrency 1 \
  --count 9 >"$OUT/inline4096_warm.txt" 2>&1
# A bundle that holds bin/gemm-client-before (an earlier client, added by
# hand) sends the same requests with it too, alternately with this one,
# which goes first every other time: two copies of one client fetched D in
# ranges up to 3.6 ms apart in medians by their place in the pair.
if [[ -x $bin/gemm-client-before ]]; then
  for i in 1 2 3; do
    for client in $(clients_in_turn "$i"); do
      "$bin/$client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" --b "$work/b4096" \
        --transport inline --out "$work/d4096" --json >>"$OUT/inline4096_$client.json"
    done
  done
fi
# And with the client polling for its reply (--busy-poll), alternately with
# the same client sleeping for it, each going first in turn.
for i in 1 2 3; do
  for wait in $(if ((i % 2)); then echo polling sleeping; else echo sleeping polling; fi); do
    # shellcheck disable=SC2046
    "$bin/gemm-client" $([[ $wait == polling ]] && echo --busy-poll) --max-message-bytes 256M run --m 4096 --n 4096 \
      --k 4096 --a "$work/a4096" --b "$work/b4096" --transport inline --out "$work/d4096" --json \
      >>"$OUT/inline4096_$wait.json"
  done
done
# The same bytes over four and eight connections: A and B each in row
# blocks, all uploaded at once, and D fetched in as many ranges; its floor
# is the bare echo split as many ways.
for conns in 4 8; do
  "$bin/grpc-echo-bench" --mode transfer --up-bytes 67108864 --down-bytes 33554432 --count 5 --connections $conns \
    >>"$OUT/echo.txt"
  mark=$(($(wc -l <"$OUT/gemmd_main.log") + 1))
  for i in 1 2 3; do
    "$bin/gemm-client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" --b "$work/b4096" \
      --connections $conns --out "$work/d4096" --json
  done >"$OUT/parallel4096_c$conns.json"
  # Each stream's own time on the server, to set against the client's wall.
  tail -n +$mark "$OUT/gemmd_main.log" | grep -E "(Upload|Download)Matrix status=OK" >"$OUT/parallel4096_c$conns.streams.log"
done
# And over four connections with the earlier client too, alternately.
if [[ -x $bin/gemm-client-before ]]; then
  for i in 1 2 3; do
    for client in $(clients_in_turn "$i"); do
      "$bin/$client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" --b "$work/b4096" \
        --connections 4 --out "$work/d4096" --json >>"$OUT/parallel4096_c4_$client.json"
    done
  done
fi
python3 - "$OUT" <<'PY' | tee -a "$summary"
import re, sys, statistics
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
def records(name):
    return echo_records(f"{out}/{name}")
echo, mine, two = records("echo.txt"), records("echo_as_gemmd.txt"), records("echo_two_processes.txt")
# Each floor three ways: gRPC's defaults (epoll1, callback API) and gemmd's
# model (poll, completion queues) in one process, and gemmd's model in a
# process of its own; the targets against the strictest.
ROW = {"p50_us": 0, "calls_per_s": 1, "median_ms": 2}
def floors(key, best):
    a, b, c = (float(rows[ROW[key]][key]) for rows in (echo, mine, two))
    return a, b, best(a, b, c)
e_c1, m_c1, f_c1 = floors("p50_us", min)
e_c32, m_c32, f_c32 = floors("calls_per_s", max)
e_tr, m_tr, f_tr = floors("median_ms", min)
print(f"bare echo as gemmd serves, server in a process of its own: 1 in flight p50 {float(two[0]['p50_us']):.0f} us, "
      f"32 in flight {float(two[1]['calls_per_s']):.0f} calls/s, 96 MB transfer {float(two[2]['median_ms']):.1f} ms "
      f"(in one process: {m_c1:.0f} us, {m_c32:.0f} calls/s, {m_tr:.1f} ms)")
def bench_rows(path):  # (req/s, p50 us) of each 64^3 run in the file
    return [(float(r[4]), float(r[5]) * 1e3) for r in (l.split() for l in open(path) if l.startswith("64x64x64"))]
def bench(path):
    return bench_rows(path)[0]
c1, c32 = bench(f"{out}/tiny_c1.txt"), bench(f"{out}/tiny_c32.txt")
print(f"tiny 64^3 step 0, 1 in flight: p50 {c1[1]:.0f} us (target <= 120; bare gRPC echo {e_c1:.0f} us, as gemmd "
      f"serves {m_c1:.0f}, across two processes {float(two[0]['p50_us']):.0f}: gap {c1[1] - f_c1:.0f} us to the "
      f"lowest, target <= 60)")
c32x1 = bench(f"{out}/tiny_c32_one_connection.txt")
e32x8 = [float(r["calls_per_s"]) for r in records("echo_two_processes_c32x8.txt")]
conns = re.search(r"over (\d+) connection", open(f"{out}/tiny_c32.txt").read()).group(1)
print(f"tiny 64^3 step 0, 32 in flight, bench's default {conns} connections: {c32[0]:.0f} req/s (target >= 40000; "
      f"the echo across two processes over 8 connections: a thread per call {e32x8[0]:.0f}, pipelined as bench "
      f"{e32x8[-1]:.0f})")
for client in ("gemm-client-before", "gemm-client"):
    try:
        c1s, c32s = bench_rows(f"{out}/tiny_c1_{client}.txt"), bench_rows(f"{out}/tiny_c32_{client}.txt")
        cpu = [sum(map(float, l.split())) for l in open(f"{out}/tiny_c32_{client}.cpu") if l.strip()]
    except FileNotFoundError:
        continue
    per_req = [c / (r * 3) * 1e6 for c, (r, _) in zip(cpu, c32s)]
    print(f"  {client:18s} alternately: 1 in flight p50 {', '.join(f'{p:.0f}' for _, p in c1s)} us; 32 in flight "
          f"{', '.join(f'{r:.0f}' for r, _ in c32s)} req/s, client CPU {', '.join(f'{u:.0f}' for u in per_req)} us "
          f"per request")
print(f"  over one connection: {c32x1[0]:.0f} req/s (bare echo {e_c32:.0f}, as gemmd serves {m_c32:.0f}, across two "
      f"processes {float(two[1]['calls_per_s']):.0f})")
c1p = bench(f"{out}/tiny_c1_polling.txt")
e1p = float(records("echo_polling.txt")[0]["p50_us"])
print(f"tiny 64^3 step 0, 1 in flight, client polling (--busy-poll): p50 {c1p[1]:.0f} us (echo polling too "
      f"{e1p:.0f} us, gap {c1p[1] - e1p:.0f} us)")
for path in ("tiny_c1", "tiny_c1_polling", "tiny_c32", "tiny_c32_one_connection"):
    print(f"  {path}: " + "".join(l.strip() for l in open(f"{out}/{path}.txt") if "server p50" in l))
runs = json_docs(f"{out}/inline4096.json")
d = sorted(runs, key=lambda r: r["client"]["roundTripSeconds"])[len(runs) // 2]
t, c = d["timing"], d["client"]
g = lambda k: t.get(k, 0.0) * 1e3
server = sum(g(k) for k in ("prepareSeconds", "queueSeconds", "uploadSeconds", "computeSeconds", "downloadSeconds",
                            "replySeconds"))
rt = c["roundTripSeconds"] * 1e3
grpc_net = (c["callSeconds"] - t["totalSeconds"]) * 1e3
parts = c["serializeSeconds"] * 1e3 + grpc_net + server + c["deserializeSeconds"] * 1e3
fresh = [float(r["median_ms"]) for r in records("echo_fresh.txt")]
print(f"inline 4096^3 (64 MiB up, 32 MiB down), one-shot client, median of {len(runs)}: round trip {rt:.1f} ms "
      f"(target <= 50, and <= 1.25x the bare transfer on a new connection {fresh[0]:.1f} ms, as gemmd serves "
      f"{fresh[1]:.1f}: x{rt / min(fresh):.2f} of the lower; on a warm one, lowest of three, {f_tr:.1f}: x{rt / f_tr:.2f})")
warm = [l.split() for l in open(f"{out}/inline4096_warm.txt") if l.startswith("4096x4096x4096")]
if warm:
    ok, p50 = warm[0][2], float(warm[0][5])
    print(f"inline 4096^3, warm client (bench --inline --verify, 1 in flight, 9 requests, {ok} ok): p50 {p50:.1f} ms "
          f"(target <= 50, and <= 1.25x the warm bare transfer, lowest of three, {f_tr:.1f} ms: x{p50 / f_tr:.2f})")
    print("  " + "".join(l.strip() for l in open(f"{out}/inline4096_warm.txt") if "server p50" in l))
print(f"  client serialize {c['serializeSeconds']*1e3:.1f} | gRPC+network {grpc_net:.1f} | server prepare {g('prepareSeconds'):.1f} "
      f"queue {g('queueSeconds'):.1f} upload {g('uploadSeconds'):.1f} compute {g('computeSeconds'):.1f} "
      f"(kernel {g('kernelSeconds'):.2f}, verify {g('verifySeconds'):.2f}) download {g('downloadSeconds'):.1f} "
      f"reply {g('replySeconds'):.1f} | client deserialize {c['deserializeSeconds']*1e3:.1f} ms: sum {parts:.1f} = "
      f"{100 * parts / rt:.1f}% of the round trip; server phases {100 * server / (t['totalSeconds'] * 1e3):.1f}% of its total")
lim = dict(kv.split("=") for kv in open(f"{out}/transfer_limits.txt").read().split()[1:])
print(f"  server H2D {64 * 1.048576 / max(g('uploadSeconds'), 1e-9):.1f} GB/s, D2H {32 * 1.048576 / max(g('downloadSeconds'), 1e-9):.1f} GB/s "
      f"(target >= 20; pinned DMA here {lim['h2d_gbps']} / {lim['d2h_gbps']} GB/s; one thread's memcpy of 96 MiB "
      f"{lim['memcpy_one_thread_ms']} ms), SM clock {d.get('smClockMhz', 0)} MHz")
for client in ("gemm-client-before", "gemm-client", "sleeping", "polling"):
    try:
        runs = json_docs(f"{out}/inline4096_{client}.json")
    except FileNotFoundError:
        continue
    rts = sorted(r["client"]["roundTripSeconds"] * 1e3 for r in runs)
    des = sorted(r["client"]["deserializeSeconds"] * 1e3 for r in runs)
    print(f"  {client:18s} alternately, {len(runs)} requests: round trip {', '.join(f'{x:.1f}' for x in rts)} ms; "
          f"client deserialize {', '.join(f'{x:.1f}' for x in des)} ms")
for row, conns in ((3, 4), (4, 8)):
    runs = json_docs(f"{out}/parallel4096_c{conns}.json")
    p = sorted(runs, key=lambda r: r["client"]["endToEndSeconds"])[len(runs) // 2]
    pc, pt = p["client"], p["timing"]
    e2e, bare = pc["endToEndSeconds"] * 1e3, float(echo[row]['median_ms'])
    print(f"4096^3 over {conns} connections, median of {len(runs)}: end to end {e2e:.1f} ms (target <= 50; bare gRPC "
          f"transfer over {conns} connections {bare:.1f} ms: x{e2e / bare:.2f}; over one {f_tr:.1f} ms): "
          f"uploads {pc['uploadSeconds']*1e3:.1f} | Multiply {pc['roundTripSeconds']*1e3:.1f} (server "
          f"{pt['totalSeconds']*1e3:.1f}: upload {pt['uploadSeconds']*1e3:.1f}, download {pt['downloadSeconds']*1e3:.1f}) | "
          f"D in {conns} ranges {pc['downloadSeconds']*1e3:.1f} ms; verified={p['verification']['passed']}")
    for client in ("gemm-client-before", "gemm-client") if conns == 4 else ():
        try:
            alt = json_docs(f"{out}/parallel4096_c4_{client}.json")
        except FileNotFoundError:
            break
        print(f"  {client:18s} alternately, {len(alt)} requests: end to end "
              + client_ms(alt, 'endToEndSeconds') + " ms; D in 4 ranges "
              + client_ms(alt, 'downloadSeconds') + " ms")
    streams = open(f"{out}/parallel4096_c{conns}.streams.log").read().splitlines()
    ms = lambda kind: [float(re.search(r"latency_ms=([0-9.]+)", l).group(1)) for l in streams if kind in l]
    up, down = ms("UploadMatrix"), ms("DownloadMatrix")
    if up and down:
        print(f"  each stream on the server, median of {len(up)} uploads / {len(down)} downloads: upload "
              f"{statistics.median(up):.1f} ms (max {max(up):.1f}), download {statistics.median(down):.1f} ms "
              f"(max {max(down):.1f})")
PY

# The same over four connections against a gemmd that keeps its matrices on
# disk (--matrix-dir, as the container image runs it): run's blocks and D
# are transient, kept in memory only. A bundle with bin/gemm-client-before
# sends them durably too, alternately: each block fsynced before it is
# acknowledged (86-116 ms against 25-42 in memory).
main_target=$GEMM_TARGET
matrix_dir=$(mktemp -d -p /var/tmp gemmd-matrices.XXXXXX)  # on the disk (ext4 on /dev/vda here), not a tmpfs
start_gemmd durable --max-message-bytes 256M --matrix-dir "$matrix_dir"
for i in 1 2 3; do
  for client in $(if [[ -x $bin/gemm-client-before ]]; then clients_in_turn "$i"; else echo gemm-client; fi); do
    "$bin/$client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" --b "$work/b4096" \
      --connections 4 --out "$work/d4096" --json >>"$OUT/parallel4096_c4_durable_$client.json"
  done
done
kill -TERM "$gemmd_pid"; wait "$gemmd_pid"
rm -rf "$matrix_dir"
export GEMM_TARGET=$main_target
python3 - "$OUT" <<'PY' | tee -a "$summary"
import sys
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
for client in ("gemm-client", "gemm-client-before"):
    try:
        runs = json_docs(f"{out}/parallel4096_c4_durable_{client}.json")
    except FileNotFoundError:
        continue
    print(f"4096^3 over 4 connections, gemmd with --matrix-dir, {client}: end to end "
          + client_ms(runs, 'endToEndSeconds') + " ms (uploads "
          + client_ms(runs, 'uploadSeconds') + "; Multiply "
          + client_ms(runs, 'roundTripSeconds') + f"); verified="
          + ",".join(str(r['verification']['passed']) for r in runs))
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
metrics_of main >"$OUT/metrics.txt"
note "kernel runs per device: $(grep '^gemm_kernel_runs_total' "$OUT/metrics.txt" | tr '\n' ' ')"
note "server bench: $(grep '^total' "$OUT/server_bench.txt")"
note "GPU telemetry: $(grep -E '^gemm_gpu_(power_watts|power_limit_watts|sm_clock_hertz|temperature_celsius|utilization_ratio)' \
  "$OUT/metrics.txt" | tr '\n' ' ')"
note "  clock held by: $(grep -E '^gemm_gpu_clock_event_active.* 1$' "$OUT/metrics.txt" | grep -o 'reason="[a-z_]*"' | tr '\n' ' ')"
note "  phases (count, sum s): $(grep -E '^gemm_request_phase_seconds_(count|sum)' "$OUT/metrics.txt" | tr '\n' ' ' | cut -c1-600)"
kill -TERM $pid; wait $pid; note "gemmd exit after SIGTERM: $?"
grep -B2 -A30 "SIGSEGV\|SIGABRT\|\*\*\* " "$OUT/gemmd_main.log" | head -60 | tee -a "$summary"

# 2c. The keep-warm option, off and on, in turn: idle power, and the first
# request after a 1 s idle gap against steady ones.
for keep in 0 5; do
  start_gemmd keep$keep --keep-warm-ms $keep
  for i in 1 2 3 4 5; do run4096 --no-verify; done >"$OUT/keep${keep}_steady.json"
  for i in 1 2 3 4 5; do sleep 1; run4096 --no-verify; done >"$OUT/keep${keep}_after_idle.json"
  sleep 3
  metrics_of keep$keep | grep -E '^gemm_gpu_(power_watts|sm_clock_hertz)' >"$OUT/keep${keep}_idle.txt"
  kill -TERM $gemmd_pid; wait $gemmd_pid
done
python3 - "$OUT" <<'PY' | tee -a "$summary"
import re, statistics, sys
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
docs = json_docs
for keep in ("0", "5"):
    steady = statistics.median(d["timing"]["totalSeconds"] for d in docs(f"{out}/keep{keep}_steady.json"))
    idle = statistics.median(d["timing"]["totalSeconds"] for d in docs(f"{out}/keep{keep}_after_idle.json"))
    kern_s = statistics.median(d["timing"]["kernelSeconds"] for d in docs(f"{out}/keep{keep}_steady.json"))
    kern_i = statistics.median(d["timing"]["kernelSeconds"] for d in docs(f"{out}/keep{keep}_after_idle.json"))
    m = dict(re.findall(r'^(gemm_gpu_\w+)\{[^}]*\} (\S+)', open(f"{out}/keep{keep}_idle.txt").read(), re.M))
    print(f"keep-warm {'off' if keep == '0' else keep + ' ms'}: after a 1 s gap total x{idle/steady:.2f}, kernel "
          f"x{kern_i/kern_s:.2f} of steady; idle {float(m.get('gemm_gpu_power_watts', 'nan')):.0f} W at "
          f"{float(m.get('gemm_gpu_sm_clock_hertz', 'nan'))/1e6:.0f} MHz")
PY

# 2e. Batching (--batch-max), off and on in turn, in the same benchmark:
# small step-0 GEMMs at 32 in flight, unverified (gemm-client's default)
# and verified.
for batch in 1 32; do
  start_gemmd batch$batch --workers 2 --batch-max $batch
  for case in "64x64x64:" "64x64x64:--verify" "256x256x256:--verify"; do
    "$bin/gemm-client" bench --shapes "${case%%:*}" --steps 0 --concurrency 32 --duration 4 ${case#*:} \
      >"$OUT/batch${batch}_${case%%:*}${case#*:}.txt" 2>&1
  done
  metrics_of batch$batch | grep -E '^gemm_batch_size_(sum|count)' >"$OUT/batch${batch}_metrics.txt"
  kill -TERM $gemmd_pid; wait $gemmd_pid
done
python3 - "$OUT" <<'PY' | tee -a "$summary"
import re, sys
from gemm_reports import batch_sizes, client_ms, echo_records, json_docs
out = sys.argv[1]
def rate(path):
    rows = [l.split() for l in open(path) if re.match(r"\d+x\d+x\d+ ", l)]
    return float(rows[0][4]) if rows else 0.0
for case in ("64x64x64", "64x64x64--verify", "256x256x256--verify"):
    off, on = rate(f"{out}/batch1_{case}.txt"), rate(f"{out}/batch32_{case}.txt")
    print(f"batching {case}, 32 in flight: off {off:.0f} req/s, on (--batch-max 32) {on:.0f} req/s: "
          f"x{on / off if off else 0:.2f}")
count, total = batch_sizes(f"{out}/batch32_metrics.txt")
print(f"batching on: {count:.0f} launches, mean batch {total / count if count else 0:.1f} requests")
PY

fi

if part tiny; then
# 2g. Tiny requests, 64^3 step 0 (gemm-client bench's defaults), one server
# setting after another, twice over, each beside a bare gRPC echo measured
# just before it: one in flight (p50) and 32 (req/s). A bundle that holds
# bin/gemmd-before (an earlier build, added by hand) has it measured too.
# TINY_CONFIGS="name:args;name:args" replaces the server settings measured
# (args starting @NAME run bin/NAME, another build added to the bundle by
# hand, e.g. "before:@gemmd-before --workers 2"); TINY_ROUNDS how many times
# over (2). Over bench's default connections (eight at 32 in flight) the CPU
# each side spends per request is
# noted too (/proc's ticks for gemmd, the shell's `time` for the client),
# and gemmd's split by thread name. Each setting also serves three inline
# 4096^3 requests, for the server's H2D and D2H rates, and three over four
# connections (the matrix streams).
IFS=';' read -r -a tiny_configs <<<"${TINY_CONFIGS:-defaults:;workers2:--workers 2}"
[[ -x $bin/gemmd-before && -z ${TINY_CONFIGS:-} ]] && tiny_configs+=("before:@gemmd-before" "before_workers2:@gemmd-before --workers 2")
[[ -s $work/a4096 ]] || { head -c 33554432 /dev/zero >"$work/a4096" && cp "$work/a4096" "$work/b4096"; }
# Each setting's floors: the bare echo as gemmd serves (start_echo_server),
# in a process of its own, as the service part measures it. In one process
# with gRPC's defaults the echo answered 32 in flight at 63-76K calls/s where
# two processes answered 158-209K.
start_echo_server
tiny_echo() {
  "$bin/grpc-echo-bench" --target "$echo_target" --mode latency --seconds 2 --up-bytes 64 --down-bytes 256 "$@"
}
tiny_rounds=${TINY_ROUNDS:-2}
for round in $(seq "$tiny_rounds"); do
  for config in "${tiny_configs[@]}"; do
    name=${config%%:*}
    args=${config#*:}
    gemmd_bin=$bin/gemmd
    if [[ $args == @* ]]; then
      read -r build args <<<"$args"
      gemmd_bin=$bin/${build#@}
    fi
    GEMMD_BIN=$gemmd_bin start_gemmd "tiny_${name}_$round" --max-message-bytes 256M $args
    tiny_echo --concurrency 1 >"$OUT/tiny_${name}_$round.echo"
    # At 32 in flight the echo's client is bench's own (--pipelined): a
    # thread per call was the echo's limit, not gRPC's.
    tiny_echo --concurrency 32 --pipelined >>"$OUT/tiny_${name}_$round.echo"
    "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 4 >"$OUT/tiny_${name}_$round.c1" 2>&1
    "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 --connections 1 --duration 4 \
      >"$OUT/tiny_${name}_$round.c32" 2>&1
    # One in flight again, with the client polling for its reply (--busy-poll).
    tiny_echo --concurrency 1 --busy-poll >"$OUT/tiny_${name}_$round.echo_polling"
    "$bin/gemm-client" --busy-poll bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 3 \
      >"$OUT/tiny_${name}_$round.c1polling" 2>&1
    # One connection is served by one thread at a time on each side: the
    # same 32 in flight over eight, as bench spreads them, against the echo
    # over eight.
    tiny_echo --concurrency 32 --connections 8 --pipelined >>"$OUT/tiny_${name}_$round.echo"
    server_ticks=$(proc_ticks $gemmd_pid)
    thread_ticks $gemmd_pid >"$OUT/tiny_${name}_$round.threads0"
    read -r busy0 idle0 < <(machine_ticks)
    metrics_of "tiny_${name}_$round" | grep -E '^gemm_batch_size_(sum|count)' >"$OUT/tiny_${name}_$round.batch0"
    { TIMEFORMAT='%U %S'; time "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 \
        --duration 4 >"$OUT/tiny_${name}_$round.c32x8" 2>&1; } 2>"$OUT/tiny_${name}_$round.c32x8.client_cpu" &
    client_job=$!
    # Each thread of both sides over 2 s in mid-run: one thread at a full
    # core bounds the rate however idle the machine is.
    sleep 1
    client_pid=$(pgrep -n -x gemm-client)
    thread_ticks $gemmd_pid >"$OUT/tiny_${name}_$round.window0"
    thread_ticks "$client_pid" >"$OUT/tiny_${name}_$round.client_window0"
    sleep 2
    thread_ticks $gemmd_pid >"$OUT/tiny_${name}_$round.window1"
    thread_ticks "$client_pid" >"$OUT/tiny_${name}_$round.client_window1"
    wait $client_job
    read -r busy1 idle1 < <(machine_ticks)
    metrics_of "tiny_${name}_$round" | grep -E '^gemm_batch_size_(sum|count)' >"$OUT/tiny_${name}_$round.batch1"
    thread_ticks $gemmd_pid >"$OUT/tiny_${name}_$round.threads1"
    echo "server_ticks=$(($(proc_ticks $gemmd_pid) - server_ticks)) busy=$((busy1 - busy0)) idle=$((idle1 - idle0))" \
      "hz=$(getconf CLK_TCK) cores=$(nproc)" >"$OUT/tiny_${name}_$round.c32x8.cpu"
    # Verified, as ordinary requests are by default.
    "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 --duration 4 --verify \
      >"$OUT/tiny_${name}_$round.c32x8v" 2>&1
    # As a client with its own data sends it: A and B inline, verified, D back.
    "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 1 --duration 3 --inline --verify \
      >"$OUT/tiny_${name}_$round.c1inline" 2>&1
    # And a big one, for the server's H2D and D2H rates.
    for i in 1 2 3; do
      "$bin/gemm-client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" \
        --b "$work/b4096" --transport inline --out "$work/d4096" --json
    done >"$OUT/tiny_${name}_$round.inline4096.json" 2>&1
    # And over four connections: the matrix streams, on the callback API.
    for i in 1 2 3; do
      "$bin/gemm-client" --max-message-bytes 256M run --m 4096 --n 4096 --k 4096 --a "$work/a4096" \
        --b "$work/b4096" --connections 4 --out "$work/d4096" --json
    done >"$OUT/tiny_${name}_$round.conn4_4096.json" 2>&1
    kill -TERM $gemmd_pid; wait $gemmd_pid
  done
done
kill "$echo_pid"; wait "$echo_pid"
python3 - "$OUT" "$tiny_rounds" "${tiny_configs[@]}" <<'PY' | tee -a "$summary"
import statistics, sys
from gemm_reports import batch_sizes, client_ms, echo_records, json_docs
from collections import Counter
out = sys.argv[1]
def thread_rows(path):
    for line in open(path):
        name, tid, n = line.rstrip("\n").rsplit("\t", 2)
        if n:
            yield name, tid, int(n)
def threads(path):
    ticks = Counter()
    for name, _, n in thread_rows(path):
        ticks[name] += n
    return ticks
def busiest(stem, hz, seconds=2.0):
    """Each thread's share of a core over the window, busiest first, by name."""
    before = {tid: n for _, tid, n in thread_rows(f"{stem}0")}
    shares = {}
    for name, tid, n in thread_rows(f"{stem}1"):
        shares.setdefault(name, []).append((n - before.get(tid, 0)) / hz / seconds * 100)
    ranked = sorted(shares.items(), key=lambda kv: -max(kv[1]))
    return "; ".join(f"{name} {' '.join(f'{s:.0f}' for s in sorted(v, reverse=True)[:8])}"
                     for name, v in ranked if max(v) >= 1)
def mean_batch(stem):
    (c0, s0), (c1, s1) = batch_sizes(f"{stem}.batch0"), batch_sizes(f"{stem}.batch1")
    return (s1 - s0) / (c1 - c0) if c1 > c0 else 0.0
def bench(path):
    rows = [l.split() for l in open(path) if l.startswith("64x64x64")]
    server = "".join(l.strip() for l in open(path) if "server p50" in l)
    return (float(rows[0][4]), float(rows[0][5]) * 1e3, server) if rows else (0.0, 0.0, server)
for round in range(1, int(sys.argv[2]) + 1):
    for config in sys.argv[3:]:
        name, args = config.split(":", 1)
        stem = f"{out}/tiny_{name}_{round}"
        echo = echo_records(f"{stem}.echo")
        _, p50, server = bench(f"{stem}.c1")
        rate, _, _ = bench(f"{stem}.c32")
        rate4, _, _ = bench(f"{stem}.c32x8")
        e50, erate, erate4 = float(echo[0]["p50_us"]), float(echo[1]["calls_per_s"]), float(echo[2]["calls_per_s"])
        rate4v, _, _ = bench(f"{stem}.c32x8v")
        print(f"tiny {name:16s} round {round}: 1 in flight p50 {p50:.0f} us (echo {e50:.0f}, gap {p50 - e50:+.0f}); "
              f"32 in flight, one connection {rate:.0f} req/s (echo {erate:.0f}); over 8 {rate4:.0f} (echo {erate4:.0f}), "
              f"verified {rate4v:.0f}")
        print(f"    {server}")
        _, p50p, _ = bench(f"{stem}.c1polling")
        e50p = float(echo_records(f"{stem}.echo_polling")[0]["p50_us"])
        print(f"    client polling (--busy-poll), 1 in flight: p50 {p50p:.0f} us (echo polling {e50p:.0f}, "
              f"gap {p50p - e50p:+.0f})")
        cpu = dict(kv.split("=") for kv in open(f"{stem}.c32x8.cpu").read().split())
        client = sum(float(x) for x in open(f"{stem}.c32x8.client_cpu").read().split()[-2:])
        hz, busy, idle = float(cpu["hz"]), float(cpu["busy"]), float(cpu["idle"])
        n = rate4 * 4 if rate4 else 1  # requests in the 4 s run
        print(f"    over 8 connections, CPU per request: gemmd {float(cpu['server_ticks']) / hz / n * 1e6:.0f} us, "
              f"client {client / n * 1e6:.0f} us; the machine {busy / (busy + idle) * 100:.0f}% busy "
              f"({cpu['cores']} cores); {''.join(l.strip() for l in open(f'{stem}.c32x8') if 'server p50' in l)}")
        by_thread = threads(f"{stem}.threads1")
        by_thread.subtract(threads(f"{stem}.threads0"))
        top = [f"{name} {t / hz / n * 1e6:.0f}" for name, t in by_thread.most_common(8) if t > 0]
        print(f"    gemmd's CPU per request by thread name, us: {', '.join(top)} (threads that ended in the run "
              f"are missing)")
        batch = mean_batch(stem)
        print(f"    % of a core per thread over 2 s mid-run, busiest first; "
              f"{f'mean batch {batch:.1f} requests' if batch else 'no batches'}:\n      gemmd: {busiest(f'{stem}.window', hz)}\n"
              f"      client: {busiest(f'{stem}.client_window', hz)}")
        _, p50i, serveri = bench(f"{stem}.c1inline")
        print(f"    A and B inline, verified, D inline, 1 in flight: p50 {p50i:.0f} us; {serveri}")
        runs = json_docs(f"{stem}.inline4096.json")
        if runs:
            h2d = ", ".join(f"{64 * 1.048576e-3 / r['timing']['uploadSeconds']:.1f}" for r in runs)
            d2h = ", ".join(f"{32 * 1.048576e-3 / r['timing']['downloadSeconds']:.1f}" for r in runs)
            rt = statistics.median(r["client"]["roundTripSeconds"] for r in runs)
            print(f"    inline 4096^3, {len(runs)} requests in turn: server H2D {h2d} GB/s, D2H {d2h} GB/s; "
                  f"round trip median {rt * 1e3:.1f} ms")
        runs = json_docs(f"{stem}.conn4_4096.json")
        if runs:
            print(f"    4096^3 over 4 connections, {len(runs)} in turn: end to end "
                  + client_ms(runs, 'endToEndSeconds') + " ms")
PY
fi

if part grpcfloor; then
# 2h. What bounds tiny requests. gemmd serves through gRPC's callback API,
# where gRPC's own threads (nexting_thread, the default executor) spend
# most of its CPU per request (the tiny part's per-thread figures). First
# the bare echo under each server model, as poll strategy|server|loads
# ("_" for spaces). gRPC's default strategy, epoll1, lets one thread of the
# process poll at a time, and hands that role on to a waiting thread, so
# every thread gRPC parks in a queue (the callback API's, the synchronous
# API's) can sit on a request's path; poll lets each thread poll its own.
# The servers: the callback API; the completion-queue API on one thread,
# alone, beside a callback service (gRPC's health service) or a
# synchronous one (gemmd's reflection is one), and on four; and the client,
# or both ends, polling instead of sleeping. Then gemmd with 32 in flight
# spread over more and more connections, since one connection is handled
# by one thread at a time on each side. CPU per call is the whole process's
# (the echo's client and server share it; warm-up included).
all_loads="--concurrency_1 --concurrency_32 --concurrency_32_--connections_4"
for model in "epoll1|callback|$all_loads" "epoll1|async_--server-threads_1|$all_loads" \
  "epoll1|async_--server-threads_1_--health|--concurrency_1" \
  "epoll1|async_--server-threads_1_--sync-service|--concurrency_1" "epoll1|async_--server-threads_4|$all_loads" \
  "epoll1|callback_--busy-poll|--concurrency_1" \
  "epoll1|async_--server-threads_1_--busy-poll_--server-busy-poll|--concurrency_1" \
  "poll|callback|$all_loads" "poll|async_--server-threads_4|$all_loads" \
  "poll|async_--server-threads_4_--health_--sync-service|$all_loads"; do
  IFS='|' read -r strategy api loads <<<"$model"
  for load in $loads; do
    echo "label=${strategy}_$api"
    # shellcheck disable=SC2086
    { TIMEFORMAT='cpu_s=%U+%S'; time GRPC_POLL_STRATEGY=$strategy "$bin/grpc-echo-bench" --mode latency --seconds 3 \
        --up-bytes 64 --down-bytes 256 --server-api ${api//_/ } ${load//_/ }; } 2>&1
  done
done >"$OUT/echo_api.txt"
start_gemmd grpcfloor
for conns in 1 2 4 8 16; do
  ticks=$(proc_ticks $gemmd_pid)
  { TIMEFORMAT='%U %S'; time "$bin/gemm-client" bench --shapes 64x64x64 --steps 0 --concurrency 32 \
      --connections $conns --duration 3 >"$OUT/grpcfloor_c$conns.txt" 2>&1; } 2>"$OUT/grpcfloor_c$conns.client_cpu"
  echo "server_ticks=$(($(proc_ticks $gemmd_pid) - ticks)) hz=$(getconf CLK_TCK)" >"$OUT/grpcfloor_c$conns.cpu"
done
# The tiny part measures its echo beside an idle gemmd: the same echo with
# and without one, alternately, says whether an idle gemmd costs it.
for i in 1 2; do
  [[ $i == 1 ]] || start_gemmd grpcfloor_idle
  echo "label=beside_an_idle_gemmd"
  "$bin/grpc-echo-bench" --mode latency --concurrency 1 --seconds 2 --up-bytes 64 --down-bytes 256
  kill -TERM $gemmd_pid; wait $gemmd_pid
  echo "label=alone"
  "$bin/grpc-echo-bench" --mode latency --concurrency 1 --seconds 2 --up-bytes 64 --down-bytes 256
done >"$OUT/echo_beside.txt"
python3 - "$OUT" <<'PY' | tee -a "$summary"
import sys
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
row = {}
for kv in open(f"{out}/echo_api.txt").read().split():
    k, _, v = kv.partition("=")
    row[k] = v
    if k == "cpu_s":
        cpu = sum(float(x) for x in v.split("+"))
        calls = float(row["calls"])
        print(f"echo {row['label'].replace('_--', ' ').replace('_', ' '):54s} {row['connections']} connection(s), {row['concurrency']:>2} in flight: "
              f"{float(row['calls_per_s']):7.0f} calls/s, p50 {float(row['p50_us']):5.0f} us, "
              f"process CPU {cpu / calls * 1e6:4.0f} us per call")
        row = {}
beside = {}
for line in open(f"{out}/echo_beside.txt"):
    if line.startswith("label="):
        label = line.split("=", 1)[1].strip()
    else:
        beside.setdefault(label, []).append(float(dict(kv.split("=") for kv in line.split())["p50_us"]))
print("echo, 1 in flight, p50 us: " + "; ".join(f"{k.replace('_', ' ')} {', '.join(f'{v:.0f}' for v in vs)}"
                                          for k, vs in beside.items()))
for conns in (1, 2, 4, 8, 16):
    rows = [l.split() for l in open(f"{out}/grpcfloor_c{conns}.txt") if l.startswith("64x64x64")]
    if not rows:
        print(f"gemmd 32 in flight over {conns:2d} connection(s): no result")
        continue
    rate, p50 = float(rows[0][4]), float(rows[0][5]) * 1e3
    cpu = dict(kv.split("=") for kv in open(f"{out}/grpcfloor_c{conns}.cpu").read().split())
    client = sum(float(x) for x in open(f"{out}/grpcfloor_c{conns}.client_cpu").read().split()[-2:])
    n = rate * 3
    print(f"gemmd 32 in flight over {conns:2d} connection(s): {rate:7.0f} req/s, p50 {p50:5.0f} us; CPU per request "
          f"gemmd {float(cpu['server_ticks']) / float(cpu['hz']) / n * 1e6:.0f} us, client {client / n * 1e6:.0f} us")
PY
fi

if part firsttouch; then
# 2f. The first request of shapes no request has used yet, against their
# steady state (issue 16: <= 1.2x): a fresh server with --plan-cublas (its
# start-up loads the kernels cuBLAS's heuristic picks over a grid of
# shapes), then a fresh one without. --keep-warm-ms: every request, first
# or steady, meets the same clocks across the gaps between client processes.
for plan in true false; do
  start_gemmd "firsttouch_$plan" --workers 2 --keep-warm-ms 2 --plan-cublas "$plan"
  grep -E "cuBLAS planned|not loaded ahead|warm in" "$OUT/gemmd_firsttouch_$plan.log" | sed 's/^.*\] //' |
    sed "s/^/  plan-cublas $plan: /" | tee -a "$summary"
  # A few requests of a shape the start-up ran: the first requests after
  # start-up are the service part's measure (2.), not this one's.
  for i in 1 2 3 4; do "$bin/gemm-client" run --m 1024 --n 1024 --k 1024 --no-verify --json >/dev/null; done
  # Each shape in three variants (m, m+1, m+2), each new to the server: one
  # first request of a ~0.3 ms total moved by 0.1 ms either way between runs
  # so a class's median of three firsts says more than one.
  for shape in "3000 2000 1000" "1500 700 300" "100 5000 300" "7000 300 2000" "640 480 4096" "3001 2001 1001" \
               "12000 50 700" "2500 2500 2500" "77 100 50" "1001 333 4097"; do
    set -- $shape
    for dm in 0 1 2; do
      for i in $(seq 7); do "$bin/gemm-client" run --m "$(($1 + dm))" --n "$2" --k "$3" --no-verify --json; done
    done
  done >"$OUT/first_touch_$plan.json"
  kill -TERM "$gemmd_pid"; wait "$gemmd_pid" 2>/dev/null
  python3 - "$OUT/first_touch_$plan.json" "$plan" <<'PY' | tee -a "$summary"
import sys, statistics
from gemm_reports import json_docs
docs = json_docs(sys.argv[1])
worst_class, worst_single = 0, 0
for c in range(0, len(docs), 21):
    per = {"kernelSeconds": [], "totalSeconds": []}  # (first, steady median, ratio) of each variant
    for v in range(c, c + 21, 7):
        first, steady = docs[v], docs[v + 1:v + 7]
        for key in per:
            med = statistics.median(d["timing"][key] for d in steady)
            per[key].append((first["timing"][key] * 1e3, med * 1e3, first["timing"][key] / med))
    s = docs[c]["shape"]
    k, t = (sorted(per[key], key=lambda r: r[2])[1] for key in ("kernelSeconds", "totalSeconds"))
    worst_class = max(worst_class, t[2])
    worst_single = max([worst_single] + [r[2] for r in per["totalSeconds"]])
    print(f"  first touch {s['m']}(+0,1,2)x{s['n']}x{s['k']}, median variant: kernel {k[0]:.3f} vs steady {k[1]:.3f} ms "
          f"(x{k[2]:.2f}); total {t[0]:.3f} vs {t[1]:.3f} ms (x{t[2]:.2f}); the three totals x"
          + ", x".join(f"{r[2]:.2f}" for r in per["totalSeconds"]))
print(f"first touch, plan-cublas {sys.argv[2]}: worst class median x{worst_class:.2f} (target <= 1.2); "
      f"worst single first request x{worst_single:.2f}")
PY
done

fi

if part soak; then
# 2g. The soak across faults, longer than CI's: two gemmd replicas on this
# GPU behind a loopback DNS name, one killed with SIGKILL, then each rolled
# with SIGTERM, under verified load through steps 0 and 10.
# A replica starts at about 2.2 GiB here (its CUDA context and pinned
# staging): the bounds are its peak and its growth over each start.
GEMMD_SOAK_SECONDS=${SOAK_SECONDS:-60} GEMMD_SOAK_ENGINE=cuda GEMMD_SOAK_STEPS=0,10 \
  GEMMD_SOAK_RSS_MIB=${SOAK_RSS_MIB:-3072} GEMMD_SOAK_RSS_GROWTH_MIB=${SOAK_RSS_GROWTH_MIB:-256} timeout 400 "$bin/soak_test" --gtest_brief=1 >"$OUT/soak.log" 2>&1
note "soak_test: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/soak.log" | tr '\n' ' ')"
grep -E "^soak:|Failure|at [0-9.]+ s: [a-z]" "$OUT/soak.log" | head -30 | sed 's/^/  /' | tee -a "$summary"

fi

if part bench; then
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
import csv, sys
from gemm_reports import client_ms, echo_records, json_docs
out = sys.argv[1]
try:
    server = json_docs(f"{out}/verified_request.json")[0]["tflops"]
except OSError:  # the service part did not run in this call
    sys.exit(0)
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

fi

if part sweep; then
# 3b. The shape sweep (issue 19): random shapes in four classes from one
# seed, every step checked against cuBLAS, then timed; with dense operands
# (the TMA steps copy unaligned ones to a 16-byte pitch) and with operands
# stored at 16-byte pitches, as the server stores them.
for layout in ${SWEEP_LAYOUTS:-dense pitched}; do
  timeout 400 "$bin/gemm-bench" --sweep "${SWEEP_SHAPES:-150}" --seed "${SWEEP_SEED:-1}" --layout $layout \
    --steps "${SWEEP_STEPS:-1,2,3,4,5,6,7,8,9,10}" --csv "$OUT/sweep_$layout.csv" --md "$OUT/sweep_$layout.md" \
    >"$OUT/sweep_$layout.log" 2>&1
  note "sweep ($layout operands): rc=$? $(grep -c FAIL "$OUT/sweep_$layout.csv") failed checks"
  grep -E "^\| (all|mixed|skinny|tiny|long-K) \| (8|9|10) \|" "$OUT/sweep_$layout.log" | tee -a "$summary"
done

fi

if part accuracy; then
# 3b. Each step's error against the exact (fp64) product at long K, beside
# cuBLAS's, and its check against cuBLAS with and without the bound's
# K-aware term (gemm/tolerance.h; docs/verification.md).
timeout 300 "$bin/gemm-bench" --accuracy 2 \
  --shapes "${ACCURACY_SHAPES:-100x100x4096,100x100x16384,100x100x65536,100x100x131072,2000x2000x4096,2000x2000x65536}" \
  --steps "${BENCH_STEPS:-1,2,3,4,5,6,7,8,9,10}" --csv "$OUT/accuracy.csv" >"$OUT/accuracy.md" 2>"$OUT/accuracy.log"
note "gemm-bench --accuracy rc=$?"
python3 - "$OUT/accuracy.csv" <<'PY' | tee -a "$summary"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
worst = max((float(r["ratio_to_cublas"]) for r in rows if r["step"] != "0"), default=0)
failing = [f'{r["m"]}x{r["n"]}x{r["k"]} step {r["step"]}' for r in rows if int(r["mismatches_with_term"]) > 0]
unbounded = sum(int(r["mismatches_without_term"]) > 0 for r in rows)
margin = min((float(r["accumulation_atol"]) / float(r["needed_term"]) for r in rows if float(r["needed_term"]) > 0),
             default=float("inf"))
print(f"accuracy: {len(rows)} rows; worst step error {worst:.2f}x cuBLAS's; "
      f"{unbounded} would fail without the K-aware term, {len(failing)} fail with it {failing[:6]}; "
      f"least margin (term / term needed) {margin:.1f}")
PY
fi

if part sass; then
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

fi

if part sanitize; then
# 4b. compute-sanitizer over every ladder step this GPU runs and cuBLAS, on
# one square and two ragged shapes: memcheck, racecheck, synccheck,
# initcheck. Findings are split by kernel: the ladder's (named by step) and
# cuBLAS's (the reference gemm-bench checks against), which are not ours.
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck initcheck; do
    # Every report is kept (in $work) to be counted; $OUT gets the first 300 lines.
    timeout 120 compute-sanitizer --tool $tool --print-limit 1000000 "$bin/gemm-bench" \
      --shapes 256x256x256,200x130x70,129x257x13 --steps 1,2,3,4,5,6,7,8,9,10 --warmup 0 --iters 1 \
      >"$work/sanitizer_$tool.txt" 2>&1
    echo "rc=$?" >>"$work/sanitizer_$tool.txt"
    { head -300 "$work/sanitizer_$tool.txt"; echo ...; tail -40 "$work/sanitizer_$tool.txt"; } >"$OUT/sanitizer_$tool.txt"
  done
  python3 - "$work" <<'PY' | tee -a "$summary"
import collections, re, sys
out = sys.argv[1]
steps = {"SingleTileKernel": 1, "KLoopKernel": 2, "TiledKernel": 3, "TmaKernel": 4, "PipelinedKernel": 5,
         "PersistentKernel": 6, "WarpSpecializedKernel<2>": 7, "WarpSpecializedKernel<3>": 8,
         "ClusterMulticastKernel": 9, "TwoConsumersKernel": 10, "TwoConsumersNarrowKernel": 10,
         "TwoConsumersSplitKKernel": 10}
for tool in ("memcheck", "racecheck", "synccheck", "initcheck"):
    text = open(f"{out}/sanitizer_{tool}.txt", errors="replace").read()
    summary = re.search(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard", text)
    reported = next((g for g in summary.groups() if g), "?") if summary else "?"
    ours, vendor = collections.Counter(), collections.Counter()
    # A report on a host call (cudaMemcpy reading device memory) is counted
    # by the first of our functions on its host stack.
    for report in re.split(r"^========= (?=\S)", text, flags=re.M):
        if report.startswith("Host API"):
            frame = re.search(r"Host Frame: (?:\S+ )?(gemm::[\w:]+)", report)
            ours["host call in " + ("::".join(frame.group(1).split("::")[-2:]) if frame else "?")] += 1
    kernels = re.findall(r"^=========\s+at\s+(?:0x[0-9a-f]+ in )?([^(\n]+)\(", text, re.M)
    kernels += re.findall(r"Race reported between .*? in ([^(\n]+)\(", text)
    for kernel in kernels:
        step = next((n for k, n in steps.items() if k in kernel), None)
        if step is not None:
            ours[f"step {step}"] += 1
        elif "gemm::" in kernel:
            ours[kernel.split("::")[-1][:40]] += 1
        else:
            vendor[kernel[:40]] += 1
    rc = re.search(r"rc=(\d+)", text).group(1)
    print(f"compute-sanitizer {tool}: rc={rc}, {reported} reported (by kernel or host call): in the ladder "
          f"and its helpers {dict(ours) or 'none'}; in cuBLAS {dict(vendor) or 'none'}")
PY
fi

fi

if part ncu; then
# 5. Clocks aside: ncu's cycle counts and tensor-pipe activity for cuBLAS and
# steps 8-10 at 4096^3, and for cuBLAS and step 10 on small problems (its
# narrow tile) (the GPU's power cap moves its clock from run to run; cycles
# do not move with it). Skipped where ncu cannot read the counters.
if command -v ncu >/dev/null; then
  for case in 4096x4096x4096:8,9,10 64x64x64:0,10 432x74x34:0,10 1000x1001x999:0,10; do
    shape=${case%%:*}
    timeout 200 ncu --clock-control none --kernel-name-base function \
      --kernel-name "regex:^(?!.*(FillRandomKernel|CompareKernel|L2Flush|Poison|ReferenceGemm)).*" \
      --metrics sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      "$bin/gemm-bench" --shapes "$shape" --steps "${case#*:}" --warmup 0 --iters 1 --layout pitched \
      >"$OUT/ncu_cycles_$shape.txt" 2>&1
    python3 - "$OUT/ncu_cycles_$shape.txt" "$shape" <<'PY' | tee -a "$summary"
import re, statistics, sys
kernels, name = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"  (\S.*?)(\(CUtensorMap|\(T1::Params|\s\(\d+, \d+, \d+\)x)", line)
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
    print(f"ncu {sys.argv[2]}: no counters read (see ncu_cycles_{sys.argv[2]}.txt)")
for k, v in kernels.items():
    if v["cycles"]:
        print(f"ncu {sys.argv[2]} {k[:60]}: {statistics.median(v['cycles']):,.0f} cycles, tensor pipe "
              f"{statistics.median(v['tensor']):.1f}% of active cycles")
PY
  done
fi

fi

tar -czf "$OUT/logs.tar.gz" -C "$OUT" --exclude=logs.tar.gz --exclude=bench.csv --exclude=bench.md \
  --exclude='sweep_*' --exclude=summary.txt . 2>/dev/null
find "$OUT" -maxdepth 1 -type f ! -name logs.tar.gz ! -name bench.csv ! -name bench.md ! -name 'sweep_*.csv' \
  ! -name 'sweep_*.md' ! -name summary.txt -delete
note "---- done (at ${SECONDS} s)"
echo "================ summary"
cat "$summary"
cat "$OUT/bench.md" 2>/dev/null
