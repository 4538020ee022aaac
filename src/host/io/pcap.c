/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/pcap.h"

#define PCAP_MAGIC_US 0xA1B2C3D4u
#define PCAP_MAGIC_NS 0xA1B23C4Du
#define PCAPNG_SHB    0x0A0D0D0Au
#define PCAPNG_BOM    0x1A2B3C4Du
#define PCAPNG_IDB    1u
#define PCAPNG_SPB    3u
#define PCAPNG_EPB    6u

static uint32_t rd32(const struct uroce_pcap_rd *r, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return r->swapped ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const struct uroce_pcap_rd *r, const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return r->swapped ? __builtin_bswap16(v) : v;
}

static int bad(struct uroce_pcap_rd *r, const char *why)
{
	r->err = why;
	return -EBADMSG;
}

int uroce_pcap_open(struct uroce_pcap_rd *r, const uint8_t *buf, size_t len)
{
	uint32_t magic;

	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->len = len;
	if (len < 4)
		return bad(r, "file too short to be a capture");
	memcpy(&magic, buf, 4);
	if (magic == PCAPNG_SHB) {
		if (len < 12)
			return bad(r, "truncated pcapng section header");
		uint32_t bom;

		memcpy(&bom, buf + 8, 4);
		if (bom == PCAPNG_BOM)
			r->swapped = 0;
		else if (bom == __builtin_bswap32(PCAPNG_BOM))
			r->swapped = 1;
		else
			return bad(r, "bad pcapng byte-order magic");
		r->ng = 1;
		r->off = 0; /* the SHB is read as a block by uroce_pcap_next */
		return 0;
	}
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS) {
		r->swapped = 0;
	} else if (magic == __builtin_bswap32(PCAP_MAGIC_US) ||
		   magic == __builtin_bswap32(PCAP_MAGIC_NS)) {
		r->swapped = 1;
	} else {
		return bad(r, "not a pcap or pcapng file (unknown magic number)");
	}
	if (len < 24)
		return bad(r, "truncated pcap file header");
	uint32_t m = rd32(r, buf);

	r->tsdiv = m == PCAP_MAGIC_NS ? 1000000000u : 1000000u;
	if (rd16(r, buf + 4) != 2)
		return bad(r, "unsupported pcap major version");
	r->linktype = rd32(r, buf + 20) & 0xFFFF;
	r->off = 24;
	return 0;
}

static int next_classic(struct uroce_pcap_rd *r, struct uroce_pcap_pkt *p)
{
	if (r->off == r->len)
		return 0;
	if (r->len - r->off < 16)
		return bad(r, "truncated pcap record header");
	const uint8_t *h = r->buf + r->off;
	uint32_t sec = rd32(r, h), frac = rd32(r, h + 4);
	uint32_t caplen = rd32(r, h + 8), origlen = rd32(r, h + 12);

	if (caplen > r->len - r->off - 16)
		return bad(r, "pcap record longer than the rest of the file");
	p->data = h + 16;
	p->caplen = caplen;
	p->origlen = origlen;
	p->ts_ns = (uint64_t)sec * 1000000000u + (uint64_t)frac * (1000000000u / r->tsdiv);
	p->linktype = r->linktype;
	r->off += 16 + (size_t)caplen;
	return 1;
}

/* Interface timestamp resolution from an IDB's options (if_tsresol, code 9). */
static uint64_t idb_tsdiv(struct uroce_pcap_rd *r, const uint8_t *opt, const uint8_t *end)
{
	while (end - opt >= 4) {
		uint16_t code = rd16(r, opt), olen = rd16(r, opt + 2);

		if (code == 0 || (size_t)(end - opt - 4) < olen)
			break;
		if (code == 9 && olen >= 1) {
			uint8_t v = opt[4];
			uint64_t d = 1;

			for (int i = 0; i < (v & 0x7F) && i < 19; i++)
				d *= (v & 0x80) ? 2 : 10;
			return d ? d : 1000000;
		}
		opt += 4 + ((olen + 3u) & ~3u);
	}
	return 1000000;
}

