// SPDX-License-Identifier: GPL-2.0
/*
 * Test the deferred mode of PERF_SAMPLE_TLS_USER (PERF_TLS_USER_DEFER):
 * samples taken in the kernel carry the cookie of their kernel entry, and
 * the TLS bytes come in one PERF_RECORD_TLS_USER_DEFERRED per event and
 * entry, read in task context on the way back to user space, or at exec
 * or exit; samples taken in user mode carry cookie 0 and the bytes.
 *
 * The thread plants known bytes behind a TLS pointer (or in TLS itself),
 * makes kernel entries whose samples it can count (page faults of a read()
 * into fresh pages, system call tracepoints) and checks that every cookie
 * has exactly one record per event, with the planted bytes.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
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
#include <sys/prctl.h>
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
#define REC_MAX		128	/* largest dump the tests ask for */
#define READ_FAULTS	4	/* faults of a deferred read that fails */
#define IDLE_ROUNDS	200
#define MIN_IDLE	4

struct planted {
	uint64_t word[REC_SIZE / 8];
};

static __thread struct planted *tls_ptr __attribute__((tls_model("initial-exec")));
static __thread struct planted tls_plain __attribute__((tls_model("initial-exec")));

/* This test's own executable, which run_flush() and others exec. */
static char self_exe[256];

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
	int pos;		/* in the ring, among samples and records */
	uint64_t cookie;	/* PERF_TLS_USER_DEFER: 0, or no dump */
	uint64_t size;		/* the dump's */
	uint64_t dyn_size;
	uint8_t data[REC_MAX];
};

struct record {
	int pos;
	uint32_t pid, tid;
	uint64_t cookie, id, size, dyn_size;
	uint8_t data[REC_MAX];
};

struct ring {
	int fd;
	uint64_t id;
	void *base;
	size_t data_size;
	uint64_t sample_type;
	bool deferred;		/* PERF_TLS_USER_DEFER */
	uint16_t rec_size;	/* sample_tls_user: of the dumps and records */
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

static void rings_close(struct rings *rs)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int i;

	for (i = 0; i < rs->nr_rings; i++) {
		munmap(rs->r[i].base, rs->r[i].data_size + page);
		close(rs->r[i].fd);
	}
	memset(rs, 0, sizeof(*rs));
}

FIXTURE_TEARDOWN(tls_deferred)
{
	rings_close(&self->rs);
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
	r->rec_size = attr->sample_tls_user;
	r->deferred = attr->tls_user_flags & PERF_TLS_USER_DEFER;
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
	s->pos = r->nr_samples + r->nr_records;
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
	/* With PERF_TLS_USER_DEFER the cookie comes first. */
	if (r->deferred) {
		if (i >= words) {
			r->bad = true;
			return;
		}
		s->cookie = p[i++];
	}
	/* size, then data[size] and dyn_size when size is not 0. */
	if (i >= words) {
		r->bad = true;
		return;
	}
	s->size = p[i];
	if (!s->size) {
		r->bad |= i + 1 != words;
		return;
	}
	/* The whole sample_tls_user, and never with a cookie. */
	if (s->cookie || s->size != r->rec_size || s->size > REC_MAX ||
	    i + 2 + s->size / 8 != words) {
		r->bad = true;
		return;
	}
	memcpy(s->data, &p[i + 1], s->size);
	s->dyn_size = p[i + 1 + s->size / 8];
}

static void parse_record(struct ring *r, const uint64_t *p, size_t words)
{
	size_t n = r->rec_size / 8;
	struct record *rec;

	/* cookie, id, size, data, dyn_size, then pid/tid and id. */
	if (r->nr_records >= MAX_RECORDS || r->rec_size > REC_MAX ||
	    words != 3 + n + 1 + 2 || p[2] != r->rec_size) {
		r->bad = true;
		return;
	}
	rec = &r->records[r->nr_records++];
	rec->pos = r->nr_samples + r->nr_records;
	rec->cookie = p[0];
	rec->id = p[1];
	rec->size = p[2];
	memcpy(rec->data, &p[3], r->rec_size);
	rec->dyn_size = p[3 + n];
	rec->pid = p[4 + n];
	rec->tid = p[4 + n] >> 32;
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

/*
 * One read() of /dev/zero into FAULT_PAGES pages never touched before;
 * 0, or -1 when it could not be made.
 */
static int make_faults(void)
{
	size_t page = sysconf(_SC_PAGESIZE), len = FAULT_PAGES * page;
	ssize_t n = -1;
	char *buf;
	int fd;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -1;
	/* One fault per page: no transparent huge page for the buffer. */
	madvise(buf, len, MADV_NOHUGEPAGE);
	fd = open("/dev/zero", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, len);
		close(fd);
	}
	munmap(buf, len);
	return n == (ssize_t)len ? 0 : -1;
}

static void fault_pages(struct __test_metadata *_metadata)
{
	ASSERT_EQ(make_faults(), 0);
}

static void enable(struct rings *rs, unsigned long req)
{
	int i;

	for (i = 0; i < rs->nr_rings; i++)
		ioctl(rs->r[i].fd, req, 0);
}

/*
 * All samples of one kernel entry share one cookie and one read: the
 * @faults page faults of one read() (FAULT_PAGES, and those the deferred
 * read takes itself) come with one record, whose bytes are the record the
 * TLS pointer points to.
 */
