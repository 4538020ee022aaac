# SPDX-License-Identifier: MIT
"""Shared by scapy_oracle.py and tshark_oracle.py.

The RoCE layout here is written from the specification (docs roce-reference.md sections 1.1-1.7:
IBTA vol. 1 table 38 and annexes A16/A17), not from src/wire: the opcode table, the extension
header layouts and a reference ICRC (zlib's CRC-32, the masks of section 1.7). When it disagrees
with our C table the tests fail, which is the point.

Also: running gen_packets, and a Checker that counts checks and collects failures.
"""

import errno
import json
import os
import struct
import subprocess
import sys
import zlib

EBADMSG = -errno.EBADMSG
ENOENT = -errno.ENOENT

# Fixed default seed: a failure is reproduced by running the same command again.
DEFAULT_SEED = 0x0AC1E

# --- Opcodes (IBTA table 38; roce-reference.md 1.4) -------------------------------------------

PAYLOAD_NONE, PAYLOAD_ANY, PAYLOAD_ATOMIC8 = "none", "any", "8"

_SEND_WRITE = {
    0x00: ("SEND_FIRST", ()),
    0x01: ("SEND_MIDDLE", ()),
    0x02: ("SEND_LAST", ()),
    0x03: ("SEND_LAST_WITH_IMMEDIATE", ("IMMDT",)),
    0x04: ("SEND_ONLY", ()),
    0x05: ("SEND_ONLY_WITH_IMMEDIATE", ("IMMDT",)),
    0x06: ("RDMA_WRITE_FIRST", ("RETH",)),
    0x07: ("RDMA_WRITE_MIDDLE", ()),
    0x08: ("RDMA_WRITE_LAST", ()),
    0x09: ("RDMA_WRITE_LAST_WITH_IMMEDIATE", ("IMMDT",)),
    0x0A: ("RDMA_WRITE_ONLY", ("RETH",)),
    0x0B: ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", ("RETH", "IMMDT")),
}

# opcode -> (name, extension headers in wire order, payload rule)
OPCODES = {}
for _base, _cls in ((0x00, "RC"), (0x20, "UC")):
    for _low, (_name, _hdrs) in _SEND_WRITE.items():
        OPCODES[_base | _low] = (f"{_cls}_{_name}", _hdrs, PAYLOAD_ANY)
OPCODES.update({
    0x0C: ("RC_RDMA_READ_REQUEST", ("RETH",), PAYLOAD_NONE),
    0x0D: ("RC_RDMA_READ_RESPONSE_FIRST", ("AETH",), PAYLOAD_ANY),
    0x0E: ("RC_RDMA_READ_RESPONSE_MIDDLE", (), PAYLOAD_ANY),
    0x0F: ("RC_RDMA_READ_RESPONSE_LAST", ("AETH",), PAYLOAD_ANY),
    0x10: ("RC_RDMA_READ_RESPONSE_ONLY", ("AETH",), PAYLOAD_ANY),
    0x11: ("RC_ACKNOWLEDGE", ("AETH",), PAYLOAD_NONE),
    0x12: ("RC_ATOMIC_ACKNOWLEDGE", ("AETH", "ATMACK"), PAYLOAD_NONE),
    0x13: ("RC_COMPARE_SWAP", ("ATMETH",), PAYLOAD_NONE),
    0x14: ("RC_FETCH_ADD", ("ATMETH",), PAYLOAD_NONE),
    0x16: ("RC_SEND_LAST_WITH_INVALIDATE", ("IETH",), PAYLOAD_ANY),
    0x17: ("RC_SEND_ONLY_WITH_INVALIDATE", ("IETH",), PAYLOAD_ANY),
    0x1C: ("RC_FLUSH", ("FETH", "RETH"), PAYLOAD_NONE),
    0x1D: ("RC_ATOMIC_WRITE", ("RETH",), PAYLOAD_ATOMIC8),
    0x64: ("UD_SEND_ONLY", ("DETH",), PAYLOAD_ANY),
    0x65: ("UD_SEND_ONLY_WITH_IMMEDIATE", ("DETH", "IMMDT"), PAYLOAD_ANY),
    0x81: ("CNP", ("CNP",), PAYLOAD_NONE),
})

# --- Extension headers (roce-reference.md 1.3), big-endian --------------------------------------

