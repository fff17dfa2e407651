// SPDX-License-Identifier: GPL-2.0
/*
 * Test the deferred mode of PERF_SAMPLE_TLS_USER (PERF_TLS_USER_DEFER):
 * samples carry the cookie of their kernel entry, and the TLS bytes come
 * in one PERF_RECORD_TLS_USER_DEFERRED per event and entry, read in task
 * context on the way back to user space, or at exec or exit.
 *
 * The thread plants known bytes behind a TLS pointer (or in TLS itself),
 * makes kernel entries whose samples it can count (page faults of a read()
 * into fresh pages, system call tracepoints) and checks that every cookie
 * has exactly one record per event, with the planted bytes.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"

#define DATA_PAGES	64
#define MAX_SAMPLES	4096
#define MAX_RECORDS	1024
#define FAULT_PAGES	16	/* pages one read() faults in */
#define REC_SIZE	32	/* bytes planted and dumped */
#define IDLE_ROUNDS	200
#define MIN_IDLE	4

struct planted {
	uint64_t word[REC_SIZE / 8];
};

static __thread struct planted *tls_ptr __attribute__((tls_model("initial-exec")));
static __thread struct planted tls_plain __attribute__((tls_model("initial-exec")));

static long tls_offset(const void *var)
{
	return (const char *)var - (const char *)__builtin_thread_pointer();
}

static void plant(struct planted *p, uint64_t seed)
{
	int i;

	for (i = 0; i < REC_SIZE / 8; i++)
		p->word[i] = 0x7d5e000000000000ull ^ (seed << 16) ^ i;
}

struct sample {
	uint32_t pid, tid;
	uint64_t id;
	long syscall_nr;	/* raw_syscalls:sys_enter samples, else -1 */
	uint64_t cookie;
	uint64_t dyn_size;	/* without PERF_TLS_USER_DEFER: the dump's */
	uint8_t data[REC_SIZE];
};

struct record {
	uint32_t pid, tid;
	uint64_t cookie, id, size, dyn_size;
	uint8_t data[REC_SIZE];
};

struct ring {
	int fd;
	uint64_t id;
	void *base;
	size_t data_size;
	uint64_t sample_type;
	uint16_t dump_size;	/* without PERF_TLS_USER_DEFER: sample_tls_user */
	int nr_samples, nr_records;
	bool bad;		/* a record of an unexpected size */
	uint64_t lost;
	struct sample samples[MAX_SAMPLES];
	struct record records[MAX_RECORDS];
};

struct rings {
	struct ring r[2];
	int nr_rings;
};

FIXTURE(tls_deferred)
{
	struct rings rs;
};

FIXTURE_SETUP(tls_deferred)
{
	memset(self, 0, sizeof(*self));
}

FIXTURE_TEARDOWN(tls_deferred)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int i;

	for (i = 0; i < self->rs.nr_rings; i++) {
		munmap(self->rs.r[i].base, self->rs.r[i].data_size + page);
		close(self->rs.r[i].fd);
	}
}

static void tls_attr(struct perf_event_attr *attr, uint32_t type,
		     uint64_t config, long offset, uint16_t flags)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
	attr->sample_period = 1;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ID |
			    PERF_SAMPLE_TLS_USER;
	attr->sample_id_all = 1;
	attr->disabled = 1;
	attr->exclude_hv = 1;
	attr->defer_output = 1;
	attr->sample_tls_user = REC_SIZE;
	attr->tls_user_offset = offset;
	attr->tls_user_flags = flags;
}

static int ring_open(struct rings *rs, struct perf_event_attr *attr,
		     pid_t pid, int cpu)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct ring *r = &rs->r[rs->nr_rings];

	r->fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1,
			PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->data_size = DATA_PAGES * page;
	r->base = mmap(NULL, r->data_size + page, PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED || ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id)) {
		close(r->fd);
		return -errno;
	}
	r->sample_type = attr->sample_type;
	if (!(attr->tls_user_flags & PERF_TLS_USER_DEFER))
		r->dump_size = attr->sample_tls_user;
	rs->nr_rings++;
	return 0;
}

