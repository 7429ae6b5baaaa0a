#!/usr/bin/env bash
# grpc-echo-bench, the floor gemmd is measured against: each mode answers
# every call (failures=0) and moves the bytes asked for, in one process and
# across two (--serve / --target, the server stopping on SIGTERM), on a new
# connection per call too; a malformed setting is refused with exit 2.
set -uo pipefail
echo_bench=$1
work=$(mktemp -d)
trap 'kill -9 $server 2>/dev/null; rm -rf "$work"' EXIT
server=
fail() { echo "FAIL: $*"; exit 1; }
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }

out=$("$echo_bench" --mode latency --concurrency 2 --seconds 0.3 --up-bytes 64 --down-bytes 256) || fail "latency: $out"
[[ $(field failures <<<"$out") == 0 && $(field calls <<<"$out") -gt 0 ]] || fail "latency: $out"
out=$("$echo_bench" --mode transfer --up-bytes 100000 --down-bytes 50000 --count 2 --server-api async --fresh-connection) ||
  fail "transfer: $out"
[[ $(field fresh_connection <<<"$out") == 1 && $(field down_bytes <<<"$out") == 50000 ]] || fail "transfer: $out"
# --pipelined: 5 calls in flight over 2 connections, a thread each (3 and 2).
out=$("$echo_bench" --mode latency --pipelined --concurrency 5 --connections 2 --seconds 0.3) || fail "pipelined: $out"
[[ $(field pipelined <<<"$out") == 1 && $(field failures <<<"$out") == 0 && $(field calls <<<"$out") -gt 5 ]] ||
  fail "pipelined: $out"
echo "ok: one process, latency (a thread per call, and pipelined) and a fresh-connection transfer"

"$echo_bench" --serve "$work/port" --server-api async --server-threads 2 &
server=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
[[ -s $work/port ]] || fail "--serve wrote no port"
out=$("$echo_bench" --target "127.0.0.1:$(cat "$work/port")" --mode latency --seconds 0.3) || fail "--target: $out"
[[ $(field server <<<"$out") == other-process && $(field failures <<<"$out") == 0 ]] || fail "--target: $out"
kill -TERM $server
for _ in $(seq 100); do kill -0 $server 2>/dev/null || break; sleep 0.05; done
kill -0 $server 2>/dev/null && fail "--serve did not stop on SIGTERM"
wait $server || fail "--serve exited $? after SIGTERM"
echo "ok: two processes, and --serve stops on SIGTERM"

for bad in "--arg grpc.http2.max_frame_size" "--arg x=12y" "--serve $work/p2 --target 127.0.0.1:1"; do
  # shellcheck disable=SC2086
  "$echo_bench" $bad >/dev/null 2>&1
  rc=$?
  [[ $rc == 2 ]] || fail "'$bad' exited $rc, not 2"
done
echo "ok: malformed settings exit 2"
