/* SPDX-License-Identifier: MIT */
/*
 * host/mem_guard: the guard catches exactly the faults on the range it was given, in the thread
 * that gave it, and every other SIGSEGV or SIGBUS meets the disposition that was there before
 * it (the default action, ignoring a sent signal, the application's handler of either kind).
 *
 * The cases about other dispositions each run in a child of their own that sets the disposition,
 * installs the guard (once per process) and does one thing; the parent checks how it ended.
 * Then the parent installs the guard over the default disposition and checks the catching.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "host/mem_guard.h"

static size_t pg;

/* A page that faults (PROT_NONE) and one beside it that does not. */
static uint8_t *bad, *good;

static void touch_fn(void *arg)
{
	*(volatile uint8_t *)arg = 1;
}

/* How a child ends: what its status says. */
enum end_kind { EXITED, KILLED };

/*
 * How a child ends when the disposition before the guard's is the default: killed by the signal;
 * under ASan, whose handler is the one there before ours, ASan's report and exit status 1.
 */
#ifdef __SANITIZE_ADDRESS__
#define DEFAULT_END(sig) EXITED, 1
#else
#define DEFAULT_END(sig) KILLED, sig
#endif

/* Run fn in a child; check that it ended by kind with value (exit status or signal). */
static void in_child(const char *what, void (*fn)(void), enum end_kind kind, int value)
{
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (kind == EXITED)
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == value, "%s: status %#x", what, st);
	else
		CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == value, "%s: status %#x", what, st);
}

static void set_disp(int sig, void (*h)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* The children die of signals on purpose: no core files. */
static void no_core(void)
{
	struct rlimit r = {0, 0};

	CHECK_EQ(setrlimit(RLIMIT_CORE, &r), 0);
}

/* ---- the children ------------------------------------------------------------------------ */

static void dfl_unguarded(void)
{
	uroce_mem_guard_install();
	touch_fn(bad);
}

/* fn faults, but outside the range it was guarded for. */
static void dfl_outside(void)
{
	uroce_mem_guard_install();
	uroce_mem_guard(NULL, good, pg, touch_fn, bad);
}

static void dfl_sent(void)
{
	uroce_mem_guard_install();
	kill(getpid(), SIGSEGV);
}

static void ign_sent(void)
{
	set_disp(SIGSEGV, SIG_IGN);
	uroce_mem_guard_install();
	kill(getpid(), SIGSEGV);
	_exit(5); /* still here: ignored, as before */
}

static void ign_fault(void)
{
	set_disp(SIGSEGV, SIG_IGN);
	uroce_mem_guard_install();
	touch_fn(bad);
}

static void app_siginfo(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	_exit(si->si_addr == bad ? 40 + sig % 10 : 1);
}

static void app_plain(int sig)
{
	_exit(30 + sig % 10);
}

/* The application's SA_SIGINFO handler gets an unguarded fault, and not a guarded one. */
static void app_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_siginfo;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	uroce_mem_guard_install();
	if (uroce_mem_guard(NULL, bad, pg, touch_fn, bad) != -EFAULT)
		_exit(2);
	touch_fn(bad);
}

static void app_plain_handler(void)
{
	set_disp(SIGSEGV, app_plain);
	uroce_mem_guard_install();
	touch_fn(bad);
}

/* A handler with SA_RESETHAND that returns: the fault comes again under the default. */
static int resethand_calls;

static void app_once(int sig)
{
	(void)sig;
	resethand_calls++;
}

static void app_resethand(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_once;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	uroce_mem_guard_install();
	touch_fn(bad);
}

static void *touch_thread(void *arg)
{
	touch_fn(arg);
	return NULL;
}

static void other_thread_fn(void *arg)
{
	pthread_t t;

	pthread_create(&t, NULL, touch_thread, arg);
	pthread_join(t, NULL);
}

/* Another thread's fault on the very range this thread guards is not this guard's. */
static void other_thread(void)
{
	uroce_mem_guard_install();
	uroce_mem_guard(NULL, bad, pg, other_thread_fn, bad);
}

static void bus_unguarded(void)
{
	int fd = memfd_create("mem_guard", 0);
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, (off_t)pg))
		_exit(3);
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || ftruncate(fd, 0))
		_exit(4);
	uroce_mem_guard_install();
	touch_fn(p);
}

/* ---- in this process --------------------------------------------------------------------- */

struct copy {
	uint8_t *dst;
	const uint8_t *src;
	size_t n;
};

