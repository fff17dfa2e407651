// SPDX-License-Identifier: GPL-2.0
/*
 * What deferred user callchains save: the same workload is sampled with a
 * cpu-clock event with immediate frame-pointer callchains ("fp") and with
 * deferred ones ("defer": attr.defer_callchain and attr.defer_output on
 * the same event), and without an event, side by side in one run.
 *
 * Workloads, both from 32 frames of recursion:
 *   syscall - getrandom() calls of 256 KiB (default), several sample periods
 *             long, so that several samples fall into one system call,
 *             which is where deferral shares one user unwind between
 *             samples (syscall_ns and period_ns say how many);
 *   user    - a pure user-space loop: every sample is its own kernel
 *             entry (the timer interrupt), so nothing can be shared.
 *
 * Per variant and workload it prints:
 *   unwinds_per_sample  user stack unwinds per sample: samples with a
 *                       PERF_CONTEXT_USER part (all of fp's, and defer's
 *                       samples taken in user mode, which are not
 *                       deferred) plus PERF_RECORD_CALLCHAIN_DEFERRED
 *                       records;
 *   callchain_bytes     callchain bytes in the ring buffer per sample: the
 *                       sample's callchain (nr and ips) plus, for defer,
 *                       the deferred records' bytes;
 *   record_bytes        all SAMPLE and CALLCHAIN_DEFERRED bytes per sample;
 *   sample_cost         (workload time sampled - unsampled) / samples.
 * Each variant runs ROUNDS times interleaved and the fastest run counts.
 *
 *   defer_cost [period_ns [scale [syscall_bytes]]]  (default 250000 ns, 1, 262144)
 *
 * Output: "BENCH <name> <value> <unit>" lines, read by scripts/bench.sh.
 */
#define _GNU_SOURCE
#pragma GCC optimize("no-omit-frame-pointer")
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
#define DEPTH		32
#define MAX_SYSCALL_BYTES (1 << 20)

enum { V_NONE, V_FP, V_DEFER, NR_VARIANTS };
static const char * const vname[NR_VARIANTS] = { "none", "fp", "defer" };

struct result {
	uint64_t ns;
	uint64_t samples;
	uint64_t user_unwinds;	/* samples with an immediate user part */
	uint64_t deferred;	/* defer: CALLCHAIN_DEFERRED records */
	uint64_t chain_bytes;
	uint64_t record_bytes;
	uint64_t lost;
};

static uint64_t iterations;
static uint64_t period_ns = 250000;	/* cpu-clock sample period */
static size_t syscall_bytes = 262144;	/* per getrandom() call */
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

static __attribute__((noinline)) void recurse(int depth)
{
	if (depth > 1)
		recurse(depth - 1);
	else
		work();
	/* Not a tail call: every level keeps its frame */
	asm volatile("" ::: "memory");
}

/* Walk the records in the ring buffer. */
static void scan(void *ring, struct result *res)
{
	struct perf_event_mmap_page *pg = ring;
	char *data = (char *)ring + page_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t off, size = pg->data_size;

	if (head - pg->data_tail > size)
		res->lost++;
	for (off = pg->data_tail; off < head; ) {
		struct perf_event_header *h = (void *)(data + off % size);
		uint64_t *a = (uint64_t *)(h + 1), nr, i;

		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			/* ip, pid/tid, time, callchain nr, ips[nr] */
			nr = a[3];
			res->samples++;
			res->record_bytes += h->size;
			res->chain_bytes += (nr + 1) * sizeof(uint64_t);
			for (i = 0; i < nr; i++) {
				if (a[4 + i] == PERF_CONTEXT_USER) {
					res->user_unwinds++;
					break;
				}
			}
			break;
		case PERF_RECORD_CALLCHAIN_DEFERRED:
			res->deferred++;
			res->record_bytes += h->size;
			res->chain_bytes += h->size;
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
		attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				   PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
		attr.sample_id_all = 1;
		attr.disabled = 1;
		if (variant == V_DEFER) {
			attr.defer_callchain = 1;
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
	recurse(DEPTH);
	res->ns = now_ns() - t0;
	if (fd >= 0) {
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		scan(ring, res);
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
				printf("BENCH defer.%s.%s.unsupported 1 flag\n",
				       name, vname[v]);
				continue;
			}
			if (r.ns < best[v].ns)
				best[v] = r;
		}
	}
	if (best[V_NONE].ns == UINT64_MAX)
		return;

	printf("BENCH defer.%s.none.ns %llu ns\n", name,
	       (unsigned long long)best[V_NONE].ns);
	if (syscalls)
		printf("BENCH defer.%s.syscall_ns %llu ns\n", name,
		       (unsigned long long)(best[V_NONE].ns / iters));
	for (v = V_FP; v < NR_VARIANTS; v++) {
		struct result *b = &best[v];
		double n = b->samples;
		uint64_t unwinds = b->user_unwinds + b->deferred;

		if (b->ns == UINT64_MAX || !b->samples)
			continue;
		if (b->ns > best[V_NONE].ns)
			cost[v] = (double)(b->ns - best[V_NONE].ns) / n;
		printf("BENCH defer.%s.%s.samples %llu count\n", name, vname[v],
		       (unsigned long long)b->samples);
		printf("BENCH defer.%s.%s.lost %llu count\n", name, vname[v],
		       (unsigned long long)b->lost);
		printf("BENCH defer.%s.%s.unwinds_per_sample %.3f ratio\n", name,
		       vname[v], unwinds / n);
		printf("BENCH defer.%s.%s.callchain_bytes %.1f bytes\n", name,
		       vname[v], b->chain_bytes / n);
		printf("BENCH defer.%s.%s.record_bytes %.1f bytes\n", name,
		       vname[v], b->record_bytes / n);
		printf("BENCH defer.%s.%s.sample_cost %.0f ns\n", name, vname[v],
		       cost[v]);
	}
	if (best[V_FP].samples && best[V_DEFER].samples &&
	    best[V_FP].ns != UINT64_MAX && best[V_DEFER].ns != UINT64_MAX) {
		struct result *f = &best[V_FP], *d = &best[V_DEFER];
		double fu = (double)(f->user_unwinds + f->deferred) / f->samples;
		double du = (double)(d->user_unwinds + d->deferred) / d->samples;
		double fb = (double)f->chain_bytes / f->samples;
		double db = (double)d->chain_bytes / d->samples;

		if (du > 0)
			printf("BENCH defer.%s.unwind_ratio_fp_vs_defer %.2f x\n",
			       name, fu / du);
		printf("BENCH defer.%s.callchain_bytes_ratio_fp_vs_defer %.2f x\n",
		       name, fb / db);
		if (cost[V_DEFER] > 0)
			printf("BENCH defer.%s.cost_ratio_fp_vs_defer %.2f x\n",
			       name, cost[V_FP] / cost[V_DEFER]);
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
	printf("BENCH defer.period_ns %llu ns\n", (unsigned long long)period_ns);
	printf("BENCH defer.syscall_bytes %zu bytes\n", syscall_bytes);
	bench("syscall", 250 * scale, 1);
	bench("user", 10000 * scale, 0);
	return 0;
}
