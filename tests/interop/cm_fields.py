#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check every RDMA CM MAD in RoCE captures against what Linux sends (docs/cm-fields.md).

    cm_fields.py [options] FILE.pcap...

tshark decodes the frames (RoCE v2 over IPv4 and IPv6, RoCE v1 Ethertype 0x8915), the MAD header
and the CM fields it knows; the CM messages tshark 4.0 does not dissect (MRA, SIDR_REQ, SIDR_REP)
and the REQ path's flow label and packet rate (which it reads from the wrong bits) are taken from
the MAD payload tshark hands over, at the IBTA vol 1 12.6 offsets written out below; where tshark
does decode a field, the two decodes must agree.

Prints one line per violation ("FILE:FRAME: MSG field: ..."), then a summary. Exit 0 when there
is none, 1 when there is one, 2 on a usage error or when tshark is missing.
"""
import argparse
import ipaddress
import json
import shutil
import subprocess
import sys

ATTR = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU", 0x15: "DREQ",
        0x16: "DREP", 0x17: "SIDR_REQ", 0x18: "SIDR_REP", 0x19: "LAP", 0x1A: "APR"}
CM_QKEY = 0x80010000
RDMA_UDP_QKEY = 0x01234567
IB_CMA_SERVICE_ID = 0x0000000001000000
PS_TCP, PS_UDP, PS_IB, PS_IPOIB = 0x0106, 0x0111, 0x013F, 0x0002
MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
# tshark's heuristic sub-dissectors that could claim a CM private data area or a payload.
HEURISTICS = ["rpcrdma_infiniband", "iser_infiniband", "iser_ib_private", "lnet_ib",
              "lnet_ib_cm_private", "nvme_rdma", "nvme_rdma_cm_private", "sdp_ib_private",
              "sdp_infiniband", "smb_direct_infiniband"]
FIELDS = [
    "frame.number", "frame.time_epoch", "eth.type", "ip.src", "ip.dst", "ip.ttl",
    "ip.dsfield", "ipv6.src", "ipv6.dst", "ipv6.hlim", "ipv6.tclass", "infiniband.grh.sgid",
    "infiniband.grh.dgid", "infiniband.grh.hoplmt", "infiniband.grh.tclass",
    "infiniband.bth.opcode", "infiniband.bth.p_key", "infiniband.bth.destqp",
    "infiniband.bth.psn", "infiniband.deth.q_key", "infiniband.deth.srcqp",
    "infiniband.payload", "infiniband.mad.baseversion", "infiniband.mad.mgmtclass",
    "infiniband.mad.classversion", "infiniband.mad.method", "infiniband.mad.status",
    "infiniband.mad.classspecific", "infiniband.mad.transactionid",
    "infiniband.mad.attributeid", "infiniband.mad.attributemodifier", "infiniband.mad.data",
    # tshark's own CM decode, compared with the payload decode
    "infiniband.cm.req", "infiniband.cm.req.localqpn", "infiniband.cm.req.startpsn",
    "infiniband.cm.req.serviceid", "infiniband.cm.req.pppmtu", "infiniband.cm.req.maxcmretr",
    "infiniband.cm.req.ip_cm.sport", "infiniband.cm.rep", "infiniband.cm.rep.remotecommid",
    "infiniband.cm.rep.localqpn", "infiniband.cm.rep.startpsn",
    "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid",
    "infiniband.cm.rej.remotecommid", "infiniband.cm.rej.reason",
    "infiniband.cm.dreq.localcommid", "infiniband.cm.req.remoteqpneecn",
    "infiniband.cm.drsp.localcommid",
]
# What tshark says, and the payload decode it must equal: (message, tshark field, key).
CROSS = [
    ("REQ", "infiniband.cm.req", "local_comm_id"), ("REQ", "infiniband.cm.req.localqpn", "qpn"),
    ("REQ", "infiniband.cm.req.startpsn", "psn"), ("REQ", "infiniband.cm.req.pppmtu", "mtu"),
    ("REQ", "infiniband.cm.req.maxcmretr", "max_cm_retries"),
    ("REP", "infiniband.cm.rep", "local_comm_id"),
    ("REP", "infiniband.cm.rep.remotecommid", "remote_comm_id"),
    ("REP", "infiniband.cm.rep.localqpn", "qpn"), ("REP", "infiniband.cm.rep.startpsn", "psn"),
    ("RTU", "infiniband.cm.rtu.localcommid", "local_comm_id"),
    ("RTU", "infiniband.cm.rtu.remotecommid", "remote_comm_id"),
    ("REJ", "infiniband.cm.rej.remotecommid", "remote_comm_id"),
    ("REJ", "infiniband.cm.rej.reason", "reason"),
    ("DREQ", "infiniband.cm.dreq.localcommid", "local_comm_id"),
    ("DREQ", "infiniband.cm.req.remoteqpneecn", "remote_qpn"),
    ("DREP", "infiniband.cm.drsp.localcommid", "local_comm_id"),
]
# RC and UC request opcodes (IBTA 9.2, table 38): what a QP's receive side takes in order.
RC_REQUESTS = set(range(0x00, 0x0D)) | {0x13, 0x14, 0x16, 0x17, 0x1D}
UC_REQUESTS = set(range(0x20, 0x2C))


def be(b, off, n):
    return int.from_bytes(b[off:off + n], "big")


def bits(byte, msb_off, width):
    return (byte >> (8 - msb_off - width)) & ((1 << width) - 1)


def bswap32(v):
    return int.from_bytes(v.to_bytes(4, "big"), "little")


def ack_timeout(ca_ack_delay, packet_life_time):
    """core/cm.c cm_ack_timeout: what Linux writes as the REQ's local ACK timeout."""
    t = packet_life_time + 1
    if t >= ca_ack_delay:
        t += ca_ack_delay >= t - 1
    else:
        t = ca_ack_delay + (t >= ca_ack_delay - 1)
    return min(31, t)


