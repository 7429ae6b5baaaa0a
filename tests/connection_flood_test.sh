#!/usr/bin/env bash
# A flood of idle TCP connections past the process's file limit used to stop
# gemmd's listener for good: gRPC 1.51 logs "Failed accept4: Too many open
# files" once and never accepts again. gemmd now probes its listener, and
# when the probes go unanswered it drains and exits with status 4 for its
# supervisor; this script plays the supervisor. After the flood a call must
# succeed within seconds, and health must never hang.
set -euo pipefail
gemmd=$1
client=$2
work=$(mktemp -d)
trap 'kill -9 "${pid:-}" "${pid2:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

start() {  # a file limit low enough to flood from here: 256, soft and hard
  rm -f "$work/port"
  (ulimit -n 256 && exec "$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" \
    --listener-probe-seconds 0.5 --shutdown-grace-seconds 2) 2>"$work/log$1" &
  for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
  [[ -s $work/port ]] || { cat "$work/log$1"; echo "FAIL: gemmd did not start" >&2; exit 1; }
}
start 1
pid=$!
port=$(cat "$work/port")
export GEMM_TARGET=127.0.0.1:$port
"$client" health >/dev/null || { echo "FAIL: not serving before the flood" >&2; exit 1; }

# 600 connections that send nothing, held for 3 s, then closed.
python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = []
for _ in range(600):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        held.append(s)
    except OSError:
        break
time.sleep(3)
for s in held:
    s.close()
print(f"flood: {len(held)} connections held for 3 s", file=sys.stderr)
PY
flood_end=$(date +%s.%N)
grep -q "Too many open files" "$work/log1" || { cat "$work/log1"; echo "FAIL: the flood did not reach the file limit" >&2; exit 1; }

# Health answers within its own deadline, whatever the listener's state.
t0=$(date +%s.%N)
"$client" health >/dev/null 2>&1 || true
t1=$(date +%s.%N)
python3 -c "import sys; d=$t1-$t0; sys.exit(0 if d < 8 else 1)" || { echo "FAIL: health took $(python3 -c "print($t1-$t0)") s" >&2; exit 1; }

# Either the listener came back, or gemmd says why and exits 4.
if ! "$client" --timeout 2 health >/dev/null 2>&1; then
  rc=0
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    tail -3 "$work/log1"; echo "FAIL: 15 s after the flood gemmd neither accepts nor exits" >&2; exit 1
  fi
  wait "$pid" || rc=$?
  [[ $rc -eq 4 ]] || { cat "$work/log1"; echo "FAIL: gemmd with a dead listener exited $rc, not 4" >&2; exit 1; }
  grep -q "stopped accepting connections" "$work/log1" || { cat "$work/log1"; echo "FAIL: no log line says why" >&2; exit 1; }
  echo "gemmd exited 4: $(grep -o "the gRPC listener.*connections" "$work/log1")" >&2
  start 2  # the supervisor's restart
  pid2=$!
  export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
fi
"$client" --timeout 10 run --m 64 --n 64 --k 64 >"$work/run" 2>&1 || { cat "$work/run"; echo "FAIL: no call succeeded after the flood" >&2; exit 1; }
done_at=$(date +%s.%N)
python3 -c "import sys; d=$done_at-$flood_end; print(f'a verified call succeeded {d:.1f} s after the flood ended'); sys.exit(0 if d < 20 else 1)"
echo "1 passed, 0 failed"
