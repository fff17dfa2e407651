// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that publishes an OpenTelemetry thread context (OTEP 4947):
 * the TLS variable otel_thread_ctx_v1 points to a record with a trace id,
 * a span id and a valid byte, for perf record --tls-user=otel.
 *
 *   perf test -w otel_tls [SECONDS]  spin with the context published
 *   perf test -w otel_tls SECONDS syscall
 *                                    the same in 64 KiB getrandom() calls,
 *                                    for samples taken in the kernel
 *   perf test -w otel_tls offset     print the thread pointer offset of
 *                                    otel_thread_ctx_v1
 *   perf test -w otel_tls SECONDS registered|registered-slot
 *                         [TRACE_ID SPAN_ID [ATTRS]]
 *                                    spin with the context registered with
 *                                    prctl(PR_TASK_PERF_CONTEXT): the address
 *                                    of otel_thread_ctx_v1, or of a heap slot
 *                                    that holds the record's address while
 *                                    otel_thread_ctx_v1 stays NULL; with the
 *                                    ids (hex) and attrs_data (hex) given
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <linux/compiler.h>
#include <linux/prctl.h>
#include "../tests.h"

struct otel_thread_ctx {
	unsigned char	trace_id[16];
	unsigned char	span_id[8];
	unsigned char	valid;
	unsigned char	trace_flags;
	unsigned short	attrs_size;
	unsigned char	attrs[228];	/* perf reads 32 bytes, or size=N */
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

/* @len bytes of @hex (two digits a byte, exactly) into @buf */
static int otel_tls_hex(const char *hex, unsigned char *buf, size_t len)
{
	size_t i;

	if (strlen(hex) != 2 * len)
		return -1;
	for (i = 0; i < len; i++) {
		char byte[3] = { hex[2 * i], hex[2 * i + 1], '\0' };
		char *end;

		buf[i] = strtoul(byte, &end, 16);
		if (*end)
			return -1;
	}
	return 0;
}

/*
 * Register where the thread's context is: the address of the TLS variable,
 * or of a heap slot holding the record's address. A kernel without
 * PR_TASK_PERF_CONTEXT exits 2, for the shell test to skip.
 */
static int otel_tls_register(const char *mode, int argc, const char **argv)
{
	static unsigned long *slot;
	unsigned long addr;
	size_t n;

	if (argc >= 2 && (otel_tls_hex(argv[0], otel_ctx.trace_id, sizeof(otel_ctx.trace_id)) ||
			  otel_tls_hex(argv[1], otel_ctx.span_id, sizeof(otel_ctx.span_id)))) {
		fprintf(stderr, "otel_tls: ids are 32 and 16 hex digits\n");
		return 1;
	}
	if (argc >= 3) {
		n = strlen(argv[2]) / 2;
		if (n > sizeof(otel_ctx.attrs) ||
		    otel_tls_hex(argv[2], otel_ctx.attrs, n)) {
			fprintf(stderr, "otel_tls: attrs are at most %zu bytes of hex\n",
				sizeof(otel_ctx.attrs));
			return 1;
		}
		otel_ctx.attrs_size = n;
	}

	if (!strcmp(mode, "registered")) {
		addr = (unsigned long)&otel_thread_ctx_v1;
	} else {
		slot = calloc(8, sizeof(*slot));
		if (!slot)
			return 1;
		WRITE_ONCE(slot[0], (unsigned long)&otel_ctx);
		addr = (unsigned long)slot;
	}
	if (prctl(PR_TASK_PERF_CONTEXT, addr, 0, 0, 0)) {
		fprintf(stderr, "otel_tls: prctl(PR_TASK_PERF_CONTEXT): %s\n",
			strerror(errno));
		return errno == EINVAL ? 2 : 1;
	}
	return 0;
}

static int otel_tls(int argc, const char **argv)
{
	static char buf[64 << 10];
	bool syscalls = false, slot = false;
	unsigned long tp;
	int sec = 1, ret;

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
	if (argc > 1)
		syscalls = !strcmp(argv[1], "syscall");
	if (argc > 1 && (!strcmp(argv[1], "registered") ||
			 !strcmp(argv[1], "registered-slot"))) {
		slot = !strcmp(argv[1], "registered-slot");
		ret = otel_tls_register(argv[1], argc - 2, argv + 2);
		if (ret)
			return ret;
	}

	/* Publish the record, then flip it valid, as an SDK does */
	if (!slot)
		WRITE_ONCE(otel_thread_ctx_v1, &otel_ctx);
	WRITE_ONCE(otel_ctx.valid, 1);

	signal(SIGINT, sighandler);
	signal(SIGALRM, sighandler);
	alarm(sec);

	while (!READ_ONCE(done)) {
		if (syscalls && getrandom(buf, sizeof(buf), 0) < 0)
			break;
	}

	WRITE_ONCE(otel_ctx.valid, 0);
	WRITE_ONCE(otel_thread_ctx_v1, NULL);
	return 0;
}

DEFINE_WORKLOAD(otel_tls);