static void check_read(struct __test_metadata *_metadata, struct ring *r,
		       const struct planted *want, int faults)
{
	uint32_t tid = syscall(__NR_gettid);
	const struct record *rec;
	uint64_t cookie;
	int n;

	ASSERT_FALSE(r->bad);
	ASSERT_EQ(r->lost, 0);
	cookie = top_cookie(r, tid, &n);
	ASSERT_NE(cookie, 0);
	EXPECT_EQ(n, faults);
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

static void check_one_read(struct __test_metadata *_metadata, struct ring *r,
			   const struct planted *want)
{
	check_read(_metadata, r, want, FAULT_PAGES);
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
 * the deferred read faults the page in and gets the planted bytes. That
 * fault is a sample of the entry too, whose record it shares.
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
			check_read(_metadata, r, &rec, FAULT_PAGES + 1);
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
					/* Nothing read: why, in data[0]. */
					EXPECT_EQ(buf[4], PERF_TLS_USER_UNREAD_FAULT);
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

static __thread struct planted *tls_ptr2 __attribute__((tls_model("initial-exec")));

/*
 * A page of a memfd of its own holding @rec, mapped afresh: in the page
 * cache, with no page table entry, and no neighbour that a fault around
 * it would map.
 */
static struct planted *map_non_resident(struct __test_metadata *_metadata,
					const struct planted *rec)
{
	size_t page = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	fd = memfd_create("tls_deferred", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, rec, sizeof(*rec)) != (ssize_t)sizeof(*rec) ||
	    ftruncate(fd, page)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Samples taken while the records of an entry are written keep the
 * entry's cookie. Two events read records on pages never touched, so each
 * deferred read faults, and each fault is a sample of both events: the
 * first read's fault comes before both records, the second read's after
 * the record of the event read first. Every sample of the thread has a
 * cookie with a record of the planted bytes, or, taken in user mode,
 * cookie 0 and a dump: none is left with cookie 0 and nothing.
 */
TEST_F(tls_deferred, no_cookie_zero)
{
	uint32_t tid = syscall(__NR_gettid);
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr;
	int i, j, after = 0;
	struct planted rec[2];

	for (i = 0; i < 2; i++)
		plant(&rec[i], 50 + i);
	tls_ptr = map_non_resident(_metadata, &rec[0]);
	tls_ptr2 = map_non_resident(_metadata, &rec[1]);
	ASSERT_NE(tls_ptr, NULL);
	ASSERT_NE(tls_ptr2, NULL);
	for (i = 0; i < 2; i++) {
		tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
			 tls_offset(i ? &tls_ptr2 : &tls_ptr),
			 PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER);
		ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);
	}

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);
	munmap(tls_ptr, page);
	munmap(tls_ptr2, page);
	tls_ptr = NULL;
	tls_ptr2 = NULL;

	for (i = 0; i < 2; i++) {
		struct ring *r = &self->rs.r[i];
		const struct record *found;

		ring_drain(r);
		ASSERT_FALSE(r->bad);
		ASSERT_EQ(r->lost, 0);
		/* The read()'s faults and the two reads' own. */
		check_read(_metadata, r, &rec[i], FAULT_PAGES + 2);
		for (j = 0; j < r->nr_samples; j++) {
			const struct sample *smp = &r->samples[j];

			if (smp->tid != tid)
				continue;
			if (!smp->cookie) {
				EXPECT_EQ(smp->size, REC_SIZE) TH_LOG("sample %d", j);
				continue;
			}
			found = find_record(r, smp->cookie, r->id);
			ASSERT_NE(found, NULL) TH_LOG("sample %d: cookie %#llx",
						      j, (unsigned long long)smp->cookie);
			EXPECT_EQ(found->dyn_size, REC_SIZE);
			EXPECT_EQ(memcmp(found->data, &rec[i], REC_SIZE), 0);
			after += smp->pos > found->pos;
		}
	}
	/* The second read's fault, as a sample of the event read first. */
	EXPECT_EQ(after, 1);
}

/*
 * The samples of the read()'s entry: its FAULT_PAGES faults, and when the
 * deferred read found nothing, the faults that read may have taken
 * itself (a read of a PROT_NONE page faults, and copy_from_user() may try
 * again in smaller pieces), which are samples of the entry too.
 */
static void expect_entry_samples(struct __test_metadata *_metadata, int n,
				 bool read_failed)
{
	if (!read_failed) {
		EXPECT_EQ(n, FAULT_PAGES);
		return;
	}
	EXPECT_GE(n, FAULT_PAGES);
	EXPECT_LE(n, FAULT_PAGES + READ_FAULTS);
}

/*
 * What a read of @len bytes dumps past them: zeroes, but for data[0],
 * which says why nothing was read when @len is 0.
 */
static bool rest_ok(const uint8_t *data, uint64_t size, uint64_t len,
		    uint8_t why)
{
	uint64_t i;

	for (i = len; i < size; i++)
		if (data[i] != (!len && !i ? why : 0))
			return false;
	return true;
}

/*
 * Run FAULT_PAGES page faults under @attr, once in the sample mode (the
 * sample's own dump) and once in the deferred mode, into fresh rings, and
 * check that both read @len bytes equal to @want, and zeroes after them,
 * or with @len 0 nothing and the reason @why.
 */
static void run_both_modes(struct __test_metadata *_metadata,
			   struct rings *rs, struct perf_event_attr *attr,
			   const void *want, uint64_t len, uint8_t why)
{
	uint32_t tid = syscall(__NR_gettid);
	const struct record *rec;
	struct ring *r;
	int i, n, mode;

	ASSERT_LE(attr->sample_tls_user, REC_MAX);
	for (mode = 0; mode < 2; mode++) {
		attr->tls_user_flags &= ~PERF_TLS_USER_DEFER;
		if (mode)
			attr->tls_user_flags |= PERF_TLS_USER_DEFER;
		ASSERT_EQ(ring_open(rs, attr, 0, -1), 0);
		r = &rs->r[rs->nr_rings - 1];
		ioctl(r->fd, PERF_EVENT_IOC_ENABLE, 0);
		fault_pages(_metadata);
		ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0);
		ring_drain(r);
		ASSERT_FALSE(r->bad);
		ASSERT_EQ(r->lost, 0);

		if (!mode) {
			for (i = 0, n = 0; i < r->nr_samples; i++) {
				if (r->samples[i].tid != tid)
					continue;
				EXPECT_EQ(r->samples[i].dyn_size, len);
				EXPECT_EQ(memcmp(r->samples[i].data, want, len), 0);
				EXPECT_TRUE(rest_ok(r->samples[i].data,
						    attr->sample_tls_user, len, why))
					TH_LOG("sample %d: data[0] %u", i,
					       r->samples[i].data[0]);
				n++;
			}
			EXPECT_GE(n, FAULT_PAGES);
			continue;
		}
		rec = find_record(r, top_cookie(r, tid, &n), r->id);
		expect_entry_samples(_metadata, n, !len);
		ASSERT_NE(rec, NULL);
		EXPECT_EQ(rec->dyn_size, len);
		EXPECT_EQ(memcmp(rec->data, want, len), 0);
		EXPECT_TRUE(rest_ok(rec->data, attr->sample_tls_user, len, why))
			TH_LOG("record: data[0] %u", rec->data[0]);
	}
}

/*
 * What a variable of a dlopen()ed library looks like to the reader: the
 * TCB points to the DTV, the DTV's entry for the module points to the
 * module's TLS block, and the variable in that block points to the
 * record. Three hops, each with its own offset.
 */
struct chain_dtv {
	uint64_t gen;
	struct {
		void *val;
		void *to_free;
	} entry[4];
};

struct chain_block {
	uint64_t other[5];
	struct planted *ctx;
};

static __thread struct chain_dtv *tls_dtv __attribute__((tls_model("initial-exec")));

TEST_F(tls_deferred, three_hop_chain)
{
	struct perf_event_attr attr;
	static struct chain_block block;
	static struct chain_dtv dtv;
	struct planted rec;

	plant(&rec, 10);
	memset(&block, 0xa5, sizeof(block));
	block.ctx = &rec;
	memset(&dtv, 0x5a, sizeof(dtv));
	dtv.entry[2].val = &block;
	tls_dtv = &dtv;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_dtv), 0);
	attr.tls_user_hops = 3;
	attr.tls_user_hop_offset[0] = offsetof(struct chain_dtv, entry[2].val);
	attr.tls_user_hop_offset[1] = offsetof(struct chain_block, ctx);
	attr.tls_user_hop_offset[2] = 8;	/* from the record's second word */
	attr.sample_tls_user = REC_SIZE - 8;
	run_both_modes(_metadata, &self->rs, &attr, &rec.word[1], REC_SIZE - 8, 0);

	/* A NULL pointer on the way: nothing is read, in either mode. */
	rings_close(&self->rs);
	dtv.entry[2].val = NULL;
	run_both_modes(_metadata, &self->rs, &attr, &rec, 0,
		       PERF_TLS_USER_UNREAD_NULL_POINTER);
	tls_dtv = NULL;
}

