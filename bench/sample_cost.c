// SPDX-License-Identifier: GPL-2.0
/*
 * Per-sample cost of perf sampling variants, measured side by side in one
 * run: a fixed busy loop runs with no event, then with each variant's
 * sampling event on the same thread; the extra time divided by the number
 * of samples taken is the cost of one sample (interrupt, sample assembly,
 * ring buffer write).  Each variant is measured several times, interleaved,
 * and the median of its per-round costs counts, which filters out emulator
 * noise; the plain_again variant shows how much noise is left.
 *
 * Output: "BENCH <name> <value> <unit>" lines, read by scripts/bench.sh.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define RING_PAGES	8192	/* 32 MiB with 4 KiB pages: no sample is lost */
#define ROUNDS		9

struct variant {
	const char *name;
	uint64_t sample_type;
	void (*setup)(struct perf_event_attr *attr);
};

#define PLAIN (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

#ifdef PERF_ATTR_SIZE_EXT0	/* the series' attr fields, PERF_SAMPLE_TLS_USER among them */
/*
 * PERF_SAMPLE_TLS_USER: 256 bytes of static TLS read directly, and the
 * same size behind a TLS pointer (the OpenTelemetry thread-context shape).
 */
static __thread uint64_t tls_bytes[32] __attribute__((tls_model("initial-exec")));
static uint64_t record[32];
static __thread void *tls_ptr __attribute__((tls_model("initial-exec"))) = record;

static long tp_offset(void *var)
{
	return (char *)var - (char *)__builtin_thread_pointer();
}

static void tls_direct(struct perf_event_attr *attr, unsigned int size)
{
	attr->sample_tls_user = size;
	attr->tls_user_offset = tp_offset(tls_bytes);
	tls_bytes[0] = 0x1122334455667788ull;
}

static void tls_deref(struct perf_event_attr *attr, unsigned int size)
{
	attr->sample_tls_user = size;
	attr->tls_user_offset = tp_offset(&tls_ptr);
	attr->tls_user_flags = PERF_TLS_USER_DEREF;
	record[0] = 0x8877665544332211ull;
}

static void tls32(struct perf_event_attr *attr) { tls_direct(attr, 32); }
static void tls256(struct perf_event_attr *attr) { tls_direct(attr, 256); }
static void tls32_deref(struct perf_event_attr *attr) { tls_deref(attr, 32); }
static void tls256_deref(struct perf_event_attr *attr) { tls_deref(attr, 256); }
#endif

static const struct variant variants[] = {
	{ "plain", PLAIN, NULL },
	/* plain again: its ratio to plain is the noise of the measurement */
	{ "plain_again", PLAIN, NULL },
#ifdef PERF_ATTR_SIZE_EXT0	/* the series' attr fields, PERF_SAMPLE_TLS_USER among them */
	{ "tls32", PLAIN | PERF_SAMPLE_TLS_USER, tls32 },
	{ "tls256", PLAIN | PERF_SAMPLE_TLS_USER, tls256 },
	{ "tls32_deref", PLAIN | PERF_SAMPLE_TLS_USER, tls32_deref },
	{ "tls256_deref", PLAIN | PERF_SAMPLE_TLS_USER, tls256_deref },
#endif
};
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

/* One measured run of a variant: extra ns and samples. */
static int run_variant(const struct variant *v, const char *event,
		       uint64_t period, uint64_t loops, uint64_t *ns,
		       uint64_t *samples)
{
	struct perf_event_attr attr;
	void *ring;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	if (!strcmp(event, "cycles")) {
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
	}
	attr.sample_period = period;
	attr.sample_type = v->sample_type;
	attr.exclude_kernel = 1;
	attr.disabled = 1;
	if (v->setup)
		v->setup(&attr);

	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return -1;
	ring = mmap(NULL, (RING_PAGES + 1) * page_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		close(fd);
		return -1;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	*ns = busy_loop(loops);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	*samples = count_samples(ring);
	munmap(ring, (RING_PAGES + 1) * page_size);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *event = argc > 1 ? argv[1] : "cpu-clock";
	/*
	 * A short period makes sampling a large share of the loop time, so
	 * the loop's own jitter under TCG is small against what is measured.
	 */
	uint64_t period = argc > 2 ? strtoull(argv[2], NULL, 0) : 20000;
	uint64_t loops = argc > 3 ? strtoull(argv[3], NULL, 0) : 200000000;
	double costs[NR_VARIANTS][ROUNDS], cost[NR_VARIANTS];
	uint64_t nsamples[NR_VARIANTS] = { 0 };
	unsigned int r, i;

	page_size = sysconf(_SC_PAGESIZE);
	for (r = 0; r < ROUNDS; r++) {
		/* Each round's variants are compared with that round's loop. */
		uint64_t base = busy_loop(loops);

		for (i = 0; i < NR_VARIANTS; i++) {
			uint64_t ns, n;

			if (run_variant(&variants[i], event, period, loops, &ns, &n) || !n) {
				printf("BENCH %s.%s.unsupported 1 flag\n", event, variants[i].name);
				return 0;
			}
			costs[i][r] = ns > base ? (double)(ns - base) / n : 0;
			nsamples[i] += n;
		}
	}
	for (i = 0; i < NR_VARIANTS; i++) {
		cost[i] = median(costs[i], ROUNDS);
		printf("BENCH %s.%s.samples %llu count\n", event, variants[i].name,
		       (unsigned long long)(nsamples[i] / ROUNDS));
		printf("BENCH %s.%s.sample_cost %.0f ns\n", event, variants[i].name, cost[i]);
		if (i && cost[0] > 0)
			printf("BENCH %s.%s.ratio_vs_plain %.3f x\n", event,
			       variants[i].name, cost[i] / cost[0]);
	}
	return 0;
}
