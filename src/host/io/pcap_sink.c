/* SPDX-License-Identifier: MIT */
/* The capture file shared by a process's pcap taps (pcap_sink.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "host/io/pcap.h"
#include "host/io/pcap_sink.h"

/*
 * The file's buffer is written out only at record boundaries (a record that would not fit
 * flushes what is buffered first), so that the file always holds whole records: a process
 * killed while capturing (a test stopping a peer that retransmits for ever) leaves a capture
 * that reads to its end, short of what was still buffered.
 */
#define SINK_BUF (1u << 20)

struct uroce_pcap_sink {
	pthread_mutex_t lock;
	FILE *f;
	size_t buffered; /* bytes written to f since it was last flushed */
	int refs;
	char buf[SINK_BUF]; /* f's (glibc sizes a buffer it allocates itself by the file's block) */
};

int uroce_pcap_sink_open(struct uroce_pcap_sink **out, const char *path)
{
	struct uroce_pcap_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->f = fopen(path, "wbe");
	if (!s->f) {
		int e = -errno;

		free(s);
		return e;
	}
	if (setvbuf(s->f, s->buf, _IOFBF, SINK_BUF) != 0 || uroce_pcap_write_header(s->f) < 0 ||
	    fflush(s->f) != 0) {
		fclose(s->f);
		free(s);
		return -EIO;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->refs = 1;
	*out = s;
	return 0;
}

void uroce_pcap_sink_get(struct uroce_pcap_sink *s)
{
	pthread_mutex_lock(&s->lock);
	s->refs++;
	pthread_mutex_unlock(&s->lock);
}

void uroce_pcap_sink_put(struct uroce_pcap_sink *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	int left = --s->refs;

	pthread_mutex_unlock(&s->lock);
	if (left)
		return;
	fclose(s->f);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int uroce_pcap_sink_flush(struct uroce_pcap_sink *s)
{
	pthread_mutex_lock(&s->lock);
	int r = fflush(s->f) ? -EIO : 0;

	s->buffered = 0;
	pthread_mutex_unlock(&s->lock);
	return r;
}

int uroce_pcap_sink_write(struct uroce_pcap_sink *s, uint64_t ts_ns, const uint8_t *data,
			  uint32_t len)
{
	size_t need = 16 + (size_t)len;
	int r = 0;

	if (need >= SINK_BUF)
		return -EMSGSIZE;
	pthread_mutex_lock(&s->lock);
	if (s->buffered + need >= SINK_BUF) {
		r = fflush(s->f) ? -EIO : 0;
		s->buffered = 0;
	}
	if (r == 0)
		r = uroce_pcap_write_packet(s->f, ts_ns, data, len);
	s->buffered += need;
	pthread_mutex_unlock(&s->lock);
	return r;
}
