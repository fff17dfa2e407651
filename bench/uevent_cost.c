// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of one 64-byte record written by a process into a trace, by each
 * way a profiler author has today, with no listener and with one:
 *
 * - uevent64: prctl(PR_TASK_PERF_UEVENT); listener: a dummy perf event
 *   with attr.uevents on this task.
 * - user_events64: a user_events write (tracefs user_events_data, event
 *   "bench_record64 char[64] payload"); listener: a perf event on its
 *   tracepoint, this task, PERF_SAMPLE_RAW. Without a listener the writer
 *   tests its enable bit and makes no system call, as user_events intends.
 * - usdt64: a probe point built into this program (a nop with the payload
 *   address in the first argument register, as a USDT probe is); listener:
 *   a uprobe event on it fetching the 64 bytes, opened as a perf event on
 *   this task with PERF_SAMPLE_RAW. Without a listener the nop runs.
 * - trace_marker64: a write() to tracefs' trace_marker; its listener is the
 *   ftrace ring buffer (tracing_on 1); with tracing_on 0 the write fails
 *   after the same entry work, which is its "no listener". A perf event on
 *   the ftrace:print tracepoint is open too, and its records are counted:
 *   perf accepts the event, but trace_marker writes never reach it.
 *
 * Every listener asks for the same sample_id (PERF_SAMPLE_TID | TIME), and
 * the tracepoint ones for PERF_SAMPLE_RAW, which carries their 64 bytes, so
 * each record carries the same 64 bytes and the same identification. All
 * listeners are open at once in the second phase; each only sees its own
 * records, counted to show it really took one per call. getppid and getuid
 * are the bare system call (getuid takes no lock); getppid is measured
 * twice for the run's noise line. Variants run in interleaved rounds; the
 * fastest round counts.
 *
 * Output: "BENCH <name> <value> <unit>" lines, read by scripts/bench.sh.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/prctl.h>
#include <linux/user_events.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

#define CALLS		20000
#define ROUNDS		9
#define RING_PAGES	256
#define TRACEFS		"/sys/kernel/tracing/"

#if defined(__x86_64__)
#define ARG0_REG	"%%di"
#elif defined(__aarch64__)
#define ARG0_REG	"%%x0"
#else
#error "the probe point needs the first argument register of this arch"
#endif

static char payload[64] __attribute__((aligned(8))) =
	"bench: a 64-byte record payload .............................";

static int marker_fd = -1, user_events_fd = -1;
static __u32 user_events_index;
static volatile __u32 user_events_enabled;

static void do_getppid(void) { syscall(__NR_getppid); }
static void do_getuid(void) { syscall(__NR_getuid); }
static void do_uevent(void) { prctl(PR_TASK_PERF_UEVENT, 0, sizeof(payload), payload, 0); }

static void do_marker(void)
{
	/* Fails with tracing_on 0: that is the no-listener case. */
	if (write(marker_fd, payload, sizeof(payload)) < 0)
		sink++;
}

static void do_user_events(void)
{
	struct iovec iov[2] = {
		{ (void *)&user_events_index, sizeof(user_events_index) },
		{ payload, sizeof(payload) },
	};

	if (user_events_enabled && writev(user_events_fd, iov, 2) < 0)
		sink++;
}

/* The probe point: a nop, with the payload in the first argument register. */
static __attribute__((noinline, noclone)) void usdt_probe(const char *buf)
{
#if defined(__x86_64__)
	asm volatile(".globl bench_usdt_site\nbench_usdt_site: nop" : : "D" (buf) : "memory");
#elif defined(__aarch64__)
	register const char *x0 asm("x0") = buf;

	asm volatile(".globl bench_usdt_site\nbench_usdt_site: nop" : : "r" (x0) : "memory");
#endif
}

extern char bench_usdt_site[];

static void do_usdt(void) { usdt_probe(payload); }

struct variant {
	const char *name;
	void (*fn)(void);
	struct perf_event_mmap_page *ring;	/* the listener's, once open */
	int fd;					/* the listener, once open */
	unsigned int record_type;		/* what the listener writes */
	uint64_t records, calls, lost;
	double best[2];				/* no listener, one listener */
};

