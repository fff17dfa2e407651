// SPDX-License-Identifier: GPL-2.0
/*
 * Per-sample cost of PERF_SAMPLE_AUX snapshots of 1 KiB and 16 KiB, taken
 * from the sw_aux software AUX PMU, against the same sampling without
 * them, side by side in one run.
 *
 * Every variant is the same group: a sw_aux leader (AUX area mapped in
 * overwrite mode, so it never fills up and stops) and a cpu-clock sibling
 * that samples a fixed busy loop.  "tick" has a sibling that never
 * samples, so it measures the loop plus the sw_aux tick; "plain" samples
 * without PERF_SAMPLE_AUX; "aux1k" and "aux16k" add the snapshot.  The
 * cost of one sample is (loop time - tick loop time) / samples, per round;
 * the variants run several rounds, interleaved, and the median counts.
 * plain_again shows how much noise is left.
 *
 *   aux_cost [period_ns [loops]]   (default 50000 ns, 100000000)
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

#define RING_PAGES	32768	/* 128 MiB with 4 KiB pages: room for every sample */
#define AUX_PAGES	16	/* 64 KiB of AUX area for the leader */
#define ROUNDS		9
#define PLAIN		(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

struct variant {
	const char	*name;
	int		sampling;
	uint32_t	aux_sample_size;
};

static const struct variant variants[] = {
	{ "tick",	0, 0 },
	{ "plain",	1, 0 },
	/* plain again: its ratio to plain is the noise of the measurement */
	{ "plain_again",	1, 0 },
	{ "aux1k",	1, 1024 },
	{ "aux16k",	1, 16384 },
};

#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

static int sw_aux_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/sw_aux/type", "r");
	int type = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

static int open_event(struct perf_event_attr *attr, int group_fd)
{
	return syscall(__NR_perf_event_open, attr, 0, -1, group_fd, 0);
}

/* One measured run of a variant: loop ns and samples. */
static int run_variant(const struct variant *v, int type, uint64_t period,
		       uint64_t loops, uint64_t *ns, uint64_t *samples)
{
	size_t ring_len = (RING_PAGES + 1) * page_size, aux_len = AUX_PAGES * page_size;
	struct perf_event_mmap_page *pg;
	struct perf_event_attr attr;
	void *lring, *aux, *ring;
	int leader, fd, ret = -1;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.disabled = 1;
	leader = open_event(&attr, -1);
	if (leader < 0)
		return -1;
	lring = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, leader, 0);
	if (lring == MAP_FAILED)
		goto out_leader;
	pg = lring;
	pg->aux_offset = 2 * page_size;
	pg->aux_size = aux_len;
	/* PROT_READ only: overwrite mode, the area never fills up. */
	aux = mmap(NULL, aux_len, PROT_READ, MAP_SHARED, leader, pg->aux_offset);
	if (aux == MAP_FAILED)
		goto out_lring;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = v->sampling ? period : 1ull << 62;
	attr.sample_type = PLAIN;
	if (v->aux_sample_size) {
		attr.sample_type |= PERF_SAMPLE_AUX;
		attr.aux_sample_size = v->aux_sample_size;
	}
	attr.exclude_kernel = 1;
	fd = open_event(&attr, leader);
	if (fd < 0)
		goto out_aux;
	ring = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED)
		goto out_fd;

	ioctl(leader, PERF_EVENT_IOC_ENABLE, 0);
	*ns = busy_loop(loops);
	ioctl(leader, PERF_EVENT_IOC_DISABLE, 0);
	*samples = count_samples(ring);
	ret = 0;

	munmap(ring, ring_len);
out_fd:
	close(fd);
out_aux:
	munmap(aux, aux_len);
out_lring:
	munmap(lring, 2 * page_size);
out_leader:
	close(leader);
	return ret;
}

int main(int argc, char **argv)
{
	uint64_t period = argc > 1 ? strtoull(argv[1], NULL, 0) : 50000;
	uint64_t loops = argc > 2 ? strtoull(argv[2], NULL, 0) : 100000000;
	double costs[NR_VARIANTS][ROUNDS], cost[NR_VARIANTS];
	uint64_t nsamples[NR_VARIANTS] = { 0 };
	int type = sw_aux_type();
	unsigned int r, i;

	if (type < 0) {
		printf("BENCH aux.unsupported 1 flag\n");
		return 0;
	}
	page_size = sysconf(_SC_PAGESIZE);
	for (r = 0; r < ROUNDS; r++) {
		uint64_t tick_ns = 0;

		/* Each round's variants are compared with that round's tick. */
		for (i = 0; i < NR_VARIANTS; i++) {
			uint64_t ns, n;

			if (run_variant(&variants[i], type, period, loops, &ns, &n) ||
			    (variants[i].sampling && !n)) {
				printf("BENCH aux.%s.unsupported 1 flag\n", variants[i].name);
				return 0;
			}
			if (!i)
				tick_ns = ns;
			else
				costs[i][r] = ns > tick_ns ? (double)(ns - tick_ns) / n : 0;
			nsamples[i] += n;
		}
	}
	printf("BENCH aux.period_ns %llu ns\n", (unsigned long long)period);
	for (i = 1; i < NR_VARIANTS; i++) {
		cost[i] = median(costs[i], ROUNDS);
		printf("BENCH aux.%s.samples %llu count\n", variants[i].name,
		       (unsigned long long)(nsamples[i] / ROUNDS));
		printf("BENCH aux.%s.sample_cost %.0f ns\n", variants[i].name, cost[i]);
		if (i > 1 && cost[1] > 0)
			printf("BENCH aux.%s.ratio_vs_plain %.3f x\n", variants[i].name,
			       cost[i] / cost[1]);
	}
	return 0;
}
