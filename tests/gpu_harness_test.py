"""The GPU harness's readers and summaries (scripts/gpu/harness), on output
recorded from the programs it runs: tests/data/gpu_harness/README.md says
where each file came from."""
import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts" / "gpu"))

from harness import readers  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.__main__ import PARTS, PARTS_IN_ORDER, part_summaries, parts_to_run  # noqa: E402
from harness import kernel_parts, ladder_targets, ncu_parts  # noqa: E402
from harness.capacity_parts import limit_text  # noqa: E402
from harness.kernel_parts import sm100_verdicts  # noqa: E402
from harness.ncu_parts import CYCLES, TENSOR  # noqa: E402
from harness.startup_parts import first_touch_ratios  # noqa: E402
from harness.transport_parts import per_name  # noqa: E402

DATA = HERE / "data" / "gpu_harness"


def recorded(name):
    return (DATA / name).read_text()


class ClientOutputTest(unittest.TestCase):
    def test_run_reports_are_read_one_by_one(self):
        docs = readers.json_docs(recorded("client_run.json"))
        self.assertEqual(len(docs), 2)
        for d in docs:
            self.assertEqual(d["shape"], {"m": "100", "n": "70", "k": "50"})
            self.assertTrue(d["verification"]["passed"])
            self.assertGreater(d["client"]["roundTripSeconds"], d["timing"]["totalSeconds"])

    def test_bench_rows_carry_rate_latency_and_the_server_phases_in_request_order(self):
        (row,) = readers.bench_results(recorded("client_bench.json"))
        self.assertEqual(row["shape"], "64x64x64")
        self.assertAlmostEqual(row["rate"], row["requests_per_second"])
        self.assertAlmostEqual(row["p50_us"], row["latency_p50_ms"] * 1e3)
        self.assertEqual(row["connections"], 1)
        words = row["server"].split()
        self.assertEqual(words[:3], ["server", "p50", "ms:"])
        order = [w for w in words if w in ("prepare", "queue", "upload", "compute", "download", "reply", "total")]
        self.assertEqual(order, ["prepare", "queue", "upload", "compute", "download", "reply", "total"])

    def test_echo_lines_are_records_and_other_lines_are_left_out(self):
        text = "a line the program printed on the side\n" + recorded("echo.txt")
        latency, transfer = readers.echo_records(text)
        self.assertEqual(latency["mode"], "latency")
        self.assertGreater(float(latency["p50_us"]), 0)
        self.assertEqual(transfer["mode"], "transfer")
        self.assertGreater(float(transfer["median_ms"]), 0)
        self.assertEqual(readers.key_values("transfer-limits: h2d_gbps=55.4 d2h_gbps=55.2"),
                         {"h2d_gbps": "55.4", "d2h_gbps": "55.2"})


class BackToBackTest(unittest.TestCase):
    def test_each_shapes_step_10_row_gives_its_two_limits(self):
        limits = readers.back_to_back_limits(recorded("back_to_back.md"))
        self.assertEqual(limits, {4096: (665.0, 567.0), 8192: (684.0, 626.0)})
        self.assertEqual(readers.back_to_back_limits(recorded("back_to_back.md"), step=0)[8192], (663.0, 610.0))
        self.assertEqual(readers.back_to_back_limits("gemm-bench: step 10: a CUDA call failed\n"), {})

    def test_a_delivered_figure_is_put_beside_both_limits(self):
        limits = readers.back_to_back_limits(recorded("back_to_back.md"))
        text = limit_text(510.0, 4096, {4096: 780.0}, limits)
        self.assertIn("x0.65 of gemm-bench's 780", text)
        self.assertIn("back to back 665 alone, 567 with inputs generated: x0.90 of that", text)
        self.assertIn("x0.00 of that", limit_text(510.0, 2048, {}, limits))  # no limit measured: no ratio


