"""The server end to end on every GPU: the first request against steady
ones, the service path against its floors (bare gRPC, pinned DMA) measured
here and now, a server with --matrix-dir, every step served and verified,
requests spread over the GPUs, keep-warm and batching."""
import re
import shutil
import statistics
import tempfile
import time

from . import readers

MiB = 1 << 20
INLINE_4096 = ["--max-message-bytes", "256M"]


def median_by(docs, key):
    return statistics.median(d["timing"][key] for d in docs)


def client_ms(runs, key):
    return ", ".join(f"{r['client'][key] * 1e3:.1f}" for r in runs)


def clients_in_turn(lab, i):
    """gemm-client, and bin/gemm-client-before where a bundle holds an earlier
    client (added by hand), each going first every other time: two copies
    of one client measured up to 3.6 ms apart by their place in a pair."""
    if not lab.has_tool("gemm-client-before"):
        return ["gemm-client"]
    return ["gemm-client-before", "gemm-client"] if i % 2 else ["gemm-client", "gemm-client-before"]


def docs(lab, name):
    try:
        return readers.json_docs((lab.out / name).read_text(errors="replace"))
    except OSError:
        return []


def echoes(lab, name):
    return readers.echo_records((lab.out / name).read_text(errors="replace"))


def bench_row(lab, name):
    """The first (shape, step) row of a gemm-client bench --json file."""
    try:
        return readers.bench_results((lab.out / f"{name}.json").read_text())[0]
    except (OSError, ValueError, IndexError):
        return {"rate": 0.0, "p50_us": 0.0, "server": "", "ok": 0, "connections": None}


def service(lab, gpus):
    """The server end to end on every GPU, each figure beside its floor
    measured in the same call: first requests against steady ones, the
    service path against bare gRPC and pinned DMA, tiny and inline 4096^3
    requests, a server with --matrix-dir, every step served and verified,
    requests spread over the GPUs, keep-warm and batching."""
    with lab.gemmd("main", "--workers", "2", "--max-message-bytes", "256M") as main:
        log = main.log.read_text(errors="replace")
        lab.note(*[f"  {l}" for l in log.splitlines() if re.search(r"warm in|unavailable|serving", l)])
        first_and_steady(lab)
        floors(lab)
        tiny_requests(lab)
        inline_4096(lab, main)
        matrix_dir = tempfile.mkdtemp(prefix="gemmd-matrices.", dir="/var/tmp")  # a disk, not a tmpfs
        try:
            with lab.gemmd("durable", *INLINE_4096, "--matrix-dir", matrix_dir):
                durable(lab)
        finally:
            shutil.rmtree(matrix_dir, ignore_errors=True)
        served_steps(lab)
        spread(lab, main, gpus)
    lab.note(f"gemmd exit after SIGTERM: {main.exit_status}")
    crash = [l for l in main.log.read_text(errors="replace").splitlines()
             if re.search(r"SIGSEGV|SIGABRT|\*\*\* ", l)]
    lab.note(*crash[:60])
    keep_warm(lab)
    batching(lab)


def run_4096(lab, out, *args, append=True):
    return lab.client("run", "--m", "4096", "--n", "4096", "--k", "4096", "--step", "0", *args, "--json",
                      out=out, append=append)


