/* SPDX-License-Identifier: MIT */
/*
 * cm_echo ADDR PORT: the server side of perftest -R's communication phase, and nothing after it
 * (rejected.sh). perftest 4.5 with -R first connects with rdma_cm to PORT and exchanges its
 * handshake as SENDs, each answered by the peer with a SEND of the same size
 * (perftest_communication.c rdma_server_connect, rdma_write_data, rdma_read_data). This accepts
 * one connection, then stops listening, and echoes every message back, so the client passes
 * its handshake with its own data; its next connection to PORT, the one for the test, finds no
 * listener and this process's CM rejects it (REJ reason 8), as a perftest server that has not
 * listened again yet. Exits 0 when the client disconnects (or goes: its DREQ), 1 on an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF 16
#define BUFSZ 65536

static int die(const char *what)
{
	fprintf(stderr, "cm_echo: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static uint8_t buf[NBUF][BUFSZ], out[BUFSZ];
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = NBUF,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_cm_id *l = NULL, *id;
	struct rdma_cm_event *ev;
	struct ibv_mr *mr, *omr;
	unsigned echoed = 0;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: cm_echo ADDR PORT\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	if (!ch || rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(l, (struct sockaddr *)&a) || rdma_listen(l, 1))
		return die("listen");
	if (rdma_get_cm_event(ch, &ev))
		return die("rdma_get_cm_event");
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		fprintf(stderr, "cm_echo: %s\n", rdma_event_str(ev->event));
		return 1;
	}
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (rdma_create_qp(id, NULL, &qa))
		return die("rdma_create_qp");
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	omr = rdma_reg_msgs(id, out, sizeof(out));
	if (!mr || !omr)
		return die("rdma_reg_msgs");
	for (int i = 0; i < NBUF; i++)
		if (rdma_post_recv(id, (void *)(uintptr_t)i, buf[i], BUFSZ, mr))
			return die("rdma_post_recv");
	if (rdma_accept(id, NULL))
		return die("rdma_accept");
	/* Nobody listens on PORT from now on: before the first echo, so before the client can
	 * connect again. */
	if (rdma_destroy_id(l))
		return die("rdma_destroy_id");
	printf("cm_echo: accepted\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		struct ibv_wc wc;
		int n;

		if (poll(&p, 1, 1) == 1) {
			enum rdma_cm_event_type t;

			if (rdma_get_cm_event(ch, &ev))
				return die("rdma_get_cm_event");
			t = ev->event;
			rdma_ack_cm_event(ev);
			if (t == RDMA_CM_EVENT_DISCONNECTED)
				break;
			if (t != RDMA_CM_EVENT_ESTABLISHED) {
				fprintf(stderr, "cm_echo: %s\n", rdma_event_str(t));
				return 1;
			}
		}
		while ((n = ibv_poll_cq(id->recv_cq, 1, &wc)) == 1) {
			unsigned i = (unsigned)wc.wr_id;

			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "cm_echo: receive: %s\n", ibv_wc_status_str(wc.status));
				return 1;
			}
			memcpy(out, buf[i], wc.byte_len);
			if (rdma_post_recv(id, (void *)(uintptr_t)i, buf[i], BUFSZ, mr) ||
			    rdma_post_send(id, NULL, out, wc.byte_len, omr, IBV_SEND_SIGNALED))
				return die("post");
			while ((n = ibv_poll_cq(id->send_cq, 1, &wc)) == 0)
				;
			if (n < 0 || wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "cm_echo: send failed\n");
				return 1;
			}
			echoed++;
		}
		if (n < 0)
			return die("ibv_poll_cq");
	}
	printf("cm_echo: %u messages echoed, disconnected\n", echoed);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_dereg_mr(omr);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}
