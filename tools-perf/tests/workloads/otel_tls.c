// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that publishes an OpenTelemetry thread context (OTEP 4947):
 * the TLS variable otel_thread_ctx_v1 points to a record with a trace id,
 * a span id and a valid byte, for perf record --tls-user=otel.
 *
 *   perf test -w otel_tls [SECONDS]  spin with the context published
 *   perf test -w otel_tls offset     print the thread pointer offset of
 *                                    otel_thread_ctx_v1
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/compiler.h>
#include "../tests.h"

struct otel_thread_ctx {
	unsigned char	trace_id[16];
	unsigned char	span_id[8];
	unsigned char	valid;
	unsigned char	trace_flags;
	unsigned short	attrs_size;
	unsigned char	pad[4];		/* perf reads 32 bytes */
} __aligned(8);

/* The ids the shell test looks for (the W3C trace context example) */
static struct otel_thread_ctx otel_ctx = {
	.trace_id	= { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
			    0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 },
	.span_id	= { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 },
	.trace_flags	= 1,
};

static __thread struct otel_thread_ctx *otel_thread_ctx_v1;

static sig_atomic_t done;

static void sighandler(int sig __maybe_unused)
{
	WRITE_ONCE(done, 1);
}

static int thread_pointer(unsigned long *tp)
{
#if defined(__x86_64__)
	/* The TCB starts with a pointer to itself, at the FS base */
	asm volatile("mov %%fs:0, %0" : "=r" (*tp));
	return 0;
#elif defined(__aarch64__)
	asm volatile("mrs %0, tpidr_el0" : "=r" (*tp));
	return 0;
#else
	*tp = 0;
	return -1;
#endif
}

static int otel_tls(int argc, const char **argv)
{
	unsigned long tp;
	int sec = 1;

	if (thread_pointer(&tp)) {
		fprintf(stderr, "%s: no thread pointer on this arch\n", __func__);
		return 1;
	}

	if (argc > 0 && !strcmp(argv[0], "offset")) {
		printf("%ld\n", (long)((unsigned long)&otel_thread_ctx_v1 - tp));
		return 0;
	}
	if (argc > 0)
		sec = atoi(argv[0]);

	/* Publish the record, then flip it valid, as an SDK does */
	WRITE_ONCE(otel_thread_ctx_v1, &otel_ctx);
	WRITE_ONCE(otel_ctx.valid, 1);

	signal(SIGINT, sighandler);
	signal(SIGALRM, sighandler);
	alarm(sec);

	while (!READ_ONCE(done))
		continue;

	WRITE_ONCE(otel_ctx.valid, 0);
	WRITE_ONCE(otel_thread_ctx_v1, NULL);
	return 0;
}

DEFINE_WORKLOAD(otel_tls);