class Msg:
    """One CM MAD: frame data, MAD header and the decoded CM message (host-order ints)."""

    def __init__(self, fr, hdr, data):
        self.fr, self.hdr, self.d = fr, hdr, data
        self.no = fr["no"]
        self.name = ATTR.get(hdr["attr"], "0x%04x" % hdr["attr"])
        self.f = decode(self.name, data)


def decode(name, p):
    """The CM message's fields at the IBTA offsets (p: the 232 bytes after the MAD header)."""
    f = {}
    if name == "REQ":
        f.update(local_comm_id=be(p, 0, 4), rsvd4=be(p, 4, 4), service_id=be(p, 8, 8),
                 ca_guid=be(p, 16, 8), rsvd24=be(p, 24, 4), qkey=be(p, 28, 4),
                 qpn=be(p, 32, 3), responder_resources=p[35], local_eecn=be(p, 36, 3),
                 initiator_depth=p[39], remote_eecn=be(p, 40, 3),
                 remote_cm_resp_timeout=bits(p[43], 0, 5), transport=bits(p[43], 5, 2),
                 e2e_flow_control=bits(p[43], 7, 1), psn=be(p, 44, 3),
                 local_cm_resp_timeout=bits(p[47], 0, 5), retry_count=bits(p[47], 5, 3),
                 pkey=be(p, 48, 2), mtu=bits(p[50], 0, 4), rdc_exists=bits(p[50], 4, 1),
                 rnr_retry_count=bits(p[50], 5, 3), max_cm_retries=bits(p[51], 0, 4),
                 srq=bits(p[51], 4, 1), ext_transport=bits(p[51], 5, 3))
        for pre, off in (("pri_", 52), ("alt_", 96)):
            w = be(p, off + 36, 4)
            f.update({pre + "local_lid": be(p, off, 2), pre + "remote_lid": be(p, off + 2, 2),
                      pre + "local_gid": bytes(p[off + 4:off + 20]),
                      pre + "remote_gid": bytes(p[off + 20:off + 36]),
                      pre + "flow_label": w >> 12, pre + "rsvd_fl": (w >> 6) & 0x3F,
                      pre + "packet_rate": w & 0x3F, pre + "traffic_class": p[off + 40],
                      pre + "hop_limit": p[off + 41], pre + "sl": bits(p[off + 42], 0, 4),
                      pre + "subnet_local": bits(p[off + 42], 4, 1),
                      pre + "rsvd_sl": p[off + 42] & 0x07,
                      pre + "local_ack_timeout": bits(p[off + 43], 0, 5),
                      pre + "rsvd_at": p[off + 43] & 0x07})
        f["alt_all"] = bytes(p[96:140])
        f["private"] = bytes(p[140:232])
    elif name == "MRA":
        f.update(local_comm_id=be(p, 0, 4), remote_comm_id=be(p, 4, 4),
                 msg_mraed=bits(p[8], 0, 2), rsvd8=p[8] & 0x3F,
                 service_timeout=bits(p[9], 0, 5), rsvd9=p[9] & 0x07, private=bytes(p[10:232]))
    elif name == "REJ":
        f.update(local_comm_id=be(p, 0, 4), remote_comm_id=be(p, 4, 4),
                 msg_rejected=bits(p[8], 0, 2), rsvd8=p[8] & 0x3F,
                 ari_len=bits(p[9], 0, 7), rsvd9=p[9] & 0x01, reason=be(p, 10, 2),
                 ari=bytes(p[12:84]), private=bytes(p[84:232]))
    elif name == "REP":
        f.update(local_comm_id=be(p, 0, 4), remote_comm_id=be(p, 4, 4), qkey=be(p, 8, 4),
                 qpn=be(p, 12, 3), rsvd15=p[15], local_eecn=be(p, 16, 3), rsvd19=p[19],
                 psn=be(p, 20, 3), rsvd23=p[23], responder_resources=p[24],
                 initiator_depth=p[25], target_ack_delay=bits(p[26], 0, 5),
                 failover=bits(p[26], 5, 2), e2e_flow_control=bits(p[26], 7, 1),
                 rnr_retry_count=bits(p[27], 0, 3), srq=bits(p[27], 3, 1),
                 rsvd27=p[27] & 0x0F, ca_guid=be(p, 28, 8), private=bytes(p[36:232]))
    elif name in ("RTU", "DREP"):
        f.update(local_comm_id=be(p, 0, 4), remote_comm_id=be(p, 4, 4), private=bytes(p[8:232]))
    elif name == "DREQ":
        f.update(local_comm_id=be(p, 0, 4), remote_comm_id=be(p, 4, 4), remote_qpn=be(p, 8, 3),
                 rsvd11=p[11], private=bytes(p[12:232]))
    elif name == "SIDR_REQ":
        f.update(request_id=be(p, 0, 4), pkey=be(p, 4, 2), rsvd6=be(p, 6, 2),
                 service_id=be(p, 8, 8), private=bytes(p[16:232]))
    elif name == "SIDR_REP":
        f.update(request_id=be(p, 0, 4), status=p[4], info_len=p[5], rsvd6=be(p, 6, 2),
                 qpn=be(p, 8, 3), rsvd11=p[11], service_id=be(p, 12, 8), qkey=be(p, 20, 4),
                 info=bytes(p[24:96]), private=bytes(p[96:232]))
    return f


