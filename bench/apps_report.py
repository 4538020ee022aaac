#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Report of bench/apps.sh: medians per consumer, test and size, uroce against TCP.

Reads results.tsv (rep, consumer, test, size, metric, path, value), prints Markdown: one table
with the median over the runs of each figure on each path, the uroce/TCP ratio and the
issue's target where one applies; optionally a plot (apps.png) of the ratios against the targets.
"""
import argparse
import csv
import statistics
import sys

# (consumer prefix, test, size, metric) -> (comparison, ratio); "<=" for latencies, ">=" for
# bandwidths. The ratio is uroce / TCP.
TARGETS = {
    ("ucx", "tag_bw", 65536, "bw_gbps"): (">=", 1.5),
    ("ucx", "tag_lat", 8, "lat_us"): ("<=", 1.0),
    ("libfabric", "pingpong_rdm", None, "lat_us"): ("<=", 1.0),
    ("mpi_", "pingpong", 8, "lat_us"): ("<=", 1.0),
    ("mpi_", "pingpong", 1048576, "bw_gbps"): (">=", 1.5),
}

UNITS = {"lat_us": "us", "bw_gbps": "Gbit/s"}


def target(consumer, test, size, metric):
    for (c, t, s, m), v in TARGETS.items():
        if consumer.startswith(c) and test == t and (s is None or s == size) and m == metric:
            return v
    return None


def load(path):
    groups = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            try:
                value = float(row["value"])
                size = int(row["size"])
            except (KeyError, ValueError):
                continue
            key = (row["consumer"], row["test"], size, row["metric"])
            groups.setdefault(key, {}).setdefault(row["path"], []).append(value)
    return groups


def ratio(g):
    u, t = g.get("uroce"), g.get("tcp")
    if not u or not t or statistics.median(t) == 0:
        return None
    return statistics.median(u) / statistics.median(t)


def fmt(v):
    if v is None:
        return "n/a"
    return "%.3g" % v if v < 100 else "%.0f" % v


def table(groups, out):
    out.append("| consumer | test | size (B) | metric | uroce | TCP | uroce/TCP | target | met |")
    out.append("|---|---|---:|---|---:|---:|---:|---|---|")
    for key in sorted(groups):
        consumer, test, size, metric = key
        g = groups[key]
        med = {p: statistics.median(v) if v else None for p, v in g.items()}
        r = ratio(g)
        tg = target(*key)
        met = ""
        if tg and r is not None:
            met = "yes" if (r <= tg[1] if tg[0] == "<=" else r >= tg[1]) else "**no**"
        out.append("| %s | %s | %d | %s (%s) | %s | %s | %s | %s | %s |" % (
            consumer, test, size, metric, UNITS.get(metric, "?"), fmt(med.get("uroce")),
            fmt(med.get("tcp")), fmt(r), "%s %.1fx" % tg if tg else "", met))


def plot(groups, file):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in sorted(groups) if ratio(groups[k]) is not None]
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(keys)), 5))
    x = list(range(len(keys)))
    # Shown as "how many times better than TCP": TCP latency / uroce latency, uroce bw / TCP bw.
    better = [1 / ratio(groups[k]) if k[3] == "lat_us" else ratio(groups[k]) for k in keys]
    colors = ["tab:blue" if k[3] == "bw_gbps" else "tab:orange" for k in keys]
    ax.bar(x, better, color=colors)
    for i, k in enumerate(keys):
        tg = target(*k)
        if tg:
            goal = 1 / tg[1] if k[3] == "lat_us" else tg[1]
            ax.plot([i - 0.4, i + 0.4], [goal, goal], color="red", linewidth=2,
                    label="issue target" if i == 0 or "issue target" not in
                    [l.get_label() for l in ax.lines] else None)
    ax.axhline(1.0, color="gray", linestyle=":")
    ax.set_xticks(x)
    ax.set_xticklabels(["%s\n%s\n%d B" % k[:3] for k in keys], fontsize=7)
    ax.set_ylabel("uroce relative to the same software over TCP (>1: uroce better)")
    ax.set_yscale("log")
    ax.set_title("Applications over uroce vs their TCP path (blue: bandwidth, orange: latency)")
    ax.grid(True, axis="y", alpha=0.3)
    if any(l.get_label() == "issue target" for l in ax.lines):
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(file, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--failed")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--plot")
    a = ap.parse_args()
    groups = load(a.results)
    out = ["# Applications over uroce and over TCP", "",
           "Commit %s; medians of %d run(s); latency is the half round trip." % (a.commit, a.reps),
           ""]
    table(groups, out)
    if a.failed:
        with open(a.failed) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
        if lines:
            out += ["", "## Failures", ""] + ["- " + l.replace("\t", ": ") for l in lines]
    print("\n".join(out))
    if a.plot and groups:
        plot(groups, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
