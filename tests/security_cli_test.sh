#!/usr/bin/env bash
# Usage: security_cli_test.sh GEMMD GEMM_CLIENT
# gemm-client and the Python client against a gemmd that requires TLS and a
# bearer token. Certificates are made here by openssl, for this run only.
set -uo pipefail
gemmd=$1 client=$2
work=$(mktemp -d)
trap 'kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=gemmd -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext \
  -out server.pem 2>/dev/null
printf 'right-token\n' >token
printf 'wrong-token\n' >wrong

GEMMD_AUTH_TOKEN_FILE=$work/token "$gemmd" --listen 127.0.0.1:0 --metrics-listen "" --port-file port \
  --tls-cert server.pem --tls-key server.key 2>server.log &
pid=$!
for _ in $(seq 100); do [[ -s port ]] && break; sleep 0.1; done
export GEMM_TARGET=127.0.0.1:$(cat port)
passed=0 failed=0
check() {  # check NAME EXPECTED_RC PATTERN -- COMMAND...   (EXPECTED_RC 1: any failure)
  local name=$1 want_rc=$2 pattern=$3
  shift 4
  out=$("$@" 2>&1); rc=$?
  if { [[ $want_rc == 0 ]] && [[ $rc == 0 ]]; } || { [[ $want_rc != 0 ]] && [[ $rc != 0 ]] && { [[ $want_rc == 1 ]] || [[ $rc == "$want_rc" ]]; }; } && grep -q -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL $name: rc=$rc, wanted $want_rc and /$pattern/; got: $out"
  fi
}
check "plaintext refused" 1 "UNAVAILABLE" -- "$client" --timeout 5 list
check "TLS without token" 1 "UNAUTHENTICATED" -- "$client" --tls-ca ca.pem list
check "wrong token" 1 "invalid bearer token" -- "$client" --tls-ca ca.pem --token-file wrong list
check "right token" 0 "step" -- "$client" --tls-ca ca.pem --token-file token list
check "token from GEMM_TOKEN" 0 "verification" -- env GEMM_TOKEN=right-token "$client" --tls-ca ca.pem run --m 8 --n 8 --k 8
check "client cert without key" 2 "go together" -- "$client" --tls-ca ca.pem --tls-cert ca.pem list
check "unreadable CA file" 2 "cannot read nope.pem" -- "$client" --tls-ca nope.pem list
check "health needs no token" 0 "SERVING" -- "$client" --tls-ca ca.pem health
check "python: right token" 0 "ok" -- "${GEMMD_PYTHON:-python3}" - <<'PY'
import os, grpc
from gemmd import GemmClient
ca = open("ca.pem", "rb").read()
c = GemmClient(os.environ["GEMM_TARGET"], root_certificates=ca, token="right-token")
assert c.list_kernels().kernels
try:
    GemmClient(os.environ["GEMM_TARGET"], root_certificates=ca, token="nope").list_kernels()
    raise SystemExit("wrong token accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.UNAUTHENTICATED, e.code()
print("ok")
PY
kill -TERM "$pid"; wait "$pid"; rc=$?
[[ $rc == 0 ]] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL gemmd exit $rc"; cat server.log; }
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
