/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the benchmark programs share: a clock, a busy loop to sample, the
 * count of samples in a ring buffer and the median of per-round results.
 * Each program is one static binary built from its .c file and this header.
 */
#ifndef BENCH_H
#define BENCH_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static size_t page_size;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A fixed amount of user-space work; returns the ns it took. */
static inline uint64_t busy_loop(uint64_t loops)
{
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < loops; i++)
		sink += i;
	return now_ns() - t0;
}

/* Count PERF_RECORD_SAMPLE records in a ring buffer, and consume them. */
static inline uint64_t count_samples(void *ring)
{
	struct perf_event_mmap_page *pg = ring;
	char *data = (char *)ring + page_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t off, n = 0, size = pg->data_size;

	for (off = pg->data_tail; off < head; ) {
		struct perf_event_header *h = (void *)(data + off % size);

		if (h->type == PERF_RECORD_SAMPLE)
			n++;
		off += h->size;
	}
	pg->data_tail = head;
	return n;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of n values, which reorders them. */
static inline double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* BENCH_H */
