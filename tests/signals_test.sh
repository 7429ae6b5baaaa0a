#!/usr/bin/env bash
# What each signal a supervisor or a terminal may send does to gemmd:
# SIGPIPE (a log pipe that closed), SIGUSR1 and SIGUSR2 are ignored;
# SIGHUP and SIGQUIT drain as SIGTERM does; a second stop signal ends the
# grace at once.
set -euo pipefail
gemmd=$1
client=$2
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

wait_port() {
  for _ in $(seq 100); do [[ -s $work/port ]] && return 0; sleep 0.1; done
  fail "gemmd did not start"
}
alive() { kill -0 "$1" 2>/dev/null; }

# 1. Its log piped into `head`, which exits after two lines: gemmd goes on.
rm -f "$work/port"
"$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" 2>&1 | head -n 2 >/dev/null &
wait_port
pid=$(pgrep -n -f "port-file $work/port")
export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
for _ in 1 2 3; do "$client" --timeout 10 run --m 16 --n 16 --k 16 >/dev/null || fail "a call after head exited"; done
alive "$pid" || fail "gemmd died when its log pipe closed"
kill -USR1 "$pid"; kill -USR2 "$pid"; sleep 0.3
alive "$pid" || fail "SIGUSR1/SIGUSR2 ended gemmd"
"$client" --timeout 10 run --m 16 --n 16 --k 16 >/dev/null || fail "a call after SIGUSR1"
kill -TERM "$pid"
for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
alive "$pid" && fail "gemmd did not stop on SIGTERM"
echo "ok: SIGPIPE, SIGUSR1 and SIGUSR2 ignored"

# 2. SIGHUP and SIGQUIT drain: the log says so, and the exit status is 0.
for sig in HUP QUIT; do
  rm -f "$work/port"
  "$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" 2>"$work/log" &
  pid=$!
  wait_port
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  [[ $rc -eq 0 ]] || { cat "$work/log"; fail "SIG$sig: exit $rc"; }
  grep -q "SIG$sig received: draining" "$work/log" || { cat "$work/log"; fail "SIG$sig: no drain"; }
  grep -q "stopped cleanly" "$work/log" || fail "SIG$sig: not stopped cleanly"
done
echo "ok: SIGHUP and SIGQUIT drain"

# 3. A second SIGTERM ends a 30 s grace while a long GEMM still runs.
rm -f "$work/port"
"$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" --shutdown-grace-seconds 30 --max-repeats 100000 \
  2>"$work/log" &
pid=$!
wait_port
export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
"$client" --timeout 0 run --m 1024 --n 1024 --k 1024 --repeats 5000 --no-verify >/dev/null 2>&1 &
for _ in $(seq 100); do grep -q "ListKernels" "$work/log" && break; sleep 0.05; done
sleep 0.5
kill -TERM "$pid"
sleep 0.5
start=$(date +%s.%N)
kill -TERM "$pid"
wait "$pid" || true
end=$(date +%s.%N)
python3 -c "import sys; d=$end-$start; print(f'second SIGTERM: exited {d:.2f} s later'); sys.exit(0 if d < 5 else 1)" \
  || { cat "$work/log"; fail "the second SIGTERM did not end the grace"; }
grep -q "the grace ends now" "$work/log" || { cat "$work/log"; fail "no log line for the second signal"; }
echo "3 passed, 0 failed"