class TestReportTest(unittest.TestCase):
    def test_skipped_tests_are_not_counted_as_run(self):
        self.assertEqual(readers.gtest_counts(recorded("gtest_skipped.json")),
                         {"ran": 0, "failed": [], "skipped": 3})

    def test_passed_tests_are_counted(self):
        self.assertEqual(readers.gtest_counts(recorded("gtest_passed.json")),
                         {"ran": 3, "failed": [], "skipped": 0})

    def test_a_failed_test_is_named(self):
        counts = readers.gtest_counts(recorded("gtest_failed.json"))
        self.assertEqual(counts["failed"], ["SoakTest.NothingIsLostAcrossAKillAndRollingRestarts"])
        self.assertEqual(counts["ran"], 2)


class MetricsTest(unittest.TestCase):
    def test_samples_with_labels_and_sums_over_them(self):
        samples = readers.metric_samples(recorded("metrics.txt"))
        runs = [(labels, v) for name, labels, v in samples if name == "gemm_kernel_runs_total"]
        self.assertEqual(runs, [({"device": "cpu:0", "step": "0"}, 10494.0)])
        self.assertEqual(readers.metric_sum(samples, "gemm_request_phase_seconds_count"), 6 * 10494)
        self.assertEqual(readers.metric_sum(samples, "gemm_batch_size_count"), 0)
        self.assertFalse(any(name.startswith("#") for name, _, _ in samples))

    def test_escaped_quotes_in_label_values(self):
        (sample,) = readers.metric_samples('gemm_step_unavailable{reason="a \\"quoted\\" word",step="9"} 1\n')
        self.assertEqual(sample[1]["step"], "9")
        self.assertEqual(sample[2], 1.0)