EXT_LEN = {"DETH": 8, "FETH": 4, "RETH": 16, "ATMETH": 28, "AETH": 4, "ATMACK": 8,
           "IMMDT": 4, "IETH": 4, "CNP": 16}
EXT_KEYS = {
    "DETH": ("deth_qkey", "deth_resv", "deth_srcqp"),
    "FETH": ("feth",),
    "RETH": ("reth_va", "reth_rkey", "reth_len"),
    "ATMETH": ("atm_va", "atm_rkey", "atm_swap", "atm_cmp"),
    "AETH": ("aeth_syn", "aeth_msn"),
    "ATMACK": ("atmack",),
    "IMMDT": ("imm",),
    "IETH": ("ieth",),
    "CNP": ("cnp",),
}
ALL_EXT_KEYS = {k for keys in EXT_KEYS.values() for k in keys}


def parse_ext(name, b):
    """The JSON fields of one extension header from its raw bytes."""
    assert len(b) == EXT_LEN[name], (name, len(b))
    if name == "DETH":
        qkey, resv, srcqp = struct.unpack(">IB3s", b)
        return {"deth_qkey": qkey, "deth_resv": resv, "deth_srcqp": int.from_bytes(srcqp, "big")}
    if name == "RETH":
        return dict(zip(EXT_KEYS[name], struct.unpack(">QII", b)))
    if name == "ATMETH":  # packed: no padding after the R_Key
        return dict(zip(EXT_KEYS[name], struct.unpack(">QIQQ", b)))
    if name == "AETH":
        return {"aeth_syn": b[0], "aeth_msn": int.from_bytes(b[1:4], "big")}
    if name == "ATMACK":
        return {"atmack": struct.unpack(">Q", b)[0]}
    if name in ("FETH", "IMMDT", "IETH"):
        return {EXT_KEYS[name][0]: struct.unpack(">I", b)[0]}
    if name == "CNP":
        return {"cnp": b.hex()}
    raise ValueError(name)


def build_ext(name, f):
    """Raw bytes of one extension header from its JSON fields."""
    if name == "DETH":
        return (struct.pack(">IB", f["deth_qkey"], f["deth_resv"])
                + f["deth_srcqp"].to_bytes(3, "big"))
    if name == "RETH":
        return struct.pack(">QII", *(f[k] for k in EXT_KEYS[name]))
    if name == "ATMETH":
        return struct.pack(">QIQQ", *(f[k] for k in EXT_KEYS[name]))
    if name == "AETH":
        return bytes([f["aeth_syn"]]) + f["aeth_msn"].to_bytes(3, "big")
    if name == "ATMACK":
        return struct.pack(">Q", f["atmack"])
    if name in ("FETH", "IMMDT", "IETH"):
        return struct.pack(">I", f[EXT_KEYS[name][0]])
    if name == "CNP":
        return bytes.fromhex(f["cnp"])
    raise ValueError(name)


def ext_layout(op):
    """[(header name, offset from the end of the BTH)] for opcode op."""
    out, off = [], 0
    for h in OPCODES[op][1]:
        out.append((h, off))
        off += EXT_LEN[h]
    return out


def ext_len(op):
    return sum(EXT_LEN[h] for h in OPCODES[op][1])


def pad_len(plen):
    return -plen & 3


# --- Frame layout (roce-reference.md 1.1) ------------------------------------------------------

BTH_LEN, ICRC_LEN = 12, 4
L3L4_LEN = {"v1": 40, "v2-ipv4": 28, "v2-ipv6": 48}  # GRH; IPv4 + UDP; IPv6 + UDP


def l2_len(e):
    return 18 if e["vlan"] else 14


def bth_off(e):
    return l2_len(e) + L3L4_LEN[e["encap"]]


def roce_len(e):
    """BTH through ICRC, for an expected-frame dict."""
    return BTH_LEN + ext_len(e["opcode"]) + e["payload_len"] + pad_len(e["payload_len"]) + ICRC_LEN