static void copy_fn(void *arg)
{
	struct copy *c = arg;

	memcpy(c->dst, c->src, c->n);
}

static void nested_fn(void *arg)
{
	/* The inner guard catches its own range; the outer one goes on afterwards. */
	*(int *)arg = uroce_mem_guard(NULL, bad, pg, touch_fn, bad + 7);
	good[0] = 9;
}

static void catching(void)
{
	uint8_t buf[256];
	struct copy c = {buf, good, sizeof(buf)};
	int inner = 0;

	CHECK_EQ(uroce_mem_guard_install(), 0);
	memset(good, 0xAB, pg);
	CHECK_EQ(uroce_mem_guard(NULL, good, pg, copy_fn, &c), 0);
	CHECK(buf[0] == 0xAB && buf[255] == 0xAB);
	/* Out of lost memory, into it, and reaching into it from good memory. */
	c = (struct copy){buf, bad, sizeof(buf)};
	CHECK_EQ(uroce_mem_guard(NULL, bad, pg, copy_fn, &c), -EFAULT);
	c = (struct copy){bad + 100, buf, sizeof(buf)};
	CHECK_EQ(uroce_mem_guard(NULL, bad, pg, copy_fn, &c), -EFAULT);
	c = (struct copy){buf, bad - 100, 200};
	CHECK_EQ(uroce_mem_guard(NULL, bad - 100, 200, copy_fn, &c), -EFAULT);
	/* Again and again: the jump leaves no signal blocked. */
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(uroce_mem_guard(NULL, bad, pg, touch_fn, bad + i), -EFAULT);
	CHECK_EQ(uroce_mem_guard(NULL, good, 2 * pg, nested_fn, &inner), 0);
	CHECK_EQ(inner, -EFAULT);
	CHECK_EQ(good[0], 9);
	sigset_t now;

	CHECK_EQ(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
	CHECK(!sigismember(&now, SIGSEGV) && !sigismember(&now, SIGBUS));
}

/* SIGBUS: a shared file mapping past the file's end. */
static void catching_bus(void)
{
	int fd = memfd_create("mem_guard", MFD_CLOEXEC);
	uint8_t *p;

	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, (off_t)(2 * pg)), 0);
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	CHECK_EQ(ftruncate(fd, (off_t)pg), 0);
	CHECK_EQ(uroce_mem_guard(NULL, p, 2 * pg, touch_fn, p), 0);
	CHECK_EQ(uroce_mem_guard(NULL, p, 2 * pg, touch_fn, p + pg + 3), -EFAULT);
	munmap(p, 2 * pg);
	close(fd);
}

static void *guard_thread(void *arg)
{
	int *fails = arg;

	for (int i = 0; i < 2000; i++)
		if (uroce_mem_guard(NULL, bad, pg, touch_fn, bad + (i % pg)) != -EFAULT)
			(*fails)++;
	return NULL;
}

/* Several threads (several progress threads) fault under their own guards at once. */
static void threads(void)
{
	pthread_t t[4];
	int fails[4] = {0};

	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, guard_thread, &fails[i]), 0);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(pthread_join(t[i], NULL), 0);
		CHECK_EQ(fails[i], 0);
	}
}

int main(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	good = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(good != MAP_FAILED);
	CHECK_BAIL();
	bad = good + 2 * pg;
	CHECK_EQ(mprotect(bad, pg, PROT_NONE), 0);
	no_core();

	in_child("default, unguarded", dfl_unguarded, DEFAULT_END(SIGSEGV));
	in_child("default, outside the range", dfl_outside, DEFAULT_END(SIGSEGV));
	in_child("default, sent", dfl_sent, DEFAULT_END(SIGSEGV));
	in_child("ignored, sent", ign_sent, EXITED, 5);
	in_child("ignored, fault", ign_fault, KILLED, SIGSEGV);
	in_child("application's SA_SIGINFO handler", app_handler, EXITED, 40 + SIGSEGV % 10);
	in_child("application's plain handler", app_plain_handler, EXITED, 30 + SIGSEGV % 10);
	in_child("application's SA_RESETHAND handler", app_resethand, KILLED, SIGSEGV);
	in_child("another thread", other_thread, DEFAULT_END(SIGSEGV));
	in_child("SIGBUS, unguarded", bus_unguarded, DEFAULT_END(SIGBUS));

	catching();
	catching_bus();
	threads();
	return check_exit("host_mem_guard");
}
