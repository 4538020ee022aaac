#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Show that each rule of tests/interop/cm_fields.py fires: copies of Linux captures with one
field changed must fail with a line naming that field, and the unchanged capture must pass.

    cm_fields_mutants.py CM_FIELDS.py VECTORS_DIR

Exit 0 when every mutant is caught, 1 otherwise, 2 when tshark is missing.
"""
import concurrent.futures
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# (capture, frame, where, byte offset, how, the text the violation line must hold)
# where: "mad" = from the MAD header, "msg" = from the CM message (MAD + 24), "ip" = from the
# IP header, "bth" = from the BTH. how: ("xor", mask) or ("set", value).
MUTANTS = [
    ("rping", 1, "mad", 2, ("set", 1), "REQ class version"),
    ("rping", 1, "mad", 23, ("set", 1), "REQ attribute modifier"),
    ("rping", 1, "mad", 3, ("set", 0x81), "REQ method"),
    ("rping", 2, "mad", 15, ("xor", 1), "REP TID"),
    ("rping", 1, "mad", 15, ("xor", 1), "REQ TID low word"),
    ("rping", 1, "msg", 43, ("xor", 0x08), "REQ remote CM response timeout"),
    ("rping", 1, "msg", 47, ("xor", 0x08), "REQ local CM response timeout"),
    ("rping", 1, "msg", 51, ("set", 0x70), "REQ max CM retries"),
    ("rping", 1, "msg", 50, ("set", 0x77), "REQ path MTU"),
    ("rping", 1, "msg", 43, ("xor", 0x02), "REQ transport service type"),
    ("rping", 1, "msg", 43, ("xor", 0x04), "REQ transport service type"),
    ("rping", 1, "msg", 91, ("set", 0x03), "REQ primary packet rate"),
    ("rping", 1, "msg", 90, ("xor", 0x10), "REQ primary flow label"),
    ("rping", 1, "msg", 94, ("set", 0x10), "REQ primary SL"),
    ("rping", 1, "msg", 95, ("set", 0x90), "REQ primary local ACK timeout"),
    ("rping", 1, "msg", 93, ("set", 0x01), "REQ primary subnet local"),
    ("rping", 1, "msg", 52, ("set", 0x00), "REQ primary local LID"),
    ("rping", 1, "msg", 71, ("xor", 0x01), "REQ primary local port GID"),
    ("rping", 1, "msg", 48, ("set", 0x7F), "REQ partition key"),
    ("rping", 1, "msg", 12, ("set", 0x07), "REQ service ID"),
    ("rping", 1, "msg", 140, ("set", 0x10), "REQ cma_hdr version"),
    ("rping", 1, "msg", 141, ("set", 0x50), "REQ cma_hdr ip_version"),
    ("rping", 1, "msg", 159, ("xor", 0x01), "REQ cma_hdr src address"),
    ("rping", 1, "msg", 175, ("xor", 0x01), "REQ cma_hdr dst address"),
    ("rping", 1, "msg", 28, ("set", 0x01), "REQ local Q_Key"),
    ("rping", 1, "msg", 4, ("set", 0x01), "REQ reserved 4-7"),
    ("rping", 1, "msg", 100, ("set", 0x01), "REQ alternate path"),
    ("rping", 2, "msg", 22, ("xor", 0x01), "data first PSN"),
    ("rping", 1, "msg", 46, ("xor", 0x01), "data first PSN"),
    ("rping", 2, "msg", 14, ("xor", 0x40), "data destination QPN"),
    ("rping", 2, "msg", 4, ("xor", 0x01), "REP comm IDs"),
    ("rping", 2, "msg", 25, ("set", 0x05), "REP initiator depth"),
    ("rping", 2, "msg", 26, ("set", 0x00), "REP target ACK delay"),
    ("rping", 2, "msg", 26, ("xor", 0x02), "REP failover accepted"),
    ("rping", 3, "msg", 100, ("set", 0x01), "RTU private data"),
    ("rping", 3, "msg", 7, ("xor", 0x01), "RTU comm IDs"),
    ("rping", 124, "msg", 10, ("xor", 0x01), "DREQ remote QPN"),
    ("rping", 124, "msg", 20, ("set", 0x01), "DREQ private data"),
    ("rping", 125, "mad", 15, ("xor", 0x01), "DREP TID"),
    ("rping", 125, "msg", 3, ("xor", 0x01), "DREP comm IDs"),
    ("rping", 1, "deth", 3, ("set", 0x01), "REQ DETH Q_Key"),
    ("rping", 4, "ip", 8, ("set", 0x20), "data hop limit"),
    ("rping", 4, "ip", 1, ("set", 0x20), "data traffic class"),
    ("rping_mra", 3, "msg", 9, ("set", 0xB8), "MRA service timeout"),
    ("rping_mra", 3, "msg", 8, ("set", 0x40), "MRA message MRAed"),
    ("rping_mra", 3, "mad", 15, ("xor", 0x01), "MRA TID"),
    ("rping_mra", 2, "msg", 100, ("set", 0x01), "REQ resend"),
    ("rej_noport", 2, "mad", 15, ("xor", 0x01), "REJ TID"),
    ("rej_noport", 2, "msg", 17, ("set", 0x01), "REJ ARI beyond its length"),
    ("udaddy", 1, "msg", 10, ("set", 0x07), "SIDR_REQ service ID"),
    ("udaddy", 1, "msg", 35, ("xor", 0x01), "SIDR_REQ cma_hdr src address"),
    ("udaddy", 1, "mad", 15, ("xor", 0x01), "SIDR_REQ TID low word"),
    ("udaddy", 2, "msg", 23, ("xor", 0x01), "SIDR_REP Q_Key"),
    ("udaddy", 2, "msg", 19, ("xor", 0x01), "SIDR_REP service ID"),
    ("udaddy", 2, "mad", 15, ("xor", 0x01), "SIDR_REP TID"),
    ("rping_ipv6", 1, "msg", 159, ("xor", 0x01), "REQ cma_hdr src address"),
    ("rping_ipv6", 1, "msg", 141, ("set", 0x40), "REQ cma_hdr ip_version"),
    ("rping_ipv6", 2, "msg", 22, ("xor", 0x01), "data first PSN"),
]


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    hdr, off, recs = data[:24], 24, []
    while off + 16 <= len(data):
        n = struct.unpack_from("<I", data, off + 8)[0]
        recs.append([data[off:off + 16], bytearray(data[off + 16:off + 16 + n])])
        off += 16 + n
    return hdr, recs


def write_pcap(path, hdr, recs):
    with open(path, "wb") as f:
        f.write(hdr)
        for h, b in recs:
            f.write(h + bytes(b))


def offsets(frame):
    """IP header, BTH, DETH and MAD offsets of a RoCE v2 frame (Ethernet, IPv4 or IPv6)."""
    etype = struct.unpack_from(">H", frame, 12)[0]
    ip = 14
    l4 = ip + (frame[ip] & 0x0F) * 4 if etype == 0x0800 else ip + 40
    bth = l4 + 8
    return {"ip": ip if etype == 0x0800 else None, "bth": bth, "deth": bth + 12,
            "mad": bth + 20, "msg": bth + 44}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    checker, vectors = argv
    if not shutil.which("tshark"):
        print("tshark is not installed", file=sys.stderr)
        return 2
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted({m[0] for m in MUTANTS}):
            r = subprocess.run([sys.executable, checker, os.path.join(vectors, name + ".pcap")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
            if r.returncode != 0:
                print("FAIL %s: the unchanged capture does not pass:\n%s" %
                      (name, r.stdout.decode()))
                failed += 1
        jobs = []
        for i, (name, no, where, off, (how, v), expect) in enumerate(MUTANTS):
            hdr, recs = read_pcap(os.path.join(vectors, name + ".pcap"))
            frame = recs[no - 1][1]
            base = offsets(frame)[where]
            if base is None:
                print("SKIP %s frame %d: no %s header" % (name, no, where))
                continue
            if how == "xor":
                frame[base + off] ^= v
            else:
                frame[base + off] = v
            path = os.path.join(tmp, "%s-%02d.pcap" % (name, i))
            write_pcap(path, hdr, recs)
            jobs.append((path, name, no, where, off, expect))

        def run(job):
            return job, subprocess.run([sys.executable, checker, job[0]], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, check=False)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            for (path, name, no, where, off, expect), r in ex.map(run, jobs):
                out = r.stdout.decode()
                hit = [ln for ln in out.splitlines() if expect in ln]
                if r.returncode != 1 or not hit:
                    print("FAIL %s frame %d %s+%d: expected exit 1 and '%s', got %d:\n%s" %
                          (name, no, where, off, expect, r.returncode, out))
                    failed += 1
                else:
                    print("ok   %s frame %d %s+%d: %s" % (name, no, where, off,
                                                         hit[0].split(": ", 1)[1]))
    print("%d mutants, %d not caught" % (len(MUTANTS), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
