#!/usr/bin/env bash
# gemm-client against a real server (GEMM_TARGET set by with_server.sh).
set -euo pipefail
client=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }

"$client" health | grep -qx SERVING || fail "health is not SERVING"
ok "health"

"$client" list >"$work/list"
grep -q "vendor *available" "$work/list" || fail "list lacks step 0"
grep -q "runs on NVIDIA sm_90a or sm_100a GPUs" "$work/list" || fail "list lacks the GPU reason"
ok "list"

# The README's example.
"$client" run --m 512 --n 384 --k 256 >"$work/run"
grep -q "verification  PASSED" "$work/run" || { cat "$work/run"; fail "512x384x256 not verified"; }
grep -q "TFLOPS" "$work/run" || fail "no TFLOPS in the report"
ok "run 512x384x256"

"$client" run --m 129 --n 77 --k 1000 --seed 5 --repeats 3 --json >"$work/json"
grep -q '"passed": true' "$work/json" || fail "JSON report not passed"
grep -q '"repeats": 3' "$work/json" || fail "JSON lacks repeats"
ok "run --json"

# File inputs, through handles (chunked) and inline; D written to a file.
python3 - "$work" <<'PY'
import random, struct, sys
w = sys.argv[1]
def half(x): return struct.pack('<e', x)
for name, rows, cols in (('a', 1200, 1024), ('b', 96, 1024)):
    with open(f'{w}/{name}.bin', 'wb') as f:
        f.write(b''.join(half(random.uniform(-1, 1)) for _ in range(rows * cols)))
PY
"$client" run --m 1200 --n 96 --k 1024 --a "$work/a.bin" --b "$work/b.bin" --transport handle \
  --out "$work/d.bin" 2>"$work/progress" >"$work/run2"
grep -q "PASSED" "$work/run2" || fail "handle run not verified"
grep -q "upload A: 100%" "$work/progress" || { cat "$work/progress"; fail "no upload progress"; }
[[ $(stat -c %s "$work/d.bin") -eq $((1200 * 96 * 2)) ]] || fail "D has the wrong size"
"$client" matrices | grep -q "^0 matrices" || fail "run left matrices behind"
ok "run with chunked upload"

python3 - "$work" <<'PY'
import struct, sys
w = sys.argv[1]
def load(name, rows, cols):
    data = open(f'{w}/{name}.bin', 'rb').read()
    return [struct.unpack_from(f'<{cols}e', data, r * cols * 2) for r in range(rows)]
a, b, d = load('a', 1200, 1024), load('b', 96, 1024), load('d', 1200, 96)
for i in range(0, 1200, 97):
    for j in range(0, 96, 7):
        ref = sum(x * y for x, y in zip(a[i], b[j]))
        assert abs(d[i][j] - ref) <= 1e-2 + 1e-3 * abs(ref), (i, j, d[i][j], ref)
PY
ok "D file matches a Python reference"

# Over four connections: A and B side by side, D in four ranges; the same D.
"$client" run --m 1200 --n 96 --k 1024 --a "$work/a.bin" --b "$work/b.bin" --connections 4 \
  --out "$work/d4.bin" >"$work/run4"
grep -q "PASSED" "$work/run4" || fail "four-connection run not verified"
grep -q "end to end.*(4 connections)" "$work/run4" || { cat "$work/run4"; fail "no end-to-end line"; }
cmp -s "$work/d.bin" "$work/d4.bin" || fail "D over four connections differs"
"$client" matrices | grep -q "^0 matrices" || fail "four-connection run left matrices behind"
ok "run over four connections"

# A D of 1.2 MB: the same bytes inline on one connection and in ranges over
# four.
python3 - "$work" <<'PY'
import random, struct, sys
with open(f'{sys.argv[1]}/b512.bin', 'wb') as f:
    f.write(struct.pack(f'<{512 * 1024}e', *(random.uniform(-1, 1) for _ in range(512 * 1024))))
PY
"$client" run --m 1200 --n 512 --k 1024 --a "$work/a.bin" --b "$work/b512.bin" --transport inline \
  --out "$work/d512.bin" >"$work/run5"
"$client" run --m 1200 --n 512 --k 1024 --a "$work/a.bin" --b "$work/b512.bin" --connections 4 \
  --out "$work/d512_4.bin" >"$work/run6"
grep -q "PASSED" "$work/run5" && grep -q "PASSED" "$work/run6" || fail "1200x512 runs not verified"
[[ $(stat -c %s "$work/d512.bin") -eq $((1200 * 512 * 2)) ]] || fail "D of 1200x512 has the wrong size"
cmp -s "$work/d512.bin" "$work/d512_4.bin" || fail "a 1.2 MB D inline and in four ranges differ"
ok "a 1.2 MB D, inline and in ranges"

