// SPDX-License-Identifier: GPL-2.0
/*
 * What reading PERF_SAMPLE_TLS_USER on the way back to user space
 * (PERF_TLS_USER_DEFER) costs and saves against reading it in the sample
 * ("nmi"): the same workload is sampled with a cpu-clock event that dumps
 * 32 bytes behind a TLS pointer (an OpenTelemetry-style thread context),
 * in both modes, and without an event, side by side in one run.
 *
 * Workloads:
 *   syscall - getrandom() calls of 256 KiB (default), several sample periods
 *             long, so that several samples fall into one system call:
 *             deferral reads once for all of them;
 *   user    - a pure user-space loop: every sample interrupts user mode,
 *             where nothing can be shared, and the deferred mode reads at
 *             once as the sample mode does (no task_work, no record).
 *
 * Per variant and workload it prints:
 *   reads_per_sample  user-memory reads per sample: one per sample that
 *                     dumps bytes, one per PERF_RECORD_TLS_USER_DEFERRED;
 *   sample_cost       (workload time sampled - unsampled) / samples;
 *   tls_bytes         TLS bytes in the ring buffer per sample (the dump;
 *                     in defer, the cookie too, and the records).
 * and the ratios nmi/defer of reads and defer/nmi of cost.  Each variant
 * runs ROUNDS times interleaved and the fastest run counts.
 *
 *   tls_defer_cost [period_ns [scale [syscall_bytes]]]
 *                  (default 250000 ns, 1, 262144)
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

#define RING_PAGES	2048	/* 8 MiB with 4 KiB pages */
#define ROUNDS		3
#define TLS_BYTES	32
#define MAX_SYSCALL_BYTES (1 << 20)

enum { V_NONE, V_NMI, V_DEFER, NR_VARIANTS };
static const char * const vname[NR_VARIANTS] = { "none", "nmi", "defer" };

struct result {
	uint64_t ns;
	uint64_t samples;
	uint64_t reads;
	uint64_t tls_bytes;
	uint64_t lost;
};

struct thread_ctx {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid, flags;
	uint16_t attrs_size;
	uint8_t attrs[4];
};

static __thread struct thread_ctx *ctx_ptr __attribute__((tls_model("initial-exec")));
static struct thread_ctx ctx = { .valid = 1 };

static uint64_t iterations;
static uint64_t period_ns = 250000;
static size_t syscall_bytes = 262144;
static int workload_syscall;

static __attribute__((noinline)) void work(void)
{
	static char buf[MAX_SYSCALL_BYTES];
	uint64_t i, j;

	for (i = 0; i < iterations; i++) {
		if (workload_syscall) {
			syscall(__NR_getrandom, buf, syscall_bytes, 0);
		} else {
			for (j = 0; j < 20000; j++)
				sink += j;
		}
	}
}

static void scan(void *ring, int variant, struct result *res)
{
	struct perf_event_mmap_page *pg = ring;
	char *data = (char *)ring + page_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t off, size = pg->data_size;

	if (head - pg->data_tail > size)
		res->lost++;
	for (off = pg->data_tail; off < head; ) {
		struct perf_event_header *h = (void *)(data + off % size);
		uint64_t *a = (uint64_t *)(h + 1);

		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			/* pid/tid, time, in defer the cookie, then the dump */
			res->samples++;
			if (variant == V_DEFER) {
				res->tls_bytes += 8;
				a++;
			}
			res->reads += a[2] != 0;
			res->tls_bytes += a[2] ? a[2] + 16 : 8;
			break;
		case PERF_RECORD_TLS_USER_DEFERRED:
			res->reads++;
			res->tls_bytes += h->size;
			break;
		case PERF_RECORD_LOST:
			res->lost += a[1];
			break;
		}
		off += h->size;
	}
	pg->data_tail = head;
}

