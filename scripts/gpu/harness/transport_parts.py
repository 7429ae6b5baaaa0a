"""Tiny requests and what bounds them: gemmd's settings one after another
beside a bare gRPC echo, CPU per request by thread, and the echo under
each of gRPC's server models."""
import collections
import os
import time
from pathlib import Path

from . import readers
from .service_part import bench_64, bench_row, docs, inline_args

HZ = os.sysconf("SC_CLK_TCK")


def proc_ticks(pid):
    return readers.task_ticks(Path(f"/proc/{pid}/stat").read_text())


def thread_ticks(pid):
    """{thread id: (name, CPU ticks)} for each thread of PID (gemmd names its
    own: server/thread_name.h); one that ended mid-read is left out."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            threads[task.name] = ((task / "comm").read_text().strip(), readers.task_ticks((task / "stat").read_text()))
        except (OSError, ValueError):
            continue
    return threads


def machine_ticks():
    """(busy, idle) ticks of the whole machine, from /proc/stat."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return f[0] + f[1] + f[2] + f[5] + f[6], f[3] + f[4]


def per_name(before, after, divisor):
    """CPU by thread name between two thread_ticks samples, over DIVISOR."""
    total = collections.Counter()
    for tid, (name, ticks) in after.items():
        total[name] += ticks - before.get(tid, (name, 0))[1]
    return [(name, t / divisor) for name, t in total.most_common() if t > 0]


def busiest(before, after, seconds):
    """Each thread's share of a core over a window, busiest first, by name:
    one thread at a full core bounds the rate however idle the machine is."""
    shares = collections.defaultdict(list)
    for tid, (name, ticks) in after.items():
        shares[name].append((ticks - before.get(tid, (name, 0))[1]) / HZ / seconds * 100)
    ranked = sorted(shares.items(), key=lambda kv: -max(kv[1]))
    return "; ".join(f"{name} {' '.join(f'{s:.0f}' for s in sorted(v, reverse=True)[:8])}"
                     for name, v in ranked if max(v) >= 1)


def tiny_configs():
    """TINY_CONFIGS="name:args;name:args": the server settings measured (args
    starting @NAME run bin/NAME, another build added to the bundle by hand)."""
    spec = os.environ.get("TINY_CONFIGS", "defaults:;workers2:--workers 2")
    return [tuple(c.split(":", 1)) for c in spec.split(";") if c]


def tiny(lab):
    """64^3 step 0 under each server setting, TINY_ROUNDS (2) times over, each
    beside the bare echo as gemmd serves, in a process of its own: one in
    flight (p50) and 32 (req/s), CPU per request on each side, and the
    server's H2D and D2H rates on inline and four-connection 4096^3."""
    configs = tiny_configs()
    if lab.has_tool("gemmd-before") and "TINY_CONFIGS" not in os.environ:
        configs += [("before", "@gemmd-before"), ("before_workers2", "@gemmd-before --workers 2")]
    rounds = int(os.environ.get("TINY_ROUNDS", "2"))
    with lab.echo_server() as target:
        def echo(name, *args, append=True):
            lab.run(["grpc-echo-bench", "--target", target, "--mode", "latency", "--seconds", "2", "--up-bytes", "64",
                     "--down-bytes", "256", *args], out=name, append=append)
        for round in range(1, rounds + 1):
            for name, args in configs:
                binary, args = "gemmd", args.split()
                if args and args[0].startswith("@"):
                    binary, args = args[0][1:], args[1:]
                stem = f"tiny_{name}_{round}"
                with lab.gemmd(stem, "--max-message-bytes", "256M", *args, binary=binary) as server:
                    cpu = tiny_round(lab, server, stem, echo)
                summarize_tiny(lab, name, round, stem, cpu)


