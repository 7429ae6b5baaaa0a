#!/usr/bin/env bash
# The GPU harness's entry point on the GPU machine: PARTS="tests bench"
# bash scripts/gpu/run.sh (or the parts as arguments); --list names every
# part and what it measures, anywhere, without a GPU. The harness itself
# is Python, standard library only: scripts/gpu/harness/__main__.py says
# what each part does and which variables shape it.
cd "$(dirname "$0")" && exec python3 -m harness "$@"
