#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Our RoCE encoder against tshark's InfiniBand dissector (no scapy needed).

gen_packets builds random frames of every opcode with our encoder, for RoCE v1 (Ethertype 0x8915),
v2/IPv4 and v2/IPv6 (UDP 4791), some with an 802.1Q tag, some with the reserved fields set. All
frames go into one capture, decoded by a single tshark run (-T pdml: it gives every field with
its byte position, so we also check that tshark finds each header where the specification puts
it, and it tells apart the several fields all named "infiniband.reserved"). For every frame and
every field tshark decodes, its value must equal what we asked the encoder for:

  Ethernet, 802.1Q, IPv4 (tshark verifies our header checksum), IPv6, UDP (tshark verifies the
  checksum where one is set), the GRH, every BTH field including TVer, the FECN/BECN/resv6 byte
  and resv7, DETH (with its reserved byte), RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, the
  payload with its pad, and the ICRC bytes at the end.

What tshark cannot check:
  * The ICRC value. tshark 4.0 shows the ICRC field but does not compute it (there is no
    infiniband ICRC status field); its value is checked by scapy_oracle.py.
  * Opcodes tshark 4.0 does not know: FLUSH (0x1C), ATOMIC_WRITE (0x1D) and CNP (0x81). tshark
    decodes their BTH, then shows everything after it as "Unknown/Vendor Specific Data"
    (infiniband.vendor, ICRC included). For those we check the BTH through tshark and parse the
    vendor bytes with the specification's layout (oracle_common.parse_ext).
  * tshark tries heuristic sub-dissectors (RPC-over-RDMA, NVMe-oF, iSER, SMB Direct, EoIB,
    Ethernet over IB, ...) on the payload; random payloads sometimes match one, which then
    throws and hides the ICRC. We disable them; if a frame's payload still is not shown as raw
    data, its payload and ICRC checks are skipped and counted (the test fails if that is more
    than a few frames).
  * tshark flags a zero UDP checksum over IPv6 as illegal (RFC 8200); RoCE senders such as rxe
    send 0, so we accept that status for csum 0.

Usage: tshark_oracle.py --gen PATH/gen_packets [--tmp DIR] [--seed N] [--keep]
Exit status 0 when every check passes, 1 otherwise (also when tshark is missing).
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

ETHERTYPE = {"v1": 0x8915, "v2-ipv4": 0x0800, "v2-ipv6": 0x86DD}

# Heuristic payload dissectors: disabled as protocols (unknown names are ignored by tshark) and,
# for the Ethernet-over-IB heuristic which belongs to a protocol we need, by heuristic name.
HEUR_PROTOCOLS = ("rpcordma", "nvme-rdma", "iser", "smb_direct", "smc", "lnet", "infiniband.eoib",
                  "infiniband_sdp", "fcoib", "drbd")
HEUR_NAMES = ("eth_over_ib",)

# Opcodes tshark 4.0 shows as vendor-specific data after the BTH.
TSHARK_UNKNOWN = {0x1C, 0x1D, 0x81}

# The tshark field of each whole extension header.
HDR_FIELD = {"DETH": "infiniband.deth", "RETH": "infiniband.reth", "ATMETH": "infiniband.atomiceth",
             "AETH": "infiniband.aeth", "ATMACK": "infiniband.atomicacketh",
             "IMMDT": "infiniband.immdt", "IETH": "infiniband.ieth"}

CSUM_GOOD, CSUM_NOT_PRESENT, CSUM_ILLEGAL = 1, 3, 4
EXPERT_WARN = 0x00600000  # PI_WARN; PI_ERROR is 0x00800000


def num(s):
    return int(s, 16) if s.startswith("0x") else int(s, 10)