class KernelToolsTest(unittest.TestCase):
    def test_diagnose_table_rows(self):
        text = ("| step | probe | diagnosis |\n| ---: | --- | --- |\n"
                "| 4 | one tile, one k-tile 128x128x64, decoding k | exact |\n"
                "| 9 | one cluster tile 256x256x256, decoding rows | tile halves swapped between the CTAs of a pair "
                "(rows 0-127 hold rows 128-255) |\n")
        rows = readers.diagnose_rows(text)
        self.assertEqual(rows[0], (4, "one tile, one k-tile 128x128x64, decoding k", "exact"))
        self.assertEqual(rows[1][0], 9)
        self.assertTrue(rows[1][2].startswith("tile halves swapped"))

    def test_vendor_padding_rows_padded_and_not(self):
        rows = readers.vendor_padding_rows(recorded("vendor_padding.md"))
        self.assertEqual(len(rows), 9)  # the header and its rule are not rows
        self.assertEqual(rows[0], {"shape": "257x383x301", "batch": 1, "dense": 0.0113, "padded": 0.0141,
                                   "aligned": 0.006})
        self.assertEqual([r["shape"] for r in rows if r["padded"] > r["dense"]], ["257x383x301"])
        unpadded = readers.vendor_padding_rows(recorded("vendor_padding_batch_unpadded.md"))
        self.assertEqual([(r["batch"], r["padded"]) for r in unpadded], [(16, None)] * 3)
        self.assertEqual(unpadded[0]["aligned"], 0.0539)

    def test_ncu_cycles_per_kernel_with_thousands_separators(self):
        kernels = readers.ncu_csv(recorded("ncu_64x64x64.csv"))
        self.assertIn("TwoConsumersNarrowKernel", kernels)
        narrow = kernels["TwoConsumersNarrowKernel"]
        self.assertTrue(all(c > 1000 and c == int(c) for c in narrow[CYCLES]))
        self.assertTrue(all(0 <= t <= 100 for t in narrow[TENSOR]))
        self.assertEqual(len(narrow[CYCLES]), len(narrow[TENSOR]))
        self.assertEqual(readers.ncu_csv("==PROF== no kernels were profiled\n"), {})

    def test_stall_reasons_per_kernel_largest_first(self):
        # Made up in ncu's --csv format (ncu_64x64x64.csv's header); two
        # launches of step 10 and one of step 8, the metric names as the
        # stallncu part asks for them.
        header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
                  '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')

        def row(launch, kernel, metric, value):
            return (f'"{launch}","1","gemm-bench","127.0.0.1","{kernel}","1","13","(384, 1, 1)","(132, 1, 1)",'
                    f'"0","9.0","Command line profiler metrics","{metric}","","{value}"\n')

        stalled = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio".format
        text = "==PROF== Connected to process 1\n" + header + "".join([
            row(0, "TwoConsumersKernel", CYCLES, "308,021"),
            row(0, "TwoConsumersKernel", stalled("long_scoreboard"), "1.50"),
            row(0, "TwoConsumersKernel", stalled("barrier"), "0.40"),
            row(0, "TwoConsumersKernel", stalled("wait"), "2.10"),
            row(1, "TwoConsumersKernel", stalled("long_scoreboard"), "1.70"),
            row(1, "TwoConsumersKernel", stalled("barrier"), "0.60"),
            row(1, "TwoConsumersKernel", stalled("wait"), "2.30"),
            row(2, "WarpSpecializedKernel", stalled("math_pipe_throttle"), "0.90"),
            row(2, "WarpSpecializedKernel", "smsp__average_warps_issue_stalled_barrier_per_warp_active.pct", "12"),
        ])
        reasons = ncu_parts.stall_reasons(readers.ncu_csv(text))
        self.assertEqual(list(reasons), ["TwoConsumersKernel", "WarpSpecializedKernel"])
        step10 = reasons["TwoConsumersKernel"]
        self.assertEqual(list(step10), ["wait", "long_scoreboard", "barrier"])
        self.assertAlmostEqual(step10["wait"], 2.2)
        self.assertAlmostEqual(step10["long_scoreboard"], 1.6)
        # Only the per-issue breakdown counts; cycles and other stall metrics are not reasons.
        self.assertEqual(reasons["WarpSpecializedKernel"], {"math_pipe_throttle": 0.9})
        self.assertEqual(ncu_parts.stall_reasons(readers.ncu_csv("==PROF== no kernels were profiled\n")), {})

    def test_stall_changes_put_the_largest_either_way_first(self):
        changes = ncu_parts.stall_changes({"wait": 2.0, "barrier": 0.5, "branch_resolving": 0.1},
                                          {"wait": 2.05, "barrier": 0.2, "long_scoreboard": 0.9})
        self.assertEqual(list(changes), ["long_scoreboard", "barrier", "branch_resolving", "wait"])
        self.assertAlmostEqual(changes["long_scoreboard"], 0.9)
        self.assertAlmostEqual(changes["barrier"], -0.3)
        self.assertAlmostEqual(changes["branch_resolving"], -0.1)
        self.assertAlmostEqual(changes["wait"], 0.05)

    def test_fast_check_passes_are_named_in_launch_order(self):
        passes = ncu_parts.fast_check_passes(readers.ncu_csv(recorded("ncu_fast_check.csv")))
        self.assertEqual(list(passes), [*ncu_parts.FAST_CHECK_PASSES, "samples"])
        for name, metrics in passes.items():
            self.assertEqual(set(metrics), set(ncu_parts.FAST_CHECK_METRICS), name)
            self.assertGreater(metrics["gpu__time_duration.sum"], 1000, name)
        instructions = {name: m["smsp__inst_executed.sum"] for name, m in passes.items()}
        # The two passes of each kind run one kernel: same instructions.
        self.assertEqual(instructions["b_rows"], instructions["a_columns"])
        self.assertEqual(instructions["a_rows"], instructions["b_columns"])
        self.assertGreater(instructions["d_rows"], instructions["b_rows"])

    def test_d_tiles_take_the_place_of_d_lines(self):
        # D's rows and columns in one kernel (DTilesKernel); the capture also
        # holds the next check's first LinesKernel, which is not a pass of this one.
        passes = ncu_parts.fast_check_passes(readers.ncu_csv(recorded("ncu_fast_check_tiles.csv")))
        self.assertEqual(list(passes), [*ncu_parts.FAST_CHECK_OPERAND_PASSES, "d_tiles", "samples"])
        for name, metrics in passes.items():
            self.assertEqual(set(metrics), set(ncu_parts.FAST_CHECK_METRICS), name)
        instructions = {name: m["smsp__inst_executed.sum"] for name, m in passes.items()}
        self.assertEqual(instructions["b_rows"], instructions["a_columns"])
        self.assertGreater(instructions["d_tiles"], instructions["b_rows"])

    def test_operand_tiles_are_named_in_the_checks_order(self):
        # Every operand pass by tiles: A's columns, B's tiles, A's rows; the
        # capture's later tile launches belong to the next check.
        passes = ncu_parts.fast_check_passes(readers.ncu_csv(recorded("ncu_fast_check_operand_tiles.csv")))
        self.assertEqual(list(passes), ["a_columns", "b_tiles", "a_rows", "d_tiles", "samples"])
        instructions = {name: m["smsp__inst_executed.sum"] for name, m in passes.items()}
        # B's tiles take both of B's passes, A's launches one each.
        self.assertGreater(instructions["b_tiles"], instructions["a_columns"])
        self.assertGreater(instructions["b_tiles"], instructions["a_rows"])

    def test_mixed_operand_passes_are_numbered_not_guessed(self):
        passes = ncu_parts.fast_check_passes(readers.ncu_csv(recorded("ncu_fast_check_mixed_tiles.csv")))
        self.assertEqual(list(passes), ["operand_lines_1", "operand_lines_2", "operand_tiles_1", "operand_tiles_2",
                                        "d_tiles", "samples"])
        for name, metrics in passes.items():
            self.assertEqual(set(metrics), set(ncu_parts.FAST_CHECK_METRICS), name)

    def test_fast_check_samples_are_found_as_clusters_too(self):
        # Both operands stored MN-contiguous: the samples run as ClusterSamplesKernel.
        passes = ncu_parts.fast_check_passes(readers.ncu_csv(recorded("ncu_fast_check_clusters.csv")))
        self.assertEqual(list(passes), [*ncu_parts.FAST_CHECK_PASSES, "samples"])
        self.assertEqual(set(passes["samples"]), set(ncu_parts.FAST_CHECK_METRICS))
        self.assertGreater(passes["samples"]["gpu__time_duration.sum"], 1000)

    def test_sanitizer_findings_are_split_between_the_ladder_and_cublas(self):
        reported, ours, vendor = readers.sanitizer_findings(recorded("sanitizer_initcheck.txt"))
        self.assertEqual(reported, "55902")
        self.assertEqual(dict(ours), {"host call in TmaProblem::Finish": 2})
        self.assertEqual(dict(vendor), {})
        text = ("========= Invalid __global__ read of size 4 bytes\n"
                "=========     at 0x1f0 in void gemm::sm90::TwoConsumersKernel<1>(Params)\n"
                "========= Invalid __global__ read of size 4 bytes\n"
                "=========     at 0x20 in nvjet_sm90_hsh_64x8_64x16_1x4_h_bz_TNT(Params)\n"
                "========= ERROR SUMMARY: 2 errors\n")
        reported, ours, vendor = readers.sanitizer_findings(text)
        self.assertEqual((reported, dict(ours)), ("2", {"step 10": 1}))
        self.assertEqual(list(vendor), ["nvjet_sm90_hsh_64x8_64x16_1x4_h_bz_TNT"])

    def test_sass_of_every_sm100_step_is_ok_and_the_pair_shows_in_steps_9_and_10(self):
        counts = readers.sass_opcodes(recorded("sass_extract.txt"))
        hgmma = sum(c for (arch, _), ops in counts.items() if arch == "sm_90a" for op, c in ops.items()
                    if op.startswith("HGMMA"))
        self.assertGreater(hgmma, 0)
        lines = sm100_verdicts(counts)
        verdicts = [l for l in lines if "_" in l.split()[1]]
        self.assertEqual(len(verdicts), 10, lines)
        self.assertTrue(all(" ok: " in l for l in verdicts), verdicts)
        self.assertTrue(any(l.startswith("sm_100a step 9 UTCHMMA.2CTA") for l in lines))
        self.assertFalse(any(l.startswith("sm_100a step 8 UTCHMMA.2CTA") for l in lines))

    def test_an_sm100_kernel_without_tma_stores_is_flagged(self):
        counts = readers.sass_opcodes(recorded("sass_extract.txt"))
        step4 = next(k for k in counts if k[0] == "sm_100a" and "step04_tma" in k[1])
        for op in [op for op in counts[step4] if op.startswith("UTMASTG")]:
            del counts[step4][op]
        flagged = [l for l in sm100_verdicts(counts) if "CHECK" in l]
        self.assertEqual(len(flagged), 1)
        self.assertIn("step04_tma", flagged[0])


