/* SPDX-License-Identifier: MIT */
/* The pcap tap wrapper (pcap_tap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/config/io_counters.h"
#include "host/io/backend.h"
#include "host/io/frame.h"
#include "host/io/pcap_sink.h"
#include "host/io/pcap_tap.h"

#define TAP_BUF (UROCE_FRAME_HEAD_MAX + 65536 + 8)

struct tap_be {
	struct uroce_backend b;
	struct uroce_pcap_sink *sink;
	struct uroce_txframe tf;
	uint8_t buf[TAP_BUF];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tap_write(struct tap_be *t, uint64_t ts, const uint8_t *p, ssize_t len,
		      enum uroce_io_counter ok)
{
	int r = -EINVAL;

	if (len > 0)
		r = uroce_pcap_sink_write(t->sink, ts, p, (uint32_t)len);
	t->b.cnt[r == 0 ? ok : UROCE_IO_PCAP_ERR]++;
}

static int tap_tx(struct uroce_backend *b, const struct uroce_tx_desc *d, int n)
{
	struct tap_be *t = (struct tap_be *)b;
	int k = b->inner->ops->tx_burst(b->inner, d, n);
	uint64_t ts = now_ns();
	int nref = b->inner->tx_refused_n < UROCE_TX_REFUSED_MAX ? b->inner->tx_refused_n
								 : UROCE_TX_REFUSED_MAX;
	int ri = 0;

	b->tx_refused_n = b->inner->tx_refused_n;
	memcpy(b->tx_refused, b->inner->tx_refused, sizeof(b->tx_refused));
	for (int i = 0; i < k; i++) {
		const struct uroce_tx_pkt *p = d[i].pkt;

		/* The refused indices are in increasing order. */
		if (ri < nref && b->inner->tx_refused[ri] == i) {
			ri++;
			continue;
		}
		struct uroce_path path = *d[i].path;
		struct uroce_tx_desc x = {p, &path, d[i].icrc_xor};
		ssize_t len = -EINVAL;

		if (b->fixed_sport)
			path.sport = b->fixed_sport;
		/* The ID it left with: 0 from an IP_PMTUDISC_DO socket (and our AF_PACKET framing),
		 * k for segment k of a GSO send. */
		uint16_t id = i < UROCE_TX_BURST_MAX ? b->inner->tx_ip_id[i] : 0;

		if (uroce_txframe_build(&t->tf, &x, b->mac, b->port, id) == 0) {
			uroce_txframe_csum(&t->tf, p->payload, p->payload_len);
			len = uroce_txframe_flatten(t->buf, sizeof(t->buf), &t->tf, p->payload,
						    p->payload_len);
		}
		tap_write(t, ts, t->buf, len, UROCE_IO_PCAP_TX);
	}
	return k;
}

static int tap_rx(struct uroce_backend *b, struct uroce_rx_desc *out, int n)
{
	struct tap_be *t = (struct tap_be *)b;
	int k = b->inner->ops->rx_burst(b->inner, out, n);
	uint64_t ts = now_ns();

	for (int i = 0; i < k; i++)
		tap_write(t, ts, t->buf, uroce_rxframe_build(t->buf, sizeof(t->buf), &out[i]),
			  UROCE_IO_PCAP_RX);
	return k;
}

static void tap_close(struct uroce_backend *b)
{
	struct tap_be *t = (struct tap_be *)b;

	uroce_backend_close(b->inner);
	uroce_pcap_sink_flush(t->sink);
	uroce_pcap_sink_put(t->sink);
	free(t);
}

static const struct uroce_backend_ops tap_ops = {
	.name = "pcap",
	.open = NULL,
	.close = tap_close,
	.tx_burst = tap_tx,
	.rx_burst = tap_rx,
	.fd = uroce_backend_inner_fd,
};

int uroce_pcap_tap_wrap(struct uroce_backend **b, struct uroce_pcap_sink *sink)
{
	struct tap_be *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->b.ops = &tap_ops;
	t->b.inner = *b;
	t->b.port = (*b)->port;
	t->b.fixed_sport = (*b)->fixed_sport;
	memcpy(t->b.mac, (*b)->mac, 6);
	t->sink = sink;
	uroce_pcap_sink_get(sink);
	*b = &t->b;
	return 0;
}