static void parse_sample(struct ring *r, const uint64_t *p, size_t words)
{
	struct sample *s;
	size_t i = 0;

	if (r->nr_samples >= MAX_SAMPLES || words < 3) {
		r->bad = true;
		return;
	}
	s = &r->samples[r->nr_samples++];
	s->pid = p[i];
	s->tid = p[i++] >> 32;
	s->id = p[i++];
	s->syscall_nr = -1;
	if (r->sample_type & PERF_SAMPLE_RAW) {
		uint32_t size = p[i];

		/* u32 size, then the common fields (8 bytes), then the id. */
		if (size < 4 + 8 + 8 || i + (4 + size) / 8 + 1 > words) {
			r->bad = true;
			return;
		}
		memcpy(&s->syscall_nr, (const char *)&p[i] + 4 + 8,
		       sizeof(s->syscall_nr));
		i += (4 + size) / 8;
	}
	/* Without PERF_TLS_USER_DEFER: size, data[size], dyn_size. */
	if (r->dump_size) {
		if (i + 2 + r->dump_size / 8 != words || p[i] != r->dump_size ||
		    r->dump_size > REC_SIZE) {
			r->bad = true;
			return;
		}
		memcpy(s->data, &p[i + 1], r->dump_size);
		s->dyn_size = p[i + 1 + r->dump_size / 8];
		return;
	}
	/* With PERF_TLS_USER_DEFER the dump is one u64: the cookie. */
	if (i + 1 != words) {
		r->bad = true;
		return;
	}
	s->cookie = p[i];
}

static void parse_record(struct ring *r, const uint64_t *p, size_t words)
{
	struct record *rec;

	/* cookie, id, size, data, dyn_size, then pid/tid and id. */
	if (r->nr_records >= MAX_RECORDS || words != 3 + REC_SIZE / 8 + 1 + 2 ||
	    p[2] != REC_SIZE) {
		r->bad = true;
		return;
	}
	rec = &r->records[r->nr_records++];
	rec->cookie = p[0];
	rec->id = p[1];
	rec->size = p[2];
	memcpy(rec->data, &p[3], REC_SIZE);
	rec->dyn_size = p[3 + REC_SIZE / 8];
	rec->pid = p[4 + REC_SIZE / 8];
	rec->tid = p[4 + REC_SIZE / 8] >> 32;
}

