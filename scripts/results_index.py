#!/usr/bin/env python3
"""Writes bench/results/README.md, the index of the measurements kept there,
from the files themselves: one line per run (GPU, date, what it is) and the
headline figures read from each CSV. Standard library only.

    scripts/results_index.py            rewrite the index
    scripts/results_index.py --check    exit 1 if the index is out of date (CI)

A result file is named <gpu>_<date>_<purpose>.<ext>: gpu is h100, h200,
h100x2 or h200x2 (two GPUs of one host), date is the day of the run.
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "results")
NAME = re.compile(r"^(h100|h200|h100x2|h200x2)_(\d{4}-\d{2}-\d{2})_([a-z0-9_]+?)(?:_summary)?\.(csv|md|txt|png)$")
GPUS = {"h100": "H100", "h200": "H200", "h100x2": "2×H100", "h200x2": "2×H200"}
PURPOSES = {
    "ladder": "gemm-bench, steps 0-10 on squares and K=1024 shapes, each timed against cuBLAS in the same process",
    "sweep_dense": "gemm-bench --sweep 150 random shapes, dense operands",
    "sweep_pitched": "gemm-bench --sweep 150 random shapes, operands at a 16-byte pitch (as the server stores them)",
    "sweep_bf16_xw_dense": "gemm-bench --sweep 150 --dtype bf16 --b-layout mn (x @ W, cuBLAS in the same form), "
                           "steps 8-10, dense operands (an MN-contiguous B with N not a multiple of 8 goes through "
                           "the padded copy)",
    "sweep_bf16_xw_pitched": "gemm-bench --sweep 150 --dtype bf16 --b-layout mn (x @ W, cuBLAS in the same form), "
                             "steps 8-10, operands at a 16-byte pitch (as the server stores them)",
    "long_k_accuracy": "gemm-bench --accuracy: each step's error against the exact product at long K",
    "gpu_tests_accuracy": "the GPU harness's tests and accuracy parts",
    "gpu_tests_ladder": "the GPU harness's tests and bench parts",
    "harness_kernels": "the GPU harness's diagnose, tests, bench (two shapes), accuracy (two shapes), sass, sanitize "
                       "and ncu parts",
    "device_cache": "the GPU harness's tests, verify and cache parts: Multiply by stored handles with the matrices "
                    "kept on the device, beside the build before; the verification cost again",
    "tiny_now_and_before": "the GPU harness's tiny part, this build and the one before the verification changes, the "
                           "device cache and the generator, in turn",
    "tiny_turn": "the GPU harness's tiny part, two rounds, this build and the one before the device's GPU order "
                 "was kept by events (ComputeTurn)",
    "delivered": "the GPU harness's verify part with gemm-client bench --stored: delivered TFLOPS by input mode, this "
                 "build and the one before",
    "lanes": "the GPU harness's tests and lanes parts: delivered TFLOPS with 1, 2 and 3 worker lanes per device, "
             "this build (the device's GPU order kept by events, ComputeTurn) and the one before",
    "verification_cost": "the GPU harness's verify part: VERIFICATION_FULL's time and delivered TFLOPS beside the "
                         "kernel's, this build and the one before the verification changes",
    "harness_service": "the GPU harness's service, tiny (one round), firsttouch and soak (30 s) parts",
    "forms": "the GPU harness's tests, forms, formscache, formbatch, verify, tiny and python parts (those it "
             "holds): step 0's other forms (bf16, fp32, tf32, fp8, layouts, C, batches) beside the plain fp16 GEMM, "
             "their first requests, bf16 by stored handles with and without the device cache, small requests of "
             "each form with the server's batching on and off, and the plain path's verification, delivered TFLOPS "
             "and small requests beside the build before the forms",
    "fast_verification": "the GPU harness's tests, forms and verify parts: VERIFICATION_FAST's planted-fault table "
                         "and sweep, its cost beside the full check and the kernel (gemm-bench --fast-check), per "
                         "form and delivered at 8 in flight",
    "fast_check_arithmetic": "the GPU harness's tests, verify and fastncu parts after the fast check's arithmetic "
                             "was cut: the check beside cuBLAS (gemm-bench --fast-check) and ncu per pass, this "
                             "build and the ones before, verification's cost and delivered TFLOPS unverified, full, "
                             "fast and by stored handles",
    "capacity_limits": "the GPU harness's verify and cache parts: delivered TFLOPS by input mode beside gemm-bench's "
                       "step 10 and beside the GPU's own back-to-back limits (gemm-bench --back-to-back), "
                       "verification's cost, Multiply by stored handles; this build and the one before the faster "
                       "generator",
    "lanes_generation": "the GPU harness's lanes part: 1-3 worker lanes with generated operands made in the GEMM's "
                        "turn (not kept) or beside the previous GEMM, and the build before the faster generator",
    "workers_tiny": "the GPU harness's tests and tiny parts: small requests with two worker lanes a GPU (a default "
                    "tried, not kept) and one, and the build before",
    "fast_check_loads": "gemm-bench --fast-check and ncu per pass: VERIFICATION_FAST's passes reading 16 bytes a "
                        "lane (not kept) beside one element a lane",
    "fast_check_waves": "the GPU harness's tests and fastncu parts and gemm-bench --fast-check: VERIFICATION_FAST's "
                        "line passes with chunks sized for four waves of blocks (not kept) beside the fixed chunks",
    "split_or_narrower": "gemm-bench's steps 0 and 10 where the pair tile would split K but a narrower tile busies "
                         "half the SMs: K kept whole up to 8192, beside the split, and both builds' 150-shape sweeps",
    "narrow_tile_timeline": "ncu and a per-CTA timeline of step 10's one-CTA tiles against cuBLAS's kernels, and the "
                            "narrow tile on a pair of CTAs sharing A (not kept)",
    "half_height_tile": "gemm-bench's steps 0 and 10: step 10's half-height tile (64×128, one consumer) where the "
                        "narrow tile ran with N > 64, beside the narrow tile in the same binary, in five forms; ncu "
                        "at 1024²×8192; both rules' 150-shape sweeps",
    "direct_d_stores": "gemm-bench and ncu: step 10 storing D from its registers straight to global memory instead "
                       "of through shared-memory staging and a TMA store (not kept)",
    "first_loads_before_sync": "gemm-bench and ncu: step 10's one-CTA tiles issuing their first loads before the "
                               "CTA's sync (not kept)",
    "two_producer_threads": "gemm-bench and ncu: step 10's half-height tile with one producer thread per operand, "
                            "against one thread for both (and one sleeping, to show the producer on the k-loop's path)",
    "producer_threads_refactor": "gemm-bench and ncu: step 10's producer loop with one body for one or two producer "
                                 "threads against the branches before it, and two threads tried on the medium and "
                                 "narrow tiles (not kept)",
    "three_quarter_tile": "gemm-bench and ncu: step 10 with a 128x192 tile where the wide pair tiles' count rounds "
                          "badly onto the SMs, against the build before it",
    "one_cta_tiles_on_pairs": "gemm-bench and ncu: step 10's medium and half-height tiles on a 2-CTA cluster "
                              "sharing B, against the one-CTA tiles, in one binary (not kept)",
    "square_gap_map": "gemm-bench: step 10 against cuBLAS on squares from 512 to 4608 and at K = 4096, each with "
                      "the tile it takes: where step 10 stands",
    "split_tail": "gemm-bench and ncu: step 10 splitting K of the wide tile's last wave where that wave busies at "
                  "most half the pairs, against the same binary with the last wave whole; five calls, two "
                  "variants not kept",
    "split_tail_targets": "the GPU harness's tests and sass parts, then its bench, bf16, batch, sweep and targets "
                          "parts, on the build with step 10's split tail: the ladder's targets judged once more on "
                          "an H200",
    "split_k_sums": "the GPU harness's tests and forms parts after step 0's forms were held to split-K partial "
                    "sums in fp32: the long-K forms test on the build before and this one, and both servers' forms "
                    "table with two long-K rows",
    "gpu_tests_bf16": "the GPU harness's tests and bf16 parts: every GPU test, and gemm-bench --dtype bf16 on steps "
                      "8-10 beside cuBLAS and the autotuned cuBLASLt, K-contiguous, with beta 1 and as x @ W",
    "form_check": "the GPU harness's tests and forms parts with the forms' full check against the other family's "
                  "tensor-core GEMM and the bound's norms read along memory, beside the server before both",
    "dmma_double_buffer": "the GPU harness's forms part with the fp64 reference's tiles double-buffered (not kept) "
                          "beside the server as committed",
    "forms_memcheck": "compute-sanitizer memcheck on the forms' fp8 and fp64 reference tests, their kernels "
                      "instrumented",
    "plan_every_cell": "the GPU harness's forms part: step 0's other forms with every grid cell's cuBLASLt pick run "
                       "at its cell at start-up, beside the build that ran each pick once and that build under "
                       "cuBLASLt's API log (CUBLASLT_LOG_LEVEL=5)",
    "tensormap_prefetch": "gemm-bench and ncu, step 10 at small squares with and without a prefetch of its tensor "
                          "maps (measured, not kept)",
    "judge_warp_atomics": "the GPU harness's tests part (the fast check's and the forms' GPU suites) and gemm-bench "
                          "--fast-check beside the build before, with the fast check's line verdicts published by "
                          "one atomic a warp; ncu on that kernel",
    "line_pitch": "gemm-bench --layout pitched, step 10 and cuBLAS with every operand at a 128-byte pitch "
                  "against the 16-byte pitch before, and the kernels', engine's and forms' GPU tests",
    "tile_width": "gemm-bench with step 10's tile width forced each way (an experiment-only override) on shapes "
                  "around one wave and on the 150-shape sweeps, then the rule that picks it against the wide tile forced",
    "narrow_split_k": "gemm-bench, step 10 with split-K on the narrow tile where N <= 64 beside the build before it "
                      "(split-K on the pair tile only), on long-K shapes in two forms and on both 150-shape sweeps",
    "medium_split_k": "gemm-bench, step 10 with split-K also on the medium tile where M <= 128 beside the build "
                      "before it, on long-K shapes in two forms and on both 150-shape sweeps",
    "step10_against_autotuned": "gemm-bench and ncu on step 10 at K = 1024 and 1024^3 beside every cuBLASLt "
                                "candidate of the autotuned column, step 10 with consumer 1 a k-tile behind "
                                "consumer 0 and its narrow tile on a pair sharing A (neither kept)",
    "ladder_targets": "the GPU harness's bench, bf16, batch, sweep (bf16 x @ W, pitched) and targets parts: the "
                      "ladder's performance targets judged from one call's gemm-bench runs, three calls",
    "beta_c_no_allocate": "the GPU harness's betancu part and gemm-bench --beta 0 and 1, step 10 with C's pairs "
                          "loaded past L1 (ld.global.L1::no_allocate; measured, not kept) beside the loads as they are",
    "capacity_targets": "the GPU harness's verify part on one build: delivered TFLOPS unverified, full, fast and by "
                        "stored handles beside gemm-bench's step 10 and the same work back to back, and "
                        "verification's cost",
    "fast_check_forms": "gemm-bench --fast-check in the forms' types, layouts and C, and the fastncu part on two "
                        "of them; C's element loaded beside D's in the check's passes (measured, not kept)",
    "fast_check_d_tiles": "the GPU sketch-check and forms tests, gemm-bench --fast-check, the fastncu and verify "
                          "parts: VERIFICATION_FAST's sums over D's rows and columns from one read of D "
                          "(DTilesKernel) beside the two line passes, and two earlier tile kernels (not kept)",
    "fast_check_operand_tiles": "the GPU tests, verify part, gemm-bench --fast-check in three forms and the fastncu "
                                "part, seven calls: B's two passes from one read of B (OperandTilesKernel), D's tiles "
                                "reading C of D's type, the next rows loaded while a group is summed, signed terms as "
                                "one fused multiply-add, and A's passes by tiles, each beside the build before",
    "fast_check_wide_loads": "the GPU tests, verify and fastncu parts and gemm-bench --fast-check: VERIFICATION_FAST's "
                             "line passes reading eight 16-bit elements a lane along a warp's lines and two outputs "
                             "a thread in the k-vector passes, beside the build before; D's columns in pairs, "
                             "half-length chunks, k-vectors staged in shared memory and sign-bit negation (not "
                             "kept)",
    "fast_check_typed_c_clusters": "gemm-bench --fast-check in the forms' types, layouts and C, and ncu per pass: "
                                   "VERIFICATION_FAST with C's type fixed at compile time and its samples in "
                                   "clusters along MN-contiguous operands, beside the build before; why the build "
                                   "before fails bf16 + 1.0·C with an MN operand at 1024^3",
    "ladder_padded_copy": "gemm-bench --sweep 150 --layout dense, step 10 against cuBLAS, fp16 and bf16 x @ W: the "
                          "ladder's padded copies by one kernel against cudaMemcpy2DAsync (the build before), in one "
                          "call",
    "repitch_kernel": "the padded-copy kernel (common/matrix_repitch.h) against the build before in the same call: "
                      "32-bit indices (kept), and aligned 16-byte words two ways (not kept); --vendor-padding, the "
                      "dense sweep, ncu on the copies",
    "vendor_padding": "gemm-bench --vendor-padding (the GPU harness's padding part, with its tests part): step "
                      "0's forms on ragged shapes and batches, dense, on padded copies and at the aligned shape, "
                      "this build and the two before",
    "step0_ragged": "gemm-bench's cuBLAS and autotuned columns and step 10 on ragged shapes (N or K not a multiple "
                    "of 8), dense and pitched, and gemmd's step 0 and step 10 on them, fp16 and bf16 x @ W, before "
                    "and after the forms' step 0 ran large ragged GEMMs on padded copies",
    "typed_generator": "kernels_gpu_test's generator tests, forms_gpu_test and gemm-bench --fast-check's generated "
                       "column, fp16 and bf16, with the forms' generator eight elements a thread, beside the build "
                       "before",
    "eager_loading": "the GPU harness's forms part beside the same server under CUDA_MODULE_LOADING=EAGER: "
                     "whether lazy kernel loading explains a form's slow first request (it does not)",
    "forms_and_layouts": "the GPU harness's tests, forms and bf16 parts on an H200: the forms' references and "
                         "their checks' times, and the bf16 ladder with A stored k x m",
    "stored_repeated": "the GPU harness's tests and cache parts: Multiply by stored handles, one client process a "
                       "request and one client repeating it, server total against the kernel",
    "dmma_reference": "the GPU harness's tests and forms parts with the forms' fp64 reference GEMM on the fp64 "
                      "tensor cores beside the server with the SIMT one, and ncu of the reference kernel",
    "fp8_reference": "the GPU harness's tests and forms parts with fp8 forms checked by step 10 over fp16 copies of "
                     "their operands and C's largest value reduced a warp at a time, beside the server before both",
    "beta_c_chunk_a_k_tile": "the GPU harness's betancu part, gemm-bench --beta 0 and 1 and ncu's warp states, "
                             "step 10 with C's pairs loaded one chunk a k-tile (measured, not kept) beside the "
                             "loads as they are",
    "beta_c_vector_loads": "the GPU harness's betancu and stallncu parts and gemm-bench --beta 0 and 1, step 10 "
                           "with C read 16 bytes a lane and transposed within each quad (measured, not kept) "
                           "beside the 4-byte pair loads",
    "c_chunks_steps_7_8": "kernels_gpu_test and gemm-bench --beta 1 (bf16, B k and mn) for steps 7 and 8 with C a "
                          "chunk at a time into D's staging (not kept), beside the stage-ring C",
    "c_by_tma_sm100": "the GPU tests and the sass part on the builds whose sm_100a steps 4-10 read C by TMA: one "
                      "more UTMALDG per load site in each fused kernel, no local memory",
    "c_by_tma_step_6": "kernels_gpu_test and forms_gpu_test, gemm-bench --beta 1 (bf16, B k and mn) and the betancu "
                       "part for step 6, with C by TMA a chunk at a time, beside the build that loads C's pairs",
    "c_by_tma_steps_4_to_9": "every GPU test of the kernels, gemm-bench --beta 1 (bf16, B k and mn) and the betancu "
                             "part for steps 4-9, with C by TMA in steps 4-5 and 7-9, beside the build that loads "
                             "C's pairs",
    "beta_c_by_tma": "every GPU test of the kernels, the GPU harness's betancu, stallncu and sass parts and "
                     "gemm-bench --beta 0 and 1, step 10 with C by TMA through the D staging read inside the K "
                     "loop, beside the 4-byte pair loads",
    "beta_c_evict_first": "step 10's GPU tests, gemm-bench --beta 1 and ncu's DRAM and L2 counts, with C's TMA "
                          "loads marked evict-first in L2 (measured, not kept) beside the loads as they are",
    "beta_c_loads": "the GPU harness's betancu part (ncu cycles of step 10 with and without beta·C) for two ways "
                    "of reading C not kept: by TMA through the D staging, and evict-first loads",
    "form_reference": "the GPU harness's tests and forms parts with the forms' full check against the other "
                      "family's tensor-core GEMM (not kept): the start-up self-test's disagreement at long K",
    "wait_poll": "the GPU harness's cache and verify parts with the device's wait polling by time (not kept) "
                 "beside the build before: stored-handle requests' phases and delivered TFLOPS",
    "fill_grid": "the GPU harness's tests and verify parts after the generator's grid was capped at one resident "
                 "wave, beside the build before: every GPU test, the fill's time and delivered TFLOPS",
    "forms_reference": "the GPU harness's tests and forms parts with the forms' fp64 reference GEMM register-blocked "
                       "(4x4 outputs a thread): every form's full and fast verification times",
    "diagnose": "gemm-bench --diagnose: every step on the structured probes (all exact)",
    "planted_faults": "the GPU harness's diagnose and tests parts: every GPU test, and what the pattern diagnostics "
                      "say of each fault planted in the real sm_90a kernels (planted_faults_gpu_test)",
    "soak_sass_sanitize": "the GPU harness's soak, sass and sanitize parts",
    "service_run1": "the GPU harness's tests, service, tiny and firsttouch parts",
    "service_run2": "the same on a second host",
    "service_two_gpus": "the GPU harness's service part on two GPUs",
    "bf16_ladder": "the GPU harness's tests, bench, bf16, batch and sass parts: every step on bf16, mixed "
                   "fp16/bf16, MN-contiguous, fused-epilogue and batched problems against an fp64 product, "
                   "gemm-bench --dtype bf16 against cuBLAS and the autotuned cuBLASLt in bf16, and the fp16 ladder "
                   "of the same call (in the summary)",
    "bf16_layouts": "the GPU harness's bf16 part: gemm-bench --dtype bf16 with A, B or both stored MN-contiguous "
                    "(B k x n is x @ W), cuBLAS in the same layout, the same call as the bf16 ladder",
    "bf16_epilogue": "the GPU harness's bf16 part: gemm-bench --dtype bf16 --beta 1, D += A·B in place (C being "
                     "D, as cuBLAS reads it), A and B K-contiguous and x @ W, the same call as the bf16 ladder",
    "batch": "the GPU harness's batch part, the same call as the bf16 ladder: gemm-bench --batch (64 x 512^3 "
             "and 16 x 1024^3, fp16 and bf16, each with its own B and sharing one) against cuBLAS's strided "
             "batched call and the autotuned cuBLASLt",
    "step10_tiles": "the GPU harness's tests, bench, bf16 and sass parts after step 10 gained its medium tile, "
                    "deeper rings for its narrower tiles and C read long before its epilogue: every GPU test, steps "
                    "8-10 in fp16 on small and large squares and K=1024 shapes against cuBLAS and the autotuned "
                    "cuBLASLt, and bf16 with and without beta·C (in the summary)",
    "scaling": "the GPU harness's scaling part on a two-GPU host: delivered TFLOPS unverified, full, fast and by "
               "stored handles from a server on one GPU at 8 in flight and from one on both at 8 and at 16",
    "two_gpu_scaling": "the GPU harness's verify part on one GPU of a two-GPU host, then on both: delivered TFLOPS "
                       "unverified, full, fast and by stored handles, 8 in flight",
}


def ladder_lines(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    by_shape = defaultdict(dict)
    tuned = {}  # step 10 against the autotuned cuBLASLt column, where the run has it
    for r in rows:
        shape = f'{r["m"]}×{r["n"]}×{r["k"]}'
        by_shape[shape][int(r["step"])] = float(r["ratio_to_cublas"])
        if r["step"] == "10" and float(r.get("ratio_to_autotuned") or 0) > 0:
            tuned[shape] = float(r["ratio_to_autotuned"])
    out = ["", "  | shape | step 8 | step 9 | step 10 | step 10 against autotuned cuBLASLt |",
           "  | --- | ---: | ---: | ---: | ---: |"]
    for shape, ratios in by_shape.items():
        cells = [f"{ratios[s]:.2f}" if s in ratios else "-" for s in (8, 9, 10)]
        out.append(f"  | {shape} | {' | '.join(cells)} | {f'{tuned[shape]:.2f}' if shape in tuned else '-'} |")
    out.append("  (time of cuBLAS, or of the autotuned cuBLASLt, over the step's time)")
    return out


def layout_lines(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    short = {"K-contiguous": "K", "MN-contiguous": "MN"}
    by_case, tuned = defaultdict(dict), {}
    for r in rows:
        case = f'A {short[r["a_layout"]]}, B {short[r["b_layout"]]}, {r["m"]}×{r["n"]}×{r["k"]}'
        by_case[case][int(r["step"])] = float(r["ratio_to_cublas"])
        if r["step"] == "10" and float(r.get("ratio_to_autotuned") or 0) > 0:
            tuned[case] = float(r["ratio_to_autotuned"])
    out = ["", "  | layouts, shape | step 8 | step 9 | step 10 | step 10, autotuned |",
           "  | --- | ---: | ---: | ---: | ---: |"]
    for case, ratios in by_case.items():
        out.append(f"  | {case} | " + " | ".join(f"{ratios[s]:.2f}" if s in ratios else "-" for s in (8, 9, 10))
                   + (f" | {tuned[case]:.2f} |" if case in tuned else " | - |"))
    out.append("  (time of cuBLAS, or of the autotuned cuBLASLt, in the same layout over the step's time)")
    return out


def batch_lines(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    by_case, tuned = defaultdict(dict), {}
    for r in rows:
        case = f'{r["dtype"]} {r["batch"]} × {r["m"]}×{r["n"]}×{r["k"]}' + (", one B" if r["shared_b"] == "1" else "")
        by_case[case][int(r["step"])] = float(r["ratio_to_cublas"])
        if r["step"] == "10" and float(r.get("ratio_to_autotuned") or 0) > 0:
            tuned[case] = float(r["ratio_to_autotuned"])
    out = ["", "  | batch | step 6 | step 8 | step 9 | step 10 | step 10, autotuned |",
           "  | --- | ---: | ---: | ---: | ---: | ---: |"]
    for case, ratios in by_case.items():
        out.append(f"  | {case} | " + " | ".join(f"{ratios[s]:.2f}" if s in ratios else "-" for s in (6, 8, 9, 10))
                   + (f" | {tuned[case]:.2f} |" if case in tuned else " | - |"))
    out.append("  (time of cuBLAS's strided batched call, or of the autotuned cuBLASLt, over the step's time)")
    return out


def sweep_lines(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok" and r["step"] == "10"]
    ratios = sorted(float(r["ratio_to_cublas"]) for r in rows)
    if not ratios:
        return []
    share = sum(x >= 1 for x in ratios) / len(ratios)
    return [f"  step 10 against cuBLAS over {len(ratios)} shapes: median {statistics.median(ratios):.2f}, "
            f"10th percentile {ratios[len(ratios) // 10]:.2f}, {100 * share:.0f}% at or above 1"]


def accuracy_lines(path):
    rows = list(csv.DictReader(open(path)))
    failing = sum(int(r["mismatches_with_term"]) > 0 for r in rows)
    worst = max((float(r["ratio_to_cublas"]) for r in rows if r["step"] != "0"), default=0)
    return [f"  {len(rows)} step×shape rows; worst step error {worst:.2f}× cuBLAS's; {failing} failing the bound"]


def index():
    runs = defaultdict(list)
    unnamed = []
    for f in sorted(os.listdir(RESULTS)):
        if f == "README.md":
            continue
        m = NAME.match(f)
        if not m:
            unnamed.append(f)
            continue
        runs[(m.group(1), m.group(2), m.group(3))].append(f)
    if unnamed:
        sys.exit(f"not named <gpu>_<date>_<purpose>.<ext>: {', '.join(unnamed)}")
    out = ["# Benchmark results", "",
           "The current run of each kind, per GPU. Each file is named `<gpu>_<date>_<purpose>`; git keeps",
           "the runs they replaced. `scripts/results_index.py` writes this page from the files (CI checks",
           "that it is up to date). Every figure of gemm-bench is a ratio or a time measured against cuBLAS",
           "in the same process and call; compare only runs of the same GPU.", ""]
    for (gpu, date, purpose), files in sorted(runs.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        what = PURPOSES.get(purpose, purpose.replace("_", " "))
        out.append(f"- **{GPUS[gpu]}, {date}, {purpose.replace('_', ' ')}**: {what}. "
                   + ", ".join(f"`{f}`" for f in files))
        for f in files:
            path = os.path.join(RESULTS, f)
            if f.endswith(".csv") and purpose in ("ladder", "bf16_ladder", "step10_tiles"):
                out += ladder_lines(path)
            elif f.endswith(".csv") and purpose in ("bf16_layouts", "bf16_epilogue"):
                out += layout_lines(path)
            elif f.endswith(".csv") and purpose == "batch":
                out += batch_lines(path)
            elif f.endswith(".csv") and purpose.startswith("sweep"):
                out += sweep_lines(path)
            elif f.endswith(".csv") and purpose.endswith("accuracy"):
                out += accuracy_lines(path)
    return "\n".join(out) + "\n"


def main():
    text = index()
    path = os.path.join(RESULTS, "README.md")
    if "--check" in sys.argv[1:]:
        current = open(path).read() if os.path.exists(path) else ""
        if current != text:
            sys.exit("bench/results/README.md is out of date: run scripts/results_index.py")
        print("1 passed, 0 failed")
        return
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
