#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The report of bench/compare.sh: medians, uroce/TCP ratios, the UDP ceiling, CPU, memory per QP.

Reads results.tsv (one line per run, written by compare.sh), writes the Markdown tables (--out)
and, with --plot, a PNG: throughput against message size per transport, and latency
percentiles. A case whose runs all failed is "n/a (error)"; its error text is listed under
"Failures". Usage: compare_report.py RESULTS.TSV --out FILE.md [--plot FILE.png] [--command ...]
"""
import argparse
import csv
import statistics
import sys
from collections import OrderedDict

PATHS = OrderedDict([("mtu1500", "veth MTU 1500"), ("mtu9000", "veth MTU 9000"),
                     ("lo", "loopback")])
ROCE = OrderedDict([("v2", "RoCE v2"), ("v1", "RoCE v1")])


def num(s):
    return None if s in ("", "-") else float(s)


class Group:
    """The runs of one case: values of the runs that worked, and the errors of the others."""

    def __init__(self):
        self.ok = []  # dicts of floats (None when not known)
        self.errors = []

    def add(self, row):
        if row["status"] == "ok":
            self.ok.append({k: num(row[k]) for k in
                            ("v1", "v2", "v3", "cpu_cli", "cpu_srv", "rss_cli_kib", "rss_srv_kib")})
        else:
            self.errors.append(row["error"])

    def median(self, key):
        vals = [r[key] for r in self.ok if r[key] is not None]
        return statistics.median(vals) if vals else None

    @property
    def runs(self):
        return len(self.ok) + len(self.errors)


def load(path):
    groups = OrderedDict()
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["path"], row["transport"], row["test"], int(row["size"]), int(row["qps"]),
                   row["mode"])
            groups.setdefault(key, Group()).add(row)
    return groups


def fmt(v, digits=2):
    if v is None:
        return "?"
    if digits is None:  # latencies: 3 significant-ish digits
        return "%.1f" % v if v < 100 else "%.0f" % v
    return "%.*f" % (digits, v)


def failed_note(g):
    return " (%d/%d failed)" % (len(g.errors), g.runs) if g.errors else ""


def value_cell(g, keys, digits):
    """The medians of KEYS joined by ' / '; 'n/a (error)' when no run worked; '' if not run."""
    if g is None:
        return ""
    if not g.ok:
        return "n/a (error)"
    return " / ".join(fmt(g.median(k), digits) for k in keys) + failed_note(g)


def cpu_cell(g):
    if g is None or not g.ok:
        return ""
    return "%s/%s" % (fmt(g.median("cpu_cli"), 0), fmt(g.median("cpu_srv"), 0))


def ratio_cell(a, b, key):
    if a is None or b is None or not a.ok or not b.ok:
        return ""
    x, y = a.median(key), b.median(key)
    if x is None or not y:
        return ""
    return "%.2f" % (x / y)


def sizes_label(n):
    return "%d KiB" % (n // 1024) if n % 1024 == 0 and n >= 1024 else "%d B" % n


def throughput_table(groups, out):
    rows = sorted({(k[0], k[2], k[3], k[4]) for k in groups
                   if k[1] in ROCE and k[2].endswith("_bw")},
                  key=lambda r: (list(PATHS).index(r[0]), r[1], r[2], r[3]))
    tcp_only = sorted({(k[0], k[3]) for k in groups if k[2] == "iperf3"})
    if not rows and not tcp_only:
        return
    out.append("### Throughput (Gbit/s)\n")
    out.append("Median of the runs; ratio = uroce / TCP (one iperf3 stream writing the same "
               "message size); CPU = % of one core over each process's life, client/server.\n")
    out.append("| path | test | size | QPs | RoCE v2 | RoCE v1 | TCP | v2/TCP | v1/TCP "
               "| CPU v2 | CPU v1 | CPU TCP |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path, test, size, qps in rows:
        g2 = groups.get((path, "v2", test, size, qps, "-"))
        g1 = groups.get((path, "v1", test, size, qps, "-"))
        gt = groups.get((path, "tcp", "iperf3", size, 1, "-"))
        out.append("| %s | ib_%s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            PATHS[path], test, sizes_label(size), qps, value_cell(g2, ["v1"], 2),
            value_cell(g1, ["v1"], 2), value_cell(gt, ["v1"], 2), ratio_cell(g2, gt, "v1"),
            ratio_cell(g1, gt, "v1"), cpu_cell(g2), cpu_cell(g1), cpu_cell(gt)))
    for path, size in tcp_only:
        if any(r[0] == path and r[2] == size for r in rows):
            continue
        gt = groups[(path, "tcp", "iperf3", size, 1, "-")]
        out.append("| %s | iperf3 | %s | 1 | | | %s | | | | | %s |" % (
            PATHS[path], sizes_label(size), value_cell(gt, ["v1"], 2), cpu_cell(gt)))
    out.append("")


CEILINGS = {
    "udp": ("UDP ceiling", "RoCE v2", "v2",
            "bench/udp_ceiling: datagrams of a RoCE packet's size (the path's RoCE MTU of payload "
            "between a 12-byte header and a 4-byte CRC) in 64 KiB GSO sends, received with GRO; "
            "a CRC computed by the sender and checked by the receiver, and each payload copied "
            "once more on receive: the work per byte of uroce's RoCE v2 data path, without RDMA."),
    "packet": ("AF_PACKET ceiling", "RoCE v1", "v1",
               "bench/afpacket_ceiling: Ethernet frames of a RoCE v1 packet's size (GRH, a 12-byte "
               "header, the path's RoCE MTU of payload, a 4-byte CRC) through AF_PACKET, 64 per "
               "sendmmsg and recvmmsg, the sender skipping the queueing layer; the same CRCs and "
               "copy: the work per frame and per byte of uroce's RoCE v1 data path, without RDMA."),
}


def ceiling_table(groups, out):
    kinds = [tr for tr in CEILINGS
             if any((p, tr, "ceiling", 0, 1, "-") in groups for p in PATHS)]
    if not kinds:
        return
    out.append("### Ceilings: the kernel's work alone (Gbit/s of payload)\n")
    for tr in kinds:
        name, roce, rtr, text = CEILINGS[tr]
        paths = [p for p in PATHS if (p, tr, "ceiling", 0, 1, "-") in groups]
        out.append(text + " Ratios: %s ib_write_bw (64 KiB, 1 QP) and one iperf3 stream "
                   "(64 KiB writes) against it.\n" % roce)
        out.append("| path | %s | CPU | %s write_bw / ceiling | TCP / ceiling |" % (name, roce))
        out.append("|---|---|---|---|---|")
        for path in paths:
            gc = groups[(path, tr, "ceiling", 0, 1, "-")]
            gr = groups.get((path, rtr, "write_bw", 65536, 1, "-"))
            gt = groups.get((path, "tcp", "iperf3", 65536, 1, "-"))
            out.append("| %s | %s | %s | %s | %s |" % (
                PATHS[path], value_cell(gc, ["v1"], 2), cpu_cell(gc), ratio_cell(gr, gc, "v1"),
                ratio_cell(gt, gc, "v1")))
        out.append("")


def latency_table(groups, out):
    rows = sorted({(k[0], k[2], k[5]) for k in groups if k[1] in ROCE and k[2].endswith("_lat")},
                  key=lambda r: (list(PATHS).index(r[0]), r[1], r[2]))
    if not rows:
        rows_tcp = sorted({(k[0], k[5]) for k in groups if k[2] == "sockperf"})
        if not rows_tcp:
            return
    out.append("### Latency (us, half round trip)\n")
    out.append("Median of the runs of typical (perftest t_typical; sockperf's 50th percentile) / "
               "99th / 99.9th percentile; perftest 8 B, sockperf 14 B over TCP; ratio of the "
               "typical latencies, uroce / TCP; CPU = % of one core, client/server.\n")
    out.append("| path | test | mode | RoCE v2 | RoCE v1 | TCP (sockperf) | v2/TCP | v1/TCP "
               "| CPU v2 | CPU v1 | CPU TCP |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    keys = ["v1", "v2", "v3"]
    for path, test, mode in rows:
        g2 = groups.get((path, "v2", test, 8, 1, mode))
        g1 = groups.get((path, "v1", test, 8, 1, mode))
        gt = groups.get((path, "tcp", "sockperf", 14, 1, mode))
        out.append("| %s | ib_%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            PATHS[path], test, "busy-poll" if mode == "busy" else "event (-e)",
            value_cell(g2, keys, None), value_cell(g1, keys, None), value_cell(gt, keys, None),
            ratio_cell(g2, gt, "v1"), ratio_cell(g1, gt, "v1"), cpu_cell(g2), cpu_cell(g1),
            cpu_cell(gt)))
    out.append("")


def memory_table(groups, out):
    """RSS growth per extra QP: the same test and size with 1 QP and with the most QPs, paired
    by path and repetition (peak RSS of each process, from getrusage)."""
    res = []
    cases = sorted({(k[1], k[2], k[3]) for k in groups if k[1] in ROCE and k[2].endswith("_bw")},
                   key=lambda c: (list(ROCE).index(c[0]), c[1], c[2]))
    for tr, test, size in cases:
        qps = sorted({k[4] for k in groups if k[1:4] == (tr, test, size)})
        if len(qps) < 2 or qps[0] != 1:
            continue
        hi = qps[-1]
        one, many, per_cli, per_srv = [], [], [], []
        for path in PATHS:
            g1 = groups.get((path, tr, test, size, 1, "-"))
            gn = groups.get((path, tr, test, size, hi, "-"))
            if not g1 or not gn or not g1.ok or not gn.ok:
                continue
            a, b = g1.median("rss_cli_kib"), gn.median("rss_cli_kib")
            c, d = g1.median("rss_srv_kib"), gn.median("rss_srv_kib")
            if None in (a, b, c, d):
                continue
            one.append(a)
            many.append(b)
            per_cli.append((b - a) / (hi - 1))
            per_srv.append((d - c) / (hi - 1))
        if one:
            res.append((tr, test, size, hi, statistics.median(one), statistics.median(many),
                        statistics.median(per_cli), statistics.median(per_srv)))
    if not res:
        return
    out.append("### Memory per QP (uroce, perftest processes)\n")
    out.append("Peak RSS of the perftest client with 1 QP and with N QPs (median over paths and "
               "runs), and the growth per extra QP, client and server. It includes perftest's own "
               "buffers (about 2 x message size per QP) as well as uroce's QP state.\n")
    out.append("| transport | test | size | RSS 1 QP (MiB) | RSS N QPs (MiB) | N | per QP, client "
               "(KiB) | per QP, server (KiB) |")
    out.append("|---|---|---|---|---|---|---|---|")
    for tr, test, size, hi, one, many, pc, ps in res:
        out.append("| %s | ib_%s | %s | %.1f | %.1f | %d | %.0f | %.0f |" % (
            ROCE[tr], test, sizes_label(size), one / 1024, many / 1024, hi, pc, ps))
    out.append("")


def failures(groups, out):
    bad = [(k, g) for k, g in groups.items() if g.errors]
    if not bad:
        out.append("### Failures\n\nNone: every run gave a result.\n")
        return
    out.append("### Failures\n")
    out.append("| path | transport | case | failed | error |")
    out.append("|---|---|---|---|---|")
    for (path, tr, test, size, qps, mode), g in bad:
        case = test if tr in ("tcp", "udp", "packet") else "ib_" + test
        if test != "ceiling":
            case += " %s" % sizes_label(size)
        if qps > 1:
            case += " -q %d" % qps
        if mode != "-":
            case += " " + ("busy-poll" if mode == "busy" else "-e")
        texts = list(OrderedDict.fromkeys(e for e in g.errors if e))
        out.append("| %s | %s | %s | %d/%d | %s |" % (
            PATHS.get(path, path), ROCE.get(tr, tr.upper()), case, len(g.errors), g.runs,
            " // ".join(texts).replace("|", "\\|")))
    out.append("")


def plot(groups, file):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = [p for p in PATHS if any(k[0] == p for k in groups)]
    fig, axes = plt.subplots(2, len(paths), figsize=(6 * len(paths), 9), squeeze=False)
    colors = {"v2": "tab:blue", "v1": "tab:orange", "tcp": "tab:green"}
    markers = {"write_bw": "o", "read_bw": "s", "send_bw": "^", "iperf3": "D"}
    for col, path in enumerate(paths):
        ax = axes[0][col]
        series = sorted({(k[1], k[2], k[4]) for k in groups
                         if k[0] == path and (k[2].endswith("_bw") or k[2] == "iperf3")})
        for tr, test, qps in series:
            pts = sorted((k[3], g.median("v1")) for k, g in groups.items()
                         if k[:3] == (path, tr, test) and k[4] == qps and g.ok)
            if not pts:
                continue
            label = ("TCP iperf3" if tr == "tcp" else "%s ib_%s" % (ROCE[tr], test)) + \
                (" %d QPs" % qps if qps > 1 else "")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[tr],
                    marker=markers.get(test, "x"), linestyle="--" if qps > 1 else "-",
                    label=label)
        for tr, style, label in (("udp", ":", "UDP GSO/GRO ceiling (udp_ceiling)"),
                                 ("packet", "-.", "AF_PACKET ceiling (afpacket_ceiling)")):
            gc = groups.get((path, tr, "ceiling", 0, 1, "-"))
            if gc is not None and gc.ok:
                ax.axhline(gc.median("v1"), color="gray", linestyle=style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("Gbit/s")
        ax.set_title("Throughput, %s" % PATHS[path])
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)

        ax = axes[1][col]
        cases = [k for k in groups if k[0] == path and
                 (k[2].endswith("_lat") or k[2] == "sockperf") and groups[k].ok]
        cases.sort(key=lambda k: (k[5], ["v2", "v1", "tcp"].index(k[1]), k[2]))
        names, typ, p99, p999, cols = [], [], [], [], []
        for k in cases:
            g = groups[k]
            names.append("%s\n%s\n%s" % ("TCP" if k[1] == "tcp" else ROCE[k[1]],
                                         k[2].replace("_lat", ""), k[5]))
            typ.append(g.median("v1"))
            p99.append(g.median("v2"))
            p999.append(g.median("v3"))
            cols.append(colors[k[1]])
        x = list(range(len(names)))
        if names:
            ax.bar(x, typ, color=cols, label="typical / p50")
            ax.scatter(x, p99, marker="_", s=200, color="black", label="99 %", zorder=3)
            ax.scatter(x, p999, marker="^", color="red", label="99.9 %", zorder=3)
            ax.set_yscale("log")
            ax.legend(fontsize=7)
        ax.set_xticks(x)
        ax.set_xticklabels(names, fontsize=7)
        ax.set_ylabel("us (half round trip)")
        ax.set_title("Latency, %s" % PATHS[path])
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(file, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot")
    ap.add_argument("--command", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--date", default="")
    ap.add_argument("--machine", default="")
    ap.add_argument("--reps", default="")
    ap.add_argument("--duration", default="")
    ap.add_argument("--lat-iters", default="")
    ap.add_argument("--progress-busy-poll", action="store_true")
    a = ap.parse_args()

    groups = load(a.results)
    out = ["Commit %s, %s; `%s`" % (a.commit, a.date, a.command), "",
           "Machine: %s. %s run(s) per figure; throughput runs of %s s (perftest -D, iperf3 -t), "
           "latency runs of %s iterations (perftest -n) or %s s (sockperf -t)%s." % (
               a.machine, a.reps, a.duration, a.lat_iters, a.duration,
               "; uroce progress thread busy-polling" if a.progress_busy_poll else ""), ""]
    throughput_table(groups, out)
    ceiling_table(groups, out)
    latency_table(groups, out)
    memory_table(groups, out)
    failures(groups, out)
    text = "\n".join(out)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    if a.plot:
        plot(groups, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