static void ring_drain(struct ring *r)
{
	struct perf_event_mmap_page *pg = r->base;
	char *data = (char *)r->base + pg->data_offset;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	static uint64_t buf[8192];

	while (tail < head) {
		struct perf_event_header hdr;
		size_t off = tail % r->data_size, i;

		for (i = 0; i < sizeof(hdr); i++)
			((char *)&hdr)[i] = data[(off + i) % r->data_size];
		if (hdr.size < sizeof(hdr) || hdr.size % 8) {
			r->bad = true;
			break;
		}
		for (i = 0; i < hdr.size; i++)
			((char *)buf)[i] = data[(off + i) % r->data_size];

		switch (hdr.type) {
		case PERF_RECORD_SAMPLE:
			parse_sample(r, buf + 1, hdr.size / 8 - 1);
			break;
		case PERF_RECORD_TLS_USER_DEFERRED:
			parse_record(r, buf + 1, hdr.size / 8 - 1);
			break;
		case PERF_RECORD_LOST:
			r->lost += buf[2];
			break;
		}
		tail += hdr.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static int count_records(const struct ring *r, uint64_t cookie, uint64_t id)
{
	int i, n = 0;

	for (i = 0; i < r->nr_records; i++)
		if (r->records[i].cookie == cookie && r->records[i].id == id)
			n++;
	return n;
}

static const struct record *find_record(const struct ring *r, uint64_t cookie,
					uint64_t id)
{
	int i;

	for (i = 0; i < r->nr_records; i++)
		if (r->records[i].cookie == cookie && r->records[i].id == id)
			return &r->records[i];
	return NULL;
}

/* The cookie most samples of @tid share, and how many share it. */
static uint64_t top_cookie(const struct ring *r, uint32_t tid, int *count)
{
	uint64_t best = 0;
	int i, j, n;

	*count = 0;
	for (i = 0; i < r->nr_samples; i++) {
		if (r->samples[i].tid != tid || !r->samples[i].cookie)
			continue;
		for (n = 0, j = 0; j < r->nr_samples; j++)
			n += r->samples[j].tid == tid &&
			     r->samples[j].cookie == r->samples[i].cookie;
		if (n > *count) {
			*count = n;
			best = r->samples[i].cookie;
		}
	}
	return best;
}

/* One read() of /dev/zero into FAULT_PAGES pages never touched before. */
static void fault_pages(struct __test_metadata *_metadata)
{
	size_t page = sysconf(_SC_PAGESIZE), len = FAULT_PAGES * page;
	char *buf;
	int fd;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(buf, MAP_FAILED);
	/* One fault per page: no transparent huge page for the buffer. */
	madvise(buf, len, MADV_NOHUGEPAGE);
	fd = open("/dev/zero", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, len), (ssize_t)len);
	close(fd);
	munmap(buf, len);
}

static void enable(struct rings *rs, unsigned long req)
{
	int i;

	for (i = 0; i < rs->nr_rings; i++)
		ioctl(rs->r[i].fd, req, 0);
}

/*
 * All samples of one kernel entry share one cookie and one read: the
 * FAULT_PAGES page faults of one read() come with one record, whose bytes
 * are the record the TLS pointer points to.
 */
static void check_one_read(struct __test_metadata *_metadata, struct ring *r,
			   const struct planted *want)
{
	uint32_t tid = syscall(__NR_gettid);
	const struct record *rec;
	uint64_t cookie;
	int n;

	ASSERT_FALSE(r->bad);
	ASSERT_EQ(r->lost, 0);
	cookie = top_cookie(r, tid, &n);
	ASSERT_NE(cookie, 0);
	EXPECT_EQ(n, FAULT_PAGES);
	EXPECT_EQ(count_records(r, cookie, r->id), 1);
	rec = find_record(r, cookie, r->id);
	for (n = 0; !rec && n < r->nr_records; n++)
		TH_LOG("record %d: cookie %#llx id %llu (want %#llx, %llu)", n,
		       (unsigned long long)r->records[n].cookie,
		       (unsigned long long)r->records[n].id,
		       (unsigned long long)cookie, (unsigned long long)r->id);
	ASSERT_NE(rec, NULL);
	EXPECT_EQ(rec->tid, tid);
	EXPECT_EQ(rec->dyn_size, REC_SIZE);
	EXPECT_EQ(memcmp(rec->data, want, REC_SIZE), 0);
}

/* Through the TLS pointer: one record for FAULT_PAGES samples. */
TEST_F(tls_deferred, one_read_per_entry)
{
	struct perf_event_attr attr;
	struct planted rec;

	plant(&rec, 1);
	tls_ptr = &rec;
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER);
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);
	tls_ptr = NULL;

	ring_drain(&self->rs.r[0]);
	check_one_read(_metadata, &self->rs.r[0], &rec);
}

/* Bytes in TLS itself, without a pointer. */
TEST_F(tls_deferred, plain)
{
	struct perf_event_attr attr;

	plant(&tls_plain, 2);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEFER);
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);

	ring_drain(&self->rs.r[0]);
	check_one_read(_metadata, &self->rs.r[0], &tls_plain);
}

/*
 * Two events with their own reads: one record each per entry, each with
 * the event's id and its own bytes, and the same cookie.
 */
