#!/usr/bin/env bash
# Builds the Dockerfile's image and tests it from outside, with no daemon and
# no registry: a Debian 12 base made with debootstrap stands in for NVIDIA's
# CUDA images (which this project's machines cannot pull), gemmd is built
# without CUDA (its CPU engine), podman builds with the vfs driver and
# chroot isolation, and buildah runs the container (podman run cannot set
# its rlimits in this sandbox; ../shared/design/container.md). Checked:
# health SERVING, a verified Multiply, a /metrics scrape and the image's
# HEALTHCHECK command, from outside; the server runs as uid 10001 and reads
# GEMMD_* configuration; a stored matrix survives a container restart on
# the declared volume. Not tested here: a GPU inside a container (no NVIDIA
# runtime on these machines).
#   scripts/image_test.sh          (as root; about 10 minutes on two cores)
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in buildah podman debootstrap curl; do command -v "$p" >/dev/null || need+=("$p"); done
if [[ ${#need[@]} -gt 0 ]]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[[ -x build/client/gemm-client ]] || scripts/build.sh
client=$PWD/build/client/gemm-client

work=$(mktemp -d /var/tmp/gemmd-image.XXXXXX)
store=(--storage-driver vfs --root "$work/storage" --runroot "$work/run")
ctrs=()
cleanup() {
  pkill -f "port-file /var/lib/gemmd/port" 2>/dev/null || true
  wait 2>/dev/null || true
  for c in "${ctrs[@]}"; do buildah "${store[@]}" rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work" 2>/dev/null || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "image: $* (at ${SECONDS} s)"; }

step "a Debian 12 base with debootstrap"
debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
tar -C "$work/rootfs" -c . | podman "${store[@]}" import - localhost/debian:12 >/dev/null
rm -rf "$work/rootfs"

step "the image, from the Dockerfile"
podman "${store[@]}" build --isolation chroot --format docker \
  --build-arg BUILD_BASE=localhost/debian:12 --build-arg RUN_BASE=localhost/debian:12 --build-arg GEMMD_CUDA=OFF \
  -t localhost/gemmd:test . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "the image did not build"; }

# A container of the image with the volume at /var/lib/gemmd; gemmd takes
# its configuration from the image's GEMMD_* and these.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/volume/matrices"
chown -R 10001:10001 "$work/volume"
start() {
  local c
  c=$(buildah "${store[@]}" from localhost/gemmd:test)
  ctrs+=("$c")
  buildah "${store[@]}" config --env GEMMD_LISTEN=127.0.0.1:$port --env GEMMD_METRICS_LISTEN=127.0.0.1:$mport \
    --env GEMM_TARGET=127.0.0.1:$port --env GEMMD_MAX_REPEATS=77 "$c"
  rm -f "$work/volume/port"
  # As the image's USER (buildah run does not switch to it by itself).
  buildah "${store[@]}" run --isolation chroot --user "$image_user" -v "$work/volume:/var/lib/gemmd" "$c" -- \
    gemmd --port-file /var/lib/gemmd/port >>"$work/gemmd.log" 2>&1 &
  gemmd_run=$!
  for _ in $(seq 300); do [[ -s $work/volume/port ]] && break; sleep 0.1; done
  [[ -s $work/volume/port ]] || { cat "$work/gemmd.log"; fail "gemmd did not start in the container"; }
  container=$c
}
export GEMM_TARGET=127.0.0.1:$port
image_user=$(buildah "${store[@]}" inspect --type image --format '{{.Docker.Config.User}}' localhost/gemmd:test)
[[ $image_user == 10001:10001 ]] || fail "the image's USER is '$image_user', not 10001:10001"

step "run it"
start
"$client" health --wait 30 >/dev/null || { cat "$work/gemmd.log"; fail "health is not SERVING"; }
# The server itself (its command is gemmd), not the buildah run around it.
server_pid() { pgrep -a -x gemmd | awk '/port-file \/var\/lib\/gemmd\/port/ { print $1; exit }' || true; }
pid=$(server_pid)
[[ -n $pid ]] || { ps -eo pid,uid,comm,args | grep -i gemmd; fail "no gemmd process"; }
[[ $(ps -o uid= -p "$pid" | tr -d ' ') == 10001 ]] || fail "gemmd runs as uid $(ps -o uid= -p "$pid"), not 10001"
"$client" list >"$work/list" || fail "ListKernels"
grep -q "max repeats 77" "$work/list" || fail "GEMMD_MAX_REPEATS did not reach gemmd"
"$client" run --m 96 --n 64 --k 80 >"$work/multiply.txt" || { cat "$work/multiply.txt"; fail "Multiply"; }
grep -q "verification  PASSED" "$work/multiply.txt" || { cat "$work/multiply.txt"; fail "the Multiply was not verified"; }
curl -sf "http://127.0.0.1:$mport/metrics" >"$work/metrics" || fail "no /metrics scrape"
grep -q '^gemm_requests_total{' "$work/metrics" || fail "the scrape has no gemm_requests_total"
# The image's own HEALTHCHECK command, run inside the container.
buildah "${store[@]}" inspect --type image localhost/gemmd:test >"$work/inspect.json"
mapfile -t probe < <(python3 - "$work/inspect.json" <<'PY'
import json, sys
def find(node):  # the first "Healthcheck" object anywhere in the image's configuration
    if isinstance(node, dict):
        for key, value in node.items():
            if key.lower() == "healthcheck" and isinstance(value, dict) and value.get("Test"):
                return value["Test"]
            found = find(value)
            if found:
                return found
    elif isinstance(node, list):
        for value in node:
            found = find(value)
            if found:
                return found
    return None
test = find(json.load(open(sys.argv[1]))) or []
print("\n".join(test[1:]))  # after "CMD"
PY
)
health="${probe[*]}"
[[ ${probe[0]:-} == gemm-client ]] || fail "the image's HEALTHCHECK is not gemm-client's: $health"
buildah "${store[@]}" run --isolation chroot --user "$image_user" "$container" -- "${probe[@]}" >/dev/null ||
  fail "the HEALTHCHECK command failed: ${probe[*]}"

step "a stored matrix across a restart on the volume"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 48)' >"$work/m"  # 64x96 fp16
handle=$("$client" upload --rows 64 --cols 96 --file "$work/m" --label kept | grep -o 'm-[0-9a-f]*' | head -1)
[[ -n $handle ]] || fail "upload"
kill -TERM "$pid"
wait "$gemmd_run" || fail "gemmd did not exit 0 on SIGTERM"
start
"$client" health --wait 30 >/dev/null || fail "the second container is not SERVING"
"$client" download --handle "$handle" --out "$work/back" >/dev/null || fail "the matrix did not survive the restart"
cmp -s "$work/m" "$work/back" || fail "the matrix came back different"
kill -TERM "$(server_pid)"
wait "$gemmd_run" || true
echo "5 passed, 0 failed"