handle=$("$client" upload --rows 96 --cols 1024 --file "$work/b.bin" --label B 2>/dev/null)
[[ $handle == m-* ]] || fail "upload printed no handle"
"$client" matrices | grep -q "$handle" || fail "matrices does not list $handle"
"$client" download --handle "$handle" --out "$work/b2.bin" >/dev/null
cmp -s "$work/b.bin" "$work/b2.bin" || fail "download differs from upload"
# --transient: kept in the server's memory only, and listed as such.
scratch=$("$client" upload --rows 96 --cols 1024 --file "$work/b.bin" --label scratch --transient 2>/dev/null)
"$client" matrices >"$work/matrices"
grep -q "^$scratch .* transient  scratch$" "$work/matrices" || { cat "$work/matrices"; fail "$scratch not listed transient"; }
grep -q "^$handle .*  B$" "$work/matrices" && ! grep "^$handle " "$work/matrices" | grep -q transient ||
  { cat "$work/matrices"; fail "$handle not listed durable"; }
# Multiplied by handles stored earlier, twice: they stay stored.
a_handle=$("$client" upload --rows 1200 --cols 1024 --file "$work/a.bin" --label A 2>/dev/null)
for i in 1 2; do
  "$client" run --m 1200 --n 96 --k 1024 --a-handle "$a_handle" --b-handle "$handle" --out "$work/d_by_handle.bin" \
    >"$work/run_by_handle" || { cat "$work/run_by_handle"; fail "run by stored handles"; }
  grep -q "PASSED" "$work/run_by_handle" || fail "run by stored handles not verified"
done
cmp -s "$work/d.bin" "$work/d_by_handle.bin" || fail "D by stored handles differs from D by uploaded files"
"$client" matrices | grep -q "^$a_handle " || fail "run deleted a handle it did not upload"
"$client" run --m 1200 --n 96 --k 1024 --a-handle "$a_handle" 2>"$work/half" && fail "--a-handle without --b-handle"
grep -q "b-handle" "$work/half" || { cat "$work/half"; fail "no word of the missing --b-handle"; }
"$client" delete --handle "$a_handle" >/dev/null
"$client" delete --handle "$scratch" >/dev/null
"$client" delete --handle "$handle" | grep -q "deleted" || fail "delete"
ok "upload, download, delete; upload --transient; run by stored handles"

# Errors: a status name, a readable message and a non-zero exit.
set +e
"$client" run --m 0 --n 4 --k 4 2>"$work/err"; rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "INVALID_ARGUMENT: shape.m must be >= 1, got 0" "$work/err" || fail "zero dim: rc=$rc $(cat "$work/err")"
set +e
"$client" run --m 64 --n 64 --k 64 --step 7 2>"$work/err"; rc=$?
"$client" delete --handle m-00000000000000000000000000000000 2>"$work/err2"; rc2=$?
"$client" delete --handle m-nope 2>"$work/err3"; rc3=$?
set -e
[[ $rc -eq 1 ]] && grep -q "FAILED_PRECONDITION: step 7 runs on NVIDIA" "$work/err" || fail "step 7: $(cat "$work/err")"
[[ $rc2 -eq 1 ]] && grep -q "NOT_FOUND" "$work/err2" || fail "unknown handle: $(cat "$work/err2")"
[[ $rc3 -eq 1 ]] && grep -q "INVALID_ARGUMENT: \"m-nope\" is not a matrix handle" "$work/err3" || fail "bad handle: $(cat "$work/err3")"
ok "errors"

"$client" bench --shapes 64x64x64,128x96x32 --steps 0 --concurrency 4 --count 80 --verify \
  --csv "$work/bench.csv" --json "$work/bench.json" >"$work/bench"
grep -q "total: 80 ok of 80" "$work/bench" || { cat "$work/bench"; fail "bench"; }
[[ $(wc -l <"$work/bench.csv") -eq 3 ]] || fail "bench CSV rows"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['results'])==2 and all(r['ok']==40 for r in d['results'])" "$work/bench.json" || fail "bench JSON"
ok "bench"

# --inline: A and B in each request and D back in the reply, verified.
"$client" bench --shapes 64x64x64,77x100x50 --steps 0 --concurrency 2 --count 20 --verify --inline >"$work/bench_inline"
grep -q "total: 20 ok of 20" "$work/bench_inline" || { cat "$work/bench_inline"; fail "bench --inline"; }
ok "bench --inline"

