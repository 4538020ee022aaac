/* SPDX-License-Identifier: MIT */
/*
 * The UDP port of RoCE v2 for this process: a run-time setting read by the backends when they
 * bind, and by librdmacm's watchdog (compat/rdmacm/will.h) for the DREQs it sends.
 */
#ifndef UROCE_HOST_CONFIG_UDP_PORT_H
#define UROCE_HOST_CONFIG_UDP_PORT_H

#include <stdint.h>

/* UROCE_PORT from the environment when it is set to a port (tests), else 4791. */
uint16_t uroce_udp_port_env(void);

#endif
