/* SPDX-License-Identifier: MIT */
/*
 * wire/mad.h: the CM attribute names (Wireshark's labels, roce-reference.md 2.1), a hand-laid MAD
 * header, and the CM MADs of the golden captures (UD SEND to QP1, Q_Key 0x80010000): each header
 * decodes to class 0x07 version 2, method SEND, a named attribute, and re-encodes to its bytes.
 * (The random round trip and short lengths of the MAD header codec are in test_hdr.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/io/pcap.h"
#include "wire/bytes.h"
#include "wire/mad.h"
#include "wire/packet.h"

static void test_names(void)
{
	static const struct {
		uint16_t id;
		const char *name, *shrt;
	} attrs[] = {
		{0x0001, "ClassPortInfo", "CLASS_PORT_INFO"},
		{0x0010, "ConnectRequest", "REQ"},
		{0x0011, "MsgRcptAck", "MRA"},
		{0x0012, "ConnectReject", "REJ"},
		{0x0013, "ConnectReply", "REP"},
		{0x0014, "ReadyToUse", "RTU"},
		{0x0015, "DisconnectRequest", "DREQ"},
		{0x0016, "DisconnectReply", "DREP"},
		{0x0017, "ServiceIDResReq", "SIDR_REQ"},
		{0x0018, "ServiceIDResReqResp", "SIDR_REP"},
		{0x0019, "LoadAlternatePath", "LAP"},
		{0x001A, "AlternatePathResponse", "APR"},
	};
	unsigned named = 0;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *n = uroce_cm_attr_name(attrs[i].id);
		const char *s = uroce_cm_attr_short(attrs[i].id);

		CHECKF(n && strcmp(n, attrs[i].name) == 0, "attr %#x: '%s', want '%s'", attrs[i].id,
		       n ? n : "(null)", attrs[i].name);
		CHECKF(s && strcmp(s, attrs[i].shrt) == 0, "attr %#x: short '%s', want '%s'",
		       attrs[i].id, s ? s : "(null)", attrs[i].shrt);
	}
	/* Nothing else has a name. */
	for (unsigned id = 0; id < 0x10000; id++) {
		if (uroce_cm_attr_name((uint16_t)id))
			named++;
		CHECKF(!uroce_cm_attr_name((uint16_t)id) == !uroce_cm_attr_short((uint16_t)id),
		       "attr %#x", id);
	}
	CHECKF(named == sizeof(attrs) / sizeof(attrs[0]), "%u named attributes", named);
	CHECK(UROCE_CM_ATTR_REQ == 0x10 && UROCE_CM_ATTR_APR == 0x1A);
	CHECK(UROCE_CM_ATTR_CLASS_PORT_INFO == 0x01 && UROCE_CM_ATTR_SIDR_REP == 0x18);
	CHECK(UROCE_MAD_LEN == 256 && UROCE_MAD_HDR_LEN == 24 && UROCE_MGMT_CLASS_CM == 0x07);
	CHECK(UROCE_GSI_QKEY == 0x80010000u && UROCE_GSI_QPN == 1);
}

/* Offsets of roce-reference.md 2.1, laid by hand. */
static void test_layout(void)
{
	uint8_t b[24] = {1, 7, 2, 0x83, 0x12, 0x34, 0x56, 0x78};
	struct uroce_mad_hdr h;

	uroce_put_be64(b + 8, 0x0123456789ABCDEFull);
	uroce_put_be16(b + 16, 0x0013);
	uroce_put_be16(b + 18, 0xBEEF);
	uroce_put_be32(b + 20, 0xA1B2C3D4);
	CHECK_EQ(uroce_mad_hdr_decode(&h, b, sizeof(b)), 24);
	CHECK(h.base_version == 1 && h.mgmt_class == 7 && h.class_version == 2 && h.method == 0x83);
	CHECK(h.status == 0x1234 && h.class_specific == 0x5678 && h.tid == 0x0123456789ABCDEFull);
	CHECK(h.attr_id == 0x13 && h.resv == 0xBEEF && h.attr_mod == 0xA1B2C3D4);
	uint8_t e[24];

	CHECK(uroce_mad_hdr_encode(e, sizeof(e), &h) == 24 && memcmp(e, b, 24) == 0);
}

static void test_captures(const char *dir)
{
	static const char *const files[] = {"rping.pcap", "ucmatose.pcap",
					    "ib_write_bw_rdmacm.pcap"};
	unsigned seen[0x20] = {0}, mads = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[512];
		uint8_t *buf = NULL;
		size_t len = 0;
		struct uroce_pcap_rd r;
		struct uroce_pcap_pkt p;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		CHECKF(uroce_file_load(path, &buf, &len) == 0, "load %s", path);
		if (!buf)
			continue;
		CHECK_EQ(uroce_pcap_open(&r, buf, len), 0);
		while (uroce_pcap_next(&r, &p) == 1) {
			struct uroce_frame f;

			if (uroce_frame_decode(&f, p.data, p.caplen) != 0 ||
			    f.t.bth.opcode != UROCE_OP_UD_SEND_ONLY ||
			    f.t.bth.dqpn != UROCE_GSI_QPN)
				continue;
			CHECK(f.t.deth.qkey == UROCE_GSI_QKEY && f.t.deth.src_qp == UROCE_GSI_QPN);
			CHECKF(f.t.payload_len == UROCE_MAD_LEN, "MAD of %u bytes",
			       f.t.payload_len);
			struct uroce_mad_hdr h;

			CHECK_EQ(uroce_mad_hdr_decode(&h, f.t.payload, f.t.payload_len), 24);
			CHECK(h.base_version == 1 && h.mgmt_class == UROCE_MGMT_CLASS_CM);
			CHECK(h.class_version == 2 && h.method == 0x03 && h.status == 0);
			CHECKF(uroce_cm_attr_name(h.attr_id) != NULL, "attr %#x", h.attr_id);
			if (h.attr_id < 0x20)
				seen[h.attr_id]++;
			uint8_t e[24];

			CHECK(uroce_mad_hdr_encode(e, sizeof(e), &h) == 24 &&
			      memcmp(e, f.t.payload, 24) == 0);
			mads++;
		}
		free(buf);
	}
	/* rdma_cm connect and disconnect: REQ, REP, RTU, DREQ, DREP. */
	CHECKF(mads > 0 && seen[0x10] && seen[0x13] && seen[0x14] && seen[0x15] && seen[0x16],
	       "%u MADs: REQ %u REP %u RTU %u DREQ %u DREP %u", mads, seen[0x10], seen[0x13],
	       seen[0x14], seen[0x15], seen[0x16]);
}

int main(int argc, char **argv)
{
	test_names();
	test_layout();
	test_captures(argc > 1 ? argv[1] : "tests/vectors");
	return check_exit("test_mad");
}
