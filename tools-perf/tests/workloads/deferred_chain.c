// SPDX-License-Identifier: GPL-2.0
/*
 * Make getrandom() system calls, which spend their time in the kernel,
 * from a known user call chain: deferred_top() -> deferred_mid() ->
 * deferred_leaf(), for perf record --call-graph fp,defer.  The system
 * call instruction is in deferred_leaf() itself, so the user unwind
 * starts there.  At the end it prints the return addresses that follow in
 * the callchain (in deferred_mid, deferred_top and deferred_chain), for
 * perf builds that cannot resolve user symbols:
 *
 *   user return addresses: <hex> <hex> <hex>
 *
 *   perf test -w deferred_chain [seconds]	(default 1)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/compiler.h>
#include "../tests.h"

/* perf's copy of the x86_64 system call numbers has only those it uses */
#if defined(__x86_64__) && !defined(__NR_getrandom)
#define __NR_getrandom 318
#endif

static sig_atomic_t done;
static void *ret_leaf, *ret_mid, *ret_top;

static void sighandler(int sig __maybe_unused)
{
	WRITE_ONCE(done, 1);
}

/* A macro, so that the user ip of the system call is in the caller */
#if defined(__x86_64__)
#define GETRANDOM(buf, len)						\
({									\
	long __ret;							\
	asm volatile("syscall"						\
		     : "=a" (__ret)					\
		     : "0" ((long)__NR_getrandom), "D" (buf), "S" (len),	\
		       "d" (0L)						\
		     : "rcx", "r11", "memory");				\
	__ret;								\
})
#elif defined(__aarch64__)
#define GETRANDOM(buf, len)						\
({									\
	register long __x8 asm("x8") = __NR_getrandom;			\
	register long __x0 asm("x0") = (long)(buf);			\
	register long __x1 asm("x1") = (long)(len);			\
	register long __x2 asm("x2") = 0;				\
	asm volatile("svc #0"						\
		     : "+r" (__x0)					\
		     : "r" (__x8), "r" (__x1), "r" (__x2)		\
		     : "memory");					\
	__x0;								\
})
#else
#define GETRANDOM(buf, len)	syscall(__NR_getrandom, buf, len, 0)
#endif

static noinline void deferred_leaf(void)
{
	char buf[4096];

	ret_leaf = __builtin_return_address(0);
	while (!READ_ONCE(done))
		GETRANDOM(buf, sizeof(buf));
}

static noinline void deferred_mid(void)
{
	ret_mid = __builtin_return_address(0);
	deferred_leaf();
	/* Not a tail call: keep this frame */
	asm volatile("" ::: "memory");
}

static noinline void deferred_top(void)
{
	ret_top = __builtin_return_address(0);
	deferred_mid();
	asm volatile("" ::: "memory");
}

static int deferred_chain(int argc, const char **argv)
{
	int sec = 1;

	if (argc > 0)
		sec = atoi(argv[0]);

	signal(SIGINT, sighandler);
	signal(SIGALRM, sighandler);
	alarm(sec);

	deferred_top();
	printf("user return addresses: %lx %lx %lx\n",
	       (unsigned long)ret_leaf, (unsigned long)ret_mid,
	       (unsigned long)ret_top);
	return 0;
}

DEFINE_WORKLOAD(deferred_chain);