TEST_F(tls_deferred, two_events)
{
	struct perf_event_attr attr;
	struct planted rec;

	plant(&rec, 3);
	plant(&tls_plain, 4);
	tls_ptr = &rec;
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER);
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEFER);
	attr.defer_output = 0;
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);
	tls_ptr = NULL;

	/* Both records go to the one event with defer_output. */
	ring_drain(&self->rs.r[0]);
	ring_drain(&self->rs.r[1]);
	ASSERT_EQ(self->rs.r[1].nr_records, 0);
	check_one_read(_metadata, &self->rs.r[0], &rec);
	{
		uint32_t tid = syscall(__NR_gettid);
		const struct record *other;
		uint64_t cookie;
		int n;

		cookie = top_cookie(&self->rs.r[1], tid, &n);
		EXPECT_EQ(n, FAULT_PAGES);
		EXPECT_EQ(cookie, top_cookie(&self->rs.r[0], tid, &n));
		EXPECT_EQ(count_records(&self->rs.r[0], cookie, self->rs.r[1].id), 1);
		other = find_record(&self->rs.r[0], cookie, self->rs.r[1].id);
		ASSERT_NE(other, NULL);
		EXPECT_EQ(other->dyn_size, REC_SIZE);
		EXPECT_EQ(memcmp(other->data, &tls_plain, REC_SIZE), 0);
	}
}

static void run_mixed(struct __test_metadata *_metadata, struct rings *rs,
		      bool dump_first)
{
	struct perf_event_attr dump, defer;
	struct ring *rd, *rf;
	struct planted rec;
	int i;

	plant(&rec, 8);
	plant(&tls_plain, 9);
	tls_ptr = &rec;
	tls_attr(&dump, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_plain), 0);
	dump.sample_tls_user = 16;
	dump.defer_output = 0;
	tls_attr(&defer, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER);
	/* The event opened last is fed first. */
	ASSERT_EQ(ring_open(rs, dump_first ? &defer : &dump, 0, -1), 0);
	ASSERT_EQ(ring_open(rs, dump_first ? &dump : &defer, 0, -1), 0);
	rd = &rs->r[dump_first ? 1 : 0];
	rf = &rs->r[dump_first ? 0 : 1];

	enable(rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	enable(rs, PERF_EVENT_IOC_DISABLE);
	tls_ptr = NULL;

	ring_drain(rd);
	ring_drain(rf);
	ASSERT_FALSE(rd->bad);
	ASSERT_GE(rd->nr_samples, FAULT_PAGES);
	for (i = 0; i < rd->nr_samples; i++) {
		EXPECT_EQ(rd->samples[i].dyn_size, 16);
		EXPECT_EQ(memcmp(rd->samples[i].data, &tls_plain, 16), 0);
	}
	EXPECT_EQ(rd->nr_records, 0);
	check_one_read(_metadata, rf, &rec);
}

/*
 * A software event feeds all its events one sample description: an event
 * in deferred mode and one that dumps 16 bytes in the sample itself, fed
 * by the same page faults in either order, each get their own layout.
 */
TEST_F(tls_deferred, mixed_modes_dump_first)
{
	run_mixed(_metadata, &self->rs, true);
}

TEST_F(tls_deferred, mixed_modes_defer_first)
{
	run_mixed(_metadata, &self->rs, false);
}

/*
 * A record on a page that was never touched: the sample's own read, in
 * the context of the sample, may not fault and gets nothing (dyn_size 0);
 * the deferred read faults the page in and gets the planted bytes.
 */
