/* SPDX-License-Identifier: MIT */
/*
 * The guard over registered memory the application may have lost (the engine's
 * uroce_mem_guard_fn, transport/engine.h), by catching the fault.
 *
 * uroce_mem_guard() runs fn(fn_arg) with [lo, lo + len) marked, in a thread-local record, as
 * the range this thread is touching for the engine. A SIGSEGV or SIGBUS that the kernel raises
 * (si_code > 0) in that thread at an address of that range jumps back out of fn
 * (siglongjmp, saved without the signal mask: no system call per access) and uroce_mem_guard()
 * returns -EFAULT. Every other SIGSEGV or SIGBUS goes to the disposition that was in force when
 * the handler was installed: the application's handler (with its flags and mask), or the
 * default action (the fault is taken again with SIG_DFL in force, so the process dies with the
 * same signal and core as without uroce; a signal sent with kill(2) is raised again), or
 * ignored when it was ignored and sent.
 *
 * The handler is installed for the process once, by uroce_mem_guard_install() (the first opened
 * device calls it), with SA_SIGINFO | SA_NODEFER | SA_ONSTACK: NODEFER because the jump leaves
 * the handler without restoring the mask; ONSTACK so that a thread's alternate signal stack, if
 * the application gave it one, serves a stack overflow as before. It is never removed: the
 * application may have chained to it. Limits:
 * - A handler the application (or a runtime: a JVM, ASan when it starts later) installs after
 *   ours replaces it, and then ours never runs unless that handler chains to it: a fault on lost
 *   memory is then that handler's (as without uroce).
 * - The application's own threads touch registered memory too when they run a progress round
 *   (busy-polling a CQ, posting): they are guarded the same way, since the record is per
 *   thread. The copy of inline data at ibv_post_send is not: it reads the application's buffer
 *   on the application's thread, and a fault there is the application's own.
 * - The engine reads a payload sent in place when it builds the packet; the host's send reads it
 *   again in the same round. Memory unmapped by another thread between the two, a race with a
 *   send the application itself posted, is not guarded.
 */
#ifndef UROCE_HOST_MEM_GUARD_H
#define UROCE_HOST_MEM_GUARD_H

#include <stddef.h>

/*
 * Install the SIGSEGV and SIGBUS handler, once per process (later calls return the first
 * call's result). Returns 0, or a negative errno from sigaction.
 */
int uroce_mem_guard_install(void);

/*
 * Run fn(fn_arg), which may fault on [lo, lo + len) only. Returns 0, or -EFAULT when it faulted
 * there and was abandoned. arg is unused (the engine's callback signature). Without the handler
 * installed, a fault is the process's. Guards nest: a guard inside fn covers its own range.
 */
int uroce_mem_guard(void *arg, const void *lo, size_t len, void (*fn)(void *), void *fn_arg);

#endif