/*
 * Four hops, the most a program may have, and a negative offset: a record
 * embedded in the object the last pointer points to the end of.
 */
TEST_F(tls_deferred, four_hops_negative_offset)
{
	static struct { struct planted rec; uint64_t end; } obj;
	static void *p1, *p2, *p3;
	struct perf_event_attr attr;

	plant(&obj.rec, 11);
	p3 = &obj.end;
	p2 = &p3;
	p1 = &p2;
	tls_ptr = (struct planted *)&p1;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), 0);
	attr.tls_user_hops = 4;
	attr.tls_user_hop_offset[3] = -(int32_t)sizeof(obj.rec);
	run_both_modes(_metadata, &self->rs, &attr, &obj.rec, REC_SIZE, 0);
	tls_ptr = NULL;
}

/* The OpenTelemetry thread context record (OTEP 4947) and its attributes. */
struct otel_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_size;
	uint8_t attrs[REC_MAX];		/* and garbage after them */
};

/*
 * A length-prefixed record: the u16 at offset 26 counts the attribute
 * bytes after the 28-byte head, so the dump is 28 + attrs_size bytes, cut
 * at sample_tls_user; nothing after it is read.
 */
TEST_F(tls_deferred, length_prefixed)
{
	static union {
		struct otel_record rec;
		uint64_t align;		/* a pointer the kernel follows */
	} u;
	struct otel_record *rec = &u.rec;
	struct perf_event_attr attr;
	static const uint8_t attrs[] = {
		0, 5, 'h', 't', 't', 'p', 's',
		3, 9, '/', 'c', 'h', 'e', 'c', 'k', 'o', 'u', 't',
	};
	int i;

	memset(rec, 0xee, sizeof(*rec));
	for (i = 0; i < 16; i++)
		rec->trace_id[i] = 0x10 + i;
	for (i = 0; i < 8; i++)
		rec->span_id[i] = 0x40 + i;
	rec->valid = 1;
	rec->trace_flags = 1;
	rec->attrs_size = sizeof(attrs);
	memcpy(rec->attrs, attrs, sizeof(attrs));
	tls_ptr = (void *)rec;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	attr.sample_tls_user = 64;
	attr.tls_user_len_offset = offsetof(struct otel_record, attrs_size);
	attr.tls_user_len_size = 2;
	attr.tls_user_len_base = offsetof(struct otel_record, attrs);
	run_both_modes(_metadata, &self->rs, &attr, rec, 28 + sizeof(attrs), 0);

	/* A length past sample_tls_user is cut there. */
	rings_close(&self->rs);
	rec->attrs_size = 1000;
	run_both_modes(_metadata, &self->rs, &attr, rec, 64, 0);
	tls_ptr = NULL;
}

/*
 * An activity-id stack of bounded depth: a u32 depth, then that many
 * 16-byte ids from offset 8. The length counts units of 1 << 4 bytes.
 */
TEST_F(tls_deferred, activity_id_stack)
{
	static struct {
		uint32_t depth;
		uint32_t pad;
		uint8_t id[8][16];
	} stack;
	struct perf_event_attr attr;
	int i;

	for (i = 0; i < (int)sizeof(stack.id); i++)
		stack.id[i / 16][i % 16] = i;
	stack.depth = 3;
	tls_ptr = (struct planted *)&stack;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	attr.sample_tls_user = 8 + 4 * 16;	/* at most 4 levels */
	attr.tls_user_len_size = 4;
	attr.tls_user_len_shift = 4;
	attr.tls_user_len_base = 8;
	run_both_modes(_metadata, &self->rs, &attr, &stack, 8 + 3 * 16, 0);

	/* Deeper than the event reads: the 4 outer levels. */
	rings_close(&self->rs);
	stack.depth = 8;
	run_both_modes(_metadata, &self->rs, &attr, &stack, 8 + 4 * 16, 0);
	tls_ptr = NULL;
}

static int register_context(const void *addr)
{
	return prctl(PR_TASK_PERF_CONTEXT, (unsigned long)addr, 0, 0, 0) ?
	       errno : 0;
}

/* Where a runtime keeps its context: a field of its own thread object. */
struct runtime_thread {
	uint64_t magic[3];
	struct planted *ctx;
};

/* A child of the CPU-wide tests runs on CPU 0, where the events are. */
static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(10);
}

/* Say it is ready on @ready_fd, wait for a byte on @go_fd, fault, exit. */
static void child_go(int go_fd, int ready_fd)
{
	char go;

	if (write(ready_fd, "r", 1) != 1 || read(go_fd, &go, 1) != 1)
		_exit(14);
	_exit(make_faults() ? 15 : 0);
}

/*
 * A child of one of two layouts: "tls" keeps its context pointer in TLS,
 * "heap" in a thread object on the heap; each registers where it is, and
 * plants the record of @seed. Child "none" registers nothing.
 */
static void layout_child(int layout, uint64_t seed, int go_fd, int ready_fd)
{
	static struct planted rec;
	struct runtime_thread *rt;

	pin_cpu0();
	plant(&rec, seed);
	if (layout == 0) {
		tls_ptr = &rec;
		if (register_context(&tls_ptr))
			_exit(11);
	} else if (layout == 1) {
		rt = calloc(1, sizeof(*rt));
		if (!rt)
			_exit(12);
		rt->ctx = &rec;
		if (register_context(&rt->ctx))
			_exit(13);
	}
	/* Registered and planted: nothing the test counts faults after this. */
	child_go(go_fd, ready_fd);
}

typedef void (*child_fn)(int index, uint64_t seed, int go_fd, int ready_fd);

/*
 * Fork @n children, child(i, @seed + i, ...) each, and return once each
 * said it is ready; writing a byte per child to *@go_fd lets them go.
 */
static void fork_children(struct __test_metadata *_metadata, pid_t *pid,
			  int n, child_fn child, uint64_t seed, int *go_fd)
{
	int pipefd[2], readyfd[2], i;
	char ready;

	ASSERT_EQ(pipe(pipefd), 0);
	ASSERT_EQ(pipe(readyfd), 0);
	for (i = 0; i < n; i++) {
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (!pid[i]) {
			close(pipefd[1]);
			close(readyfd[0]);
			child(i, seed + i, pipefd[0], readyfd[1]);
		}
	}
	close(pipefd[0]);
	close(readyfd[1]);
	for (i = 0; i < n; i++)
		ASSERT_EQ(read(readyfd[0], &ready, 1), 1);
	close(readyfd[0]);
	*go_fd = pipefd[1];
}

static void reap_children(struct __test_metadata *_metadata, pid_t *pid,
			  int n, int go_fd)
{
	int i, status;

	for (i = 0; i < n; i++)
		ASSERT_EQ(write(go_fd, "g", 1), 1);
	close(go_fd);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(waitpid(pid[i], &status, 0), pid[i]);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 0);
	}
}