def pcap_frames(path):
    """Frames of a classic little-endian pcap (what gen_packets writes)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        oc.fatal(f"{path}: not a little-endian pcap")
    off, out = 24, []
    while off < len(data):
        _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
        out.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return out


def pcap_write(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for k, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, k, len(fr), len(fr)))
            f.write(fr)


def run_tshark(pcap):
    base = ["tshark", "-n", "-r", pcap, "-T", "pdml",
            "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
            "-o", "infiniband.rroce.port:4791"]
    for p in HEUR_PROTOCOLS:
        base += ["--disable-protocol", p]
    heur = [a for n in HEUR_NAMES for a in ("--disable-heuristic", n)]
    r = subprocess.run(base + heur, capture_output=True, text=True)
    if r.returncode != 0 and "No such protocol" in r.stderr:
        r = subprocess.run(base, capture_output=True, text=True)  # another tshark version
    if r.returncode != 0:
        oc.fatal(f"tshark failed ({r.returncode}): {r.stderr.strip()}")
    return ET.fromstring(r.stdout)


class Pkt:
    """The fields of one PDML packet: name -> [(show, value, pos, size)] in tree order."""

    def __init__(self, el):
        self.protos = [p.get("name") for p in el.findall("proto")]
        self.f = {}
        for fe in el.iter("field"):
            n = fe.get("name")
            if n:
                self.f.setdefault(n, []).append(
                    (fe.get("show") or "", fe.get("value") or "", int(fe.get("pos") or -1),
                     int(fe.get("size") or 0)))

    def all(self, name):
        return self.f.get(name, [])

    def get(self, name, pos=None):
        """The first field of that name (at byte position pos if given), or None."""
        for v in self.f.get(name, []):
            if pos is None or v[2] == pos:
                return v
        return None


class FrameCheck:
    def __init__(self, chk, ctx, pkt):
        self.chk, self.ctx, self.p = chk, ctx, pkt

    def field(self, name, want, pos=None, conv=num, use="show"):
        """tshark's field name (at pos) converted with conv must equal want."""
        v = self.p.get(name, pos)
        where = f"{name}" + (f" @{pos}" if pos is not None else "")
        if not self.chk.true(self.ctx, v is not None, f"tshark shows no {where}"):
            return
        s = v[0] if use == "show" else v[1]
        try:
            got = conv(s)
        except ValueError:
            got = s
        self.chk.eq(self.ctx, where, got, want)