def tiny_round(lab, server, stem, echo):
    echo(f"{stem}.echo", "--concurrency", "1", append=False)
    # At 32 in flight the echo's client is bench's own (--pipelined): a
    # thread per call was the echo's limit, not gRPC's.
    echo(f"{stem}.echo", "--concurrency", "32", "--pipelined")
    bench_64(lab, f"{stem}.c1", "--concurrency", "1", seconds="4")
    bench_64(lab, f"{stem}.c32", "--concurrency", "32", "--connections", "1", seconds="4")
    echo(f"{stem}.echo_polling", "--concurrency", "1", "--busy-poll", append=False)
    bench_64(lab, f"{stem}.c1polling", "--busy-poll", "--concurrency", "1", seconds="3")
    # One connection is served by one thread at a time on each side: the
    # same 32 in flight over eight, as bench spreads them.
    echo(f"{stem}.echo", "--concurrency", "32", "--connections", "8", "--pipelined")
    server_ticks, threads0, machine0 = proc_ticks(server.pid), thread_ticks(server.pid), machine_ticks()
    batch0 = readers.metric_samples(server.metrics())
    client = lab.start(["gemm-client", "bench", "--shapes", "64x64x64", "--steps", "0", "--concurrency", "32",
                        "--duration", "4", "--json", lab.out / f"{stem}.c32x8.json"], out=f"{stem}.c32x8.txt")
    time.sleep(1)  # each thread of both sides over 2 s in mid-run
    window0, client0 = thread_ticks(server.pid), thread_ticks(client.pid)
    time.sleep(2)
    window1, client1 = thread_ticks(server.pid), thread_ticks(client.pid)
    _, client_cpu = lab.reap(client)
    machine1, threads1 = machine_ticks(), thread_ticks(server.pid)
    batch1 = readers.metric_samples(server.metrics())
    launches = readers.metric_sum(batch1, "gemm_batch_size_count") - readers.metric_sum(batch0, "gemm_batch_size_count")
    requests = readers.metric_sum(batch1, "gemm_batch_size_sum") - readers.metric_sum(batch0, "gemm_batch_size_sum")
    cpu = {"server_s": (proc_ticks(server.pid) - server_ticks) / HZ, "client_s": client_cpu,
                     "busy": machine1[0] - machine0[0], "idle": machine1[1] - machine0[1],
                     "threads": (threads0, threads1), "window": busiest(window0, window1, 2.0),
                     "client_window": busiest(client0, client1, 2.0),
                     "mean_batch": requests / launches if launches else 0.0}
    # Verified, as ordinary requests are by default; then as a client with
    # its own data sends it: A and B inline, verified, D back.
    bench_64(lab, f"{stem}.c32x8v", "--concurrency", "32", "--verify", seconds="4")
    bench_64(lab, f"{stem}.c1inline", "--concurrency", "1", "--inline", "--verify", seconds="3")
    for _ in range(3):  # a big one, for the server's H2D and D2H rates
        lab.client(*inline_args(lab, "--transport", "inline"), out=f"{stem}.inline4096.json", append=True)
    for _ in range(3):  # and over four connections: the matrix streams
        lab.client(*inline_args(lab, "--connections", "4"), out=f"{stem}.conn4_4096.json", append=True)
    return cpu