/*
 * The dump of each child's samples in @r: @want's REC_SIZE bytes, or
 * nothing and the reason @why when @want is NULL. In deferred mode, the
 * record of the last entry of the child's samples.
 */
static void check_child(struct __test_metadata *_metadata, struct ring *r,
			pid_t pid, const struct planted *want, uint8_t why,
			bool deferred)
{
	uint64_t dyn = want ? REC_SIZE : 0;
	const struct record *rec;
	int j, n = 0;

	if (!deferred) {
		for (j = 0; j < r->nr_samples; j++) {
			if (r->samples[j].pid != (uint32_t)pid)
				continue;
			n++;
			EXPECT_EQ(r->samples[j].dyn_size, dyn) TH_LOG("pid %d", pid);
			if (want) {
				EXPECT_EQ(memcmp(r->samples[j].data, want, REC_SIZE), 0);
			} else {
				EXPECT_TRUE(rest_ok(r->samples[j].data, REC_SIZE, 0, why))
					TH_LOG("pid %d: data[0] %u", pid,
					       r->samples[j].data[0]);
			}
		}
		EXPECT_GE(n, FAULT_PAGES) TH_LOG("pid %d", pid);
		return;
	}
	rec = find_record(r, top_cookie(r, pid, &n), r->id);
	expect_entry_samples(_metadata, n, !want);
	ASSERT_NE(rec, NULL) TH_LOG("pid %d", pid);
	EXPECT_EQ(rec->pid, (uint32_t)pid);
	EXPECT_EQ(rec->dyn_size, dyn) TH_LOG("pid %d", pid);
	if (want) {
		EXPECT_EQ(memcmp(rec->data, want, REC_SIZE), 0);
	} else {
		EXPECT_TRUE(rest_ok(rec->data, REC_SIZE, 0, why))
			TH_LOG("pid %d: data[0] %u", pid, rec->data[0]);
	}
}

/* One CPU-wide event on CPU 0 per mode: @attr, then @attr with DEFER. */
static int open_both_modes(struct rings *rs, struct perf_event_attr *attr)
{
	int ret = ring_open(rs, attr, -1, 0);

	if (ret)
		return ret;
	attr->tls_user_flags |= PERF_TLS_USER_DEFER;
	return ring_open(rs, attr, -1, 0);
}

static void kill_children(pid_t *pid, int n)
{
	int i;

	for (i = 0; i < n; i++)
		kill(pid[i], SIGKILL);
}

/*
 * Two processes keep their context at different places and register it;
 * a third registers nothing. One CPU-wide event of each mode, reading
 * "the registered context, then one pointer", gets each process's own
 * record, and nothing for the third.
 */
TEST_F(tls_deferred, registered_two_layouts)
{
	struct perf_event_attr attr;
	int go_fd, i, mode, ret;
	struct planted want;
	pid_t pid[3];

	fork_children(_metadata, pid, 3, layout_child, 20, &go_fd);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 0, PERF_TLS_USER_REGISTERED);
	attr.tls_user_hops = 1;
	ret = open_both_modes(&self->rs, &attr);
	if (ret == -EACCES) {
		kill_children(pid, 3);
		SKIP(return, "CPU-wide events not permitted");
	}
	ASSERT_EQ(ret, 0);
	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	reap_children(_metadata, pid, 3, go_fd);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);

	for (mode = 0; mode < 2; mode++) {
		struct ring *r = &self->rs.r[mode];

		ring_drain(r);
		ASSERT_FALSE(r->bad);
		ASSERT_EQ(r->lost, 0);
		for (i = 0; i < 3; i++) {
			plant(&want, 20 + i);
			check_child(_metadata, r, pid[i], i < 2 ? &want : NULL,
				    PERF_TLS_USER_UNREAD_UNREGISTERED, mode);
		}
	}
}

static void *unregistered_thread(void *arg)
{
	*(int *)arg = make_faults();
	return NULL;
}

/*
 * The registration is the thread's: a new thread starts without one (its
 * samples read nothing), a fork()ed child keeps it and reads its own copy
 * of the memory it names, and unregistering (address 0) ends it.
 */
TEST_F(tls_deferred, registered_per_thread)
{
	uint32_t tid = syscall(__NR_gettid), thread_tid = 0;
	int i, status, thread_ret = -1, n[3] = { };
	struct perf_event_attr attr;
	struct planted rec, child;
	pthread_t thread;
	struct ring *r;
	cpu_set_t set;
	pid_t pid;

	/* An inherited event can be mapped only per CPU: run on CPU 0. */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
	plant(&rec, 30);
	plant(&child, 31);
	tls_ptr = &rec;
	ASSERT_EQ(register_context(&tls_ptr), 0);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0,
		 PERF_TLS_USER_REGISTERED | PERF_TLS_USER_DEREF);
	attr.inherit = 1;
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, 0), 0);
	r = &self->rs.r[0];

	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	fault_pages(_metadata);
	ASSERT_EQ(pthread_create(&thread, NULL, unregistered_thread,
				 &thread_ret), 0);
	ASSERT_EQ(pthread_join(thread, NULL), 0);
	ASSERT_EQ(thread_ret, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		rec = child;
		_exit(make_faults() ? 1 : 0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);

	/* Unregistered, the same thread reads nothing. */
	ASSERT_EQ(register_context(NULL), 0);
	ioctl(r->fd, PERF_EVENT_IOC_ENABLE, 0);
	fault_pages(_metadata);
	ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0);
	tls_ptr = NULL;

	ring_drain(r);
	ASSERT_FALSE(r->bad);
	ASSERT_EQ(r->lost, 0);
	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *smp = &r->samples[i];

		if (smp->pid == (uint32_t)pid) {
			/*
			 * Its faults before it re-planted read the old copy,
			 * or nothing where the child's page tables do not map
			 * the page yet (the sample mode does not fault).
			 */
			if (!smp->dyn_size)
				continue;
			EXPECT_EQ(smp->dyn_size, REC_SIZE);
			if (!memcmp(smp->data, &child, REC_SIZE))
				n[2]++;
			else
				EXPECT_EQ(memcmp(smp->data, &rec, REC_SIZE), 0);
		} else if (smp->tid == tid && smp->dyn_size) {
			n[1]++;
			EXPECT_EQ(smp->dyn_size, REC_SIZE);
			EXPECT_EQ(memcmp(smp->data, &rec, REC_SIZE), 0);
		} else {
			n[0]++;
			if (smp->tid != tid && !thread_tid)
				thread_tid = smp->tid;
			EXPECT_EQ(smp->dyn_size, 0);
		}
	}
	/* The thread's faults and the unregistered round read nothing. */
	EXPECT_GE(n[0], 2 * FAULT_PAGES);
	EXPECT_GE(n[1], FAULT_PAGES);
	EXPECT_GE(n[2], FAULT_PAGES);
	EXPECT_NE(thread_tid, 0);
}

/*
 * What the observed process controls cannot take the read out of its
 * own user memory, in either mode: each case reads nothing, or is cut.
 */
