/* SPDX-License-Identifier: MIT */
/*
 * The AF_PACKET (RoCE v1) backend opened without CAP_NET_RAW: -EPERM, and a message that says
 * how to grant the capability. ctest runs it with CAP_NET_RAW dropped (setpriv) when root.
 *
 *   test_io_eperm
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "host/io/afpacket.h"
#include "host/io/backend.h"

static int test_eperm(void)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	memset(&cfg, 0, sizeof(cfg));
	cfg.ifname = "lo";
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = uroce_packet_ops.open(&cfg, &b);

	printf("eperm: open: %d: %s\n", r, err);
	CHECKF(r == -EPERM, "AF_PACKET open gave %d (running with CAP_NET_RAW?)", r);
	CHECK(strcmp(err, UROCE_PACKET_EPERM_MSG) == 0);
	CHECK(strcmp(uroce_backend_strerror(&uroce_packet_ops, r), UROCE_PACKET_EPERM_MSG) == 0);
	CHECK(strstr(uroce_backend_strerror(&uroce_packet_ops, r), "setcap cap_net_raw+ep"));
	if (r == 0)
		uroce_backend_close(b);
	return check_exit("io_eperm");
}

int main(void)
{
	return test_eperm();
}