static int run(int variant, struct result *res)
{
	struct perf_event_attr attr;
	void *ring = NULL;
	uint64_t t0;
	int fd = -1;

	memset(res, 0, sizeof(*res));
	if (variant != V_NONE) {
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = period_ns;
		attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				   PERF_SAMPLE_TLS_USER;
		attr.sample_id_all = 1;
		attr.disabled = 1;
		attr.sample_tls_user = TLS_BYTES;
		attr.tls_user_offset = (char *)&ctx_ptr -
				       (char *)__builtin_thread_pointer();
		attr.tls_user_flags = PERF_TLS_USER_DEREF;
		if (variant == V_DEFER) {
			attr.tls_user_flags |= PERF_TLS_USER_DEFER;
			attr.defer_output = 1;
		}
		fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
		if (fd < 0)
			return -1;
		ring = mmap(NULL, (RING_PAGES + 1) * page_size,
			    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (ring == MAP_FAILED) {
			close(fd);
			return -1;
		}
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	t0 = now_ns();
	work();
	res->ns = now_ns() - t0;
	if (fd >= 0) {
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		scan(ring, variant, res);
		munmap(ring, (RING_PAGES + 1) * page_size);
		close(fd);
	}
	return 0;
}

static void bench(const char *name, uint64_t iters, int syscalls)
{
	struct result best[NR_VARIANTS], r;
	double cost[NR_VARIANTS] = { 0 };
	int round, v;

	iterations = iters;
	workload_syscall = syscalls;
	for (v = 0; v < NR_VARIANTS; v++)
		best[v].ns = UINT64_MAX;

	for (round = 0; round < ROUNDS; round++) {
		for (v = 0; v < NR_VARIANTS; v++) {
			if (run(v, &r)) {
				printf("BENCH tls_defer.%s.%s.unsupported 1 flag\n",
				       name, vname[v]);
				continue;
			}
			if (r.ns < best[v].ns)
				best[v] = r;
		}
	}
	if (best[V_NONE].ns == UINT64_MAX)
		return;

	printf("BENCH tls_defer.%s.none.ns %llu ns\n", name,
	       (unsigned long long)best[V_NONE].ns);
	for (v = V_NMI; v < NR_VARIANTS; v++) {
		struct result *b = &best[v];
		double n = b->samples;

		if (b->ns == UINT64_MAX || !b->samples)
			continue;
		if (b->ns > best[V_NONE].ns)
			cost[v] = (double)(b->ns - best[V_NONE].ns) / n;
		printf("BENCH tls_defer.%s.%s.samples %llu count\n", name,
		       vname[v], (unsigned long long)b->samples);
		printf("BENCH tls_defer.%s.%s.lost %llu count\n", name,
		       vname[v], (unsigned long long)b->lost);
		printf("BENCH tls_defer.%s.%s.reads_per_sample %.3f ratio\n",
		       name, vname[v], b->reads / n);
		printf("BENCH tls_defer.%s.%s.tls_bytes %.1f bytes\n", name,
		       vname[v], b->tls_bytes / n);
		printf("BENCH tls_defer.%s.%s.sample_cost %.0f ns\n", name,
		       vname[v], cost[v]);
	}
	if (best[V_NMI].samples && best[V_DEFER].samples &&
	    best[V_NMI].ns != UINT64_MAX && best[V_DEFER].ns != UINT64_MAX) {
		double nr = (double)best[V_NMI].reads / best[V_NMI].samples;
		double dr = (double)best[V_DEFER].reads / best[V_DEFER].samples;

		if (dr > 0)
			printf("BENCH tls_defer.%s.reads_ratio_nmi_vs_defer %.2f x\n",
			       name, nr / dr);
		if (cost[V_NMI] > 0)
			printf("BENCH tls_defer.%s.cost_ratio_defer_vs_nmi %.2f x\n",
			       name, cost[V_DEFER] / cost[V_NMI]);
	}
}

int main(int argc, char **argv)
{
	uint64_t scale = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;

	if (argc > 1)
		period_ns = strtoull(argv[1], NULL, 0);
	if (argc > 3)
		syscall_bytes = strtoull(argv[3], NULL, 0);
	if (!scale || !period_ns || !syscall_bytes ||
	    syscall_bytes > MAX_SYSCALL_BYTES) {
		fprintf(stderr, "usage: %s [period_ns [scale [syscall_bytes]]]\n",
			argv[0]);
		return 1;
	}
	page_size = sysconf(_SC_PAGESIZE);
	ctx_ptr = &ctx;
	memset(ctx.trace_id, 0x11, sizeof(ctx.trace_id));
	memset(ctx.span_id, 0x22, sizeof(ctx.span_id));
	printf("BENCH tls_defer.period_ns %llu ns\n",
	       (unsigned long long)period_ns);
	printf("BENCH tls_defer.syscall_bytes %zu bytes\n", syscall_bytes);
	bench("syscall", 250 * scale, 1);
	bench("user", 10000 * scale, 0);
	return 0;
}
