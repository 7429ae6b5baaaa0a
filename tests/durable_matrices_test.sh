#!/usr/bin/env bash
# Stored matrices survive a kill -9: gemmd with --matrix-dir takes an upload,
# is killed with SIGKILL, starts again on the same directory and serves the
# matrix byte for byte; a file damaged while it was down answers DATA_LOSS.
set -uo pipefail
gemmd=$1 client=$2
work=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
start() {
  rm -f "$work/port"
  "$gemmd" --engine cpu --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" --matrix-dir "$work/store" \
    >>"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
  export GEMM_TARGET=127.0.0.1:$(cat "$work/port")
  "$client" health --wait 30 >/dev/null || fail "gemmd did not come up: $(tail -5 "$work/log")"
}

head -c $((300 * 200 * 2)) /dev/urandom >"$work/a"
start
handle=$("$client" upload --rows 300 --cols 200 --file "$work/a" --label "kept" | grep -o 'm-[0-9a-f]*' | head -1)
[[ -n $handle ]] || fail "no handle from the upload"
kill -9 $pid; wait $pid 2>/dev/null

start
"$client" matrices | grep -q "$handle" || fail "$handle is not listed after kill -9: $("$client" matrices)"
"$client" download --handle "$handle" --out "$work/back" >/dev/null || fail "download after kill -9"
cmp -s "$work/a" "$work/back" || fail "the matrix came back different"
echo "ok: $handle survived kill -9 byte for byte"

kill -9 $pid; wait $pid 2>/dev/null
# Flip every bit of one byte: writing a fixed value left the file unchanged
# whenever the random matrix already held that value there (1 run in 256).
stored=$work/store/$handle.gemm
byte_at_5000() { od -An -tu1 -j5000 -N1 "$stored" | tr -d ' '; }
before=$(byte_at_5000)
printf "\\$(printf '%03o' $((before ^ 255)))" | dd of="$stored" bs=1 seek=5000 conv=notrunc status=none
[[ $(byte_at_5000) -eq $((before ^ 255)) ]] || fail "byte 5000 was not changed ($before -> $(byte_at_5000))"
start
"$client" download --handle "$handle" --out "$work/back2" 2>"$work/err" && fail "a damaged matrix was served"
grep -q "DATA_LOSS" "$work/err" || fail "damaged matrix: $(cat "$work/err")"
echo "ok: the damaged file answers DATA_LOSS"
