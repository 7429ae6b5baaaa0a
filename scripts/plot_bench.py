#!/usr/bin/env python3
"""Draws gemm-bench's CSV as a ladder plot: TFLOPS by step, one group of bars
per shape, cuBLAS (step 0) as a dashed line per shape. Uses Debian's
python3-matplotlib.

    scripts/plot_bench.py bench/results/h100_2026-11-25_ladder.csv out.png
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    rows = [r for r in csv.DictReader(open(csv_path)) if r["status"] == "ok"]
    if not rows:
        sys.exit(f"{csv_path}: no measured rows")
    shapes = list(dict.fromkeys(f'{r["m"]}x{r["n"]}x{r["k"]}' for r in rows))
    steps = sorted({int(r["step"]) for r in rows})
    tflops = defaultdict(dict)
    names = {}
    for r in rows:
        tflops[f'{r["m"]}x{r["n"]}x{r["k"]}'][int(r["step"])] = float(r["tflops"])
        names[int(r["step"])] = r["name"]

    fig, ax = plt.subplots(figsize=(12, 5.5))
    width = 0.8 / len(steps)
    for i, step in enumerate(steps):
        xs = [j + (i - (len(steps) - 1) / 2) * width for j in range(len(shapes))]
        ys = [tflops[s].get(step, 0) for s in shapes]
        ax.bar(xs, ys, width, label=f"{step} {names[step]}")
    for j, s in enumerate(shapes):
        if 0 in tflops[s]:
            ax.hlines(tflops[s][0], j - 0.45, j + 0.45, colors="black", linestyles="dashed", linewidth=1)
    ax.set_ylim(0, 1.25 * max(max(v.values()) for v in tflops.values()))  # room for the legend
    ax.set_xticks(range(len(shapes)), shapes)
    ax.set_ylabel("TFLOPS (median)")
    gpu, date = rows[0]["gpu"], rows[0]["date"]
    ax.set_title(f"gemm-bench ladder, {gpu}, {date} (dashed: cuBLAS)")
    ax.legend(ncol=5, fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
