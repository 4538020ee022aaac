#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Our RoCE codec against scapy (scapy.contrib.roce, python3-scapy), both directions.

A. Our frames -> scapy. gen_packets builds random frames of every opcode with our encoder; scapy
   dissects each and every field must equal what we asked for. What scapy models, it checks
   itself: Ethernet, 802.1Q, IPv4 (and its header checksum), IPv6, UDP (and its checksum), the
   RoCE v1 GRH, the BTH, AETH (scapy binds it only to the ACK opcode), the CNP's reserved bytes,
   and the ICRC of v2/IPv4 frames (BTH.compute_icrc). What scapy does not model -- DETH, RETH,
   AtomicETH, AtomicAckETH, ImmDt, IETH, FETH, and AETH on read responses / atomic ACKs -- we take
   from the raw bytes scapy leaves after the BTH, at the offsets the specification gives
   (oracle_common.parse_ext). scapy 2.5's compute_icrc handles IPv4 only (IPv6 is a TODO there and
   it returns 0); the ICRC of v2/IPv6 and v1 frames is checked against oracle_common.icrc_ref, a
   zlib re-implementation of roce-reference.md 1.7, itself checked here against scapy on every
   IPv4 frame. Should scapy learn IPv6, its ICRC is compared as well.

B. scapy frames -> ours. scapy builds random frames of every opcode (v2/IPv4 with scapy's own
   ICRC; v2/IPv6 and v1 with the reference ICRC), short ones padded to 60 bytes like a NIC does;
   gen_packets decodes them and every field it reports must equal what scapy set, and the ICRC
   must check. Then the negative cases: one covered byte flipped (must be rejected, by the ICRC or
   the parser), one masked or uncovered byte flipped (must still be accepted), opcodes outside our
   table, payload where none is allowed, truncated headers, IPv4 options and fragments; and the
   two ICRC vectors of roce-reference.md 1.7.