TEST_F(tls_deferred, hostile_program)
{
	size_t page = sysconf(_SC_PAGESIZE);
	static void *slot[2];
	struct perf_event_attr attr, one_hop;
	static struct planted rec;
	uint64_t *len;
	char *map;

	plant(&rec, 40);
	tls_attr(&one_hop, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);

	/* A kernel address, the DTV's unallocated marker, a misaligned one. */
	tls_ptr = (void *)(~0UL << 47);
	run_both_modes(_metadata, &self->rs, &one_hop, &rec, 0,
		       PERF_TLS_USER_UNREAD_BAD_ADDRESS);
	rings_close(&self->rs);
	tls_ptr = (void *)-1L;
	run_both_modes(_metadata, &self->rs, &one_hop, &rec, 0,
		       PERF_TLS_USER_UNREAD_BAD_ADDRESS);
	rings_close(&self->rs);
	tls_ptr = (void *)((char *)&rec + 4);
	run_both_modes(_metadata, &self->rs, &one_hop, &rec, 0,
		       PERF_TLS_USER_UNREAD_BAD_ADDRESS);
	rings_close(&self->rs);

	/* A low pointer and a negative offset that wraps below 0. */
	slot[0] = (void *)0x1000;
	tls_ptr = (void *)slot;
	attr = one_hop;
	attr.tls_user_flags = 0;
	attr.tls_user_hops = 2;
	attr.tls_user_hop_offset[1] = -0x2000;
	run_both_modes(_metadata, &self->rs, &attr, &rec, 0,
		       PERF_TLS_USER_UNREAD_BAD_ADDRESS);
	rings_close(&self->rs);

	/* A u64 length of ~0 with the largest shift: cut at the maximum. */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(map, MAP_FAILED);
	len = (uint64_t *)map;
	memset(map, 0x3c, page);
	*len = ~0ULL;
	tls_ptr = (void *)map;
	attr = one_hop;
	attr.tls_user_len_size = 8;
	attr.tls_user_len_shift = PERF_TLS_USER_MAX_LEN_SHIFT;
	attr.tls_user_len_base = 8;
	run_both_modes(_metadata, &self->rs, &attr, map, REC_SIZE, 0);
	rings_close(&self->rs);

	/* A length of 0 and no base: nothing to copy. */
	*len = 0;
	attr.tls_user_len_base = 0;
	run_both_modes(_metadata, &self->rs, &attr, map, 0,
		       PERF_TLS_USER_UNREAD_EMPTY);
	rings_close(&self->rs);

	/* A length field on a page that cannot be read. */
	ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
	tls_ptr = (void *)(map + page - 16);
	attr = one_hop;
	attr.tls_user_len_size = 2;
	attr.tls_user_len_offset = 24;
	run_both_modes(_metadata, &self->rs, &attr, map, 0,
		       PERF_TLS_USER_UNREAD_FAULT);
	tls_ptr = NULL;
	munmap(map, 2 * page);
}

static uint64_t spin_sum;

/* Compute in user space for @ms milliseconds. */
static void spin_ms(long ms)
{
	struct timespec t0, t;
	uint64_t x = 1;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 100000; i++)
			x = x * 31 + i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	spin_sum = x;
}

/*
 * Open @attr on this thread, compute in user space for 200 ms under it,
 * and return its drained ring, whose samples must all parse.
 */
static struct ring *spin_sampled(struct __test_metadata *_metadata,
				 struct rings *rs, struct perf_event_attr *attr)
{
	struct ring *r;

	ASSERT_EQ(ring_open(rs, attr, 0, -1), 0);
	r = &rs->r[rs->nr_rings - 1];
	enable(rs, PERF_EVENT_IOC_ENABLE);
	spin_ms(200);
	enable(rs, PERF_EVENT_IOC_DISABLE);
	ring_drain(r);
	ASSERT_FALSE(r->bad);
	return r;
}

/*
 * The sample mode in interrupt context: cpu-clock samples, taken from the
 * timer interrupt while the thread runs in user space, follow the three
 * hops of three_hop_chain without faulting.
 */
TEST_F(tls_deferred, sample_mode_in_interrupt)
{
	uint32_t tid = syscall(__NR_gettid);
	static struct chain_block block;
	static struct chain_dtv dtv;
	struct perf_event_attr attr;
	struct planted rec;
	int i, n = 0;
	struct ring *r;

	plant(&rec, 41);
	block.ctx = &rec;
	dtv.entry[1].val = &block;
	tls_dtv = &dtv;
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		 tls_offset(&tls_dtv), 0);
	attr.sample_period = 1000000;	/* 1 ms */
	attr.exclude_kernel = 1;
	attr.tls_user_hops = 3;
	attr.tls_user_hop_offset[0] = offsetof(struct chain_dtv, entry[1].val);
	attr.tls_user_hop_offset[1] = offsetof(struct chain_block, ctx);
	r = spin_sampled(_metadata, &self->rs, &attr);
	tls_dtv = NULL;
	for (i = 0; i < r->nr_samples; i++) {
		if (r->samples[i].tid != tid)
			continue;
		n++;
		EXPECT_EQ(r->samples[i].dyn_size, REC_SIZE);
		EXPECT_EQ(memcmp(r->samples[i].data, &rec, REC_SIZE), 0);
	}
	TH_LOG("%d user-mode cpu-clock samples", n);
	EXPECT_GE(n, 10);
}

/*
 * A sample that interrupted user mode has nothing to wait for: in the
 * deferred mode too it reads at once, with cookie 0, and asks for no
 * record.
 */
TEST_F(tls_deferred, user_mode_at_once)
{
	uint32_t tid = syscall(__NR_gettid);
	struct perf_event_attr attr;
	int i, n = 0;
	struct ring *r;

	plant(&tls_plain, 42);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEFER);
	attr.sample_period = 1000000;	/* 1 ms */
	attr.exclude_kernel = 1;
	r = spin_sampled(_metadata, &self->rs, &attr);
	for (i = 0; i < r->nr_samples; i++) {
		if (r->samples[i].tid != tid)
			continue;
		n++;
		EXPECT_EQ(r->samples[i].cookie, 0);
		EXPECT_EQ(r->samples[i].size, REC_SIZE);
		EXPECT_EQ(r->samples[i].dyn_size, REC_SIZE);
		EXPECT_EQ(memcmp(r->samples[i].data, &tls_plain, REC_SIZE), 0);
	}
	EXPECT_EQ(r->nr_records, 0);
	TH_LOG("%d user-mode cpu-clock samples", n);
	EXPECT_GE(n, 10);
}

/* A context pointer at a fixed address: the same in every image. */
static struct planted *global_ctx;

/*
 * execve() clears the registration: the new image (the same static
 * binary, so global_ctx has the same address) plants a record behind
 * global_ctx, and its samples read nothing, since it registered nothing.
 */