def first_and_steady(lab):
    """The first request after start-up against steady ones, and against
    steady ones after the same idle gap (GPU clocks drop when idle)."""
    run_4096(lab, "first_request.json", "--repeats", "1", "--no-verify", append=False)
    for _ in range(5):
        run_4096(lab, "steady_requests.json", "--repeats", "1", "--no-verify")
    for _ in range(3):
        time.sleep(1)
        run_4096(lab, "idle_requests.json", "--repeats", "1", "--no-verify")
    run_4096(lab, "verified_request.json", "--repeats", "20", "--benchmark", append=False)
    first, steady, idle = docs(lab, "first_request.json"), docs(lab, "steady_requests.json"), docs(lab, "idle_requests.json")
    verified = docs(lab, "verified_request.json")
    if not (first and steady and idle and verified):
        lab.note("service: the 4096^3 requests did not all answer (see first_request.json and the others)")
        return
    first = first[0]
    tot = lambda d: d["timing"]["totalSeconds"]
    ker = lambda d: d["timing"]["kernelSeconds"]
    st_tot, st_ker = median_by(steady, "totalSeconds"), median_by(steady, "kernelSeconds")
    id_tot, id_ker = median_by(idle, "totalSeconds"), median_by(idle, "kernelSeconds")
    clock = lambda d: d.get("smClockMhz", 0)
    v = verified[0]
    lab.note(f"server 4096^3 step 0: first request total {tot(first) * 1e3:.2f} ms vs steady median {st_tot * 1e3:.2f} ms "
             f"(x{tot(first) / st_tot:.2f}); kernel {ker(first) * 1e3:.3f} vs {st_ker * 1e3:.3f} ms "
             f"(x{ker(first) / st_ker:.2f})",
             # Whether a slow first kernel is the clock's (the reply's SM clock)
             # or a one-time cost (the requests after it).
             f"  SM clock (MHz) first {clock(first)}, steady {[clock(d) for d in steady]}; kernels in order (ms) "
             f"{[round(ker(d) * 1e3, 3) for d in [first] + steady]}",
             f"  steady requests after the same 1 s idle gap: total {id_tot * 1e3:.2f} ms: first is "
             f"x{tot(first) / id_tot:.2f}; kernel {id_ker * 1e3:.3f} ms: first is x{ker(first) / id_ker:.2f}",
             f"server 4096^3 step 0, 20 repeats, verified={v['verification']['passed']}: {v['tflops']:.1f} TFLOPS "
             f"on {v['device']}")


def echo_floors(run, out):
    """One echo's three floors, a line each: p50 at one call in flight, the
    rate at 32, and the inline 4096^3 request's bytes moved once."""
    run("--mode", "latency", "--concurrency", "1", "--seconds", "3", "--up-bytes", "64", "--down-bytes", "256", out=out)
    run("--mode", "latency", "--concurrency", "32", "--seconds", "3", "--up-bytes", "64", "--down-bytes", "256",
        out=out, append=True)
    run("--mode", "transfer", "--up-bytes", str(64 * MiB), "--down-bytes", str(32 * MiB), "--count", "5",
        out=out, append=True)


def floors(lab):
    """The bare echo three ways: gRPC's defaults, gemmd's transport model in
    one process, and in a process of its own as gemmd is; on some hosts the
    second is the lower, so targets are judged against the lowest."""
    echo = lambda *a, out=None, append=False: lab.run(["grpc-echo-bench", *a], out=out, append=append)
    echo_floors(echo, "echo.txt")
    echo_floors(lab.echo_as_gemmd, "echo_as_gemmd.txt")
    with lab.echo_server() as target:
        remote = lambda *a, out=None, append=False: lab.run(["grpc-echo-bench", "--target", target, *a], out=out,
                                                            append=append)
        echo_floors(remote, "echo_two_processes.txt")
        # 32 in flight over eight connections, as gemm-client bench spreads
        # them: a thread per call, then bench's own client (--pipelined).
        for extra in ([], ["--pipelined"]):
            remote("--mode", "latency", "--concurrency", "32", "--connections", "8", "--seconds", "3", "--up-bytes",
                   "64", "--down-bytes", "256", *extra, out="echo_two_processes_c32x8.txt", append=bool(extra))
    # A one-shot client moves its bytes on a new connection into memory it
    # has never touched: its floor is this one; a warm client's, the above.
    transfer = ["--mode", "transfer", "--up-bytes", str(64 * MiB), "--down-bytes", str(32 * MiB), "--count", "5"]
    echo(*transfer, "--fresh-connection", out="echo_fresh.txt")
    lab.echo_as_gemmd(*transfer, "--fresh-connection", out="echo_fresh.txt", append=True)
    lab.run(["transfer-limits", "--bytes", str(96 * MiB)], out="transfer_limits.txt")
    # A client that polls for its reply instead of sleeping: what one thread
    # wake-up costs here.
    echo("--mode", "latency", "--concurrency", "1", "--seconds", "3", "--up-bytes", "64", "--down-bytes", "256",
         "--busy-poll", out="echo_polling.txt")
    for conns in (4, 8):  # the same bytes split over as many connections
        echo(*transfer, "--connections", str(conns), out="echo.txt", append=True)
    m, t = echoes(lab, "echo_as_gemmd.txt"), echoes(lab, "echo_two_processes.txt")
    lab.note(f"bare echo as gemmd serves, server in a process of its own: 1 in flight p50 {float(t[0]['p50_us']):.0f} us, "
             f"32 in flight {float(t[1]['calls_per_s']):.0f} calls/s, 96 MB transfer {float(t[2]['median_ms']):.1f} ms "
             f"(in one process: {float(m[0]['p50_us']):.0f} us, {float(m[1]['calls_per_s']):.0f} calls/s, "
             f"{float(m[2]['median_ms']):.1f} ms)")


