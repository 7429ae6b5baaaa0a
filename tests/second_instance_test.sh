#!/usr/bin/env bash
# A second gemmd where one already runs refuses to start, saying what is in
# use, and the first goes on serving: on the same --matrix-dir (two servers
# would delete each other's files) and on the same --listen port (gRPC's
# SO_REUSEPORT would have let the second take half the connections).
set -uo pipefail
gemmd=$1 client=$2
work=$(mktemp -d)
trap 'kill -9 $first 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# second NAME ARGS...: a gemmd that must exit 1 within 30 s; its log in $work/NAME.
second() {
  local name=$1
  shift
  timeout 30 "$gemmd" --engine cpu --metrics-listen "" "$@" >"$work/$name" 2>&1
  local rc=$?
  [[ $rc == 1 ]] || fail "$name: exit $rc, not 1: $(tail -3 "$work/$name")"
}

"$gemmd" --engine cpu --listen 127.0.0.1:0 --metrics-listen "" --port-file "$work/port" --matrix-dir "$work/store" \
  >"$work/first" 2>&1 &
first=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
port=$(cat "$work/port")
export GEMM_TARGET=127.0.0.1:$port
"$client" health --wait 30 >/dev/null || fail "the first gemmd did not come up: $(tail -5 "$work/first")"
head -c $((30 * 20 * 2)) /dev/urandom >"$work/a"
handle=$("$client" upload --rows 30 --cols 20 --file "$work/a" | grep -o 'm-[0-9a-f]*' | head -1)
[[ -n $handle ]] || fail "no handle from the upload"

second same_dir --listen 127.0.0.1:0 --matrix-dir "$work/store"
grep -q "is in use by another gemmd (pid $first)" "$work/same_dir" || fail "same directory: $(tail -3 "$work/same_dir")"
echo "ok: a second gemmd on the same --matrix-dir exits 1 naming pid $first"

second same_port --listen "127.0.0.1:$port"
grep -q "cannot listen on 127.0.0.1:$port" "$work/same_port" || fail "same port: $(tail -3 "$work/same_port")"
echo "ok: a second gemmd on the same port exits 1"

"$client" download --handle "$handle" --out "$work/back" >/dev/null || fail "the first gemmd stopped serving"
cmp -s "$work/a" "$work/back" || fail "the first gemmd's matrix came back different"
[[ -f $work/store/$handle.gemm ]] || fail "the matrix's file is gone"
echo "ok: the first gemmd still serves its matrix, and its file is in place"