TEST_F(tls_deferred, registered_exec_clears)
{
	static char *const argv[] = { self_exe, "--plant-and-fault", NULL };
	struct perf_event_attr attr;
	int pipefd[2], status, i, n = 0;
	static struct planted rec;
	struct ring *r;
	pid_t pid;
	char go;

	ASSERT_GT(readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1), 0);
	ASSERT_EQ(pipe(pipefd), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pipefd[1]);
		plant(&rec, 42);
		global_ctx = &rec;
		if (register_context(&global_ctx) ||
		    read(pipefd[0], &go, 1) != 1)
			_exit(1);
		execve(self_exe, argv, environ);
		_exit(2);
	}
	close(pipefd[0]);

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0,
		 PERF_TLS_USER_REGISTERED | PERF_TLS_USER_DEREF);
	attr.enable_on_exec = 1;
	ASSERT_EQ(ring_open(&self->rs, &attr, pid, -1), 0);
	r = &self->rs.r[0];
	ASSERT_EQ(write(pipefd[1], "g", 1), 1);
	close(pipefd[1]);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ring_drain(r);
	ASSERT_FALSE(r->bad);
	for (i = 0; i < r->nr_samples; i++) {
		n++;
		EXPECT_EQ(r->samples[i].dyn_size, 0);
	}
	EXPECT_GE(n, FAULT_PAGES);
}

/* prctl(PR_TASK_PERF_CONTEXT) refuses what it cannot register. */
TEST_F(tls_deferred, register_errno)
{
	static uint64_t ctx;

	EXPECT_EQ(register_context(&ctx), 0);
	EXPECT_EQ(register_context(NULL), 0);
	EXPECT_EQ(register_context((char *)&ctx + 4), EINVAL);
	EXPECT_EQ(register_context((void *)(~0UL << 12)), EFAULT);
	EXPECT_EQ(prctl(PR_TASK_PERF_CONTEXT, (unsigned long)&ctx, 1, 0, 0), -1);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(prctl(PR_TASK_PERF_CONTEXT, (unsigned long)&ctx, 0, 1, 0), -1);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(prctl(PR_TASK_PERF_CONTEXT, (unsigned long)&ctx, 0, 0, 1), -1);
	EXPECT_EQ(errno, EINVAL);
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

/* PERF_EVENT_IOC_TLS_USER_PROC on @fd; returns 0 or the errno. */
static int install(int fd, const struct perf_tls_user_proc *up)
{
	return ioctl(fd, PERF_EVENT_IOC_TLS_USER_PROC, up) ? errno : 0;
}

/* The program "TLS variable @var, then @hops pointers" for @pid. */
static struct perf_tls_user_proc proc_prog(pid_t pid, const void *var,
					   int hops, int32_t last_offset)
{
	struct perf_tls_user_proc up = {
		.pid = pid,
		.offset = tls_offset(var),
		.hops = hops,
	};

	if (hops)
		up.hop_offset[hops - 1] = last_offset;
	return up;
}

/* A runtime's thread object, found through a TLS pointer. */
static __thread struct runtime_thread *tls_rt __attribute__((tls_model("initial-exec")));

/*
 * A child that publishes the record of @seed the way @layout says and
 * registers nothing: 0 behind the TLS pointer tls_ptr, 1 in a runtime
 * thread object behind tls_rt, 2 and up behind tls_ptr too (no program is
 * installed for it). Tells @ready_fd, waits for @go_fd, faults.
 */
static void observed_child(int layout, uint64_t seed, int go_fd, int ready_fd)
{
	static struct planted rec;

	pin_cpu0();
	plant(&rec, seed);
	if (layout == 1) {
		tls_rt = calloc(1, sizeof(*tls_rt));
		if (!tls_rt)
			_exit(12);
		tls_rt->ctx = &rec;
	} else {
		tls_ptr = &rec;
	}
	child_go(go_fd, ready_fd);
}

/*
 * Three processes, none of which registers anything: one keeps its
 * context behind a TLS pointer, one in a thread object behind another
 * TLS pointer, and the third gets no program. One CPU-wide event of each
 * mode, whose own program reads nothing, takes the program the observer
 * installed for each process: each gets its own record, the third none.
 */
TEST_F(tls_deferred, observer_program_two_layouts)
{
	struct perf_tls_user_proc up[2];
	struct perf_event_attr attr;
	int go_fd, i, mode, ret;
	struct planted want;
	pid_t pid[3];

	fork_children(_metadata, pid, 3, observed_child, 30, &go_fd);
	up[0] = proc_prog(pid[0], &tls_ptr, 1, 0);
	up[1] = proc_prog(pid[1], &tls_rt, 2, 0);
	up[1].hop_offset[0] = offsetof(struct runtime_thread, ctx);

	/* Its own program: the first word of tls_plain, 0, as a pointer. */
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEREF);
	ret = open_both_modes(&self->rs, &attr);
	if (ret == -EACCES) {
		kill_children(pid, 3);
		SKIP(return, "CPU-wide events not permitted");
	}
	ASSERT_EQ(ret, 0);
	for (mode = 0; mode < 2; mode++)
		for (i = 0; i < 2; i++)
			ASSERT_EQ(install(self->rs.r[mode].fd, &up[i]), 0);
	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	reap_children(_metadata, pid, 3, go_fd);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);

	for (mode = 0; mode < 2; mode++) {
		struct ring *r = &self->rs.r[mode];

		ring_drain(r);
		ASSERT_FALSE(r->bad);
		ASSERT_EQ(r->lost, 0);
		for (i = 0; i < 3; i++) {
			plant(&want, 30 + i);
			check_child(_metadata, r, pid[i], i < 2 ? &want : NULL,
				    PERF_TLS_USER_UNREAD_NULL_POINTER, mode);
		}
	}
}

/*
 * A child with records @seed behind tls_ptr and @seed + 10 in a thread
 * object behind tls_rt; child 0 registers &tls_ptr.
 */
static void registered_child(int index, uint64_t seed, int go_fd, int ready_fd)
{
	static struct planted rec[2];

	pin_cpu0();
	plant(&rec[0], seed);
	plant(&rec[1], seed + 10);
	tls_ptr = &rec[0];
	tls_rt = calloc(1, sizeof(*tls_rt));
	if (!tls_rt)
		_exit(12);
	tls_rt->ctx = &rec[1];
	if (!index && register_context(&tls_ptr))
		_exit(13);
	child_go(go_fd, ready_fd);
}

/*
 * A registration wins over the observer's program: an event that reads
 * registered contexts ("the registered address, one hop") reads the
 * registered record of the child that registered, and, through the
 * observer's program (tls_rt, two hops), the other record of the child
 * that did not. Both children have a program installed.
 */
