"""Start-up and faults: the first request of new shapes, with and without
--plan-cublas, and the soak across kills and rolling restarts."""
import os
import re
import statistics

from .service_part import docs

# Each class in three variants (m, m+1, m+2), each new to the server: one
# first request of a ~0.3 ms total moved by 0.1 ms either way between runs,
# so a class's median of three firsts says more than one.
FIRST_TOUCH_SHAPES = ((3000, 2000, 1000), (1500, 700, 300), (100, 5000, 300), (7000, 300, 2000), (640, 480, 4096),
                      (3001, 2001, 1001), (12000, 50, 700), (2500, 2500, 2500), (77, 100, 50), (1001, 333, 4097))
REQUESTS_PER_VARIANT = 7  # the first, then six steady


def firsttouch(lab):
    """The first request of shapes no request has used yet, against their
    steady state (target <= 1.2x): a fresh server with --plan-cublas (its
    start-up loads the kernels cuBLAS's heuristic picks over a grid of
    shapes), then one without. --keep-warm-ms keeps every request, first or
    steady, on the same clocks across the gaps between client processes."""
    for plan in ("true", "false"):
        with lab.gemmd(f"firsttouch_{plan}", "--workers", "2", "--keep-warm-ms", "2", "--plan-cublas", plan) as server:
            log = server.log.read_text(errors="replace").splitlines()
            lab.note(*[f"  plan-cublas {plan}: {re.sub(r'^.*] ', '', l)}" for l in log
                       if re.search(r"cuBLAS planned|not loaded ahead|warm in", l)])
            # A few requests of a shape the start-up ran: the first requests
            # after start-up are the service part's measure, not this one's.
            for _ in range(4):
                lab.client("run", "--m", "1024", "--n", "1024", "--k", "1024", "--no-verify", "--json")
            name = f"first_touch_{plan}.json"
            for m, n, k in FIRST_TOUCH_SHAPES:
                for dm in (0, 1, 2):
                    for _ in range(REQUESTS_PER_VARIANT):
                        lab.client("run", "--m", m + dm, "--n", n, "--k", k, "--no-verify", "--json", out=name,
                                   append=True)
        summarize_first_touch(lab, docs(lab, name), plan)


def first_touch_ratios(reports):
    """Per shape class: (shape, kernel and total of the median variant as
    (first ms, steady ms, ratio)), and each variant's total ratio."""
    per_class = 3 * REQUESTS_PER_VARIANT
    classes = []
    for c in range(0, len(reports) - per_class + 1, per_class):
        per = {"kernelSeconds": [], "totalSeconds": []}
        for v in range(c, c + per_class, REQUESTS_PER_VARIANT):
            first, steady = reports[v], reports[v + 1:v + REQUESTS_PER_VARIANT]
            for key in per:
                med = statistics.median(d["timing"][key] for d in steady)
                per[key].append((first["timing"][key] * 1e3, med * 1e3, first["timing"][key] / med))
        median_variant = lambda rows: sorted(rows, key=lambda r: r[2])[1]
        classes.append((reports[c]["shape"], median_variant(per["kernelSeconds"]), median_variant(per["totalSeconds"]),
                        [r[2] for r in per["totalSeconds"]]))
    return classes


def summarize_first_touch(lab, reports, plan):
    classes = first_touch_ratios(reports)
    for s, k, t, totals in classes:
        lab.note(f"  first touch {s['m']}(+0,1,2)x{s['n']}x{s['k']}, median variant: kernel {k[0]:.3f} vs steady "
                 f"{k[1]:.3f} ms (x{k[2]:.2f}); total {t[0]:.3f} vs {t[1]:.3f} ms (x{t[2]:.2f}); the three totals x"
                 + ", x".join(f"{r:.2f}" for r in totals))
    worst_class = max((t[2] for _, _, t, _ in classes), default=0)
    worst_single = max((r for *_, totals in classes for r in totals), default=0)
    lab.note(f"first touch, plan-cublas {plan}: worst class median x{worst_class:.2f} (target <= 1.2); "
             f"worst single first request x{worst_single:.2f}")


def soak(lab):
    """Longer than CI's soak: two gemmd replicas on this GPU behind a loopback
    DNS name, one killed with SIGKILL, then each rolled with SIGTERM, under
    verified load through steps 0 and 10. A replica starts at about 2.2 GiB
    here (its CUDA context and pinned staging): the bounds are its peak and
    its growth over each start."""
    env = {"GEMMD_SOAK_SECONDS": os.environ.get("SOAK_SECONDS", "60"), "GEMMD_SOAK_ENGINE": "cuda",
           "GEMMD_SOAK_STEPS": "0,10", "GEMMD_SOAK_RSS_MIB": os.environ.get("SOAK_RSS_MIB", "3072"),
           "GEMMD_SOAK_RSS_GROWTH_MIB": os.environ.get("SOAK_RSS_GROWTH_MIB", "256")}
    rc, _ = lab.run(["soak_test", "--gtest_brief=1"], out="soak.log", timeout=400, env=env)
    log = (lab.out / "soak.log").read_text(errors="replace").splitlines()
    lab.note(f"soak_test: rc={rc} " + " ".join(l for l in log if re.match(r"\[  (PASSED|FAILED) ", l)))
    lab.note(*[f"  {l}" for l in log if re.search(r"^soak:|Failure|at [0-9.]+ s: [a-z]", l)][:30])