# --stored: A and B uploaded once per shape, multiplied by handle, deleted at the end.
"$client" bench --shapes 64x64x64,77x100x50 --steps 0 --concurrency 4 --count 40 --verify --stored >"$work/bench_stored"
grep -q "total: 40 ok of 40" "$work/bench_stored" || { cat "$work/bench_stored"; fail "bench --stored"; }
"$client" matrices | grep -q "^0 matrices" || { "$client" matrices; fail "bench --stored left matrices behind"; }
"$client" bench --stored --inline --count 1 2>"$work/both" && fail "--stored with --inline"
grep -q "excludes" "$work/both" || { cat "$work/both"; fail "no word of --stored excluding --inline"; }
ok "bench --stored"


# Its connections: one per four requests in flight unless asked, counted as
# the established TCP connections to the server's port that bench's own
# sockets hold while it runs (gRPC opens IPv6 sockets, 127.0.0.1 mapped, so
# both tables are read; gemmd's listener probe connects to the same port).
port_hex=$(printf '%04X' "${GEMM_TARGET##*:}")
connections_to_server() {
  local inodes
  inodes=$(for fd in /proc/"$1"/fd/*; do readlink "$fd"; done 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' |
    tr '\n' ' ')
  cat /proc/net/tcp /proc/net/tcp6 |
    awk -v p=":$port_hex" -v own=" $inodes" '$3 ~ p"$" && $4 == "01" && index(own, " " $10 " ")' | wc -l
}
for want in "12 3" "12 1 --connections 1" "1 1"; do
  read -r concurrency expected asked <<<"$want"
  # shellcheck disable=SC2086
  "$client" bench --shapes 64x64x64 --steps 0 --concurrency "$concurrency" $asked --duration 2 \
    --json "$work/conns.json" >/dev/null 2>"$work/conns.err" &
  bench_pid=$!
  sleep 1
  seen=$(connections_to_server "$bench_pid")
  wait "$bench_pid" || fail "bench --concurrency $concurrency $asked: $(cat "$work/conns.err")"
  [[ $seen -eq $expected ]] || fail "bench --concurrency $concurrency $asked held $seen connections, not $expected"
  grep -q "over $expected connection(s)" "$work/conns.err" || fail "bench did not say $expected: $(cat "$work/conns.err")"
  python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['connections'] == $expected" "$work/conns.json" ||
    fail "bench JSON connections"
done
ok "bench's connections: one per four in flight unless asked"
# Against a server that is not there, bench backs off instead of spinning:
# 16 threads for a second make tens of calls, not hundreds of thousands.
GEMM_TARGET=127.0.0.1:1 "$client" bench --duration 1 --concurrency 16 >"$work/dead" 2>&1 || true
calls=$(grep -o "ok of [0-9]*" "$work/dead" | grep -o "[0-9]*$")
[[ -n $calls && $calls -gt 0 && $calls -lt 1000 ]] || { cat "$work/dead"; fail "bench against a dead server: $calls calls"; }
ok "bench backs off from a dead server ($calls calls in 1 s)"
# --busy-poll: a thread per connection polls (per request with --inline);
# more of them than half the cores is warned of, fewer is not.
half=$(($(nproc) / 2)); ((half < 1)) && half=1
"$client" --busy-poll bench --shapes 16x16x16 --concurrency 8 --connections 1 --count 16 >/dev/null 2>"$work/poll1" ||
  fail "bench --busy-poll: $(cat "$work/poll1")"
grep -q "polling threads" "$work/poll1" && fail "one polling thread was warned of: $(cat "$work/poll1")"
many=$((half + 1))
"$client" --busy-poll bench --shapes 16x16x16 --concurrency $many --connections $many --count 16 >/dev/null \
  2>"$work/polln" || fail "bench --busy-poll over $many connections: $(cat "$work/polln")"
grep -q "warning: $many polling threads" "$work/polln" || fail "$many polling threads not warned of: $(cat "$work/polln")"
"$client" --busy-poll bench --shapes 16x16x16 --concurrency $many --connections 1 --inline --count 4 >/dev/null \
  2>"$work/polli" || fail "bench --busy-poll --inline: $(cat "$work/polli")"
grep -q "warning: $many polling threads" "$work/polli" || fail "--inline's $many polling threads not warned of"
ok "bench --busy-poll warns of more polling threads than half the cores"

# The real binary's /metrics, scraped as Prometheus does (a scrape once
# crashed gemmd while an in-process test passed: static TLS vs civetweb's stacks).
metrics=$(curl -sf "$GEMMD_METRICS_URL") || fail "scraping $GEMMD_METRICS_URL failed"
grep -q '^gemm_requests_total{code="OK",method="Multiply",step="0"} [1-9]' <<<"$metrics" || fail "no Multiply count"
grep -q '^gemm_floating_point_operations_total{device="cpu:0",step="0"} [1-9]' <<<"$metrics" || fail "no FLOP count"
"$client" health | grep -qx SERVING || fail "server died after the scrape"
ok "metrics scrape"

echo "$passed passed, 0 failed"