TEST_F(tls_deferred, observer_program_registered_wins)
{
	struct perf_tls_user_proc up;
	struct perf_event_attr attr;
	int go_fd, i, mode, ret;
	struct planted want;
	pid_t pid[2];

	fork_children(_metadata, pid, 2, registered_child, 60, &go_fd);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 0, PERF_TLS_USER_REGISTERED);
	attr.tls_user_hops = 1;
	ret = open_both_modes(&self->rs, &attr);
	if (ret == -EACCES) {
		kill_children(pid, 2);
		SKIP(return, "CPU-wide events not permitted");
	}
	ASSERT_EQ(ret, 0);
	for (mode = 0; mode < 2; mode++) {
		for (i = 0; i < 2; i++) {
			up = proc_prog(pid[i], &tls_rt, 2, 0);
			up.hop_offset[0] = offsetof(struct runtime_thread, ctx);
			ASSERT_EQ(install(self->rs.r[mode].fd, &up), 0);
		}
	}
	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	reap_children(_metadata, pid, 2, go_fd);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);

	for (mode = 0; mode < 2; mode++) {
		ring_drain(&self->rs.r[mode]);
		ASSERT_FALSE(self->rs.r[mode].bad);
		/* The registered record; the thread object's record. */
		plant(&want, 60);
		check_child(_metadata, &self->rs.r[mode], pid[0], &want, 0, mode);
		plant(&want, 61 + 10);
		check_child(_metadata, &self->rs.r[mode], pid[1], &want, 0, mode);
	}
}

/*
 * A program for a process is dropped at its exec: the child reads its
 * record through the observer's program, then execs the same binary,
 * which plants another record behind the same TLS pointer; the samples of
 * the new image read the event's own program, which reads nothing.
 */
TEST_F(tls_deferred, observer_program_exec)
{
	static char *const argv[] = { self_exe, "--plant-and-fault", NULL };
	struct perf_tls_user_proc up;
	struct perf_event_attr attr;
	int pipefd[2], status, i, before = 0, after = 0;
	static struct planted rec;
	struct planted want;
	struct ring *r;
	pid_t pid;
	char go;

	ASSERT_GT(readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1), 0);
	ASSERT_EQ(pipe(pipefd), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pipefd[1]);
		plant(&rec, 42);
		tls_ptr = &rec;
		if (read(pipefd[0], &go, 1) != 1 || make_faults())
			_exit(1);
		execve(self_exe, argv, environ);
		_exit(2);
	}
	close(pipefd[0]);

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_plain), PERF_TLS_USER_DEREF);
	ASSERT_EQ(ring_open(&self->rs, &attr, pid, -1), 0);
	r = &self->rs.r[0];
	up = proc_prog(pid, &tls_ptr, 1, 0);
	ASSERT_EQ(install(r->fd, &up), 0);
	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	ASSERT_EQ(write(pipefd[1], "g", 1), 1);
	close(pipefd[1]);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ring_drain(r);
	ASSERT_FALSE(r->bad);
	plant(&want, 42);
	for (i = 0; i < r->nr_samples; i++) {
		if (r->samples[i].dyn_size) {
			before++;
			EXPECT_EQ(r->samples[i].dyn_size, REC_SIZE);
			EXPECT_EQ(memcmp(r->samples[i].data, &want, REC_SIZE), 0);
		} else {
			after++;
		}
	}
	EXPECT_GE(before, FAULT_PAGES);
	EXPECT_GE(after, FAULT_PAGES);
}

/*
 * Programs that point where nothing may be read: a kernel address, an
 * unaligned pointer, a PROT_NONE page, each for its own process. Every
 * sample reads nothing, in both modes, though the event's own program
 * would read a record in each of them.
 */
static __thread void *tls_hostile __attribute__((tls_model("initial-exec")));

static void hostile_child(int kind, uint64_t seed, int go_fd, int ready_fd)
{
	size_t page = sysconf(_SC_PAGESIZE);
	static struct planted rec;
	void *none;

	plant(&rec, seed);
	tls_ptr = &rec;

	pin_cpu0();
	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		_exit(10);
	if (kind == 0)
		tls_hostile = (void *)(~0UL << 40);
	else if (kind == 1)
		tls_hostile = (char *)&tls_plain + 1;
	else
		tls_hostile = none;
	child_go(go_fd, ready_fd);
}

TEST_F(tls_deferred, observer_program_hostile)
{
	struct perf_tls_user_proc up;
	struct perf_event_attr attr;
	int go_fd, i, mode, ret;
	pid_t pid[3];

	fork_children(_metadata, pid, 3, hostile_child, 50, &go_fd);
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	ret = open_both_modes(&self->rs, &attr);
	if (ret == -EACCES) {
		kill_children(pid, 3);
		SKIP(return, "CPU-wide events not permitted");
	}
	ASSERT_EQ(ret, 0);
	for (mode = 0; mode < 2; mode++) {
		for (i = 0; i < 3; i++) {
			up = proc_prog(pid[i], &tls_hostile, 1, 0);
			ASSERT_EQ(install(self->rs.r[mode].fd, &up), 0);
		}
	}
	enable(&self->rs, PERF_EVENT_IOC_ENABLE);
	reap_children(_metadata, pid, 3, go_fd);
	enable(&self->rs, PERF_EVENT_IOC_DISABLE);
	for (mode = 0; mode < 2; mode++) {
		ring_drain(&self->rs.r[mode]);
		ASSERT_FALSE(self->rs.r[mode].bad);
		for (i = 0; i < 3; i++)
			check_child(_metadata, &self->rs.r[mode], pid[i], NULL,
				    i < 2 ? PERF_TLS_USER_UNREAD_BAD_ADDRESS :
					    PERF_TLS_USER_UNREAD_FAULT, mode);
	}
}

/*
 * An event holds programs for PERF_TLS_USER_MAX_PROCS live processes; the
 * next is refused with ENOSPC until one of them exits.
 */
TEST_F(tls_deferred, observer_program_bound)
{
	static pid_t pid[PERF_TLS_USER_MAX_PROCS];
	struct perf_tls_user_proc up;
	struct perf_event_attr attr;
	int pipefd[2], status, i;
	char c;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);
	ASSERT_EQ(pipe(pipefd), 0);
	for (i = 0; i < PERF_TLS_USER_MAX_PROCS; i++) {
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (!pid[i]) {
			close(pipefd[1]);
			_exit(read(pipefd[0], &c, 1) < 0);
		}
		up = proc_prog(pid[i], &tls_ptr, 1, i);
		ASSERT_EQ(install(self->rs.r[0].fd, &up), 0);
	}
	close(pipefd[0]);

	/* Installing again for a process replaces its program. */
	up = proc_prog(pid[0], &tls_ptr, 1, 8);
	EXPECT_EQ(install(self->rs.r[0].fd, &up), 0);
	up = proc_prog(0, &tls_ptr, 1, 0);
	EXPECT_EQ(install(self->rs.r[0].fd, &up), ENOSPC);

	/* A process that is gone frees its place. */
	kill(pid[0], SIGKILL);
	ASSERT_EQ(waitpid(pid[0], &status, 0), pid[0]);
	EXPECT_EQ(install(self->rs.r[0].fd, &up), 0);

	close(pipefd[1]);
	for (i = 1; i < PERF_TLS_USER_MAX_PROCS; i++)
		ASSERT_EQ(waitpid(pid[i], &status, 0), pid[i]);
}