class LabTest(unittest.TestCase):
    def test_exit_status_cpu_time_and_a_program_past_its_time(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as out:
            lab = Lab(Path(root), Path(out))
            self.assertEqual(lab.run(["sh", "-c", "echo said; exit 3"], out="said.txt")[0], 3)
            self.assertEqual((Path(out) / "said.txt").read_text(), "said\n")
            rc, cpu = lab.run(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            self.assertEqual(rc, 0)
            self.assertGreater(cpu, 0)
            self.assertEqual(lab.run(["sleep", "30"], timeout=0.3)[0], 124)
            lab.note("a line")
            self.assertEqual(lab.summary.read_text(), "a line\n")

    def test_builds_added_by_hand_are_found_by_pattern_and_must_run(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as out:
            lab = Lab(Path(root), Path(out))
            lab.bin.mkdir(parents=True)
            for name, mode in (("gemm-bench", 0o755), ("gemm-bench-before", 0o755), ("gemm-bench-variant", 0o755),
                               ("gemm-bench-notes", 0o644), ("gemmd-before", 0o755), ("grpc-echo-bench", 0o755)):
                (lab.bin / name).write_text("#!/bin/sh\n")
                (lab.bin / name).chmod(mode)
            self.assertEqual(lab.tools_like("gemm-bench-*"), ["gemm-bench-before", "gemm-bench-variant"])
            self.assertEqual(lab.tools_like("gemm-bench-before*"), ["gemm-bench-before"])
            self.assertEqual(lab.tools_like("gemmd-before*"), ["gemmd-before"])
            lab.cleanup()


class SummariesTest(unittest.TestCase):
    def test_first_touch_takes_the_median_variant_of_a_class(self):
        ((shape, kernel, total, totals),) = first_touch_ratios(readers.json_docs(recorded("first_touch_one_class.json")))
        self.assertEqual((shape["n"], shape["k"]), ("2000", "1000"))
        self.assertEqual(len(totals), 3)
        self.assertEqual(total[2], sorted(totals)[1])
        self.assertAlmostEqual(total[0] / total[1], total[2])

    def test_cpu_by_thread_name_counts_threads_that_started_between_samples(self):
        before = {"1": ("gemm-worker-0", 100), "2": ("reply-sender", 50)}
        after = {"1": ("gemm-worker-0", 160), "2": ("reply-sender", 50), "3": ("reply-sender", 20)}
        self.assertEqual(per_name(before, after, 10), [("gemm-worker-0", 6.0), ("reply-sender", 2.0)])

    def test_task_ticks_read_past_a_name_with_spaces_and_parentheses(self):
        stat = "4242 (gemm worker (1)) S 1 4242 4242 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 9 0 1000 0 0"
        self.assertEqual(readers.task_ticks(stat), 42)
        own = Path(f"/proc/{os.getpid()}/stat").read_text()
        self.assertGreaterEqual(readers.task_ticks(own), 0)

    def test_every_part_says_what_it_measures(self):
        # `run.sh --list` prints these: a part without a docstring would be a blank line.
        summaries = part_summaries()
        self.assertEqual([name for name, _ in summaries], list(PARTS_IN_ORDER))
        for name, summary in summaries:
            self.assertGreater(len(summary.split()), 8, name)
            self.assertNotIn("\n", summary, name)
        for name, (function, takes) in PARTS.items():
            self.assertTrue(set(takes) <= {"gpus", "compute_major"}, name)

    def test_parts_keep_their_order_and_a_b200_diagnoses_first(self):
        self.assertEqual(parts_to_run("", 9), list(PARTS_IN_ORDER))
        self.assertEqual(parts_to_run("sass tests", 9), ["tests", "sass"])
        self.assertEqual(parts_to_run("sass tests", 10), ["diagnose", "tests", "sass"])
        with self.assertRaises(SystemExit) as refused:
            parts_to_run("tests benchmark", 9)
        self.assertIn("benchmark", str(refused.exception))

    def test_a_b200_diagnoses_all_ten_steps_and_prints_the_whole_table(self):
        """What run.sh does first on a pretended compute capability 10
        device: gemm-bench --diagnose over steps 1-10, every row printed;
        elsewhere only the rows that are not exact."""
        import tempfile

        class FakeLab:
            def __init__(self, out):
                self.out, self.args, self.notes = out, None, []

            def run(self, args, out=None, timeout=None):
                self.args = [str(a) for a in args]
                rows = [f"| {s} | one tile, one k-tile 128x128x64, decoding k | "
                        f"{'exact' if s != 9 else 'K16 slices exchanged'} |" for s in range(1, 11)]
                (self.out / out).write_text("| step | probe | diagnosis |\n| ---: | --- | --- |\n" + "\n".join(rows))
                return 0, ""

            def note(self, *lines):
                self.notes += lines

        with tempfile.TemporaryDirectory() as tmp:
            for major, printed in ((10, 10), (9, 1)):
                lab = FakeLab(Path(tmp))
                kernel_parts.diagnose(lab, major)
                self.assertEqual(lab.args[:2], ["gemm-bench", "--diagnose"])
                self.assertEqual(lab.args[lab.args.index("--steps") + 1].split(","), [str(s) for s in range(1, 11)])
                self.assertIn("(9 probes exact of 10)", lab.notes[0])
                self.assertEqual(sum(n.startswith("| ") and n[2].isdigit() for n in lab.notes), printed, lab.notes)


class BenchRowLineTest(unittest.TestCase):
    """A gemm-bench CSV row as the summary prints it."""

    ROW = {"m": "4096", "n": "4096", "k": "4096", "step": "10", "tflops": "760.4", "ratio_to_cublas": "0.971",
           "ratio_to_autotuned": "0.969"}

    def test_a_row_without_c_gives_its_ratios_to_the_vendor(self):
        line = kernel_parts.bench_row_line("bf16 A k B k beta 0", dict(self.ROW, ratio_to_beta0="0"))
        self.assertEqual(line, "bf16 A k B k beta 0 4096x4096x4096 step 10: 760.4 TFLOPS, 0.971 of cuBLAS, "
                               "0.969 of autotuned cuBLASLt")

    def test_a_row_with_c_also_gives_its_cost_within_the_process(self):
        line = kernel_parts.bench_row_line("bf16 A k B k beta 1", dict(self.ROW, ratio_to_beta0="0.9533"))
        self.assertTrue(line.endswith(", 0.953 of itself without C"), line)

    def test_a_csv_from_before_the_column_reads_as_without_c(self):
        self.assertNotIn("without C", kernel_parts.bench_row_line("fp16", self.ROW))


class LadderTargetsTest(unittest.TestCase):
    """The targets judged from gemm-bench's CSV rows (its --csv columns)."""

    @staticmethod
    def row(step, shape, dtype="fp16", a="K-contiguous", b="K-contiguous", beta="0", batch=1, shared=0,
            tflops=700.0, cublas=1.02, autotuned=1.01):
        m, n, k = shape
        return {"step": str(step), "m": str(m), "n": str(n), "k": str(k), "dtype": dtype, "a_layout": a,
                "b_layout": b, "beta": beta, "batch": str(batch), "shared_b": str(shared), "tflops": str(tflops),
                "ratio_to_cublas": str(cublas), "ratio_to_autotuned": str(autotuned)}

    def every_row(self):
        """A call in which every target holds."""
        rows = []
        mn, kk = "MN-contiguous", "K-contiguous"
        for dtype in ("fp16", "bf16"):
            for size in (1024, 2048, 4096, 8192):
                for step in (8, 9, 10):
                    rows.append(self.row(step, (size,) * 3, dtype, tflops=700.0 + step))
            rows.append(self.row(10, (4096, 4096, 1024), dtype))
            for entries, size in ((64, 512), (16, 1024)):
                for shared in (0, 1):
                    rows.append(self.row(10, (size,) * 3, dtype, batch=entries, shared=shared))
        for a, b in ((kk, mn), (mn, kk), (mn, mn)):
            for size in (4096, 8192):
                rows.append(self.row(10, (size,) * 3, "bf16", a, b, tflops=705.0))
        rows.append(self.row(10, (4096,) * 3, "bf16", kk, kk, beta="1", tflops=680.0))
        rows.append(self.row(10, (4096,) * 3, "bf16", kk, mn, beta="1", tflops=690.0))
        sweep = [self.row(10, (100 + i, 200, 300), "bf16", kk, mn, cublas=0.9 + 0.1 * i) for i in range(5)]
        return rows, sweep

    def test_a_call_that_meets_every_target_is_judged_so(self):
        rows, sweep = self.every_row()
        results = ladder_targets.verdicts(rows, sweep)
        self.assertEqual(len(results), 8)
        self.assertTrue(all(ok for _, _, ok in results), results)

    def test_the_worst_case_of_a_missed_target_is_named(self):
        rows, sweep = self.every_row()
        slow = next(r for r in rows if r["step"] == "9" and r["m"] == "8192" and r["dtype"] == "bf16")
        slow["tflops"] = str(0.9 * float(slow["tflops"]))
        results = {label: (text, ok) for label, text, ok in ladder_targets.verdicts(rows, sweep)}
        text, ok = next(v for label, v in results.items() if label.startswith("step 9 / step 8"))
        self.assertFalse(ok)
        self.assertIn("bf16 8192^3", text)
        self.assertEqual(sum(1 for _, ok in results.values() if ok), 7)

    def test_beta_over_beta_zero_is_the_same_layouts_tflops(self):
        rows, sweep = self.every_row()
        results = dict((label, (text, ok)) for label, text, ok in ladder_targets.verdicts(rows, sweep))
        text, ok = next(v for label, v in results.items() if "beta = 1" in label)
        self.assertTrue(ok)
        self.assertIn(f"lowest {680.0 / 710.0:.3f} (K,K)", text)

    def test_beta_cost_comes_from_the_beta_run_itself_where_it_timed_both(self):
        rows, sweep = self.every_row()
        for r in rows:
            if r["beta"] == "1":
                r["ratio_to_beta0"] = "0.960" if r["b_layout"] == "K-contiguous" else "0.940"
        results = dict((label, (text, ok)) for label, text, ok in ladder_targets.verdicts(rows, sweep))
        text, ok = next(v for label, v in results.items() if "beta = 1" in label)
        self.assertFalse(ok)
        self.assertIn("lowest 0.940 (K,MN)", text)

    def test_a_target_without_its_rows_is_not_measured_never_met(self):
        rows, sweep = self.every_row()
        rows = [r for r in rows if r["batch"] == "1"]
        results = ladder_targets.verdicts(rows, [])
        by_label = {label: ok for label, _, ok in results}
        self.assertIsNone(next(ok for label, ok in by_label.items() if label.startswith("batched")))
        self.assertIsNone(next(ok for label, ok in by_label.items() if "sweep" in label))
        self.assertEqual(sum(1 for ok in by_label.values() if ok), 6)

    def test_the_part_reads_the_calls_csv_files(self):
        import csv
        import tempfile

        rows, sweep = self.every_row()

        class FakeLab:
            def __init__(self, out):
                self.out, self.notes = out, []

            def note(self, *lines):
                self.notes += lines

        with tempfile.TemporaryDirectory() as tmp:
            for name, part in (("bench.csv", rows), (ladder_targets.SWEEP, sweep)):
                with open(Path(tmp) / name, "w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=list(part[0].keys()))
                    writer.writeheader()
                    writer.writerows(part)
            lab = FakeLab(Path(tmp))
            ladder_targets.targets(lab)
            self.assertEqual(lab.notes[0], "ladder targets: 8 of 8 met, 0 not measured in this call")
            self.assertEqual(len(lab.notes), 9)


if __name__ == "__main__":
    unittest.main()