TEST_F(tls_deferred, non_resident)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr;
	struct planted rec;
	uint64_t buf[8192 / 8];
	int fd, round;

	plant(&rec, 5);
	fd = memfd_create("tls_deferred", MFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, &rec, sizeof(rec)), (ssize_t)sizeof(rec));
	ASSERT_EQ(ftruncate(fd, page), 0);

	for (round = 0; round < 2; round++) {
		bool defer = round == 1;
		struct ring *r;

		/* A new mapping: in the page cache, but no page table entry. */
		tls_ptr = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(tls_ptr, MAP_FAILED);
		tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
			 tls_offset(&tls_ptr),
			 PERF_TLS_USER_DEREF | (defer ? PERF_TLS_USER_DEFER : 0));
		ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);
		r = &self->rs.r[self->rs.nr_rings - 1];
		ioctl(r->fd, PERF_EVENT_IOC_ENABLE, 0);
		fault_pages(_metadata);
		ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0);
		munmap(tls_ptr, page);
		tls_ptr = NULL;

		if (defer) {
			ring_drain(r);
			check_one_read(_metadata, r, &rec);
			continue;
		}

		/* The sample's own dump: size, data, dyn_size 0. */
		{
			struct perf_event_mmap_page *pg = r->base;
			char *data = (char *)r->base + pg->data_offset;
			uint64_t tail = pg->data_tail, head = pg->data_head;
			int nr = 0;

			while (tail < head) {
				struct perf_event_header hdr;
				size_t off = tail % r->data_size, i;

				memcpy(&hdr, data + off, sizeof(hdr));
				ASSERT_LE(hdr.size, sizeof(buf));
				for (i = 0; i < hdr.size; i++)
					((char *)buf)[i] = data[(off + i) % r->data_size];
				if (hdr.type == PERF_RECORD_SAMPLE) {
					/* tid, id, size, data[4], dyn_size */
					ASSERT_EQ(hdr.size, 8 + 8 * 8);
					ASSERT_EQ(buf[3], REC_SIZE);
					EXPECT_EQ(buf[4 + REC_SIZE / 8], 0);
					nr++;
				}
				tail += hdr.size;
			}
			/* The read's faults, and maybe one in user mode. */
			EXPECT_GE(nr, FAULT_PAGES);
		}
	}
	close(fd);
}

/* Samples of kernel threads (the idle task) carry cookie 0, no record. */
TEST_F(tls_deferred, kernel_thread)
{
	struct timespec nap = { .tv_nsec = 2 * 1000 * 1000 };
	struct perf_event_attr attr;
	int i, j, idle = 0, ret;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);

	plant(&tls_plain, 6);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEFER);
	attr.sample_period = 200000;	/* 0.2 ms */
	ret = ring_open(&self->rs, &attr, -1, 0);
	if (ret == -EACCES)
		SKIP(return, "CPU-wide events not permitted (perf_event_paranoid)");
	ASSERT_EQ(ret, 0);

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	for (i = 0; i < IDLE_ROUNDS && idle < MIN_IDLE; i++) {
		nanosleep(&nap, NULL);
		ring_drain(&self->rs.r[0]);
		for (idle = 0, j = 0; j < self->rs.r[0].nr_samples; j++)
			idle += self->rs.r[0].samples[j].pid == 0;
	}
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);
	ring_drain(&self->rs.r[0]);

	ASSERT_FALSE(self->rs.r[0].bad);
	if (idle < MIN_IDLE)
		SKIP(return, "CPU 0 was never idle (%d idle samples)", idle);
	for (j = 0; j < self->rs.r[0].nr_samples; j++)
		if (self->rs.r[0].samples[j].pid == 0)
			EXPECT_EQ(self->rs.r[0].samples[j].cookie, 0);
	for (j = 0; j < self->rs.r[0].nr_records; j++)
		EXPECT_NE(self->rs.r[0].records[j].pid, 0);
}

/* The id of a tracepoint, from tracefs or debugfs; -errno if not found. */
static long tracepoint_id(const char *name)
{
	static const char * const roots[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[256], buf[32];
	unsigned int i;
	ssize_t n;
	int fd;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", roots[i], name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return -EIO;
		buf[n] = 0;
		return strtol(buf, NULL, 10);
	}
	return -ENOENT;
}

static char self_exe[256];

/*
 * A child that plants a record behind its TLS pointer and then ends its
 * image with @nr (execve or exit_group), which never returns to that
 * image: the record of that system call's entry can only come from the
 * flush at exec or exit, which must read the old image's TLS.
 */
static void run_flush(struct __test_metadata *_metadata,
		      struct rings *rs, long nr)
{
	struct perf_event_attr attr;
	const struct record *rec;
	int pipefd[2], status, i;
	struct planted want;
	long id;
	pid_t pid;
	char go;