def icrc_ref(encap, frame, l2):
    """The ICRC (4 bytes, wire order) of frame, computed per roce-reference.md 1.7 with zlib.

    frame runs from the Ethernet header to the end of the ICRC (no Ethernet padding after it);
    l2 is the Ethernet header length. IPv4 headers must have no options.
    """
    n = L3L4_LEN[encap]
    h = bytearray(frame[l2:l2 + n])
    if encap == "v2-ipv4":
        h[1] = 0xFF                  # TOS
        h[8] = 0xFF                  # TTL
        h[10:12] = b"\xff\xff"       # header checksum
        h[26:28] = b"\xff\xff"       # UDP checksum
    else:
        h[0] |= 0x0F                 # traffic class, high nibble
        h[1:4] = b"\xff\xff\xff"     # traffic class low nibble, flow label
        h[7] = 0xFF                  # hop limit
        if encap == "v2-ipv6":
            h[46:48] = b"\xff\xff"   # UDP checksum
    t = bytearray(frame[l2 + n:-ICRC_LEN])
    t[4] = 0xFF                      # FECN, BECN, resv6
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(h) + bytes(t)))


# Byte offsets inside the L3(+L4) header that the ICRC masks, with the masked bits.
ICRC_MASKED = {
    "v2-ipv4": {1: 0xFF, 8: 0xFF, 10: 0xFF, 11: 0xFF, 26: 0xFF, 27: 0xFF},
    "v2-ipv6": {0: 0x0F, 1: 0xFF, 2: 0xFF, 3: 0xFF, 7: 0xFF, 46: 0xFF, 47: 0xFF},
    "v1": {0: 0x0F, 1: 0xFF, 2: 0xFF, 3: 0xFF, 7: 0xFF},
}


# --- Running gen_packets ----------------------------------------------------------------------

def gen(gen_path, seed, per_op, encap, pcap, jsonl, *flags):
    cmd = [gen_path, "gen", str(seed), str(per_op), encap, pcap, jsonl, *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fatal(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    with open(jsonl) as f:
        return [json.loads(line) for line in f]


def decode(gen_path, pcap):
    cmd = [gen_path, "decode", pcap]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fatal(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def fatal(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def need_setup(what):
    fatal(f"{what}. The oracle tests need it: run scripts/setup (installs python3-scapy and "
          f"tshark), then run the test again.")


class Checker:
    """Counts checks; keeps every failure with enough context to reproduce it."""

    def __init__(self, name, repro):
        self.name = name
        self.repro = repro  # how to rerun, printed with the failures
        self.count = 0
        self.failures = []

    def eq(self, ctx, what, got, want):
        self.count += 1
        if got != want:
            self.failures.append(f"{ctx}: {what}: got {got!r}, want {want!r}")
            return False
        return True

    def true(self, ctx, cond, msg):
        self.count += 1
        if not cond:
            self.failures.append(f"{ctx}: {msg}")
        return bool(cond)

    def finish(self):
        if self.failures:
            for line in self.failures[:40]:
                print("  " + line, file=sys.stderr)
            if len(self.failures) > 40:
                print(f"  ... and {len(self.failures) - 40} more", file=sys.stderr)
            print(f"{self.name}: FAIL: {len(self.failures)} of {self.count} checks failed. "
                  f"Reproduce with: {self.repro}", file=sys.stderr)
            return 1
        print(f"{self.name}: {self.count} checks passed")
        return 0


def check_opcode_coverage(chk, ctx, exp):
    """Our generator covers exactly the opcodes of the spec table, and frames carry exactly the
    extension headers (JSON keys) the spec table gives."""
    seen = {e["opcode"] for e in exp}
    chk.eq(ctx, "opcodes generated (ours) vs the spec table", sorted(seen), sorted(OPCODES))
    for e in exp:
        op = e["opcode"]
        if op not in OPCODES:
            continue
        want = {k for h in OPCODES[op][1] for k in EXT_KEYS[h]}
        chk.eq(f"{ctx} #{e['i']} op 0x{op:02x}", "extension header fields",
               sorted(ALL_EXT_KEYS & set(e)), sorted(want))
        rule = OPCODES[op][2]
        if rule == PAYLOAD_NONE:
            chk.eq(f"{ctx} #{e['i']} op 0x{op:02x}", "payload_len", e["payload_len"], 0)
        elif rule == PAYLOAD_ATOMIC8:
            chk.eq(f"{ctx} #{e['i']} op 0x{op:02x}", "payload_len", e["payload_len"], 8)


def tmpdir(base):
    import tempfile
    if base:
        os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix="uroce-oracle-", dir=base or None)