/* PERF_EVENT_IOC_TLS_USER_PROC refuses what it cannot install. */
TEST_F(tls_deferred, observer_program_errno)
{
	struct perf_tls_user_proc up, rm = { .flags = PERF_TLS_USER_PROC_REMOVE };
	struct perf_event_attr attr;
	int fd, status, plain_fd;
	pid_t gone;

	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	ASSERT_EQ(ring_open(&self->rs, &attr, 0, -1), 0);
	fd = self->rs.r[0].fd;

	/* The caller's own process: install, replace, remove. */
	up = proc_prog(0, &tls_ptr, 1, 0);
	EXPECT_EQ(install(fd, &up), 0);
	EXPECT_EQ(install(fd, &up), 0);
	EXPECT_EQ(install(fd, &rm), 0);
	EXPECT_EQ(install(fd, &rm), ENOENT);
	EXPECT_EQ(ioctl(fd, PERF_EVENT_IOC_TLS_USER_PROC, (void *)8), -1);
	EXPECT_EQ(errno, EFAULT);

	/* Flags, reserved bytes and programs as the attr's fields. */
	up.flags = 2;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.__reserved = 1;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.tls_flags = PERF_TLS_USER_DEFER;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up.tls_flags = PERF_TLS_USER_REGISTERED;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.hops = PERF_TLS_USER_MAX_HOPS + 1;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.tls_flags = PERF_TLS_USER_DEREF;
	EXPECT_EQ(install(fd, &up), EINVAL);		/* deref and hops */
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.len_size = 3;
	EXPECT_EQ(install(fd, &up), EINVAL);
	up.len_size = 8;
	up.len_offset = REC_SIZE - 4;
	EXPECT_EQ(install(fd, &up), EINVAL);		/* past the dump */
	up = proc_prog(0, &tls_ptr, 1, 0);
	up.flags = PERF_TLS_USER_PROC_REMOVE;
	EXPECT_EQ(install(fd, &up), EINVAL);		/* remove with a program */

	/* No such process, and no user address space. */
	gone = fork();
	ASSERT_GE(gone, 0);
	if (!gone)
		_exit(0);
	ASSERT_EQ(waitpid(gone, &status, 0), gone);
	up = proc_prog(gone, &tls_ptr, 1, 0);
	EXPECT_EQ(install(fd, &up), ESRCH);
	up = proc_prog(2, &tls_ptr, 1, 0);		/* kthreadd */
	EXPECT_EQ(install(fd, &up), ESRCH);

	/* An event without PERF_SAMPLE_TLS_USER. */
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	attr.sample_tls_user = 0;
	attr.tls_user_offset = 0;
	attr.tls_user_flags = 0;
	plain_fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1,
			   PERF_FLAG_FD_CLOEXEC);
	ASSERT_GE(plain_fd, 0);
	up = proc_prog(0, &tls_ptr, 1, 0);
	EXPECT_EQ(install(plain_fd, &up), EINVAL);
	close(plain_fd);
}

/*
 * An observer that may not read a process (another user's, here init's,
 * without CAP_SYS_PTRACE) cannot install a program for it: EACCES.
 */
TEST_F(tls_deferred, observer_program_no_rights)
{
	struct perf_event_attr attr;
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to become another user");
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
		 tls_offset(&tls_ptr), PERF_TLS_USER_DEREF);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct perf_tls_user_proc up = proc_prog(1, &tls_ptr, 1, 0);
		int fd;

		attr.exclude_kernel = 1;
		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			_exit(11);
		_exit(install(fd, &up) == EACCES ? 0 : 12);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 11)
		SKIP(return, "perf_event_paranoid refuses a user's own events");
	EXPECT_EQ(WEXITSTATUS(status), 0);
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
	attr.tls_user_flags = PERF_TLS_USER_DEFER | PERF_TLS_USER_REGISTERED;
	EXPECT_EQ(open_errno(&attr), 0);
	attr.tls_user_flags = PERF_TLS_USER_DEFER | (1U << 3);
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

/* The read program: every field is checked, in both modes. */
TEST_F(tls_deferred, bad_program)
{
	struct perf_event_attr attr, good;
	int mode;

	for (mode = 0; mode < 2; mode++) {
		tls_attr(&good, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0,
			 mode ? PERF_TLS_USER_DEFER : 0);
		good.sample_tls_user = 64;

		attr = good;
		attr.tls_user_hops = PERF_TLS_USER_MAX_HOPS;
		attr.tls_user_hop_offset[3] = -8;
		EXPECT_EQ(open_errno(&attr), 0);
		attr.tls_user_hops = PERF_TLS_USER_MAX_HOPS + 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);

		/* PERF_TLS_USER_DEREF is one hop: not both. */
		attr = good;
		attr.tls_user_flags |= PERF_TLS_USER_DEREF;
		attr.tls_user_hops = 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);

		/* An offset for a hop the program does not make. */
		attr = good;
		attr.tls_user_hops = 2;
		attr.tls_user_hop_offset[2] = 8;
		EXPECT_EQ(open_errno(&attr), EINVAL);

		/* Length fields of 1, 2, 4 and 8 bytes only. */
		attr = good;
		attr.tls_user_len_size = 3;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr.tls_user_len_size = 8;
		attr.tls_user_len_offset = 56;
		EXPECT_EQ(open_errno(&attr), 0);
		/* ... inside the largest dump. */
		attr.tls_user_len_offset = 57;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr.tls_user_len_offset = 0;
		attr.tls_user_len_base = 64;
		EXPECT_EQ(open_errno(&attr), 0);
		attr.tls_user_len_base = 72;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr.tls_user_len_base = 0;
		attr.tls_user_len_shift = PERF_TLS_USER_MAX_LEN_SHIFT;
		EXPECT_EQ(open_errno(&attr), 0);
		attr.tls_user_len_shift = PERF_TLS_USER_MAX_LEN_SHIFT + 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);

		/* Length parameters without a length field. */
		attr = good;
		attr.tls_user_len_offset = 8;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr = good;
		attr.tls_user_len_base = 8;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr = good;
		attr.tls_user_len_shift = 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);

		/* Reserved. */
		attr = good;
		attr.__reserved_tls[0] = 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);
		attr = good;
		attr.__reserved_tls_1 = 1;
		EXPECT_EQ(open_errno(&attr), EINVAL);
	}

	/* A program without PERF_SAMPLE_TLS_USER. */
	tls_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	attr.sample_tls_user = 0;
	EXPECT_EQ(open_errno(&attr), 0);
	attr.tls_user_hops = 1;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.tls_user_hops = 0;
	attr.tls_user_hop_offset[0] = 8;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.tls_user_hop_offset[0] = 0;
	attr.tls_user_len_size = 2;
	EXPECT_EQ(open_errno(&attr), EINVAL);
}

int main(int argc, char **argv)
{
	/* The image run_flush() execs: leave at once. */
	if (argc == 2 && !strcmp(argv[1], "--exit"))
		return 0;
	/* The image registered_exec_clears() and observer_program_exec() exec. */
	if (argc == 2 && !strcmp(argv[1], "--plant-and-fault")) {
		static struct planted rec;

		plant(&rec, 43);
		global_ctx = &rec;
		tls_ptr = &rec;
		return make_faults() ? 1 : 0;
	}
	return test_harness_run(argc, argv);
}
