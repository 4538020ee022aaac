/* SPDX-License-Identifier: MIT */
/*
 * A simulated RoCE v2/IPv4 network for deterministic tests of the transport engine.
 *
 * Nodes are engines with an IPv4 address (GID ::ffff:a.b.c.d at one GID index) and a MAC. Every
 * ordered pair of nodes is joined by a one-way link with its own configuration and counters.
 * Time is virtual (uint64 nanoseconds): nothing here reads a clock or sleeps.
 *
 * Sending: the driver pulls packets with uroce_eng_tx(), builds a complete frame around each
 * (Ethernet, IPv4 with DF and a header checksum, UDP 4791 with checksum 0, the engine's headers,
 * payload, pad, ICRC computed with the wire layer) and copies it into the in-flight heap at once
 * (the engine's payload pointer dies at the next engine call). The route is the destination IP
 * in the packet's address vector.
 * Faults, in order: the scripted rules (sim_rule), then seeded random loss, duplication,
 * reordering (extra random delay) and corruption (random bit flips anywhere in the frame).
 * Delivery time = end of serialisation (bandwidth, optional) + propagation delay + any extra.
 *
 * Receiving: the frame's ICRC is recomputed over the received bytes and compared with the one
 * carried; then it is decoded (uroce_frame_decode), the destination MAC, IPv4 header checksum and
 * UDP checksum (must be 0, as sent) are checked. Failures are dropped and counted. A good frame
 * becomes a struct uroce_rx_pkt (v4-mapped GIDs, GRH slot = 20 zero bytes + the IPv4 header) fed
 * to uroce_eng_rx(), or to the node's rx hook when it has no engine.
 *
 * Nothing here is thread-safe; one network per test is the usual use, several may coexist.
 */
#ifndef UROCE_TESTS_SIM_SIMLINK_H
#define UROCE_TESTS_SIM_SIMLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "transport/engine.h"
#include "wire/packet.h"

#define SIM_MAX_NODES 8
#define SIM_MAX_RULES 32
#define SIM_TRACE_LEN 64
#define SIM_SCRATCH   (65536 + 128) /* largest frame sim_send builds */

/* ---- deterministic PRNG (splitmix64 seeding, xoshiro256** stream) ------------------------ */

struct sim_rng {
	uint64_t s[4];
};

void sim_rng_seed(struct sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);
/* True with probability ppm / 1e6. */
bool sim_rng_ppm(struct sim_rng *r, uint32_t ppm);
void sim_rng_fill(struct sim_rng *r, void *buf, size_t len);

/* ---- links ----------------------------------------------------------------------------- */

struct sim_link_cfg {
	uint64_t delay_ns;	   /* propagation delay */
	uint64_t bandwidth_bps;	   /* 0: no serialisation time */
	uint32_t mtu;		   /* IP MTU: longer IP packets are dropped (mtu_drops) */
	uint32_t loss_ppm;	   /* random loss, parts per million */
	uint32_t dup_ppm;	   /* random duplication */
	uint32_t reorder_ppm;	   /* random extra delay */
	uint64_t reorder_max_ns;   /* the extra delay is uniform in [1, reorder_max_ns] */
	uint32_t corrupt_ppm;	   /* random bit flips */
	uint32_t corrupt_max_bits; /* 1 .. this many bits flipped (default 3) */
	bool down;		   /* drop everything (counted as lost) */
};

#define SIM_LINK_STATS(X)                                                                     \
	X(sent)		    /* frames handed to the link */                                   \
	X(bytes)	    /* their frame bytes */                                           \
	X(lost)		    /* random loss or link down */                                    \
	X(filtered)	    /* dropped by a rule */                                           \
	X(duplicated)	    /* extra copies made */                                           \
	X(reordered)	    /* given an extra delay */                                        \
	X(corrupted)	    /* frames with flipped bits */                                    \
	X(corrupt_covered)  /* of which a flipped bit is covered by the ICRC */               \
	X(icrc_drops)	    /* received with a bad ICRC */                                    \
	X(hdr_drops)	    /* bad MAC, IPv4 checksum, UDP checksum or undecodable */         \
	X(corrupt_accepted) /* corrupted yet accepted (only flips the ICRC does not cover) */ \
	X(mtu_drops)	    /* IP packet longer than the link MTU */                          \
	X(queue_drops)	    /* in-flight heap full */                                         \
	X(delivered)	    /* passed to uroce_eng_rx or the rx hook */                       \
	X(rx_rejected)	    /* uroce_eng_rx returned an error */

