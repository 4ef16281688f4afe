#!/usr/bin/env python3
"""Plots bench/sparse-quality's runs.json: mean accuracy over the tasks against the budget
fraction, one line per method, one panel per context length, dense as a horizontal line.

Usage: bench/plot_sparse_quality.py RUNS_JSON OUT_PNG
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def mean_accuracy(result):
    tasks = result["tasks"]
    return sum(t["accuracy"] for t in tasks) / len(tasks)


def main():
    runs_path, out_path = sys.argv[1:3]
    data = json.load(open(runs_path))
    lens = data["context_lens"]
    fig, axes = plt.subplots(1, len(lens), figsize=(max(6.5, 4.5 * len(lens)), 4), sharey=True,
                             squeeze=False)
    methods = []
    for r in data["runs"]:
        if r["fraction"] is not None and r["method"] not in methods:
            methods.append(r["method"])
    for ax, n in zip(axes[0], lens):
        at_len = [r for r in data["runs"] if r["context_len"] == n]
        for r in at_len:
            if r["fraction"] is None:
                ax.axhline(100 * mean_accuracy(r["result"]), color="black", linestyle="--",
                           label="dense")
        for method in methods:
            points = sorted((r["fraction"], 100 * mean_accuracy(r["result"]))
                            for r in at_len if r["method"] == method)
            if points:
                ax.plot([100 * f for f, _ in points], [a for _, a in points], marker="o",
                        label=method)
        ax.set_title(f"context {n} tokens")
        ax.set_xlabel("KV budget (% of context)")
        ax.set_xlim(0, 100)
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy (%), mean over tasks")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8),
                   bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("sparse-engine eval, SmolLM2-135M-Instruct Q4_1 (passkey, needle, multikey, "
                 "vartrack)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    main()