Usage: scapy_oracle.py --gen PATH/gen_packets [--tmp DIR] [--seed N] [--keep]
Exit status 0 when every check passes, 1 otherwise (also when scapy is missing).
"""

import argparse
import ipaddress
import logging
import os
import random
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

try:
    logging.getLogger("scapy").setLevel(logging.ERROR)
    from scapy.compat import raw
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw, bind_layers
    from scapy.utils import RawPcapReader, RawPcapWriter
    from scapy.contrib.roce import AETH, BTH, GRH, CNPPadding
except ImportError as ex:
    oc.need_setup(f"{sys.executable} cannot import scapy.contrib.roce ({ex})")

# scapy binds the RoCE v1 GRH to Ethernet only; let it follow an 802.1Q tag as well.
bind_layers(Dot1Q, GRH, type=0x8915)

ETHERTYPE = {"v1": 0x8915, "v2-ipv4": 0x0800, "v2-ipv6": 0x86DD}


def ip6_hex(s):
    return ipaddress.IPv6Address(s).packed.hex()


def mac(b):
    return ":".join(f"{x:02x}" for x in b)


# --- A. our frames -> scapy --------------------------------------------------------------------

def check_l2(chk, ctx, p, e):
    chk.eq(ctx, "eth dst", p[Ether].dst, e["eth_dst"])
    chk.eq(ctx, "eth src", p[Ether].src, e["eth_src"])
    if e["vlan"]:
        if not chk.true(ctx, Dot1Q in p, "scapy found no 802.1Q tag"):
            return
        q = p[Dot1Q]
        chk.eq(ctx, "eth type (TPID)", p[Ether].type, e["vlan_tpid"])
        chk.eq(ctx, "802.1Q TCI", q.prio << 13 | q.id << 12 | q.vlan, e["vlan_tci"])
        chk.eq(ctx, "802.1Q type", q.type, ETHERTYPE[e["encap"]])
    else:
        chk.true(ctx, Dot1Q not in p, "scapy found an 802.1Q tag")
        chk.eq(ctx, "eth type", p[Ether].type, ETHERTYPE[e["encap"]])


def check_l3(chk, ctx, p, e):
    rl = oc.roce_len(e)
    enc = e["encap"]
    if enc == "v2-ipv4":
        if not chk.true(ctx, IP in p, "scapy found no IPv4 header"):
            return False
        ip = p[IP]
        for what, got, want in (("version", ip.version, 4), ("ihl", ip.ihl, 5),
                                ("tos", ip.tos, e["ip_tos"]), ("len", ip.len, 28 + rl),
                                ("id", ip.id, e["ip_id"]),
                                ("flags+frag", int(ip.flags) << 13 | ip.frag, e["ip_frag"]),
                                ("ttl", ip.ttl, e["ip_ttl"]), ("proto", ip.proto, 17),
                                ("src", ip.src, e["ip_src"]), ("dst", ip.dst, e["ip_dst"])):
            chk.eq(ctx, "IPv4 " + what, got, want)
        c = ip.copy()
        c.chksum = None
        chk.eq(ctx, "IPv4 header checksum (ours vs scapy's)", ip.chksum, IP(raw(c)).chksum)
    elif enc == "v2-ipv6":
        if not chk.true(ctx, IPv6 in p, "scapy found no IPv6 header"):
            return False
        ip = p[IPv6]
        for what, got, want in (("version", ip.version, 6), ("tc", ip.tc, e["ip6_tclass"]),
                                ("fl", ip.fl, e["ip6_flow"]), ("plen", ip.plen, 8 + rl),
                                ("nh", ip.nh, 17), ("hlim", ip.hlim, e["ip6_hop"]),
                                ("src", ip6_hex(ip.src), e["ip6_src"]),
                                ("dst", ip6_hex(ip.dst), e["ip6_dst"])):
            chk.eq(ctx, "IPv6 " + what, got, want)
    else:
        if not chk.true(ctx, GRH in p, "scapy found no GRH"):
            return False
        g = p[GRH]
        for what, got, want in (("ipver", g.ipver, 6), ("tclass", g.tclass, e["ip6_tclass"]),
                                ("flowlabel", g.flowlabel, e["ip6_flow"]), ("paylen", g.paylen, rl),
                                ("nexthdr", g.nexthdr, 0x1B), ("hoplmt", g.hoplmt, e["ip6_hop"]),
                                ("sgid", g.sgid, int(e["ip6_src"], 16)),
                                ("dgid", g.dgid, int(e["ip6_dst"], 16))):
            chk.eq(ctx, "GRH " + what, got, want)
        return True
    if not chk.true(ctx, UDP in p, "scapy found no UDP header"):
        return False
    u = p[UDP]
    chk.eq(ctx, "UDP sport", u.sport, e["udp_sport"])
    chk.eq(ctx, "UDP dport", u.dport, 4791)
    chk.eq(ctx, "UDP len", u.len, 8 + rl)
    chk.eq(ctx, "UDP checksum", u.chksum, e["udp_csum"])
    if e["udp_csum"]:
        # gen_packets computed it (test code, not the codec); scapy recomputes it.
        c = (p[IP] if enc == "v2-ipv4" else p[IPv6]).copy()
        c[UDP].chksum = None
        chk.eq(ctx, "UDP checksum (scapy's)", type(c)(raw(c))[UDP].chksum, e["udp_csum"])
    return True


def check_transport(chk, ctx, p, e, frame):
    if not chk.true(ctx, BTH in p, "scapy found no BTH"):
        return
    b = p[BTH]
    op, plen = e["opcode"], e["payload_len"]
    pad = oc.pad_len(plen)
    for what, got, want in (("opcode", b.opcode, op), ("solicited", b.solicited, int(e["se"])),
                            ("migreq", b.migreq, int(e["mig"])), ("padcount", b.padcount, pad),
                            ("version (TVer)", b.version, e["tver"]), ("pkey", b.pkey, e["pkey"]),
                            ("fecn", b.fecn, int(e["fecn"])), ("becn", b.becn, int(e["becn"])),
                            ("resv6", b.resv6, e["resv6"]), ("dqpn", b.dqpn, e["dqpn"]),
                            ("ackreq", b.ackreq, int(e["ackreq"])), ("resv7", b.resv7, e["resv7"]),
                            ("psn", b.psn, e["psn"]), ("icrc field", f"{b.icrc:08x}", e["icrc"])):
        chk.eq(ctx, "BTH " + what, got, want)

    # Headers scapy models, checked through scapy's fields.
    if op == 0x11:
        if chk.true(ctx, AETH in p, "scapy did not dissect the ACK's AETH"):
            chk.eq(ctx, "AETH syndrome (scapy)", p[AETH].syndrome, e["aeth_syn"])
            chk.eq(ctx, "AETH msn (scapy)", p[AETH].msn, e["aeth_msn"])
    if op == 0x81:
        if chk.true(ctx, CNPPadding in p, "scapy did not dissect the CNP padding"):
            c = p[CNPPadding]
            chk.eq(ctx, "CNP reserved (scapy)", f"{c.reserved1:016x}{c.reserved2:016x}", e["cnp"])

    # The rest from the bytes after the BTH (ICRC excluded by scapy): header fields at the
    # specification's offsets, then payload and pad.
    tail = raw(b.payload)
    el = oc.ext_len(op)
    if not chk.eq(ctx, "bytes after the BTH", len(tail), el + plen + pad):
        return
    for h, off in oc.ext_layout(op):
        for k, v in oc.parse_ext(h, tail[off:off + oc.EXT_LEN[h]]).items():
            chk.eq(ctx, f"{h} {k} (raw)", v, e[k])
    chk.eq(ctx, "payload", tail[el:el + plen].hex(), e["payload"])
    chk.eq(ctx, "pad bytes", tail[el + plen:], bytes(pad))

    # ICRC: the bytes on the wire, scapy's computation (IPv4), the zlib reference (all).
    want = bytes.fromhex(e["icrc"])
    chk.eq(ctx, "ICRC on the wire", frame[-4:].hex(), e["icrc"])
    scapy_icrc = b.compute_icrc(None)
    if e["encap"] == "v2-ipv4":
        chk.eq(ctx, "ICRC (scapy compute_icrc)", scapy_icrc.hex(), want.hex())
    elif scapy_icrc != bytes(4):
        chk.eq(ctx, "ICRC (scapy compute_icrc, non-IPv4)", scapy_icrc.hex(), want.hex())
    ref = oc.icrc_ref(e["encap"], frame, oc.l2_len(e))
    chk.eq(ctx, "ICRC (zlib reference)", ref.hex(), want.hex())


def ours_to_scapy(chk, gen, seed, tmp):
    runs = (("v2-ipv4", 8, ("vlan",)), ("v2-ipv4", 3, ("resv", "vlan")),
            ("v2-ipv6", 4, ("vlan",)), ("v2-ipv6", 2, ("resv",)),
            ("v1", 4, ("vlan",)), ("v1", 2, ("resv",)))
    total = 0
    for k, (encap, per_op, flags) in enumerate(runs):
        s = seed + k
        pcap = os.path.join(tmp, f"ours-{encap}-{k}.pcap")
        exp = oc.gen(gen, s, per_op, encap, pcap, pcap[:-5] + ".jsonl", *flags)
        run = f"gen {s} {per_op} {encap} {' '.join(flags)}"
        oc.check_opcode_coverage(chk, run, exp)
        frames = [r[0] for r in RawPcapReader(pcap)]
        chk.eq(run, "frames in the pcap", len(frames), len(exp))
        for frame, e in zip(frames, exp):
            ctx = f"[{run}] #{e['i']} op 0x{e['opcode']:02x}"
            chk.eq(ctx, "frame length", len(frame), oc.bth_off(e) + oc.roce_len(e))
            chk.eq(ctx, "frame_len reported", e["frame_len"], len(frame))
            p = Ether(frame)
            try:
                check_l2(chk, ctx, p, e)
                if check_l3(chk, ctx, p, e):
                    check_transport(chk, ctx, p, e, frame)
            except KeyError as ex:  # our JSON lacks a field the spec table expects
                chk.true(ctx, False, f"gen_packets gave no {ex} for this opcode")
        total += len(exp)
    return total


# --- B. scapy frames -> ours -------------------------------------------------------------------

def rand_fields(rng, op, encap, resv=False):
    """Random field values for one frame, keyed like gen_packets' JSON."""
    r = rng.getrandbits
    f = {"encap": encap, "eth_dst": mac(rng.randbytes(6)),
         "eth_src": mac(bytes([r(8) & 0xFE]) + rng.randbytes(5)), "vlan": rng.random() < 0.25}
    if f["vlan"]:
        f.update(vlan_tpid=0x8100, vlan_tci=r(16))
    if encap == "v2-ipv4":
        f.update(ip_tos=r(8), ip_id=r(16), ip_frag=0x4000, ip_ttl=1 + rng.randrange(255),
                 ip_src=str(ipaddress.IPv4Address(r(32))), ip_dst=str(ipaddress.IPv4Address(r(32))))
    else:
        f.update(ip6_tclass=r(8), ip6_flow=r(20), ip6_hop=1 + rng.randrange(255),
                 ip6_src=rng.randbytes(16).hex(), ip6_dst=rng.randbytes(16).hex())
    if encap != "v1":
        # udp_csum None: scapy computes it (replaced by its value in scapy_frame).
        f.update(udp_sport=0xC000 | r(14), udp_dport=4791,
                 udp_csum=None if rng.random() < 0.5 else 0)
    f.update(opcode=op, se=rng.random() < 0.5, mig=rng.random() < 0.5, pkey=r(16),
             fecn=rng.random() < 0.5, becn=rng.random() < 0.5, dqpn=r(24),
             ackreq=rng.random() < 0.5, psn=r(24),
             tver=r(4) if resv else 0, resv6=r(6) if resv else 0, resv7=r(7) if resv else 0)
    hdrs = oc.OPCODES[op][1] if op in oc.OPCODES else ()
    vals = {"deth_qkey": r(32), "deth_resv": r(8) if resv else 0, "deth_srcqp": r(24),
            "feth": r(32) if resv else r(6),
            "reth_va": r(64), "reth_rkey": r(32), "reth_len": r(32),
            "atm_va": r(64), "atm_rkey": r(32), "atm_swap": r(64), "atm_cmp": r(64),
            "aeth_syn": r(8) if resv else r(7), "aeth_msn": r(24), "atmack": r(64),
            "imm": r(32), "ieth": r(32), "cnp": (rng.randbytes(16) if resv else bytes(16)).hex()}
    for h in hdrs:
        for k in oc.EXT_KEYS[h]:
            f[k] = vals[k]
    rule = oc.OPCODES[op][2] if op in oc.OPCODES else oc.PAYLOAD_ANY
    if rule == oc.PAYLOAD_NONE:
        plen = 0
    elif rule == oc.PAYLOAD_ATOMIC8:
        plen = 8
    else:
        plen = rng.randrange(9) if rng.random() < 0.25 else rng.randrange(1101)
    f["payload_len"] = plen
    f["payload"] = rng.randbytes(plen).hex()
    return f


