/* SPDX-License-Identifier: MIT */
#include "host/config/udp_port.h"

#include <stdlib.h>

#include "wire/hdr.h"

uint16_t uroce_udp_port_env(void)
{
	const char *s = getenv("UROCE_PORT");
	uint16_t port = s ? (uint16_t)atoi(s) : 0;

	return port ? port : UROCE_UDP_PORT;
}