static int next_ng(struct uroce_pcap_rd *r, struct uroce_pcap_pkt *p)
{
	for (;;) {
		if (r->off == r->len)
			return 0;
		if (r->len - r->off < 12)
			return bad(r, "truncated pcapng block header");
		const uint8_t *b = r->buf + r->off;
		uint32_t type = rd32(r, b), blen = rd32(r, b + 4);

		if (type == PCAPNG_SHB) {
			uint32_t bom;

			if (r->len - r->off < 16)
				return bad(r, "truncated pcapng section header");
			memcpy(&bom, b + 8, 4);
			if (bom == PCAPNG_BOM)
				r->swapped = 0;
			else if (bom == __builtin_bswap32(PCAPNG_BOM))
				r->swapped = 1;
			else
				return bad(r, "bad pcapng byte-order magic");
			blen = rd32(r, b + 4);
			r->ng_ifs = 0;
		}
		if (blen < 12 || blen % 4 || blen > r->len - r->off)
			return bad(r, "pcapng block length invalid or beyond the file");
		const uint8_t *body = b + 8, *end = b + blen - 4;

		r->off += blen;
		if (type == PCAPNG_IDB) {
			if (end - body < 8)
				return bad(r, "truncated pcapng interface block");
			if (r->ng_ifs >= UROCE_PCAPNG_MAX_IFS)
				return bad(r, "pcapng file with too many interfaces");
			{
				r->ng_link[r->ng_ifs] = rd16(r, body);
				r->ng_tsdiv[r->ng_ifs] = idb_tsdiv(r, body + 8, end);
				if (r->ng_ifs == 0)
					r->linktype = r->ng_link[0];
			}
			r->ng_ifs++;
		} else if (type == PCAPNG_EPB) {
			if (end - body < 20)
				return bad(r, "truncated pcapng packet block");
			uint32_t ifid = rd32(r, body);
			uint64_t ts = (uint64_t)rd32(r, body + 4) << 32 | rd32(r, body + 8);
			uint32_t caplen = rd32(r, body + 12);

			if (ifid >= r->ng_ifs)
				return bad(r, "pcapng packet for an undeclared interface");
			if (caplen > (size_t)(end - body - 20))
				return bad(r, "pcapng packet longer than its block");
			uint64_t div = r->ng_tsdiv[ifid];

			p->data = body + 20;
			p->caplen = caplen;
			p->origlen = rd32(r, body + 16);
			p->ts_ns = ts / div * 1000000000u + ts % div * 1000000000u / div;
			p->linktype = r->ng_link[ifid];
			return 1;
		} else if (type == PCAPNG_SPB) {
			if (end - body < 4 || r->ng_ifs == 0)
				return bad(r, "bad pcapng simple packet block");
			uint32_t olen = rd32(r, body);
			uint32_t caplen = (uint32_t)(end - body - 4);

			p->data = body + 4;
			p->caplen = olen < caplen ? olen : caplen;
			p->origlen = olen;
			p->ts_ns = 0;
			p->linktype = r->ng_link[0];
			return 1;
		}
		/* Other blocks (statistics, name resolution, custom) are skipped. */
	}
}

int uroce_pcap_next(struct uroce_pcap_rd *r, struct uroce_pcap_pkt *p)
{
	return r->ng ? next_ng(r, p) : next_classic(r, p);
}

int uroce_file_load(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	uint8_t *b;

	if (!f)
		return -errno;
	b = malloc(cap);
	if (!b) {
		fclose(f);
		return -ENOMEM;
	}
	for (;;) {
		if (cap > UROCE_FILE_MAX) {
			free(b);
			fclose(f);
			return -EFBIG;
		}
		errno = 0;
		size_t got = fread(b + n, 1, cap - n, f);

		n += got;
		if (n < cap) {
			if (ferror(f)) {
				int e = errno ? -errno : -EIO;

				free(b);
				fclose(f);
				return e;
			}
			break;
		}
		uint8_t *nb = realloc(b, cap * 2);

		if (!nb) {
			free(b);
			fclose(f);
			return -ENOMEM;
		}
		b = nb;
		cap *= 2;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

int uroce_pcap_write_header(FILE *f)
{
	uint32_t h[6] = { PCAP_MAGIC_NS, 2 | 4u << 16, 0, 0, 262144, UROCE_LINKTYPE_ETHERNET };

	return fwrite(h, sizeof(h), 1, f) == 1 ? 0 : -EIO;
}

int uroce_pcap_write_packet(FILE *f, uint64_t ts_ns, const uint8_t *data, uint32_t len)
{
	uint32_t h[4] = { (uint32_t)(ts_ns / 1000000000u), (uint32_t)(ts_ns % 1000000000u), len,
			  len };

	if (fwrite(h, sizeof(h), 1, f) != 1 || (len && fwrite(data, len, 1, f) != 1))
		return -EIO;
	return 0;
}