def scapy_frame(f, extra=b"", ip_options=None, ip_frag=None, hdr_bytes=None):
    """Build f with scapy. Returns (frame bytes, f completed with the fields scapy computed).

    extra: bytes appended after the payload and pad (for invalid frames); hdr_bytes: replaces
    the extension headers (for truncated ones).
    """
    op, plen = f["opcode"], f["payload_len"]
    pad = oc.pad_len(plen)
    encap = f["encap"]
    l2 = Ether(dst=f["eth_dst"], src=f["eth_src"])
    if f["vlan"]:
        t = f["vlan_tci"]
        l2 = l2 / Dot1Q(prio=t >> 13, id=(t >> 12) & 1, vlan=t & 0xFFF)
    bth = BTH(opcode=op, solicited=int(f["se"]), migreq=int(f["mig"]), padcount=pad,
              version=f["tver"], pkey=f["pkey"], fecn=int(f["fecn"]), becn=int(f["becn"]),
              resv6=f["resv6"], dqpn=f["dqpn"], ackreq=int(f["ackreq"]), resv7=f["resv7"],
              psn=f["psn"])
    body = bytes.fromhex(f["payload"]) + bytes(pad) + extra
    hdrs = oc.OPCODES[op][1] if op in oc.OPCODES else ()
    if hdr_bytes is not None:
        tail = Raw(hdr_bytes + body)
    elif op == 0x11 and not body:
        tail = AETH(syndrome=f["aeth_syn"], msn=f["aeth_msn"])  # scapy's own AETH
    elif op == 0x81 and not body:
        c = f["cnp"]
        tail = CNPPadding(reserved1=int(c[:16], 16), reserved2=int(c[16:], 16))
    else:
        tail = Raw(b"".join(oc.build_ext(h, f) for h in hdrs) + body)
    if encap == "v2-ipv4":
        ip = IP(ihl=None if ip_options else 5, tos=f["ip_tos"], id=f["ip_id"],
                flags=(ip_frag if ip_frag is not None else f["ip_frag"]) >> 13,
                frag=(ip_frag or 0) & 0x1FFF, ttl=f["ip_ttl"], src=f["ip_src"], dst=f["ip_dst"],
                options=ip_options or [])
        pkt = l2 / ip / UDP(sport=f["udp_sport"], dport=4791, chksum=f["udp_csum"]) / bth / tail
        frame = raw(pkt)  # scapy computes the ICRC
    elif encap == "v2-ipv6":
        pkt = (l2 / IPv6(tc=f["ip6_tclass"], fl=f["ip6_flow"], hlim=f["ip6_hop"],
                         src=str(ipaddress.IPv6Address(bytes.fromhex(f["ip6_src"]))),
                         dst=str(ipaddress.IPv6Address(bytes.fromhex(f["ip6_dst"]))))
               / UDP(sport=f["udp_sport"], dport=4791, chksum=f["udp_csum"]) / bth / tail)
        # scapy computes no IPv6 ICRC: the zlib reference, then build again with it.
        pkt[BTH].icrc = 0  # (pkt holds copies of the layers: set it there, not on bth)
        l2len = 18 if f["vlan"] else 14
        pkt[BTH].icrc = int.from_bytes(oc.icrc_ref(encap, raw(pkt), l2len), "big")
        frame = raw(pkt)
    else:
        rl = 12 + len(raw(tail)) + 4
        pkt = l2 / GRH(ipver=6, tclass=f["ip6_tclass"], flowlabel=f["ip6_flow"], paylen=rl,
                       nexthdr=0x1B, hoplmt=f["ip6_hop"], sgid=int(f["ip6_src"], 16),
                       dgid=int(f["ip6_dst"], 16)) / bth / tail
        pkt[BTH].icrc = 0
        pkt[BTH].icrc = int.from_bytes(oc.icrc_ref(encap, raw(pkt), 18 if f["vlan"] else 14), "big")
        frame = raw(pkt)

    # What our decoder must report: the fields set above plus those scapy computed.
    want = dict(f, rc=0, frame_len=len(frame), pad=pad, icrc=frame[-4:].hex())
    p = Ether(frame)
    if encap == "v2-ipv4":
        want.update(ip_ihl=5, ip_tot_len=p[IP].len, ip_proto=17, ip_csum=p[IP].chksum)
        if UDP in p:  # not dissected in a fragment
            want.update(udp_len=p[UDP].len, udp_csum=p[UDP].chksum)
    elif encap == "v2-ipv6":
        want.update(ip6_paylen=p[IPv6].plen, ip6_next=17, udp_len=p[UDP].len,
                    udp_csum=p[UDP].chksum)
    else:
        want.update(ip6_paylen=rl, ip6_next=0x1B)
    return frame, want


