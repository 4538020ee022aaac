/* SPDX-License-Identifier: MIT */
/*
 * The fault-catching guard over registered memory (mem_guard.h). The per-thread record is
 * initial-exec TLS so that the handler reads it without a call into the dynamic linker (which
 * may allocate) in a thread that never used it, such as any thread of the application that
 * crashes.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "host/mem_guard.h"

struct guard {
	uintptr_t lo;
	size_t len;
	struct guard *outer;
	sigjmp_buf jb;
};

static _Thread_local struct guard *cur __attribute__((tls_model("initial-exec")));

/* The dispositions in force before ours: every fault that is not a guarded access goes there. */
static struct sigaction prev_segv, prev_bus;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_err;

/* What the kernel would have done with the signal under prev. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = sig == SIGSEGV ? &prev_segv : &prev_bus;
	bool sent = si->si_code <= 0; /* kill(2), sigqueue(3), tgkill(2): not a fault */
	struct sigaction dfl;
	sigset_t mask, old;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	if (!(p->sa_flags & SA_SIGINFO) && (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN)) {
		if (sent && p->sa_handler == SIG_IGN)
			return;
		/* A fault cannot be ignored (the kernel forces the default action): with the
		 * default in force, returning takes the fault again and the process dies of it,
		 * its core showing where. A sent signal is sent again. */
		sigaction(sig, &dfl, NULL);
		if (sent)
			raise(sig);
		return;
	}
	/* The application's handler, as the kernel would run it: its mask, its flags. */
	mask = p->sa_mask;
	if (!(p->sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (p->sa_flags & SA_RESETHAND)
		sigaction(sig, &dfl, NULL);
	if (p->sa_flags & SA_SIGINFO)
		p->sa_sigaction(sig, si, uc);
	else
		p->sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct guard *g = cur;
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	/* Only a fault the kernel raised on the range being touched for the engine: anything
	 * else, a bug of ours included, is not ours to swallow. */
	if (g && si->si_code > 0 && a >= g->lo && a - g->lo < g->len)
		siglongjmp(g->jb, 1);
	chain(sig, si, uc);
	errno = saved;
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	/* The old dispositions are read first: a fault in another thread between the two steps
	 * finds them already recorded. */
	if (sigaction(SIGSEGV, NULL, &prev_segv) || sigaction(SIGBUS, NULL, &prev_bus) ||
	    sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL))
		install_err = -errno;
}

int uroce_mem_guard_install(void)
{
	pthread_once(&install_once, install);
	return install_err;
}

int uroce_mem_guard(void *arg, const void *lo, size_t len, void (*fn)(void *), void *fn_arg)
{
	struct guard g;

	(void)arg;
	g.lo = (uintptr_t)lo;
	g.len = len;
	g.outer = cur;
	/* savemask 0: no sigprocmask per access. The handler runs with SA_NODEFER, so the jump
	 * leaves the mask as it was. */
	if (sigsetjmp(g.jb, 0)) {
		cur = g.outer;
		return -EFAULT;
	}
	cur = &g;
	atomic_signal_fence(memory_order_seq_cst);
	fn(fn_arg);
	atomic_signal_fence(memory_order_seq_cst);
	cur = g.outer;
	return 0;
}