def lowest_floor(lab, row, key, best):
    """The floor of one kind (row of echo_floors) across the three echoes."""
    values = [float(echoes(lab, n)[row][key]) for n in ("echo.txt", "echo_as_gemmd.txt", "echo_two_processes.txt")]
    return values, best(values)


def bench_64(lab, name, *args, client="gemm-client", append=False, seconds="5"):
    """gemm-client bench on 64^3 step 0: the table to NAME.txt, JSON to NAME.json."""
    pre = ["--busy-poll"] if "--busy-poll" in args else []
    rest = [a for a in args if a != "--busy-poll"]
    return lab.run([client, *pre, "bench", "--shapes", "64x64x64", "--steps", "0", "--duration", seconds, *rest,
                    "--json", lab.out / f"{name}.json"], out=f"{name}.txt", append=append)


def tiny_requests(lab):
    """64^3 step 0 through gemmd, 1 and 32 in flight, against the floors."""
    bench_64(lab, "tiny_c1", "--concurrency", "1")
    bench_64(lab, "tiny_c32", "--concurrency", "32")
    bench_64(lab, "tiny_c32_one_connection", "--concurrency", "32", "--connections", "1")
    bench_64(lab, "tiny_c1_polling", "--busy-poll", "--concurrency", "1")
    (e_c1, m_c1, t_c1), f_c1 = lowest_floor(lab, 0, "p50_us", min)
    (e_c32, m_c32, t_c32), _ = lowest_floor(lab, 1, "calls_per_s", max)
    c1, c32 = bench_row(lab, "tiny_c1"), bench_row(lab, "tiny_c32")
    c32x1, c1p = bench_row(lab, "tiny_c32_one_connection"), bench_row(lab, "tiny_c1_polling")
    e32x8 = [float(r["calls_per_s"]) for r in echoes(lab, "echo_two_processes_c32x8.txt")]
    e1p = float(echoes(lab, "echo_polling.txt")[0]["p50_us"])
    lab.note(f"tiny 64^3 step 0, 1 in flight: p50 {c1['p50_us']:.0f} us (target <= 120; bare gRPC echo {e_c1:.0f} us, "
             f"as gemmd serves {m_c1:.0f}, across two processes {t_c1:.0f}: gap {c1['p50_us'] - f_c1:.0f} us to the "
             f"lowest, target <= 60)",
             f"tiny 64^3 step 0, 32 in flight, bench's default {c32['connections']} connections: {c32['rate']:.0f} req/s "
             f"(target >= 40000; the echo across two processes over 8 connections: a thread per call "
             f"{e32x8[0]:.0f}, pipelined as bench {e32x8[-1]:.0f})",
             f"  over one connection: {c32x1['rate']:.0f} req/s (bare echo {e_c32:.0f}, as gemmd serves {m_c32:.0f}, "
             f"across two processes {t_c32:.0f})",
             f"tiny 64^3 step 0, 1 in flight, client polling (--busy-poll): p50 {c1p['p50_us']:.0f} us (echo polling "
             f"too {e1p:.0f} us, gap {c1p['p50_us'] - e1p:.0f} us)",
             *[f"  {n}: {bench_row(lab, n)['server']}" for n in ("tiny_c1", "tiny_c1_polling", "tiny_c32",
                                                                  "tiny_c32_one_connection")])
    if lab.has_tool("gemm-client-before"):
        for i in (1, 2, 3):
            for client in clients_in_turn(lab, i):
                bench_64(lab, f"tiny_c1_{client}", "--concurrency", "1", client=client, seconds="3", append=True)
                _, cpu = bench_64(lab, f"tiny_c32_{client}_{i}", "--concurrency", "32", client=client, seconds="3")
                with open(lab.out / f"tiny_c32_{client}.cpu", "a") as f:
                    f.write(f"{cpu}\n")
        for client in clients_in_turn(lab, 1):
            rates = [bench_row(lab, f"tiny_c32_{client}_{i}")["rate"] for i in (1, 2, 3)]
            cpu = [float(x) for x in (lab.out / f"tiny_c32_{client}.cpu").read_text().split()]
            lab.note(f"  {client:18s} alternately, 32 in flight {', '.join(f'{r:.0f}' for r in rates)} req/s, client "
                     f"CPU {', '.join(f'{c / (r * 3) * 1e6:.0f}' for c, r in zip(cpu, rates))} us per request")