struct sim_link_stats {
#define SIM_STAT_FIELD(name) uint64_t name;
	SIM_LINK_STATS(SIM_STAT_FIELD)
#undef SIM_STAT_FIELD
};

/* ---- scripted faults ----------------------------------------------------------------- */

enum sim_verdict {
	SIM_PASS,
	SIM_DROP,
	SIM_DUP,     /* deliver twice */
	SIM_CORRUPT, /* flip one random bit covered by the ICRC */
	SIM_DELAY,   /* deliver delay_ns later */
};

/* What a rule or a tap sees of a frame about to enter a link. */
struct sim_pkt_info {
	int src, dst; /* node indexes */
	uint64_t now;
	uint64_t seq; /* network-wide frame number, from 0 */
	const struct uroce_tpkt *t;
	const uint8_t *frame;
	uint32_t len;
};

/*
 * A rule applies to the frames matching it: those from src (-1: any) to dst (-1: any), with
 * BTH opcode (-1: any) and destination QPN dqpn (0: any). Counting the matches from 1, matches
 * nth .. nth + count - 1 get the verdict (count 0: every match from nth on).
 * Every rule counts every frame it matches; of those whose window holds the frame, the first
 * added decides.
 */
struct sim_rule {
	int src, dst;
	int opcode;
	uint32_t dqpn;
	uint32_t nth;
	uint32_t count;
	enum sim_verdict verdict;
	uint64_t delay_ns;
	/* filled in */
	uint32_t seen;
	uint32_t hits;
};

/* Called for every frame entering a link (before any fault), for tests that watch traffic. */
typedef void (*sim_tap_fn)(void *arg, const struct sim_pkt_info *pi);
/* A node without an engine gets its packets here (link self-tests). */
typedef void (*sim_rx_hook_fn)(void *arg, int node, const struct uroce_rx_pkt *pkt);
/* Called at every step of sim_run(), after deliveries: a test polls CQs and posts more work. */
typedef void (*sim_step_fn)(void *arg, uint64_t now);

struct sim_node {
	struct uroce_eng *eng;
	uint8_t ip[4];
	uint8_t mac[6];
	uint8_t sgid_index;
	sim_rx_hook_fn rx_hook;
	void *rx_hook_arg;
	uint64_t
		rx_err[8]; /* uroce_eng_rx errors: [0] -ENOENT [1] -EBADMSG [2] -EPROTO [3] other */
	uint64_t bad_av;   /* tx packets with no AV or no route */
	uint64_t bad_sgid; /* tx packets whose AV names another GID index */
	uint64_t tx_malformed; /* tx packets the wire layer cannot decode */
};

struct sim_frame;

struct sim_trace {
	uint64_t at;
	int src, dst;
	uint8_t opcode;
	uint32_t psn, dqpn;
	uint32_t len;
	char fate; /* 'S' sent, 'L' lost, 'F' filtered, 'C' corrupted, 'D' dup, 'R' reordered */
};

struct sim_net {
	uint64_t now;
	struct sim_rng rng;
	int nnodes;
	struct sim_node node[SIM_MAX_NODES];
	struct sim_link_cfg cfg[SIM_MAX_NODES][SIM_MAX_NODES];
	struct sim_link_stats st[SIM_MAX_NODES][SIM_MAX_NODES];
	struct sim_rule rule[SIM_MAX_RULES];
	int nrules;
	sim_tap_fn tap;
	void *tap_arg;
	sim_step_fn step;
	void *step_arg;
	/* in-flight frames: a binary heap of slot pointers ordered by (at, seq) */
	struct sim_frame *slots;
	uint8_t *bufs;
	uint8_t *scratch; /* the frame being built */
	uint32_t cap, slot_size;
	struct sim_frame **heap;
	uint32_t nheap;
	struct sim_frame **free;
	uint32_t nfree;
	uint64_t seq;
	uint16_t ip_id;
	uint64_t busy_until[SIM_MAX_NODES][SIM_MAX_NODES];
	/* sim_run() stops (SIM_STUCK) once more frames than this were sent in all; 0: no limit.
	 * Keeps a retransmission storm from running for minutes. */
	uint64_t frame_budget;
	uint64_t frames_sent;
	/* diagnostics */
	uint64_t steps;
	uint64_t stale_deadlines; /* next_deadline() <= now right after advance(now) */
	const char *stuck_reason;
	struct sim_trace trace[SIM_TRACE_LEN];
	uint64_t ntrace;
};