static struct variant getppid_v = { "getppid", do_getppid };
static struct variant getppid_again_v = { "getppid_again", do_getppid };
static struct variant getuid_v = { "getuid", do_getuid };
static struct variant uevent_v = { "uevent64", do_uevent, .record_type = PERF_RECORD_UEVENT };
static struct variant user_events_v = { "user_events64", do_user_events,
					.record_type = PERF_RECORD_SAMPLE };
static struct variant usdt_v = { "usdt64", do_usdt, .record_type = PERF_RECORD_SAMPLE };
static struct variant marker_v = { "trace_marker64", do_marker, .record_type = PERF_RECORD_SAMPLE };

/* Count the listener's records in its ring and consume them. */
static void drain(struct variant *v)
{
	struct perf_event_mmap_page *pg = v->ring;
	char *data = (char *)pg + pg->data_offset;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t off, size = pg->data_size;

	for (off = pg->data_tail; off < head; ) {
		struct perf_event_header *h = (void *)(data + off % size);

		if (h->type == v->record_type)
			v->records++;
		else if (h->type == PERF_RECORD_LOST)	/* id, lost */
			v->lost += ((uint64_t *)(h + 1))[1];
		off += h->size;
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
}

/* One more round of v in phase 0 (no listener) or 1: keep the fastest. */
static void round_min(struct variant *v, int phase)
{
	uint64_t t0, t;
	double per_call;
	int i;

	if (!v->fn)
		return;
	t0 = now_ns();
	for (i = 0; i < CALLS; i++) {
		v->fn();
		if (v->ring && !(i & 255))
			drain(v);
	}
	t = now_ns() - t0;
	if (v->ring) {
		drain(v);
		v->calls += CALLS;
	}
	per_call = (double)t / CALLS;
	if (!v->best[phase] || per_call < v->best[phase])
		v->best[phase] = per_call;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_APPEND), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

static long read_number(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = 0;
	close(fd);
	return buf[0] ? atol(buf) : -1;
}

/* A perf event on this task with a ring of its own, for v's records. */
static int open_listener(struct variant *v, __u32 type, __u64 config, int uevents)
{
	struct perf_event_attr attr;
	void *p;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   (uevents ? 0 : PERF_SAMPLE_RAW);
	attr.sample_id_all = 1;
	attr.uevents = uevents;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return -1;
	p = mmap(NULL, (RING_PAGES + 1) * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	v->ring = p;
	v->fd = fd;
	return fd;
}

/* Register the user_events event; its listener comes later. */
static void setup_user_events(void)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 0,
		.enable_size = sizeof(user_events_enabled),
		.enable_addr = (__u64)(uintptr_t)&user_events_enabled,
		.name_args = (__u64)(uintptr_t)"bench_record64 char[64] payload",
	};

	user_events_fd = open(TRACEFS "user_events_data", O_RDWR);
	if (user_events_fd < 0 || ioctl(user_events_fd, DIAG_IOCSREG, &reg) < 0) {
		printf("BENCH user_events64.unsupported 1 flag\n");
		user_events_v.fn = NULL;
		return;
	}
	user_events_index = reg.write_index;
}

/*
 * Define the uprobe event on the probe point: the file offset of
 * bench_usdt_site in this program, from the mapping that holds it.
 */
static void setup_usdt(void)
{
	unsigned long start, end, pgoff, site = (unsigned long)bench_usdt_site;
	char line[512], exe[256], def[512];
	FILE *maps = fopen("/proc/self/maps", "r");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int found = 0;

	while (maps && fgets(line, sizeof(line), maps)) {
		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &pgoff) == 3 &&
		    site >= start && site < end) {
			found = 1;
			break;
		}
	}
	if (maps)
		fclose(maps);
	if (found && n > 0) {
		exe[n] = 0;
		snprintf(def, sizeof(def),
			 "p:bench/usdt_record64 %s:0x%lx payload=+0(" ARG0_REG "):u64[8]\n",
			 exe, site - start + pgoff);
		/* left over by an earlier run that did not finish */
		write_file(TRACEFS "uprobe_events", "-:bench/usdt_record64\n");
	}
	if (!found || n <= 0 || write_file(TRACEFS "uprobe_events", def)) {
		printf("BENCH usdt64.unsupported 1 flag\n");
		usdt_v.fn = NULL;
	}
}