def inline_args(lab, *extra):
    a, b = lab.zeros("a4096", 32 * MiB), lab.zeros("b4096", 32 * MiB)
    return [*INLINE_4096, "run", "--m", "4096", "--n", "4096", "--k", "4096", "--a", a, "--b", b, *extra,
            "--out", lab.work / "d4096", "--json"]


def inline_4096(lab, main):
    """The inline 4096^3 request (64 MiB up, 32 MiB down), one-shot and warm,
    phase by phase; then over four and eight connections (row blocks up, D
    in ranges), each against its bare-echo floor."""
    for _ in range(3):
        lab.client(*inline_args(lab, "--transport", "inline"), out="inline4096.json", append=True)
    lab.client(*INLINE_4096, "bench", "--shapes", "4096x4096x4096", "--steps", "0", "--inline", "--verify",
               "--concurrency", "1", "--count", "9", "--json", lab.out / "inline4096_warm.json", out="inline4096_warm.txt")
    for i in (1, 2, 3):
        for client in clients_in_turn(lab, i) if lab.has_tool("gemm-client-before") else []:
            lab.run([client, *inline_args(lab, "--transport", "inline")], out=f"inline4096_{client}.json", append=True)
        # The client polling for its reply, alternately with one sleeping.
        for wait in (("polling", "sleeping") if i % 2 else ("sleeping", "polling")):
            poll = ["--busy-poll"] if wait == "polling" else []
            lab.client(*poll, *inline_args(lab, "--transport", "inline"), out=f"inline4096_{wait}.json", append=True)
    for conns in (4, 8):
        mark = len(main.log.read_text(errors="replace").splitlines())
        for _ in range(3):
            lab.client(*inline_args(lab, "--connections", str(conns)), out=f"parallel4096_c{conns}.json", append=True)
        # Each stream's own time on the server, to set against the client's.
        streams = [l for l in main.log.read_text(errors="replace").splitlines()[mark:]
                   if re.search(r"(Upload|Download)Matrix status=OK", l)]
        (lab.out / f"parallel4096_c{conns}.streams.log").write_text("\n".join(streams) + "\n")
    for i in (1, 2, 3):
        for client in clients_in_turn(lab, i) if lab.has_tool("gemm-client-before") else []:
            lab.run([client, *inline_args(lab, "--connections", "4")], out=f"parallel4096_c4_{client}.json", append=True)
    summarize_inline(lab)