def flip(rng, frame, want, covered):
    """Flip bits of one byte. covered: a byte the ICRC covers; else one it masks or skips."""
    l2 = oc.l2_len(want)
    n3 = oc.L3L4_LEN[want["encap"]]
    masked = oc.ICRC_MASKED[want["encap"]]
    b = bytearray(frame[:want["frame_len"]])
    bth4 = l2 + n3 + 4
    if covered:
        while True:
            i = rng.randrange(l2, len(b))
            free = 0xFF if i == bth4 else masked.get(i - l2, 0)  # masked bits
            x = rng.randrange(1, 256) & ~free
            if x:
                break
    else:
        # An Ethernet address byte, the VLAN TCI, a masked L3/L4 field or BTH byte 4.
        cands = [(i, 0xFF) for i in range(12)] + [(l2 + o, m) for o, m in masked.items()]
        cands.append((bth4, 0xFF))
        if want["vlan"]:
            cands += [(14, 0xFF), (15, 0xFF)]
        i, m = rng.choice(cands)
        x = 0
        while not x:
            x = rng.randrange(1, 256) & m
    b[i] ^= x
    return bytes(b) + frame[want["frame_len"]:], i, x


def eth_pad(frame):
    """Pad to the 60-byte Ethernet minimum (without FCS), as a NIC does."""
    return frame + bytes(max(0, 60 - len(frame)))


