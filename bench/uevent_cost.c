// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of one PR_TASK_PERF_UEVENT of 64 bytes with no listener and with one
 * listener, against bare syscalls (getppid, and getuid, which takes no lock:
 * under lockdep getppid's rcu_read_lock() is not free) and a 64-byte
 * write() to tracefs' trace_marker, measured side by side in one run.  Each variant
 * runs several interleaved rounds; the fastest round counts.
 *
 * Output: "BENCH <name> <value> <unit>" lines, read by scripts/bench.sh.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#ifndef PR_TASK_PERF_UEVENT
int main(void)
{
	printf("BENCH uevent.unsupported 1 flag\n");
	return 0;
}
#else

#define CALLS	20000
#define ROUNDS	5
#define RING_PAGES 256

static char payload[64] = "bench: a 64-byte uevent payload .............................";
static int marker_fd = -1;
static struct perf_event_mmap_page *ring;

static void do_getppid(void) { syscall(__NR_getppid); }
static void do_getuid(void) { syscall(__NR_getuid); }
static void do_uevent(void) { prctl(PR_TASK_PERF_UEVENT, 0, sizeof(payload), payload, 0); }
static void do_marker(void) { if (write(marker_fd, payload, sizeof(payload)) < 0) marker_fd = -1; }

static double per_call(void (*fn)(void))
{
	uint64_t t0, t;
	int i;

	t0 = now_ns();
	for (i = 0; i < CALLS; i++) {
		fn();
		/* Keep the listener's buffer from filling: consume it. */
		if (ring && !(i & 255))
			ring->data_tail = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE);
	}
	t = now_ns() - t0;
	return (double)t / CALLS;
}

/* One more round of fn: keep the fastest per-call time in *best. */
static void round_min(void (*fn)(void), double *best)
{
	double t = per_call(fn);

	if (t < *best)
		*best = t;
}

static int open_listener(void)
{
	struct perf_event_attr attr;
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.uevents = 1;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return -1;
	p = mmap(NULL, (RING_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	ring = p;
	return fd;
}

int main(void)
{
	double best_uid = 1e18, best_sys = 1e18, best_none = 1e18, best_one = 1e18, best_marker = 1e18;
	int r, fd;

	marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
	for (r = 0; r < ROUNDS; r++) {
		round_min(do_getppid, &best_sys);
		round_min(do_getuid, &best_uid);
		round_min(do_uevent, &best_none);
		if (marker_fd >= 0)
			round_min(do_marker, &best_marker);
	}
	fd = open_listener();
	if (fd < 0) {
		printf("BENCH uevent.listener_unsupported 1 flag\n");
	} else {
		for (r = 0; r < ROUNDS; r++) {
			round_min(do_uevent, &best_one);
			round_min(do_getppid, &best_sys);
			round_min(do_getuid, &best_uid);
		}
		close(fd);
	}

	printf("BENCH getppid.call %.0f ns\n", best_sys);
	printf("BENCH uevent64.no_listener %.0f ns\n", best_none);
	printf("BENCH getuid.call %.0f ns\n", best_uid);
	printf("BENCH uevent64.no_listener_vs_getppid %.3f x\n", best_none / best_sys);
	printf("BENCH uevent64.no_listener_vs_getuid %.3f x\n", best_none / best_uid);
	if (fd >= 0) {
		printf("BENCH uevent64.one_listener %.0f ns\n", best_one);
		printf("BENCH uevent64.one_listener_vs_getppid %.3f x\n", best_one / best_sys);
		printf("BENCH uevent64.one_listener_vs_getuid %.3f x\n", best_one / best_uid);
	}
	if (marker_fd >= 0) {
		printf("BENCH trace_marker64.write %.0f ns\n", best_marker);
		printf("BENCH uevent64.no_listener_vs_trace_marker %.3f x\n", best_none / best_marker);
		if (fd >= 0)
			printf("BENCH uevent64.one_listener_vs_trace_marker %.3f x\n", best_one / best_marker);
	}
	return 0;
}
#endif