def summarize_inline(lab):
    runs = docs(lab, "inline4096.json")
    if not runs:
        lab.note("inline 4096^3: no report (see inline4096.json)")
        return
    _, f_tr = lowest_floor(lab, 2, "median_ms", min)
    d = sorted(runs, key=lambda r: r["client"]["roundTripSeconds"])[len(runs) // 2]
    t, c = d["timing"], d["client"]
    g = lambda k: t.get(k, 0.0) * 1e3
    server = sum(g(k) for k in ("prepareSeconds", "queueSeconds", "uploadSeconds", "computeSeconds",
                                "downloadSeconds", "replySeconds"))
    rt = c["roundTripSeconds"] * 1e3
    grpc_net = (c["callSeconds"] - t["totalSeconds"]) * 1e3
    parts = c["serializeSeconds"] * 1e3 + grpc_net + server + c["deserializeSeconds"] * 1e3
    fresh = [float(r["median_ms"]) for r in echoes(lab, "echo_fresh.txt")]
    lab.note(f"inline 4096^3 (64 MiB up, 32 MiB down), one-shot client, median of {len(runs)}: round trip {rt:.1f} ms "
             f"(target <= 50, and <= 1.25x the bare transfer on a new connection {fresh[0]:.1f} ms, as gemmd serves "
             f"{fresh[1]:.1f}: x{rt / min(fresh):.2f} of the lower; on a warm one, lowest of three, {f_tr:.1f}: "
             f"x{rt / f_tr:.2f})")
    warm = bench_row(lab, "inline4096_warm")
    if warm["ok"]:
        lab.note(f"inline 4096^3, warm client (bench --inline --verify, 1 in flight, 9 requests, {warm['ok']} ok): p50 "
                 f"{warm['p50_us'] / 1e3:.1f} ms (target <= 50, and <= 1.25x the warm bare transfer, lowest of three, "
                 f"{f_tr:.1f} ms: x{warm['p50_us'] / 1e3 / f_tr:.2f})", f"  {warm['server']}")
    limits = readers.key_values((lab.out / "transfer_limits.txt").read_text())
    lab.note(f"  client serialize {c['serializeSeconds'] * 1e3:.1f} | gRPC+network {grpc_net:.1f} | server prepare "
             f"{g('prepareSeconds'):.1f} queue {g('queueSeconds'):.1f} upload {g('uploadSeconds'):.1f} compute "
             f"{g('computeSeconds'):.1f} (kernel {g('kernelSeconds'):.2f}, verify {g('verifySeconds'):.2f}) download "
             f"{g('downloadSeconds'):.1f} reply {g('replySeconds'):.1f} | client deserialize "
             f"{c['deserializeSeconds'] * 1e3:.1f} ms: sum {parts:.1f} = {100 * parts / rt:.1f}% of the round trip; "
             f"server phases {100 * server / (t['totalSeconds'] * 1e3):.1f}% of its total",
             f"  server H2D {64 * 1.048576 / max(g('uploadSeconds'), 1e-9):.1f} GB/s, D2H "
             f"{32 * 1.048576 / max(g('downloadSeconds'), 1e-9):.1f} GB/s (target >= 20; pinned DMA here "
             f"{limits.get('h2d_gbps')} / {limits.get('d2h_gbps')} GB/s; one thread's memcpy of 96 MiB "
             f"{limits.get('memcpy_one_thread_ms')} ms), SM clock {d.get('smClockMhz', 0)} MHz")
    for client in ("gemm-client-before", "gemm-client", "sleeping", "polling"):
        alt = docs(lab, f"inline4096_{client}.json")
        if alt:
            lab.note(f"  {client:18s} alternately, {len(alt)} requests: round trip "
                     f"{', '.join(f'{x:.1f}' for x in sorted(r['client']['roundTripSeconds'] * 1e3 for r in alt))} ms; "
                     f"client deserialize "
                     f"{', '.join(f'{x:.1f}' for x in sorted(r['client']['deserializeSeconds'] * 1e3 for r in alt))} ms")
    echo = echoes(lab, "echo.txt")
    for row, conns in ((3, 4), (4, 8)):
        runs = docs(lab, f"parallel4096_c{conns}.json")
        if not runs:
            continue
        p = sorted(runs, key=lambda r: r["client"]["endToEndSeconds"])[len(runs) // 2]
        pc, pt = p["client"], p["timing"]
        e2e, bare = pc["endToEndSeconds"] * 1e3, float(echo[row]["median_ms"])
        lab.note(f"4096^3 over {conns} connections, median of {len(runs)}: end to end {e2e:.1f} ms (target <= 50; bare "
                 f"gRPC transfer over {conns} connections {bare:.1f} ms: x{e2e / bare:.2f}; over one {f_tr:.1f} ms): "
                 f"uploads {pc['uploadSeconds'] * 1e3:.1f} | Multiply {pc['roundTripSeconds'] * 1e3:.1f} (server "
                 f"{pt['totalSeconds'] * 1e3:.1f}: upload {pt['uploadSeconds'] * 1e3:.1f}, download "
                 f"{pt['downloadSeconds'] * 1e3:.1f}) | D in {conns} ranges {pc['downloadSeconds'] * 1e3:.1f} ms; "
                 f"verified={p['verification']['passed']}")
        for client in ("gemm-client-before", "gemm-client") if conns == 4 else ():
            alt = docs(lab, f"parallel4096_c4_{client}.json")
            if alt:
                lab.note(f"  {client:18s} alternately, {len(alt)} requests: end to end "
                         f"{client_ms(alt, 'endToEndSeconds')} ms; D in 4 ranges {client_ms(alt, 'downloadSeconds')} ms")
        lines = (lab.out / f"parallel4096_c{conns}.streams.log").read_text().splitlines()
        ms = lambda kind: [float(re.search(r"latency_ms=([0-9.]+)", l).group(1)) for l in lines if kind in l]
        up, down = ms("UploadMatrix"), ms("DownloadMatrix")
        if up and down:
            lab.note(f"  each stream on the server, median of {len(up)} uploads / {len(down)} downloads: upload "
                     f"{statistics.median(up):.1f} ms (max {max(up):.1f}), download {statistics.median(down):.1f} ms "
                     f"(max {max(down):.1f})")


def durable(lab):
    """4096^3 over four connections against a gemmd that keeps its matrices on
    disk: run's blocks and D are transient, kept in memory only."""
    for i in (1, 2, 3):
        for client in clients_in_turn(lab, i):
            lab.run([client, *inline_args(lab, "--connections", "4")], out=f"parallel4096_c4_durable_{client}.json",
                    append=True)
    for client in clients_in_turn(lab, 1):
        runs = docs(lab, f"parallel4096_c4_durable_{client}.json")
        if runs:
            lab.note(f"4096^3 over 4 connections, gemmd with --matrix-dir, {client}: end to end "
                     f"{client_ms(runs, 'endToEndSeconds')} ms (uploads {client_ms(runs, 'uploadSeconds')}; Multiply "
                     f"{client_ms(runs, 'roundTripSeconds')}); verified="
                     + ",".join(str(r["verification"]["passed"]) for r in runs))


def served_steps(lab):
    """Every step through gemm-client, verified against cuBLAS on the server:
    the single-tile steps on their one tile, the rest on 4096^3."""
    for step in range(11):
        shape = {1: (128, 128, 64), 2: (128, 128, 4096)}.get(step, (4096, 4096, 4096))
        name = f"served_step{step}.json"
        rc, _ = lab.client("run", "--m", shape[0], "--n", shape[1], "--k", shape[2], "--step", step, "--repeats", "5",
                           "--json", out=name)
        found = docs(lab, name)
        if found:
            d, v = found[0], found[0]["verification"]
            lab.note(f"served step {step:>2}: verified={v['passed']} mismatches={v.get('mismatches', 0)} "
                     f"tflops={d['tflops']:.1f} on {d['device']}")
        else:  # the client printed its error instead of a report
            lab.note(f"served step {step:>2}: rc={rc} {(lab.out / name).read_text(errors='replace').strip()[:200]}")


def spread(lab, main, gpus):
    """A burst of concurrent requests, then each device's counters."""
    lab.client("bench", "--shapes", "4096x4096x4096", "--concurrency", 4 * gpus, "--count", 40 * gpus,
               out="server_bench.txt")
    text = main.metrics()
    (lab.out / "metrics.txt").write_text(text)
    samples = readers.metric_samples(text)
    def show(names, only=lambda v: True):
        return " ".join(f"{n}{{{','.join(f'{k}={v}' for k, v in l.items())}}} {v:g}"
                        for n, l, v in samples if n in names and only(v))
    total = [l for l in (lab.out / "server_bench.txt").read_text(errors="replace").splitlines() if l.startswith("total")]
    lab.note(f"kernel runs per device: {show({'gemm_kernel_runs_total'})}",
             f"server bench: {' '.join(total)}",
             "GPU telemetry: " + show({f"gemm_gpu_{n}" for n in ("power_watts", "power_limit_watts", "sm_clock_hertz",
                                                                  "temperature_celsius", "utilization_ratio")}),
             "  clock held by: " + " ".join(l.get("reason", "?") for n, l, v in samples
                                           if n == "gemm_gpu_clock_event_active" and v == 1),
             "  phases (count, sum s): " + show({"gemm_request_phase_seconds_count",
                                                 "gemm_request_phase_seconds_sum"})[:600])


def keep_warm(lab):
    """--keep-warm-ms off and on: idle power, and the first request after a
    1 s idle gap against steady ones."""
    for keep in (0, 5):
        with lab.gemmd(f"keep{keep}", "--keep-warm-ms", keep) as server:
            for _ in range(5):
                run_4096(lab, f"keep{keep}_steady.json", "--no-verify")
            for _ in range(5):
                time.sleep(1)
                run_4096(lab, f"keep{keep}_after_idle.json", "--no-verify")
            time.sleep(3)
            samples = readers.metric_samples(server.metrics())
        steady, idle = docs(lab, f"keep{keep}_steady.json"), docs(lab, f"keep{keep}_after_idle.json")
        if not (steady and idle):
            lab.note(f"keep-warm {keep}: no reports")
            continue
        power = next((v for n, _, v in samples if n == "gemm_gpu_power_watts"), float("nan"))
        clock = next((v for n, _, v in samples if n == "gemm_gpu_sm_clock_hertz"), float("nan"))
        lab.note(f"keep-warm {'off' if keep == 0 else f'{keep} ms'}: after a 1 s gap total "
                 f"x{median_by(idle, 'totalSeconds') / median_by(steady, 'totalSeconds'):.2f}, kernel "
                 f"x{median_by(idle, 'kernelSeconds') / median_by(steady, 'kernelSeconds'):.2f} of steady; idle "
                 f"{power:.0f} W at {clock / 1e6:.0f} MHz")


def batching(lab):
    """--batch-max off and on in the same benchmark: small step-0 GEMMs at 32
    in flight, unverified (gemm-client's default) and verified."""
    cases = (("64x64x64", []), ("64x64x64", ["--verify"]), ("256x256x256", ["--verify"]))
    rates = {}
    for batch in (1, 32):
        with lab.gemmd(f"batch{batch}", "--workers", "2", "--batch-max", batch) as server:
            for shape, extra in cases:
                name = f"batch{batch}_{shape}{''.join(extra)}"
                lab.client("bench", "--shapes", shape, "--steps", "0", "--concurrency", "32", "--duration", "4", *extra,
                           "--json", lab.out / f"{name}.json", out=f"{name}.txt")
                rates[(batch, shape + "".join(extra))] = bench_row(lab, name)["rate"]
            samples = readers.metric_samples(server.metrics())
        if batch == 32:
            count = readers.metric_sum(samples, "gemm_batch_size_count")
            total = readers.metric_sum(samples, "gemm_batch_size_sum")
    for shape, extra in cases:
        case = shape + "".join(extra)
        off, on = rates[(1, case)], rates[(32, case)]
        lab.note(f"batching {case}, 32 in flight: off {off:.0f} req/s, on (--batch-max 32) {on:.0f} req/s: "
                 f"x{on / off if off else 0:.2f}")
    lab.note(f"batching on: {count:.0f} launches, mean batch {total / count if count else 0:.1f} requests")
