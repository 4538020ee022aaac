#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check a pcap written by the uroce pcap tap with scapy, independently of our codec.

Every RoCE v2/IPv4 frame: scapy's BTH.compute_icrc (scapy.contrib.roce) must equal the ICRC on the
wire, and scapy's recomputed IPv4 header checksum and UDP checksum must equal the ones the tap
wrote (or the UDP checksum be 0, none, as Linux's rxe sends). v2/IPv6 and v1 frames (scapy 2.5 computes no ICRC for them): the zlib reference of
tests/oracle/oracle_common.py. Ports other than 4791 are bound to BTH for the test's port.

Usage: scapy_icrc.py [--skip-csum] [--skip-other] PCAP PORT MIN_V2V4 [MIN_V2V6 [MIN_V1]]
exit 0 when all checks pass. --skip-csum: leave the IPv4 and UDP checksums unchecked (a capture
on veth holds what the kernel left for a checksum offload that never runs). --skip-other: frames
that are not RoCE (a capture's own probes) are counted apart, not as bad.
"""
import logging
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import oracle_common as oc  # noqa: E402

try:
    logging.getLogger("scapy").setLevel(logging.ERROR)
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import bind_layers
    from scapy.utils import RawPcapReader
    from scapy.contrib.roce import BTH
except ImportError as ex:
    oc.need_setup(f"{sys.executable} cannot import scapy.contrib.roce ({ex})")

args = sys.argv[1:]
skip_csum = bool(args) and args[0] == "--skip-csum"
if skip_csum:
    args = args[1:]
skip_other = bool(args) and args[0] == "--skip-other"
if skip_other:
    args = args[1:]
path, port = args[0], int(args[1])
mins = [int(x) for x in args[2:]] + [0, 0, 0]
bind_layers(UDP, BTH, dport=port)

counts = {"v2-ipv4": 0, "v2-ipv6": 0, "v1": 0}
bad = other = 0
for i, (frame, _meta) in enumerate(RawPcapReader(path)):
    p = Ether(frame)
    if p.type == 0x8915:
        enc = "v1"
    elif IP in p and UDP in p and p[UDP].dport == port:
        enc = "v2-ipv4"
    elif IPv6 in p and UDP in p and p[UDP].dport == port:
        enc = "v2-ipv6"
    elif skip_other:
        other += 1
        continue
    else:
        print(f"frame {i}: not RoCE for port {port}")
        bad += 1
        continue
    counts[enc] += 1
    wire = frame[-4:]
    if enc == "v2-ipv4":
        if BTH not in p:
            print(f"frame {i}: scapy found no BTH")
            bad += 1
            continue
        got = p[BTH].compute_icrc(None)
        q = p.copy()
        del q[IP].chksum
        del q[UDP].chksum
        q = Ether(bytes(q))
        # A UDP checksum of 0 over IPv4 is none (RFC 768); Linux's rxe sends that.
        udp_ok = p[UDP].chksum == 0 or q[UDP].chksum == p[UDP].chksum
        if not skip_csum and (q[IP].chksum != p[IP].chksum or not udp_ok):
            print(f"frame {i}: IPv4/UDP checksum differs from scapy's "
                  f"({p[IP].chksum:#x}/{p[UDP].chksum:#x} vs {q[IP].chksum:#x}/{q[UDP].chksum:#x})")
            bad += 1
    else:
        got = oc.icrc_ref(enc, frame, 14)
    if got != wire:
        print(f"frame {i} ({enc}, id {p[IP].id if IP in p else '-'}): ICRC {wire.hex()} but "
              f"{'scapy' if enc == 'v2-ipv4' else 'reference'} computes {got.hex()}")
        bad += 1

print(f"scapy_icrc: {counts} frames, {bad} bad" + (f", {other} other frames skipped" if other else ""))
for enc, m in zip(("v2-ipv4", "v2-ipv6", "v1"), mins):
    if counts[enc] < m:
        print(f"scapy_icrc: only {counts[enc]} {enc} frames, expected at least {m}")
        bad += 1
sys.exit(1 if bad else 0)
