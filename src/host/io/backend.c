/* SPDX-License-Identifier: MIT */
/* What every backend shares: the UDP source port, closing, counters, errors (backend.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "host/config/io_counters.h"
#include "host/io/backend.h"

uint16_t uroce_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label)
{
	uint32_t fl = flow_label & 0xFFFFF;

	if (!fl) {
		/* rdma_calc_flow_label() */
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)(v & 0xFFFFF);
	}
	/* rdma_flow_label_to_udp_sport() */
	return (uint16_t)(((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000);
}

void uroce_backend_seterr(const struct uroce_backend_cfg *cfg, const char *fmt, ...)
{
	va_list ap;

	if (!cfg->err || !cfg->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(cfg->err, cfg->errlen, fmt, ap);
	va_end(ap);
}

void uroce_backend_close(struct uroce_backend *b)
{
	if (b)
		b->ops->close(b); /* wrappers close their inner backend */
}

void uroce_backend_forget(struct uroce_backend *b)
{
	for (; b; b = b->inner)
		if (b->ops->forget)
			b->ops->forget(b);
}

uint64_t uroce_backend_counter(const struct uroce_backend *b, enum uroce_io_counter c)
{
	uint64_t v = 0;

	for (; b; b = b->inner)
		v += b->cnt[c];
	return v;
}

struct uroce_backend *uroce_backend_base(struct uroce_backend *b)
{
	while (b && b->inner)
		b = b->inner;
	return b;
}

const char *uroce_backend_strerror(const struct uroce_backend_ops *ops, int err)
{
	if (ops->eperm_msg && (err == -EPERM || err == -EACCES))
		return ops->eperm_msg;
	return strerror(err < 0 ? -err : err);
}

int uroce_backend_inner_fd(const struct uroce_backend *b)
{
	return b->inner->ops->fd(b->inner);
}