	id = tracepoint_id("raw_syscalls/sys_enter");
	if (id < 0)
		SKIP(return, "no raw_syscalls/sys_enter tracepoint");
	ASSERT_GT(readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1), 0);

	plant(&want, 7);
	ASSERT_EQ(pipe(pipefd), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		static struct planted rec;
		static char *const argv[] = { self_exe, "--exit", NULL };

		close(pipefd[1]);
		plant(&rec, 7);
		tls_ptr = &rec;
		if (read(pipefd[0], &go, 1) != 1)
			_exit(1);
		if (nr == __NR_execve)
			syscall(__NR_execve, self_exe, argv, environ);
		syscall(__NR_exit_group, 0);
		_exit(2);
	}
	close(pipefd[0]);

	tls_attr(&attr, PERF_TYPE_TRACEPOINT, id, tls_offset(&tls_ptr),
		 PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER);
	attr.sample_type |= PERF_SAMPLE_RAW;
	ASSERT_EQ(ring_open(rs, &attr, pid, -1), 0);
	enable(rs, PERF_EVENT_IOC_ENABLE);
	ASSERT_EQ(write(pipefd[1], "g", 1), 1);
	close(pipefd[1]);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ring_drain(&rs->r[0]);
	ASSERT_FALSE(rs->r[0].bad);

	for (i = 0; i < rs->r[0].nr_samples; i++)
		if (rs->r[0].samples[i].syscall_nr == nr &&
		    rs->r[0].samples[i].tid == (uint32_t)pid)
			break;
	ASSERT_LT(i, rs->r[0].nr_samples) TH_LOG("no sys_enter sample of %ld", nr);
	ASSERT_NE(rs->r[0].samples[i].cookie, 0);
	EXPECT_EQ(count_records(&rs->r[0], rs->r[0].samples[i].cookie,
				rs->r[0].id), 1);
	rec = find_record(&rs->r[0], rs->r[0].samples[i].cookie,
			  rs->r[0].id);
	ASSERT_NE(rec, NULL);
	EXPECT_EQ(rec->tid, (uint32_t)pid);
	EXPECT_EQ(rec->dyn_size, REC_SIZE);
	EXPECT_EQ(memcmp(rec->data, &want, REC_SIZE), 0);
}

TEST_F(tls_deferred, exec_flush)
{
	run_flush(_metadata, &self->rs, __NR_execve);
}

TEST_F(tls_deferred, exit_flush)
{
	run_flush(_metadata, &self->rs, __NR_exit_group);
}

static int open_errno(struct perf_event_attr *attr)
{
	int fd = syscall(__NR_perf_event_open, attr, 0, -1, -1,
			 PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

/* PERF_TLS_USER_DEFER is a tls_user_flags bit: the same rules apply. */
TEST_F(tls_deferred, bad_attr)
{
	struct perf_event_attr attr;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0,
		 PERF_TLS_USER_DEFER);
	EXPECT_EQ(open_errno(&attr), 0);
	attr.tls_user_flags = PERF_TLS_USER_DEFER | PERF_TLS_USER_DEREF;
	EXPECT_EQ(open_errno(&attr), 0);
	attr.tls_user_flags = PERF_TLS_USER_DEFER | (1U << 2);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.tls_user_flags = PERF_TLS_USER_DEFER;
	attr.tls_user_deref_offset = 8;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.tls_user_deref_offset = 0;
	attr.sample_tls_user = 12;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.sample_tls_user = PERF_TLS_USER_MAX_SIZE + 8;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.sample_tls_user = PERF_TLS_USER_MAX_SIZE;
	EXPECT_EQ(open_errno(&attr), 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), EINVAL);
}

int main(int argc, char **argv)
{
	/* The image run_flush() execs: leave at once. */
	if (argc == 2 && !strcmp(argv[1], "--exit"))
		return 0;
	return test_harness_run(argc, argv);
}
