#!/usr/bin/env bash
# One command for a new machine: install dependencies, build, start gemmd.
# Arguments go to gemmd (see `build/server/gemmd --help`); by default it
# listens on 0.0.0.0:50051 with metrics on 127.0.0.1:9464.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/server/gemmd "$@"