def cma_hdr(priv):
    """core/cma.c struct cma_hdr: version, ip_version << 4, port, src and dst (16 bytes each)."""
    return {"version": priv[0], "ip_version": priv[1] >> 4, "rsvd": priv[1] & 0x0F,
            "port": be(priv, 2, 2), "src": bytes(priv[4:20]), "dst": bytes(priv[20:36])}


def gid_of(addr):
    """16-byte GID of an IPv4 (mapped) or IPv6 address string."""
    a = ipaddress.ip_address(addr)
    if a.version == 4:
        return b"\0" * 10 + b"\xff\xff" + a.packed
    return a.packed


def first(layers, name, conv=None):
    v = layers.get(name)
    if not v:
        return None
    v = v[0]
    if conv is int:
        return int(v, 0)
    return v


def read_frames(path, tshark):
    cmd = [tshark, "-n", "-r", path, "-T", "json"]
    for h in HEURISTICS:
        cmd += ["--disable-heuristic", h]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise RuntimeError("tshark failed on %s: %s" % (path, r.stderr.decode().strip()))
    frames = []
    for pkt in json.loads(r.stdout or b"[]"):
        L = pkt["_source"]["layers"]
        if "infiniband.bth.opcode" not in L:
            continue
        fr = {"no": int(L["frame.number"][0]), "t": float(L["frame.time_epoch"][0]), "L": L}
        if first(L, "ipv6.src"):
            fr.update(enc="v2v6", sgid=gid_of(first(L, "ipv6.src")),
                      dgid=gid_of(first(L, "ipv6.dst")), ttl=first(L, "ipv6.hlim", int),
                      tclass=first(L, "ipv6.tclass", int))
        elif first(L, "ip.src"):
            fr.update(enc="v2v4", sgid=gid_of(first(L, "ip.src")),
                      dgid=gid_of(first(L, "ip.dst")), ttl=first(L, "ip.ttl", int),
                      tclass=first(L, "ip.dsfield", int))
        elif first(L, "infiniband.grh.sgid"):
            fr.update(enc="v1", sgid=gid_of(first(L, "infiniband.grh.sgid")),
                      dgid=gid_of(first(L, "infiniband.grh.dgid")),
                      ttl=first(L, "infiniband.grh.hoplmt", int),
                      tclass=first(L, "infiniband.grh.tclass", int))
        else:
            continue
        fr.update(op=first(L, "infiniband.bth.opcode", int),
                  pkey=first(L, "infiniband.bth.p_key", int),
                  dqp=first(L, "infiniband.bth.destqp", int),
                  psn=first(L, "infiniband.bth.psn", int),
                  qkey=first(L, "infiniband.deth.q_key", int),
                  sqp=first(L, "infiniband.deth.srcqp", int),
                  paylen=len(first(L, "infiniband.payload") or "") // 2)
        frames.append(fr)
    return frames


class Checker:
    def __init__(self, opts):
        self.o = opts
        self.violations = 0
        self.checked = 0  # QPs whose first request packet was checked against the PSN
        self.file = ""

    def bad(self, no, msg, field, text):
        self.violations += 1
        print("%s:%s: %s %s: %s" % (self.file, no, msg, field, text))

    def want(self, m, field, got, expect, why=""):
        if got != expect:
            g = hex(got) if isinstance(got, int) else got
            e = hex(expect) if isinstance(expect, int) else expect
            self.bad(m.no, m.name, field, "%s, Linux: %s%s" % (g, e, (" (" + why + ")") if why else ""))

    # ---- one file -------------------------------------------------------------------------

    def check_file(self, path, tshark):
        self.file = path
        frames = read_frames(path, tshark)
        msgs = []
        for fr in frames:
            L = fr["L"]
            if fr["dqp"] == 1 and fr["op"] == 100 and first(L, "infiniband.mad.data"):
                m = self.mad(fr)
                if m:
                    msgs.append(m)
        self.exchanges(msgs, frames)
        return len(msgs), len(frames)

    def mad(self, fr):
        L = fr["L"]
        hdr = {k: first(L, "infiniband.mad." + v, int) for k, v in (
            ("base", "baseversion"), ("mclass", "mgmtclass"), ("cver", "classversion"),
            ("method", "method"), ("status", "status"), ("cspec", "classspecific"),
            ("tid", "transactionid"), ("attr", "attributeid"), ("amod", "attributemodifier"))}
        if hdr["mclass"] != 0x07:
            return None  # not the CM (SA, PerfMgt...): not ours to judge
        data = bytes.fromhex(first(L, "infiniband.mad.data").replace(":", ""))
        m = Msg(fr, hdr, data)
        if len(data) != 232:
            self.bad(m.no, m.name, "length", "MAD payload of %d bytes, 232 expected" % len(data))
            return None
        # The datagram that carries every CM MAD: UD SEND to QP1, from QP1, Q_Key 0x80010000.
        self.want(m, "BTH P_Key", fr["pkey"], 0xFFFF)
        self.want(m, "DETH source QP", fr["sqp"], 1)
        self.want(m, "DETH Q_Key", fr["qkey"], CM_QKEY)
        # MAD header (core/cm.c cm_format_mad_hdr; IBTA 13.4.2).
        self.want(m, "base version", hdr["base"], 1)
        self.want(m, "class version", hdr["cver"], 2)
        self.want(m, "method", hdr["method"], 0x03, "Send")
        self.want(m, "status", hdr["status"], 0)
        self.want(m, "class specific", hdr["cspec"], 0)
        self.want(m, "attribute modifier", hdr["amod"], 0)
        if m.name in ("LAP", "APR") or m.name.startswith("0x"):
            self.bad(m.no, m.name, "attribute ID", "not sent by rdma_cm over RoCE")
            return m
        for name, tf, key in CROSS:
            if name == m.name and first(L, tf) is not None:
                tv = first(L, tf, int)
                if tv != m.f[key]:
                    self.bad(m.no, m.name, key, "tshark decodes %#x, the payload %#x" %
                             (tv, m.f[key]))
        getattr(self, "msg_" + m.name.lower())(m)
        return m

    # ---- each message on its own ----------------------------------------------------------

    def zero(self, m, field, v):
        if (v if isinstance(v, int) else any(v)):
            self.bad(m.no, m.name, field, "not zero (reserved, or never sent by rdma_cm)")

    def cma(self, m, priv):
        """The rdma_cm IP header against the frame's addresses."""
        h = cma_hdr(priv)
        fr = m.fr
        self.want(m, "cma_hdr version", h["version"], 0)
        if h["ip_version"] not in (4, 6):
            self.bad(m.no, m.name, "cma_hdr ip_version", "%d, Linux: 4 or 6" % h["ip_version"])
            return h
        self.zero(m, "cma_hdr reserved nibble", h["rsvd"])
        if h["port"] == 0:
            self.bad(m.no, m.name, "cma_hdr source port", "0")
        for k, gid in (("src", fr["sgid"]), ("dst", fr["dgid"])):
            a = h[k]
            if h["ip_version"] == 4:
                self.zero(m, "cma_hdr %s pad" % k, a[:12])
                a = b"\0" * 10 + b"\xff\xff" + a[12:]
            if a != gid:
                self.bad(m.no, m.name, "cma_hdr %s address" % k, "%s, the frame's: %s" %
                         (ipaddress.ip_address(a), ipaddress.ip_address(gid)))
        if h["ip_version"] == 4 and fr["sgid"][:12] != b"\0" * 10 + b"\xff\xff":
            self.bad(m.no, m.name, "cma_hdr ip_version", "4 over an IPv6 GID")
        if h["ip_version"] == 6 and fr["sgid"][:12] == b"\0" * 10 + b"\xff\xff":
            self.bad(m.no, m.name, "cma_hdr ip_version", "6 over an IPv4 GID")
        return h

    def service_id(self, m, sid, ps_ok):
        if sid & 0xFFFFFFFFFF000000 != IB_CMA_SERVICE_ID:
            self.bad(m.no, m.name, "service ID", "%#x not in the RDMA IP range 0x1PPPPPP" % sid)
            return
        ps = (sid >> 16) & 0xFFFF
        if ps not in ps_ok:
            self.bad(m.no, m.name, "service ID", "port space %#x, Linux: %s" %
                     (ps, "/".join("%#06x" % p for p in ps_ok)))
        if sid & 0xFFFF == 0:
            self.bad(m.no, m.name, "service ID", "port 0")

    def msg_req(self, m):
        f, o = m.f, self.o
        if f["local_comm_id"] == 0:
            self.bad(m.no, m.name, "local comm ID", "0")
        self.want(m, "TID low word", m.hdr["tid"] & 0xFFFFFFFF, bswap32(f["local_comm_id"]),
                  "cm_form_tid: the local comm ID, byte-swapped")
        self.zero(m, "reserved 4-7", f["rsvd4"])
        self.zero(m, "reserved 24-27", f["rsvd24"])
        self.service_id(m, f["service_id"], (PS_TCP, PS_IB, PS_IPOIB))
        if f["ca_guid"] == 0:
            self.bad(m.no, m.name, "local CA GUID", "0")
        self.want(m, "local Q_Key", f["qkey"], 0)
        if f["qpn"] in (0, 1):
            self.bad(m.no, m.name, "local QPN", "%d" % f["qpn"])
        self.want(m, "local EECN", f["local_eecn"], 0)
        self.want(m, "remote EECN", f["remote_eecn"], 0)
        self.want(m, "remote CM response timeout", f["remote_cm_resp_timeout"],
                  o.cm_response_timeout, "CMA_CM_RESPONSE_TIMEOUT")
        self.want(m, "local CM response timeout", f["local_cm_resp_timeout"],
                  o.cm_response_timeout, "CMA_CM_RESPONSE_TIMEOUT")
        if f["transport"] not in (0, 1):
            self.bad(m.no, m.name, "transport service type", "%d, rdma_cm: RC 0 or UC 1" %
                     f["transport"])
        self.want(m, "extended transport type", f["ext_transport"], 0)
        self.want(m, "partition key", f["pkey"], 0xFFFF)
        if f["mtu"] not in MTU_BYTES:
            self.bad(m.no, m.name, "path MTU", "%d is no IB MTU" % f["mtu"])
        elif o.path_mtu is not None:
            self.want(m, "path MTU", f["mtu"], o.path_mtu, "iboe_get_mtu of the netdev MTU")
        self.want(m, "RDC exists", f["rdc_exists"], 0)
        self.want(m, "max CM retries", f["max_cm_retries"], o.cm_retries, "CMA_MAX_CM_RETRIES")
        # The primary path (cma_resolve_iboe_route, cm_format_req).
        fr = m.fr
        self.want(m, "primary local port GID", f["pri_local_gid"], fr["sgid"])
        self.want(m, "primary remote port GID", f["pri_remote_gid"], fr["dgid"])
        hl = f["pri_hop_limit"]
        lid = 0xFFFF if hl > 1 else 0
        self.want(m, "primary local LID", f["pri_local_lid"], lid, "permissive when routed")
        self.want(m, "primary remote LID", f["pri_remote_lid"], lid, "permissive when routed")
        self.want(m, "primary subnet local", f["pri_subnet_local"], int(hl <= 1))
        if hl == 0:
            self.bad(m.no, m.name, "primary hop limit", "0")
        self.want(m, "primary packet rate", f["pri_packet_rate"], 0, "IB_RATE_PORT_CURRENT")
        self.want(m, "primary SL", f["pri_sl"], 0, "iboe_tos_to_sl without a VLAN")
        self.want(m, "primary local ACK timeout", f["pri_local_ack_timeout"], o.ack_timeout,
                  "cm_ack_timeout(ack delay, CMA_IBOE_PACKET_LIFETIME 18)")
        for k in ("pri_rsvd_fl", "pri_rsvd_sl", "pri_rsvd_at"):
            self.zero(m, "primary path reserved bits", f[k])
        self.zero(m, "alternate path", f["alt_all"])
        h = self.cma(m, f["private"])
        if fr["enc"] == "v1":
            self.want(m, "primary flow label", f["pri_flow_label"], 0, "RoCE v1: none")
        elif h["ip_version"] in (4, 6):
            # cma_get_roce_udp_flow_label; an IPv6 source with a flow label of its own keeps it
            fl = (h["port"] * 31 + (f["service_id"] & 0xFFFF)) & 0xFFFFF
            if f["pri_flow_label"] != fl and not (h["ip_version"] == 6 and f["pri_flow_label"]):
                self.want(m, "primary flow label", f["pri_flow_label"], fl,
                          "(source port * 31 + destination port) & 0xFFFFF")

    def msg_rep(self, m):
        f = m.f
        if f["local_comm_id"] == 0:
            self.bad(m.no, m.name, "local comm ID", "0")
        self.want(m, "local Q_Key", f["qkey"], 0)
        if f["qpn"] in (0, 1):
            self.bad(m.no, m.name, "local QPN", "%d" % f["qpn"])
        self.want(m, "local EECN", f["local_eecn"], 0)
        self.want(m, "failover accepted", f["failover"], 0)
        self.want(m, "target ACK delay", f["target_ack_delay"], self.o.ack_delay,
                  "the device's local_ca_ack_delay (rxe: 15)")
        if f["ca_guid"] == 0:
            self.bad(m.no, m.name, "local CA GUID", "0")
        for k in ("rsvd15", "rsvd19", "rsvd23", "rsvd27"):
            self.zero(m, "reserved " + k[4:], f[k])

    def msg_rtu(self, m):
        self.zero(m, "private data", m.f["private"])

    def msg_drep(self, m):
        self.zero(m, "private data", m.f["private"])

    def msg_dreq(self, m):
        self.want(m, "TID low word", m.hdr["tid"] & 0xFFFFFFFF, bswap32(m.f["local_comm_id"]),
                  "cm_form_tid of the DREQ's sender")
        self.zero(m, "reserved 11", m.f["rsvd11"])
        self.zero(m, "private data", m.f["private"])

    def msg_mra(self, m):
        f = m.f
        if f["msg_mraed"] != 0:
            self.bad(m.no, m.name, "message MRAed", "%d, rdma_cm MRAs only a REQ" % f["msg_mraed"])
        self.want(m, "service timeout", f["service_timeout"], 24, "CMA_CM_MRA_SETTING")
        self.zero(m, "reserved bits", f["rsvd8"] | f["rsvd9"])
        self.zero(m, "private data", f["private"])

    def msg_rej(self, m):
        f = m.f
        if f["msg_rejected"] > 2:
            self.bad(m.no, m.name, "message rejected", "%d" % f["msg_rejected"])
        if f["ari_len"] > 72:
            self.bad(m.no, m.name, "reject info length", "%d > 72" % f["ari_len"])
        else:
            self.zero(m, "ARI beyond its length", f["ari"][f["ari_len"]:])
        self.zero(m, "reserved bits", f["rsvd8"] | f["rsvd9"])

    def msg_sidr_req(self, m):
        f = m.f
        if f["request_id"] == 0:
            self.bad(m.no, m.name, "request ID", "0")
        self.want(m, "TID low word", m.hdr["tid"] & 0xFFFFFFFF, bswap32(f["request_id"]),
                  "cm_form_tid: the request ID, byte-swapped")
        self.want(m, "partition key", f["pkey"], 0xFFFF)
        self.zero(m, "reserved 6-7", f["rsvd6"])
        self.service_id(m, f["service_id"], (PS_UDP, PS_IB, PS_IPOIB))
        self.cma(m, f["private"])

    def msg_sidr_rep(self, m):
        f = m.f
        self.zero(m, "reserved 6-7", f["rsvd6"])
        self.zero(m, "reserved 11", f["rsvd11"])
        if f["status"] > 3:
            self.bad(m.no, m.name, "status", "%d" % f["status"])
        if f["info_len"] > 72:
            self.bad(m.no, m.name, "additional information length", "%d > 72" % f["info_len"])
        else:
            self.zero(m, "additional information beyond its length", f["info"][f["info_len"]:])
        if f["status"] == 0:
            if f["qpn"] in (0, 1):
                self.bad(m.no, m.name, "QPN", "%d" % f["qpn"])
            if (f["service_id"] >> 16) & 0xFFFF == PS_UDP:
                self.want(m, "Q_Key", f["qkey"], RDMA_UDP_QKEY, "RDMA_UDP_QKEY")

    # ---- exchanges: replies against what they answer, the data against the REQ/REP --------

    def exchanges(self, msgs, frames):
        reqs, sidrs, dreqs, conns = {}, {}, {}, []
        firsts = {}
        for m in msgs:
            f, n = m.f, m.name
            if n in ("LAP", "APR") or n.startswith("0x"):
                continue
            # A resend is the same MAD again (ib_mad retries the send buffer as it is).
            key = (n, m.fr["sgid"], m.fr["dgid"], m.hdr["tid"], f.get("local_comm_id"),
                   f.get("request_id"))
            if key in firsts:
                p = firsts[key]
                if p.d != m.d or p.hdr != m.hdr:
                    self.bad(m.no, n, "resend", "differs from the first (frame %d)" % p.no)
                p.copies += 1
                if n in ("REQ", "SIDR_REQ") and p.copies > self.o.cm_retries + 1:
                    self.bad(m.no, n, "resends", "%d copies, max CM retries %d" %
                             (p.copies, self.o.cm_retries))
                continue
            m.copies = 1
            firsts[key] = m
            peer = (m.fr["dgid"], m.fr["sgid"])
            if n == "REQ":
                c = {"req": m, "rep": None, "active": m.fr["sgid"], "passive": m.fr["dgid"]}
                reqs[(m.fr["sgid"], m.fr["dgid"], f["local_comm_id"])] = c
                conns.append(c)
                continue
            if n == "SIDR_REQ":
                sidrs[(m.fr["sgid"], m.fr["dgid"], f["request_id"])] = m
                continue
            if n == "SIDR_REP":
                q = sidrs.get(peer + (f["request_id"],))
                if not q:
                    self.bad(m.no, n, "request ID", "%#x answers no SIDR_REQ" % f["request_id"])
                    continue
                self.want(m, "TID", m.hdr["tid"], q.hdr["tid"], "the SIDR_REQ's")
                if f["status"] == 0:
                    self.want(m, "service ID", f["service_id"], q.f["service_id"],
                              "the SIDR_REQ's")
                    self.ud_data(m, frames)
                continue
            c = self.find_conn(m, reqs, peer)
            if c is None:
                self.bad(m.no, n, "comm IDs", "%#x/%#x belong to no REQ in the capture" %
                         (f["local_comm_id"], f["remote_comm_id"]))
                continue
            req, rep = c["req"], c["rep"]
            # The sender by comm ID: on one device (loopback) both ends have the same GID.
            if c["active"] != c["passive"]:
                from_active = m.fr["sgid"] == c["active"]
            else:
                from_active = f["local_comm_id"] == req.f["local_comm_id"]
            if n in ("REP", "MRA", "REJ") and not from_active and (
                    n != "MRA" or m.f["msg_mraed"] == 0) and (
                    n != "REJ" or m.f["msg_rejected"] == 0):
                self.want(m, "TID", m.hdr["tid"], req.hdr["tid"], "the REQ's")
                if n == "REJ" and rep is None:
                    # cm_issue_rej (no listener) answers with comm ID 0; an ID of the
                    # rejecting side's own is as good: cm_acquire_rejected_id matches a REJ of a
                    # REQ by the remote comm ID alone.
                    pass
            if n == "REP":
                c["rep"] = m
                self.rep_vs_req(m, req)
            elif n == "RTU":
                self.want(m, "TID", m.hdr["tid"], req.hdr["tid"], "the REQ's")
                if rep:
                    self.want(m, "remote comm ID", f["remote_comm_id"], rep.f["local_comm_id"])
                if not from_active:
                    self.bad(m.no, n, "sender", "the passive side")
            elif n == "DREQ":
                dreqs[(m.fr["sgid"], m.fr["dgid"], f["local_comm_id"])] = m
                owner = rep if from_active else req
                if owner:
                    self.want(m, "remote QPN", f["remote_qpn"], owner.f["qpn"],
                              "the QPN the receiver advertised")
            elif n == "DREP":
                d = dreqs.get(peer + (f["remote_comm_id"],))
                if not d:
                    self.bad(m.no, n, "remote comm ID", "%#x answers no DREQ" % f["remote_comm_id"])
                else:
                    self.want(m, "TID", m.hdr["tid"], d.hdr["tid"], "the DREQ's")
                    self.want(m, "local comm ID", f["local_comm_id"], d.f["remote_comm_id"])
        for c in conns:
            if c["rep"]:
                self.conn_data(c, frames)
        self.stray_qpns(conns, frames)

    def find_conn(self, m, reqs, peer):
        """The REQ exchange a non-REQ message belongs to, by comm IDs and the two GIDs."""
        f = m.f
        lid, rid = f["local_comm_id"], f["remote_comm_id"]
        c = reqs.get(peer + (rid,))  # sent by the passive side: remote ID = the REQ's
        if c and (c["rep"] is None or m.name in ("REJ", "MRA") and lid in (0, c["rep"].f[
                "local_comm_id"]) or lid == c["rep"].f["local_comm_id"]):
            return c
        c = reqs.get((m.fr["sgid"], m.fr["dgid"], lid))  # sent by the active side
        if c and (c["rep"] is None or rid in (0, c["rep"].f["local_comm_id"])):
            return c
        return None

    def rep_vs_req(self, m, req):
        f, r = m.f, req.f
        self.want(m, "remote comm ID", f["remote_comm_id"], r["local_comm_id"])
        if f["initiator_depth"] > r["responder_resources"]:
            self.bad(m.no, m.name, "initiator depth", "%d > the REQ's responder resources %d" %
                     (f["initiator_depth"], r["responder_resources"]))
        if f["responder_resources"] > r["initiator_depth"]:
            self.bad(m.no, m.name, "responder resources", "%d > the REQ's initiator depth %d" %
                     (f["responder_resources"], r["initiator_depth"]))
        if f["srq"] and r["transport"] != 0:
            pass

    def conn_data(self, c, frames):
        """The data of a connection against its REQ and REP: the PSN bug's rule, and more."""
        req, rep = c["req"], c["rep"]
        r = req.f
        start = rep.no
        # (receiver GID, its QPN) -> the Starting PSN its owner advertised
        qps = {(c["active"], r["qpn"]): (req, r["psn"]),
               (c["passive"], rep.f["qpn"]): (rep, rep.f["psn"])}
        ops = RC_REQUESTS if r["transport"] == 0 else UC_REQUESTS
        seen = set()
        mtu = MTU_BYTES.get(r["mtu"], 4096)
        pair = {c["active"], c["passive"]}
        bad_transport = False
        for fr in frames:
            if fr["no"] <= start or fr["dqp"] == 1 or {fr["sgid"], fr["dgid"]} != pair:
                continue
            if fr["op"] >= 0x40:
                continue  # RD, UD, CNP: not this connection's
            k = (fr["dgid"], fr["dqp"])
            if k not in qps:
                continue  # another connection between the same hosts
            if int(fr["op"] >= 0x20) != r["transport"] and not bad_transport:
                bad_transport = True
                self.bad(req.no, "REQ", "transport service type", "%d, but frame %d is %s" %
                         (r["transport"], fr["no"], "UC" if fr["op"] >= 0x20 else "RC"))
            if fr["paylen"] > mtu:
                self.bad(fr["no"], "data", "payload", "%d bytes over the path MTU %d of REQ "
                         "frame %d" % (fr["paylen"], mtu, req.no))
            if fr["ttl"] is not None and fr["ttl"] != r["pri_hop_limit"] and fr["enc"] != "v1":
                self.bad(fr["no"], "data", "hop limit", "%d, the REQ's (frame %d): %d" %
                         (fr["ttl"], req.no, r["pri_hop_limit"]))
            if fr["tclass"] is not None and fr["tclass"] & 0xFC != r["pri_traffic_class"] & 0xFC:
                self.bad(fr["no"], "data", "traffic class", "%#x, the REQ's (frame %d): %#x" %
                         (fr["tclass"], req.no, r["pri_traffic_class"]))
            if k in seen or fr["op"] not in ops:
                continue
            seen.add(k)
            owner, psn = qps[k]
            if fr["psn"] != psn:
                self.bad(fr["no"], "data", "first PSN", "%#x to QP %#x, whose %s (frame %d) "
                         "advertised Starting PSN %#x" % (fr["psn"], fr["dqp"], owner.name,
                                                          owner.no, psn))
        self.checked += len(seen)
        return qps

    def stray_qpns(self, conns, frames):
        """RC/UC packets between two hosts that set up connections go to QPNs their REQs and
        REPs advertised (a wrong QPN in a REQ or REP sends the data to nobody)."""
        known, hosts, after = set(), set(), {}
        for c in conns:
            if not c["rep"]:
                continue
            known |= {(c["active"], c["req"].f["qpn"]), (c["passive"], c["rep"].f["qpn"])}
            pair = frozenset((c["active"], c["passive"]))
            hosts.add(pair)
            after[pair] = min(after.get(pair, c["rep"].no), c["rep"].no)
        for fr in frames:
            if fr["dqp"] == 1 or fr["op"] >= 0x40:
                continue
            pair = frozenset((fr["sgid"], fr["dgid"]))
            if pair in hosts and fr["no"] > after[pair] and (fr["dgid"], fr["dqp"]) not in known:
                self.bad(fr["no"], "data", "destination QPN", "%#x, which no REQ or REP between "
                         "these hosts advertised" % fr["dqp"])
                known.add((fr["dgid"], fr["dqp"]))  # once per QPN

    def ud_data(self, m, frames):
        """UD sends to the QP a SIDR_REP advertised carry its Q_Key."""
        f = m.f
        for fr in frames:
            if fr["no"] > m.no and fr["dgid"] == m.fr["sgid"] and fr["dqp"] == f["qpn"] and \
                    fr["qkey"] is not None and fr["qkey"] != f["qkey"]:
                self.bad(fr["no"], "data", "Q_Key", "%#x to QP %#x, whose SIDR_REP (frame %d) "
                         "advertised %#x" % (fr["qkey"], f["qpn"], m.no, f["qkey"]))
                return


def main(argv):
    ap = argparse.ArgumentParser(
        description="Check every CM MAD of RoCE captures against Linux's rules "
        "(docs/cm-fields.md).")
    ap.add_argument("pcaps", nargs="+", metavar="FILE.pcap")
    ap.add_argument("--cm-retries", type=int, default=15, metavar="N",
                    help="REQ max CM retries, and the most resends of one REQ or SIDR_REQ "
                    "(Linux: CMA_MAX_CM_RETRIES 15; uroce: UROCE_CM_RETRIES)")
    ap.add_argument("--cm-response-timeout", type=int, default=20, metavar="T",
                    help="REQ local and remote CM response timeouts, 4.096 us * 2^T "
                    "(Linux: CMA_CM_RESPONSE_TIMEOUT 20)")
    ap.add_argument("--ack-delay", type=int, default=15, metavar="D",
                    help="REP target ACK delay: the sender's CA ACK delay (rxe and uroce: 15)")
    ap.add_argument("--ack-timeout", type=int, default=None, metavar="T",
                    help="REQ primary local ACK timeout (Linux: cm_ack_timeout(ACK delay, 18), "
                    "19 for rxe)")
    ap.add_argument("--path-mtu", type=int, default=None, metavar="N",
                    help="require this REQ path MTU (IB enum: 3 = 1024); default: any IB MTU, "
                    "and no data payload above it")
    try:
        o = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if o.ack_timeout is None:
        o.ack_timeout = ack_timeout(o.ack_delay, 18)
    if not 0 <= o.cm_retries <= 15 or not 0 <= o.cm_response_timeout <= 31:
        print("cm_fields.py: --cm-retries is 4 bits, --cm-response-timeout 5 bits", file=sys.stderr)
        return 2
    tshark = shutil.which("tshark")
    if not tshark:
        print("cm_fields.py: tshark is not installed", file=sys.stderr)
        return 2
    ck = Checker(o)
    nmsg = 0
    for p in o.pcaps:
        try:
            n, _ = ck.check_file(p, tshark)
        except (RuntimeError, OSError, ValueError) as e:
            print("cm_fields.py: %s" % e, file=sys.stderr)
            return 2
        nmsg += n
    print("cm_fields: %d file(s), %d CM MADs, %d QP(s) with their first PSN checked, "
          "%d violation(s)" % (len(o.pcaps), nmsg, ck.checked, ck.violations))
    return 1 if ck.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