/* Defaults: 1 us delay, no bandwidth limit, IP MTU 1500, no faults. */
void sim_link_cfg_default(struct sim_link_cfg *c);

/*
 * Create a network with room for cap frames in flight of up to max_ip IP bytes each (0: 9000).
 * seed seeds the fault PRNG. Returns 0 or -ENOMEM.
 */
int sim_net_init(struct sim_net *n, uint64_t seed, uint32_t cap, uint32_t max_ip);
void sim_net_free(struct sim_net *n);

/*
 * Add a node. The engine may be NULL (then rx_hook receives its packets). Its address is
 * 198.18.0.(index + 1), its MAC 02:00:00:00:00:(index + 1), its GID index sgid_index.
 * Returns the node index or -ENOSPC.
 */
int sim_node_add(struct sim_net *n, struct uroce_eng *eng, uint8_t sgid_index);
/* The node's GID: ::ffff:198.18.0.x */
void sim_node_gid(const struct sim_net *n, int node, uint8_t gid[16]);
/* An address vector from node a to node b (RoCE v2, global, GID index of a, b's MAC). */
void sim_av(const struct sim_net *n, int a, int b, struct uroce_av *av);

/* Apply one link configuration to every ordered pair of nodes. */
void sim_link_set_all(struct sim_net *n, const struct sim_link_cfg *c);
void sim_link_set(struct sim_net *n, int src, int dst, const struct sim_link_cfg *c);

/* Add a rule (copied; seen and hits reset). Returns its index or -ENOSPC. */
int sim_rule_add(struct sim_net *n, const struct sim_rule *r);
/* A rule that matches opcode (-1 any) from src (-1 any), the nth time only. */
int sim_rule_nth(struct sim_net *n, int src, int opcode, uint32_t nth, enum sim_verdict v);
void sim_rules_clear(struct sim_net *n);

/*
 * Build a frame around a transport packet from node src and put it on the link to the node that
 * owns the destination IP (from av). Goes through rules and faults. Used by the driver for every
 * engine packet, and by tests to inject hand-made packets.
 * Returns 0, or -EHOSTUNREACH (no route), -EMSGSIZE (too big for a slot), -EBADMSG (the
 * transport packet does not decode).
 */
int sim_send(struct sim_net *n, int src, const struct uroce_av *av, const uint8_t *hdr,
	     uint32_t hdr_len, const uint8_t *payload, uint32_t payload_len, uint8_t pad,
	     uint32_t src_qpn, uint32_t dst_qpn);

/*
 * Inject a complete frame (any bytes) into the in-flight heap, to be delivered to node dst at
 * time at, bypassing rules and faults. Returns 0, -EMSGSIZE, or -ENOSPC.
 */
int sim_inject_frame(struct sim_net *n, int src, int dst, uint64_t at, const uint8_t *frame,
		     uint32_t len);

/* Frames in flight. */
uint32_t sim_in_flight(const struct sim_net *n);

enum sim_result {
	SIM_QUIESCENT,	/* nothing in flight, nothing to send, no deadline */
	SIM_TIME_LIMIT, /* until reached with work left */
	SIM_STUCK,	/* no progress at a fixed time, or the frame budget spent: stuck_reason */
};

/*
 * Run the whole network from n->now until quiescent or until virtual time `until` (absolute).
 * Each step: every engine's tx into the links; every frame due at now delivered; every engine
 * advanced to now; the step callback; then, when nothing is due at now, time jumps to the
 * earliest frame or deadline.
 */
enum sim_result sim_run(struct sim_net *n, uint64_t until);
/* sim_run(n, n->now + dt) */
enum sim_result sim_run_for(struct sim_net *n, uint64_t dt);

/* Totals over every link. */
void sim_stats_total(const struct sim_net *n, struct sim_link_stats *out);
void sim_stats_print(const struct sim_net *n, FILE *f);
/* The last SIM_TRACE_LEN frames that entered a link. */
void sim_trace_print(const struct sim_net *n, FILE *f);
const char *sim_result_name(enum sim_result r);

#endif