def summarize_tiny(lab, name, round, stem, cpu):
    echo = readers.echo_records((lab.out / f"{stem}.echo").read_text())
    c1, c32, c32x8, c32x8v = (bench_row(lab, f"{stem}.{k}") for k in ("c1", "c32", "c32x8", "c32x8v"))
    e50, erate, erate8 = float(echo[0]["p50_us"]), float(echo[1]["calls_per_s"]), float(echo[2]["calls_per_s"])
    c1p = bench_row(lab, f"{stem}.c1polling")
    e50p = float(readers.echo_records((lab.out / f"{stem}.echo_polling").read_text())[0]["p50_us"])
    n = c32x8["rate"] * 4 or 1  # requests in the 4 s run
    by_name = per_name(*cpu["threads"], HZ * n / 1e6)
    c1i = bench_row(lab, f"{stem}.c1inline")
    lab.note(f"tiny {name:16s} round {round}: 1 in flight p50 {c1['p50_us']:.0f} us (echo {e50:.0f}, gap "
             f"{c1['p50_us'] - e50:+.0f}); 32 in flight, one connection {c32['rate']:.0f} req/s (echo {erate:.0f}); "
             f"over 8 {c32x8['rate']:.0f} (echo {erate8:.0f}), verified {c32x8v['rate']:.0f}",
             f"    {c1['server']}",
             f"    client polling (--busy-poll), 1 in flight: p50 {c1p['p50_us']:.0f} us (echo polling {e50p:.0f}, "
             f"gap {c1p['p50_us'] - e50p:+.0f})",
             f"    over 8 connections, CPU per request: gemmd {cpu['server_s'] / n * 1e6:.0f} us, client "
             f"{cpu['client_s'] / n * 1e6:.0f} us; the machine {cpu['busy'] / (cpu['busy'] + cpu['idle']) * 100:.0f}% "
             f"busy ({os.cpu_count()} cores); {c32x8['server']}",
             f"    gemmd's CPU per request by thread name, us: "
             f"{', '.join(f'{k} {v:.0f}' for k, v in by_name[:8])} (threads that ended in the run are missing)",
             f"    % of a core per thread over 2 s mid-run, busiest first; "
             f"{'mean batch %.1f requests' % cpu['mean_batch'] if cpu['mean_batch'] else 'no batches'}:",
             f"      gemmd: {cpu['window']}", f"      client: {cpu['client_window']}",
             f"    A and B inline, verified, D inline, 1 in flight: p50 {c1i['p50_us']:.0f} us; {c1i['server']}")
    runs = docs(lab, f"{stem}.inline4096.json")
    if runs:
        h2d = ", ".join(f"{64 * 1.048576e-3 / r['timing']['uploadSeconds']:.1f}" for r in runs)
        d2h = ", ".join(f"{32 * 1.048576e-3 / r['timing']['downloadSeconds']:.1f}" for r in runs)
        rt = sorted(r["client"]["roundTripSeconds"] for r in runs)[len(runs) // 2]
        lab.note(f"    inline 4096^3, {len(runs)} requests in turn: server H2D {h2d} GB/s, D2H {d2h} GB/s; round trip "
                 f"median {rt * 1e3:.1f} ms")
    runs = docs(lab, f"{stem}.conn4_4096.json")
    if runs:
        lab.note(f"    4096^3 over 4 connections, {len(runs)} in turn: end to end "
                 + ", ".join(f"{r['client']['endToEndSeconds'] * 1e3:.1f}" for r in runs) + " ms")


# The echo under each server model, as poll strategy, server API, loads.
# gRPC's default strategy, epoll1, lets one thread of the process poll at a
# time and hands that role on, so every thread gRPC parks in a queue can sit
# on a request's path; poll lets each thread poll its own.
ALL_LOADS = (["--concurrency", "1"], ["--concurrency", "32"], ["--concurrency", "32", "--connections", "4"])
ONE = (["--concurrency", "1"],)
ECHO_MODELS = (
    ("epoll1", "callback", ALL_LOADS), ("epoll1", "async --server-threads 1", ALL_LOADS),
    ("epoll1", "async --server-threads 1 --health", ONE), ("epoll1", "async --server-threads 1 --sync-service", ONE),
    ("epoll1", "async --server-threads 4", ALL_LOADS), ("epoll1", "callback --busy-poll", ONE),
    ("epoll1", "async --server-threads 1 --busy-poll --server-busy-poll", ONE),
    ("poll", "callback", ALL_LOADS), ("poll", "async --server-threads 4", ALL_LOADS),
    ("poll", "async --server-threads 4 --health --sync-service", ALL_LOADS))


def grpcfloor(lab):
    """What bounds tiny requests: the bare echo under each server model
    (gemmd serves Multiply on completion queues, the rest on the callback
    API), with each process's CPU per call; gemmd with 32 in flight over more
    and more connections; and the echo beside an idle gemmd and alone."""
    for strategy, api, loads in ECHO_MODELS:
        for load in loads:
            _, cpu = lab.run(["grpc-echo-bench", "--mode", "latency", "--seconds", "3", "--up-bytes", "64",
                              "--down-bytes", "256", "--server-api", *api.split(), *load], out="echo_api.txt",
                             append=True, env={"GRPC_POLL_STRATEGY": strategy})
            row = readers.echo_records((lab.out / "echo_api.txt").read_text())[-1]
            label = f"{strategy} {api}"
            lab.note(f"echo {label:54s} {row['connections']} connection(s), {row['concurrency']:>2} in flight: "
                     f"{float(row['calls_per_s']):7.0f} calls/s, p50 {float(row['p50_us']):5.0f} us, process CPU "
                     f"{cpu / float(row['calls']) * 1e6:4.0f} us per call")
    with lab.gemmd("grpcfloor") as server:
        for conns in (1, 2, 4, 8, 16):
            ticks = proc_ticks(server.pid)
            _, client_cpu = bench_64(lab, f"grpcfloor_c{conns}", "--concurrency", "32", "--connections", str(conns),
                                     seconds="3")
            row = bench_row(lab, f"grpcfloor_c{conns}")
            n = row["rate"] * 3 or 1
            lab.note(f"gemmd 32 in flight over {conns:2d} connection(s): {row['rate']:7.0f} req/s, p50 "
                     f"{row['p50_us']:5.0f} us; CPU per request gemmd {(proc_ticks(server.pid) - ticks) / HZ / n * 1e6:.0f} "
                     f"us, client {client_cpu / n * 1e6:.0f} us")
    # The tiny part measures its echo beside an idle gemmd: the same echo with
    # and without one, alternately, says whether an idle gemmd costs it.
    beside = collections.defaultdict(list)
    for i in (1, 2):
        for label in ("beside an idle gemmd", "alone"):
            def measure():
                lab.run(["grpc-echo-bench", "--mode", "latency", "--concurrency", "1", "--seconds", "2", "--up-bytes",
                         "64", "--down-bytes", "256"], out="echo_beside.txt", append=True)
                row = readers.echo_records((lab.out / "echo_beside.txt").read_text())[-1]
                beside[label].append(float(row["p50_us"]))
            if label == "alone":
                measure()
            else:
                with lab.gemmd(f"grpcfloor_idle{i}"):
                    measure()
    lab.note("echo, 1 in flight, p50 us: " + "; ".join(f"{k} {', '.join(f'{v:.0f}' for v in vs)}"
                                                    for k, vs in beside.items()))
