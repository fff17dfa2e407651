// SPDX-License-Identifier: GPL-2.0
/*
 * A program instrumented the way an OpenTelemetry SDK instruments one (the
 * thread context of OTEP 4947): the TLS variable otel_thread_ctx_v1 points
 * to the record of the span the thread works for, or is NULL.  perf record
 * --tls-user=otel finds the variable by its name in the program's symbols
 * and puts the record's trace and span ids in every sample.
 *
 * It works for two spans of one trace in turn for SECONDS (default 2):
 * "checkout" three times as long as "search".
 *
 *   gcc -O2 -g -o otel_spans otel_spans.c && ./otel_spans 2
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct otel_thread_ctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs_data[612];	/* {u8 key index; u8 length; u8 value[length]} */
} __attribute__((packed));

__thread struct otel_thread_ctx_record *otel_thread_ctx_v1;
static __thread struct otel_thread_ctx_record record;

/* The ids in hex, as OpenTelemetry prints them */
static void hex(uint8_t *buf, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char b[3] = { s[2 * i], s[2 * i + 1], 0 };

		buf[i] = strtoul(b, NULL, 16);
	}
}

/* A reader sees a record either invalid or whole */
static void span_enter(const char *trace_id, const char *span_id)
{
	*(volatile uint8_t *)&record.valid = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	hex(record.trace_id, trace_id, 16);
	hex(record.span_id, span_id, 8);
	record.trace_flags = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*(struct otel_thread_ctx_record *volatile *)&otel_thread_ctx_v1 = &record;
	*(volatile uint8_t *)&record.valid = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Work on the CPU for ms milliseconds */
static inline __attribute__((always_inline)) void work(int ms)
{
	double end = now() + ms / 1e3;
	volatile unsigned long n = 0;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			n++;
}

static __attribute__((noinline)) void checkout(void) { work(30); }
static __attribute__((noinline)) void search(void) { work(10); }

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 2);

	while (now() < end) {
		span_enter("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
		checkout();
		span_enter("4bf92f3577b34da6a3ce929d0e0e4736", "b7ad6b7169203331");
		search();
	}
	return 0;
}
