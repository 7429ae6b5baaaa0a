#!/usr/bin/env bash
# gemm-client and the whole GEMM, against a real server (GEMM_TARGET set;
# with_server.sh in CTest, the GPU harness's python part on a GPU): y = x @
# W + 0.5·r in bf16 from files, W stored K×N and uploaded once by handle,
# shared by a batch of 4; D checked with numpy in fp64, not by the server.
# PYTHON names an interpreter with numpy (default /usr/bin/python3).
set -euo pipefail
client=$1
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The whole GEMM from files: y = x @ W + 0.5·r in bf16, W stored K×N and
# uploaded once by handle, shared by a batch of 4; C from a file; D checked
# here with numpy in fp64, not by the server.
"$python" - "$work" <<'PY'
import sys
import numpy as np
w, rng = sys.argv[1], np.random.default_rng(3)
def bf16(shape):
    u = rng.uniform(-1, 1, shape).astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype('<u2')
for name, shape in (('x', (4, 40, 96)), ('w', (96, 56)), ('r', (4, 40, 56))):
    bf16(shape).tofile(f'{w}/{name}.bf16')
PY
w_handle=$("$client" upload --rows 96 --cols 56 --type bf16 --file "$work/w.bf16" 2>/dev/null)
"$client" matrices | grep -q "96x56 bf16" || fail "the upload is not listed as bf16"
"$client" run --m 40 --n 56 --k 96 --type bf16 --b-layout kxn --batch 4 --stride-b 0 --beta 0.5 \
  --a "$work/x.bf16" --b "$work/w.bf16" --c "$work/r.bf16" --out "$work/y.bf16" >"$work/run_bf16"
grep -q "x 4 (a batch) step 0 .* D bf16" "$work/run_bf16" || { cat "$work/run_bf16"; fail "no batch of bf16 in the report"; }
grep -q "PASSED" "$work/run_bf16" || fail "bf16 x @ W not verified"
"$client" run --m 40 --n 56 --k 96 --type bf16 --b-layout kxn --batch 4 --stride-b 0 --beta 0.5 \
  --a-handle "$w_handle" --b-handle "$w_handle" --c "$work/r.bf16" >"$work/refused" 2>&1 && fail "a W-shaped A was taken"
grep -q "INVALID_ARGUMENT" "$work/refused" || { cat "$work/refused"; fail "no INVALID_ARGUMENT for a wrong handle"; }
"$python" - "$work" <<'PY'
import sys
import numpy as np
w = sys.argv[1]
def load(name, shape):
    return (np.fromfile(f'{w}/{name}.bf16', '<u2').astype(np.uint32) << 16).view(np.float32).reshape(shape).astype(np.float64)
x, W, r, y = load('x', (4, 40, 96)), load('w', (96, 56)), load('r', (4, 40, 56)), load('y', (4, 40, 56))
want = x @ W + 0.5 * r
bound = 2.0 ** -8 * np.abs(want) + 100 * 2.0 ** -23 * (np.abs(x) @ np.abs(W) + np.abs(r))
assert np.all(np.abs(y - want) <= bound), np.max(np.abs(y - want) / bound)
PY
"$client" delete --handle "$w_handle" >/dev/null
echo "ok: bf16 x @ W + 0.5 r, batched with W shared, matches numpy in fp64"

