/* SPDX-License-Identifier: MIT */
/*
 * A SIGALRM every 10 ms (handler without SA_RESTART), for a blocking wait that must end with
 * EINTR: eintr_alarm_start("rdma_get_cm_event"), the wait, eintr_alarm_stop(). The handler ends
 * the program after 2 s of signals, naming the wait: one that retries on EINTR would otherwise
 * block for good. Header-only, for the tests that include check.h.
 */
#ifndef UROCE_TESTS_EINTR_ALARM_H
#define UROCE_TESTS_EINTR_ALARM_H

#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"

static volatile sig_atomic_t eintr_alarms;
static const char *eintr_alarm_what;

static void eintr_alarm_handler(int sig)
{
	static const char head[] = "FAIL: ", tail[] = " ignored 200 SIGALRMs without SA_RESTART "
						   "(expected -1, EINTR)\n";

	(void)sig;
	if (++eintr_alarms >= 200) {
		/* write(2) and strlen are async-signal-safe; the status is 1 either way. */
		if (write(2, head, sizeof(head) - 1) < 0 ||
		    write(2, eintr_alarm_what, strlen(eintr_alarm_what)) < 0 ||
		    write(2, tail, sizeof(tail) - 1) < 0)
			_exit(1);
		_exit(1);
	}
}

static inline void eintr_alarm_start(const char *what)
{
	struct sigaction sa = {.sa_handler = eintr_alarm_handler}; /* no SA_RESTART */
	struct itimerval it = {.it_interval = {0, 10000}, .it_value = {0, 10000}};

	eintr_alarms = 0;
	eintr_alarm_what = what;
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static inline void eintr_alarm_stop(void)
{
	struct itimerval off = {{0, 0}, {0, 0}};
	struct sigaction sa = {.sa_handler = SIG_IGN};

	CHECK_EQ(setitimer(ITIMER_REAL, &off, NULL), 0);
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
}

#endif