def scapy_to_ours(chk, gen, seed, tmp):
    rng = random.Random(seed)
    cases = []  # (frame bytes, kind, want, description)

    valid = []
    for op in sorted(oc.OPCODES):
        for encap, n in (("v2-ipv4", 6), ("v2-ipv6", 2), ("v1", 2)):
            for j in range(n):
                f = rand_fields(rng, op, encap, resv=j == 1)
                frame, want = scapy_frame(f)
                if encap == "v2-ipv4":
                    # scapy's ICRC and the reference agree (this validates icrc_ref).
                    chk.eq(f"scapy op 0x{op:02x} {encap}", "ICRC scapy vs zlib reference",
                           frame[-4:].hex(), oc.icrc_ref(encap, frame, oc.l2_len(want)).hex())
                valid.append((eth_pad(frame), want))
    for frame, want in valid:
        cases.append((frame, "valid", want, "scapy-built"))
        fr, i, x = flip(rng, frame, want, covered=True)
        cases.append((fr, "corrupt", want, f"covered byte {i} ^= 0x{x:02x}"))
        fr, i, x = flip(rng, frame, want, covered=False)
        cases.append((fr, "masked", want, f"masked/uncovered byte {i} ^= 0x{x:02x}"))

    # Opcodes outside our table (RD, XRC, reserved, manufacturer-specific): rejected.
    others = [op for op in range(256) if op not in oc.OPCODES]
    for op in [0x15, 0x18, 0x1E, 0x1F, 0x2C, 0x40, 0x44, 0x51, 0x66, 0x80, 0xA4, 0xC0, 0xFF] + \
            rng.sample(others, 12):
        f = rand_fields(rng, op, "v2-ipv4")
        frame, want = scapy_frame(f)
        cases.append((eth_pad(frame), "reject", want, f"opcode 0x{op:02x} not in the table"))
    # Payload on opcodes that carry none.
    for op in [op for op, v in oc.OPCODES.items() if v[2] == oc.PAYLOAD_NONE]:
        f = rand_fields(rng, op, rng.choice(("v2-ipv4", "v2-ipv6", "v1")))
        frame, want = scapy_frame(f, extra=rng.randbytes(4))
        cases.append((frame, "reject", want, "4 payload bytes on an opcode without payload"))
    # Truncated extension headers (the lengths in IP/UDP/GRH agree with the short packet).
    for op in [op for op, v in oc.OPCODES.items() if v[1] and v[2] == oc.PAYLOAD_NONE]:
        f = rand_fields(rng, op, "v2-ipv4")
        full = b"".join(oc.build_ext(h, f) for h in oc.OPCODES[op][1])
        cut = rng.randrange(len(full))
        frame, want = scapy_frame(f, hdr_bytes=full[:cut])
        cases.append((eth_pad(frame), "reject", want, f"extension headers cut to {cut} bytes"))
    # IPv4 options and fragments: rejected (rxe sends neither).
    from scapy.layers.inet import IPOption_Router_Alert
    f = rand_fields(rng, 0x04, "v2-ipv4")
    frame, want = scapy_frame(f, ip_options=[IPOption_Router_Alert()])
    cases.append((frame, "reject", want, "IPv4 with options"))
    for frag in (0x2000, 0x0001, 0x2010):
        f = rand_fields(rng, 0x04, "v2-ipv4")
        frame, want = scapy_frame(f, ip_frag=frag)
        cases.append((frame, "reject", want, f"IPv4 fragment (flags/offset 0x{frag:04x})"))

    # roce-reference.md 1.7 vector 1: a CNP captured from a ConnectX-4 Lx.
    v1 = bytes.fromhex("e41d2dab2bc27cfe90643b320800" "45c2003c718c400040119161""0a0011010a001201"
                       "000012b700280000" "8100ffff4000011800000000" + "00" * 16 + "82fd002a")
    chk.eq("vector 1 (CNP)", "scapy compute_icrc", Ether(v1)[BTH].compute_icrc(None).hex(),
           "82fd002a")
    cases.append((eth_pad(v1), "vector",
                  {"opcode": 0x81, "becn": True, "fecn": False, "dqpn": 0x118, "psn": 0,
                   "pkey": 0xFFFF, "udp_sport": 0, "ip_tos": 0xC2, "icrc": "82fd002a"},
                  "roce-reference 1.7 vector 1"))
    # Vector 2: UC SEND_ONLY, built by scapy from the listed fields.
    v2 = (Ether() / IP(tos=1, id=1144, flags="DF", ttl=64, src="192.168.0.7", dst="192.168.0.7")
          / UDP(sport=49152, dport=4791, chksum=0)
          / BTH(opcode=0x24, migreq=1, padcount=2, pkey=0xFFFF, dqpn=211, psn=13571856)
          / Raw(bytes.fromhex("4630818be28935d90e9a95505401be885e500000")))
    v2 = raw(v2)
    chk.eq("vector 2 (UC SEND_ONLY)", "scapy ICRC", v2[-4:].hex(), "78f353f3")
    chk.eq("vector 2 (UC SEND_ONLY)", "IPv4 checksum", Ether(v2)[IP].chksum, 0xB4D5)
    cases.append((v2, "vector",
                  {"opcode": 0x24, "mig": True, "pad": 2, "dqpn": 211, "psn": 13571856,
                   "payload_len": 18, "icrc": "78f353f3"}, "roce-reference 1.7 vector 2"))

    pcap = os.path.join(tmp, "scapy.pcap")
    w = RawPcapWriter(pcap, linktype=1)  # the bytes exactly as built, Ethernet padding included
    for c in cases:
        w.write(c[0])
    w.close()
    got = oc.decode(gen, pcap)
    chk.eq("scapy->ours", "frames decoded", len(got), len(cases))

    caught = {"icrc": 0, "parser": 0}
    for k, ((frame, kind, want, desc), d) in enumerate(zip(cases, got)):
        ctx = (f"scapy.pcap frame {k + 1} ({desc}; op 0x{want['opcode']:02x} "
               f"{want.get('encap', '')}; {frame[:24].hex()}...)")
        if kind == "valid":
            chk.eq(ctx, "rc", d["rc"], 0)
            if d["rc"] != 0:
                continue
            chk.true(ctx, d["icrc_ok"],
                     f"our ICRC check failed: calc {d['icrc_calc']}, carried {d['icrc']}")
            skip = {"i", "icrc_ok", "icrc_calc"}
            for key in sorted((set(d) | set(want)) - skip):
                chk.eq(ctx, key, d.get(key), want.get(key))
        elif kind == "corrupt":
            ok = d["rc"] == 0 and d["icrc_ok"]
            chk.true(ctx, not ok, "a corrupted covered byte was accepted")
            if not ok:
                caught["icrc" if d["rc"] == 0 else "parser"] += 1
        elif kind == "masked":
            chk.eq(ctx, "rc", d["rc"], 0)
            if d["rc"] == 0:
                chk.true(ctx, d["icrc_ok"], "a masked/uncovered byte changed our ICRC")
                for key in ("opcode", "dqpn", "psn", "payload", "icrc"):
                    chk.eq(ctx, key, d.get(key), want.get(key))
        elif kind == "reject":
            chk.eq(ctx, "rc", d["rc"], oc.EBADMSG)
        elif kind == "vector":
            chk.eq(ctx, "rc", d["rc"], 0)
            chk.true(ctx, d.get("icrc_ok"), "our ICRC check failed")
            for key, v in want.items():
                chk.eq(ctx, key, d.get(key), v)
    n_valid = sum(1 for c in cases if c[1] == "valid")
    print(f"  scapy->ours: {n_valid} valid frames, {len(cases) - n_valid} negative/vector cases; "
          f"corruptions caught by the ICRC {caught['icrc']}, by the parser {caught['parser']}")
    return len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gen", required=True, help="the gen_packets binary")
    ap.add_argument("--tmp", help="where to make the temporary directory")
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=oc.DEFAULT_SEED)
    ap.add_argument("--keep", action="store_true", help="keep the temporary files")
    a = ap.parse_args()
    if not os.access(a.gen, os.X_OK):
        oc.fatal(f"gen_packets not found at {a.gen}")

    t0 = time.monotonic()
    print(f"scapy_oracle: seed {a.seed:#x}")
    chk = oc.Checker("scapy_oracle", f"{sys.executable} {os.path.abspath(__file__)} --gen {a.gen} "
                                     f"--seed {a.seed:#x} --keep")
    tmp = oc.tmpdir(a.tmp)
    try:
        n = ours_to_scapy(chk, a.gen, a.seed, tmp)
        print(f"  ours->scapy: {n} frames")
        scapy_to_ours(chk, a.gen, a.seed, tmp)
    finally:
        if a.keep:
            print(f"  files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"  {time.monotonic() - t0:.1f} s")
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