static void open_listeners(void)
{
	long id;

	if (open_listener(&uevent_v, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1) < 0) {
		printf("BENCH uevent64.listener_unsupported 1 flag\n");
		uevent_v.fn = NULL;
	}
	id = read_number(TRACEFS "events/user_events/bench_record64/id");
	if (user_events_v.fn &&
	    (id < 0 || open_listener(&user_events_v, PERF_TYPE_TRACEPOINT, id, 0) < 0)) {
		printf("BENCH user_events64.listener_unsupported 1 flag\n");
		user_events_v.fn = NULL;
	}
	id = read_number(TRACEFS "events/bench/usdt_record64/id");
	if (usdt_v.fn && (id < 0 || open_listener(&usdt_v, PERF_TYPE_TRACEPOINT, id, 0) < 0)) {
		printf("BENCH usdt64.listener_unsupported 1 flag\n");
		usdt_v.fn = NULL;
	}
	if (marker_v.fn && write_file(TRACEFS "tracing_on", "1"))
		marker_v.fn = NULL;
	id = read_number(TRACEFS "events/ftrace/print/id");
	if (marker_v.fn && (id < 0 || open_listener(&marker_v, PERF_TYPE_TRACEPOINT, id, 0) < 0))
		printf("BENCH trace_marker64.perf_listener_unsupported 1 flag\n");
}

static struct variant *variants[] = {
	&getppid_v, &getuid_v, &uevent_v, &user_events_v, &usdt_v, &marker_v, &getppid_again_v,
};

static void print_ratio(const struct variant *a, int pa, const char *what,
			const struct variant *b, int pb, const char *bwhat)
{
	if (a->best[pa] && b->best[pb])
		printf("BENCH %s.%s_vs_%s%s%s %.3f x\n", a->name, what, b->name,
		       *bwhat ? "_" : "", bwhat, a->best[pa] / b->best[pb]);
}

int main(void)
{
	static const char * const phase_name[] = { "no_listener", "one_listener" };
	struct variant *alts[] = { &user_events_v, &usdt_v, &marker_v };
	unsigned int i;
	long tracing_on;
	int r, phase;

	page_size = sysconf(_SC_PAGESIZE);
	tracing_on = read_number(TRACEFS "tracing_on");
	marker_fd = open(TRACEFS "trace_marker", O_WRONLY);
	if (marker_fd < 0 || write_file(TRACEFS "tracing_on", "0"))
		marker_v.fn = NULL;
	setup_user_events();
	setup_usdt();

	for (phase = 0; phase < 2; phase++) {
		if (phase)
			open_listeners();
		for (r = 0; r < ROUNDS; r++)
			for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
				round_min(variants[i], phase);
	}
	if (tracing_on >= 0)
		write_file(TRACEFS "tracing_on", tracing_on ? "1" : "0");
	/* The uprobe event can go once nothing has it open. */
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		if (variants[i]->ring)
			close(variants[i]->fd);
	if (usdt_v.fn)
		write_file(TRACEFS "uprobe_events", "-:bench/usdt_record64\n");

	printf("BENCH getppid.call %.0f ns\n", getppid_v.best[0]);
	printf("BENCH getuid.call %.0f ns\n", getuid_v.best[0]);
	printf("BENCH getppid.noise %.3f x\n", getppid_again_v.best[0] / getppid_v.best[0]);
	for (i = 2; i < sizeof(variants) / sizeof(variants[0]) - 1; i++) {
		const struct variant *v = variants[i];

		for (phase = 0; phase < 2; phase++)
			if (v->best[phase])
				printf("BENCH %s.%s %.0f ns\n", v->name, phase_name[phase],
				       v->best[phase]);
		if (v->calls)
			printf("BENCH %s.records_per_call %.3f x\n", v->name,
			       (double)v->records / v->calls);
		if (v->lost)
			printf("BENCH %s.lost %llu records\n", v->name,
			       (unsigned long long)v->lost);
	}
	print_ratio(&uevent_v, 0, "no_listener", &getppid_v, 0, "");
	print_ratio(&uevent_v, 0, "no_listener", &getuid_v, 0, "");
	print_ratio(&uevent_v, 1, "one_listener", &getppid_v, 1, "");
	print_ratio(&uevent_v, 1, "one_listener", &getuid_v, 1, "");
	for (i = 0; i < sizeof(alts) / sizeof(alts[0]); i++) {
		print_ratio(&uevent_v, 0, "no_listener", alts[i], 0, "no_listener");
		print_ratio(&uevent_v, 1, "one_listener", alts[i], 1, "one_listener");
	}
	return 0;
}
#endif