def check_frame(chk, ctx, p, e, frame):
    fc = FrameCheck(chk, ctx, p)
    chk.true(ctx, "_ws.malformed" not in p.protos, "tshark: malformed packet")
    # No expert warning or error, except the zero UDP checksum over IPv6 (see above).
    allowed = set()
    if e["encap"] == "v2-ipv6" and not e["udp_csum"]:
        allowed.add("Illegal checksum value (0)")
    experts = zip(p.all("_ws.expert.message"), p.all("_ws.expert.severity"))
    for msg, sev in experts:
        if num(sev[0]) >= EXPERT_WARN:
            chk.true(ctx, msg[0] in allowed, f"tshark expert info: {msg[0]}")
    fc.field("frame.len", e["frame_len"])
    chk.eq(ctx, "frame length", len(frame), oc.bth_off(e) + oc.roce_len(e))

    # Ethernet and 802.1Q.
    fc.field("eth.dst", e["eth_dst"], conv=str)
    fc.field("eth.src", e["eth_src"], conv=str)
    et = ETHERTYPE[e["encap"]]
    if e["vlan"]:
        fc.field("eth.type", e["vlan_tpid"])
        tci = e["vlan_tci"]
        fc.field("vlan.priority", tci >> 13)
        fc.field("vlan.dei", (tci >> 12) & 1)
        fc.field("vlan.id", tci & 0xFFF)
        fc.field("vlan.etype", et)
    else:
        fc.field("eth.type", et)

    # L3, L4.
    l3 = oc.l2_len(e)
    rl = oc.roce_len(e)
    if e["encap"] == "v2-ipv4":
        fc.field("ip.version", 4)
        fc.field("ip.hdr_len", 20)
        fc.field("ip.dsfield", e["ip_tos"])
        fc.field("ip.len", 28 + rl)
        fc.field("ip.id", e["ip_id"])
        fc.field("ip.flags", e["ip_frag"] >> 13)
        fc.field("ip.frag_offset", e["ip_frag"] & 0x1FFF)
        fc.field("ip.ttl", e["ip_ttl"])
        fc.field("ip.proto", 17)
        fc.field("ip.src", e["ip_src"], conv=str)
        fc.field("ip.dst", e["ip_dst"], conv=str)
        fc.field("ip.checksum.status", CSUM_GOOD)  # tshark recomputes our header checksum
    elif e["encap"] == "v2-ipv6":
        fc.field("ipv6.version", 6)
        fc.field("ipv6.tclass", e["ip6_tclass"])
        fc.field("ipv6.flow", e["ip6_flow"])
        fc.field("ipv6.plen", 8 + rl)
        fc.field("ipv6.nxt", 17)
        fc.field("ipv6.hlim", e["ip6_hop"])
        fc.field("ipv6.src", e["ip6_src"], conv=str, use="value")
        fc.field("ipv6.dst", e["ip6_dst"], conv=str, use="value")
    else:
        fc.field("infiniband.grh.ipver", 6, pos=l3)
        fc.field("infiniband.grh.tclass", e["ip6_tclass"])
        fc.field("infiniband.grh.flowlabel", e["ip6_flow"])
        fc.field("infiniband.grh.paylen", rl)
        fc.field("infiniband.grh.nxthdr", 0x1B)
        fc.field("infiniband.grh.hoplmt", e["ip6_hop"])
        fc.field("infiniband.grh.sgid", e["ip6_src"], conv=str, use="value")
        fc.field("infiniband.grh.dgid", e["ip6_dst"], conv=str, use="value")
    if e["encap"] != "v1":
        udp = l3 + (20 if e["encap"] == "v2-ipv4" else 40)
        fc.field("udp.srcport", e["udp_sport"], pos=udp)
        fc.field("udp.dstport", 4791, pos=udp + 2)
        fc.field("udp.length", 8 + rl, pos=udp + 4)
        fc.field("udp.checksum", e["udp_csum"], pos=udp + 6)
        if e["udp_csum"]:
            fc.field("udp.checksum.status", CSUM_GOOD)
        else:
            fc.field("udp.checksum.status",
                     CSUM_NOT_PRESENT if e["encap"] == "v2-ipv4" else CSUM_ILLEGAL)

    # BTH, each field at its byte.
    b = oc.bth_off(e)
    op, plen = e["opcode"], e["payload_len"]
    pad = oc.pad_len(plen)
    fc.field("infiniband.bth.opcode", op, pos=b)
    fc.field("infiniband.bth.se", int(e["se"]), pos=b + 1)
    fc.field("infiniband.bth.m", int(e["mig"]), pos=b + 1)
    fc.field("infiniband.bth.padcnt", pad, pos=b + 1)
    fc.field("infiniband.bth.tver", e["tver"], pos=b + 1)
    fc.field("infiniband.bth.p_key", e["pkey"], pos=b + 2)
    fc.field("infiniband.reserved", e["fecn"] << 7 | e["becn"] << 6 | e["resv6"], pos=b + 4,
             conv=lambda s: int(s, 16))  # tshark 4.0 shows byte 4 whole, in hex
    fc.field("infiniband.bth.destqp", e["dqpn"], pos=b + 5)
    fc.field("infiniband.bth.a", int(e["ackreq"]), pos=b + 8)
    fc.field("infiniband.bth.reserved7", e["resv7"], pos=b + 8)
    fc.field("infiniband.bth.psn", e["psn"], pos=b + 9)

    x = b + oc.BTH_LEN  # first byte after the BTH
    el = oc.ext_len(op)
    end = len(frame)
    if op in TSHARK_UNKNOWN:
        # tshark: "Unknown/Vendor Specific Data", everything after the BTH including the ICRC.
        v = [f for f in p.all("infiniband.vendor") if f[2] == x and f[3] == end - x]
        if not chk.true(ctx, v, f"tshark shows no vendor data of {end - x} bytes at {x} "
                        f"(does this tshark decode opcode 0x{op:02x}? extend the oracle)"):
            return 0
        raw = bytes.fromhex(v[0][1])
        chk.eq(ctx, "vendor bytes = frame bytes", raw, frame[x:])
        for h, off in oc.ext_layout(op):
            for k, val in oc.parse_ext(h, raw[off:off + oc.EXT_LEN[h]]).items():
                chk.eq(ctx, f"{h} {k} (from tshark's vendor bytes)", val, e[k])
        chk.eq(ctx, "payload (from tshark's vendor bytes)", raw[el:el + plen].hex(), e["payload"])
        chk.eq(ctx, "ICRC (from tshark's vendor bytes)", raw[-4:].hex(), e["icrc"])
        return 0

    for h, off in oc.ext_layout(op):
        o = x + off
        chk.true(ctx, any(f[2] == o and f[3] == oc.EXT_LEN[h] for f in p.all(HDR_FIELD[h])),
                 f"tshark shows no {HDR_FIELD[h]} of {oc.EXT_LEN[h]} bytes at {o}")
        if h == "DETH":
            fc.field("infiniband.deth.q_key", e["deth_qkey"], pos=o)
            fc.field("infiniband.reserved", e["deth_resv"], pos=o + 4, conv=lambda s: int(s, 16))
            fc.field("infiniband.deth.srcqp", e["deth_srcqp"], pos=o + 5)
        elif h == "RETH":
            fc.field("infiniband.reth.va", e["reth_va"], pos=o)
            fc.field("infiniband.reth.r_key", e["reth_rkey"], pos=o + 8)
            fc.field("infiniband.reth.dmalen", e["reth_len"], pos=o + 12)
        elif h == "ATMETH":
            # tshark names the AtomicETH VA and R_Key fields infiniband.reth.*.
            fc.field("infiniband.reth.va", e["atm_va"], pos=o)
            fc.field("infiniband.reth.r_key", e["atm_rkey"], pos=o + 8)
            fc.field("infiniband.atomiceth.swapdt", e["atm_swap"], pos=o + 12)
            fc.field("infiniband.atomiceth.cmpdt", e["atm_cmp"], pos=o + 20)
        elif h == "AETH":
            fc.field("infiniband.aeth.syndrome", e["aeth_syn"], pos=o)
            fc.field("infiniband.aeth.msn", e["aeth_msn"], pos=o + 1)
        elif h == "ATMACK":
            fc.field("infiniband.atomicacketh.origremdt", e["atmack"], pos=o)
        elif h == "IMMDT":
            fc.field("infiniband.immdt", e["imm"], pos=o, use="value", conv=lambda s: int(s, 16))
        elif h == "IETH":
            fc.field("infiniband.ieth", e["ieth"], pos=o, use="value", conv=lambda s: int(s, 16))
        else:
            chk.true(ctx, False, f"no tshark check for header {h}")

    # Payload and pad, then the ICRC.
    po, pl = x + el, plen + pad
    data = [f for f in p.all("data.data") if f[2] == po]
    if pl == 0:
        chk.true(ctx, not p.all("data.data"), "tshark shows payload where there is none")
    elif not data:
        return 1  # a payload heuristic took it: payload and ICRC not checked (counted)
    else:
        chk.eq(ctx, "payload+pad (data.data)", data[0][1], e["payload"] + "00" * pad)
        chk.eq(ctx, "payload+pad length", data[0][3], pl)
    fc.field("infiniband.invariant.crc", e["icrc"], pos=end - 4, use="value", conv=str)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gen", required=True, help="the gen_packets binary")
    ap.add_argument("--tmp", help="where to make the temporary directory")
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=oc.DEFAULT_SEED)
    ap.add_argument("--keep", action="store_true", help="keep the temporary files")
    a = ap.parse_args()
    if not shutil.which("tshark"):
        oc.need_setup("tshark is not installed (not on PATH)")
    if not os.access(a.gen, os.X_OK):
        oc.fatal(f"gen_packets not found at {a.gen}")

    t0 = time.monotonic()
    print(f"tshark_oracle: seed {a.seed:#x}")
    chk = oc.Checker("tshark_oracle", f"{sys.executable} {os.path.abspath(__file__)} --gen {a.gen} "
                                      f"--seed {a.seed:#x} --keep")
    tmp = oc.tmpdir(a.tmp)
    try:
        runs = (("v1", 6, ("vlan",)), ("v2-ipv4", 6, ("vlan",)), ("v2-ipv6", 6, ("vlan",)),
                ("v1", 2, ("resv",)), ("v2-ipv4", 2, ("resv", "vlan")), ("v2-ipv6", 2, ("resv",)))
        frames, exps = [], []
        for k, (encap, per_op, flags) in enumerate(runs):
            s = a.seed + k
            pcap = os.path.join(tmp, f"ours-{encap}-{k}.pcap")
            exp = oc.gen(a.gen, s, per_op, encap, pcap, pcap[:-5] + ".jsonl", *flags)
            run = f"gen {s} {per_op} {encap} {' '.join(flags)}"
            oc.check_opcode_coverage(chk, run, exp)
            fr = pcap_frames(pcap)
            chk.eq(run, "frames in the pcap", len(fr), len(exp))
            for e in exp:
                e["run"] = run
            frames += fr
            exps += exp
        all_pcap = os.path.join(tmp, "all.pcap")
        pcap_write(all_pcap, frames)
        root = run_tshark(all_pcap)
        pkts = root.findall("packet")
        chk.eq("tshark", "packets decoded", len(pkts), len(frames))
        skipped = 0
        for n, (el, e, frame) in enumerate(zip(pkts, exps, frames)):
            ctx = f"all.pcap frame {n + 1} [{e['run']} #{e['i']}] op 0x{e['opcode']:02x}"
            try:
                skipped += check_frame(chk, ctx, Pkt(el), e, frame)
            except KeyError as ex:  # our JSON lacks a field the spec table expects
                chk.true(ctx, False, f"gen_packets gave no {ex} for this opcode")
        chk.true("tshark", skipped <= max(3, len(frames) // 100),
                 f"{skipped} frames had their payload taken by a heuristic dissector")
        print(f"  {len(frames)} frames ({len(oc.OPCODES)} opcodes, v1/v2-ipv4/v2-ipv6), "
              f"{skipped} with payload/ICRC unchecked (heuristic dissector)")
    finally:
        if a.keep:
            print(f"  files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"  {time.monotonic() - t0:.1f} s")
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
