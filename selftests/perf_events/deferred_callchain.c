// SPDX-License-Identifier: GPL-2.0
/*
 * Test deferred user callchains: perf_event_attr::defer_callchain,
 * ::defer_output, PERF_CONTEXT_USER_DEFERRED and
 * PERF_RECORD_CALLCHAIN_DEFERRED.
 *
 * A known chain a() -> b() -> c() -> d() spends its time in long read()s of
 * /dev/zero issued directly from d().  Samples taken in the kernel must end
 * in PERF_CONTEXT_USER_DEFERRED + cookie, and the one record with that
 * cookie must hold d's syscall return site followed by the return
 * addresses into c, b and a that the functions recorded themselves.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

#define DATA_PAGES	256
#define READ_SIZE	(4 << 20)
#define READS_PER_ROUND	8
#define MAX_ROUNDS	40
#define MAX_SAMPLES	20000
#define MAX_RECORDS	20000
#define REC_IPS		8
#define FUNC_SIZE	1024	/* a..d are far smaller than this */
#define NR_THREADS	4
#define EXEC_ARGS	8
#define EXEC_ARG_SIZE	(100 << 10)
#define UNWIND_CAP	512	/* entries of a record, at most */
#define CHAIN_STACK	(256 << 10)	/* stack of a chain thread */
#define CHAIN_RA(i)	(0x10000UL + 16 * (i))	/* return addresses of a chain */
/* Frames this far apart fault one by one: beyond shmem's fault-around. */
#define FAULT_SPACING	(64 << 10)
#define MAX_STACK_PATH	"/proc/sys/kernel/perf_event_max_stack"
#define SPIN_LOOPS	(1024 * 1024)	/* MODE_SPIN_READ: a few ms in d */

/* Corrupt saved frame pointers that depend on where d's frame is. */
#define CORRUPT_SELF	0x10	/* d's own frame */
#define CORRUPT_LOWER	0x20	/* below d's frame */

#if defined(__x86_64__)
#define USER_TOP	0x800000000000UL
#elif defined(__aarch64__)
#define USER_TOP	0x10000000000000UL
#else
#define USER_TOP	(~0UL)
#endif

enum chain_mode {
	MODE_NOP,	/* only record the return addresses */
	MODE_READ,	/* long reads of /dev/zero */
	MODE_CORRUPT,	/* long reads with a corrupt saved frame pointer */
	MODE_EXEC,	/* execve() of ourselves with large arguments */
	MODE_CHAIN,	/* one read() that faults, a chain of frames above d */
	MODE_SPIN_READ,	/* a spin in d in user space, then a long read */
};

/* Where a, b, c and d return to, as each of them saw it. */
struct chain_ras {
	uintptr_t d, c, b, a;
};

static __thread struct chain_ras ras;
static int zero_fd = -1;
static char *read_buf;
static char *fault_buf;		/* MODE_CHAIN: read() faults this page in */
static unsigned long corrupt_fp;
static char *exec_argv[EXEC_ARGS + 3];
static char self_exe[256];

/* A macro, so that the syscall's user ip is in d() itself. */
#if defined(__x86_64__)
#define RAW_SYSCALL3(nr, a0, a1, a2)					\
({									\
	long __ret;							\
									\
	asm volatile("syscall"						\
		     : "=a" (__ret)					\
		     : "a" (nr), "D" (a0), "S" (a1), "d" (a2)		\
		     : "rcx", "r11", "memory");				\
	__ret;								\
})
#elif defined(__aarch64__)
#define RAW_SYSCALL3(nr, a0, a1, a2)					\
({									\
	register long __x8 asm("x8") = (nr);				\
	register long __x0 asm("x0") = (a0);				\
	register long __x1 asm("x1") = (a1);				\
	register long __x2 asm("x2") = (a2);				\
									\
	asm volatile("svc #0"						\
		     : "+r" (__x0)					\
		     : "r" (__x8), "r" (__x1), "r" (__x2)		\
		     : "memory");					\
	__x0;								\
})
#else
#define RAW_SYSCALL3(nr, a0, a1, a2)	syscall(nr, a0, a1, a2)
#endif

static void d(int mode, int n)
{
	unsigned long *fp = __builtin_frame_address(0);
	unsigned long saved = fp[0];
	int i, j;

	ras.d = (uintptr_t)__builtin_return_address(0);
	asm volatile("" ::: "memory");

	if (mode == MODE_CORRUPT || mode == MODE_CHAIN) {
		if (corrupt_fp == CORRUPT_SELF)
			fp[0] = (unsigned long)fp;
		else if (corrupt_fp == CORRUPT_LOWER)
			fp[0] = (unsigned long)fp - 64;
		else
			fp[0] = corrupt_fp;
	}
	asm volatile("" ::: "memory");

	for (i = 0; i < n; i++) {
		if (mode == MODE_SPIN_READ)
			for (j = 0; j < SPIN_LOOPS; j++)
				asm volatile("" ::: "memory");
		if (mode == MODE_READ || mode == MODE_CORRUPT ||
		    mode == MODE_SPIN_READ)
			RAW_SYSCALL3(__NR_read, zero_fd, (long)read_buf, READ_SIZE);
		else if (mode == MODE_EXEC)
			RAW_SYSCALL3(__NR_execve, (long)self_exe,
				     (long)exec_argv, (long)environ);
		else if (mode == MODE_CHAIN)
			RAW_SYSCALL3(__NR_read, zero_fd, (long)fault_buf, 8);
	}

	asm volatile("" ::: "memory");
	fp[0] = saved;
	asm volatile("" ::: "memory");
}

/* Called through global pointers, so that none of them is inlined. */
void (*call_d)(int mode, int n) = d;

static void c(int mode, int n)
{
	ras.c = (uintptr_t)__builtin_return_address(0);
	asm volatile("" ::: "memory");
	call_d(mode, n);
	asm volatile("" ::: "memory");
}

void (*call_c)(int mode, int n) = c;

static void b(int mode, int n)
{
	ras.b = (uintptr_t)__builtin_return_address(0);
	asm volatile("" ::: "memory");
	call_c(mode, n);
	asm volatile("" ::: "memory");
}

void (*call_b)(int mode, int n) = b;

static void a(int mode, int n)
{
	ras.a = (uintptr_t)__builtin_return_address(0);
	asm volatile("" ::: "memory");
	call_b(mode, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv);

static bool in_d(uint64_t ip)
{
	const uintptr_t next[] = {
		(uintptr_t)a, (uintptr_t)b, (uintptr_t)c, (uintptr_t)main,
	};
	uintptr_t end = (uintptr_t)d + FUNC_SIZE;
	unsigned int i;

	/* d ends at the next of the known functions, if it is close. */
	for (i = 0; i < ARRAY_SIZE(next); i++)
		if (next[i] > (uintptr_t)d && next[i] < end)
			end = next[i];
	return ip > (uintptr_t)d && ip < end;
}

/* Does a record's user stack start with d, then c, b and a? */
static bool is_chain(const uint64_t *ips, uint64_t nr, const struct chain_ras *r)
{
	return nr >= 4 && in_d(ips[0]) && ips[1] == r->d && ips[2] == r->c &&
	       ips[3] == r->b;
}

struct sample {
	int seq;		/* position in the ring */
	uint32_t tid;
	bool kernel;		/* callchain starts in the kernel */
	bool has_user;		/* carries PERF_CONTEXT_USER */
	bool bad_marker;	/* USER_DEFERRED not second to last */
	uint64_t cookie;	/* 0: not deferred */
	uint64_t nr_user;	/* entries after PERF_CONTEXT_USER */
	uint64_t user_ips[REC_IPS];	/* the first of them */
};

struct record {
	int seq;		/* position in the ring */
	uint32_t tid;
	uint16_t misc;
	uint64_t cookie;
	uint64_t nr;
	uint64_t ips[REC_IPS];
};

struct ring {
	int fd;
	void *base;
	size_t data_size;
	int nr_samples, nr_records, seq;
	uint64_t lost;
	bool overflow;
	struct sample *samples;
	struct record *records;
	bool cpu_wide;		/* opened with pid -1 */
	uint32_t opener_tid;	/* the thread that opened it */
};

static int ring_open(struct ring *r, struct perf_event_attr *attr, pid_t pid,
		     int cpu)
{
	size_t page = sysconf(_SC_PAGESIZE);

	memset(r, 0, sizeof(*r));
	r->cpu_wide = pid == -1;
	r->opener_tid = syscall(__NR_gettid);
	r->fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1,
			PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->data_size = DATA_PAGES * page;
	r->base = mmap(NULL, r->data_size + page, PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		int err = errno;

		/* not counted in nr_rings, so nobody else closes it */
		close(r->fd);
		r->fd = -1;
		return -err;
	}
	r->samples = calloc(MAX_SAMPLES, sizeof(*r->samples));
	r->records = calloc(MAX_RECORDS, sizeof(*r->records));
	return r->samples && r->records ? 0 : -ENOMEM;
}

static void ring_close(struct ring *r)
{
	munmap(r->base, r->data_size + sysconf(_SC_PAGESIZE));
	close(r->fd);
	free(r->samples);
	free(r->records);
}

static void parse_sample(struct ring *r, const uint64_t *p, size_t words)
{
	struct sample *s;
	uint64_t nr, i, j;

	if (r->nr_samples >= MAX_SAMPLES || words < 2) {
		r->overflow = true;
		return;
	}
	s = &r->samples[r->nr_samples++];
	memset(s, 0, sizeof(*s));
	s->seq = r->seq++;
	s->tid = p[0] >> 32;
	nr = p[1];
	if (nr + 2 > words) {
		s->bad_marker = true;
		return;
	}
	p += 2;
	s->kernel = nr && p[0] == PERF_CONTEXT_KERNEL;
	for (i = 0; i < nr; i++) {
		if (p[i] == PERF_CONTEXT_USER) {
			s->has_user = true;
			s->nr_user = nr - i - 1;
			for (j = 0; j < s->nr_user && j < REC_IPS; j++)
				s->user_ips[j] = p[i + 1 + j];
		}
		if (p[i] == PERF_CONTEXT_USER_DEFERRED) {
			if (i + 2 != nr || !p[i + 1])
				s->bad_marker = true;
			else
				s->cookie = p[i + 1];
		}
	}
}

static void parse_record(struct ring *r, uint16_t misc, const uint64_t *p,
			 size_t words)
{
	struct record *rec;
	uint64_t i;

	if (r->nr_records >= MAX_RECORDS || words < 3) {
		r->overflow = true;
		return;
	}
	rec = &r->records[r->nr_records++];
	memset(rec, 0, sizeof(*rec));
	rec->seq = r->seq++;
	rec->misc = misc;
	rec->cookie = p[0];
	rec->nr = p[1];
	for (i = 0; i < rec->nr && i < REC_IPS && i + 2 < words; i++)
		rec->ips[i] = p[2 + i];
	/* The size is exactly that of nr ips and a sample_id of pid, tid. */
	if (rec->nr + 3 == words)
		rec->tid = p[2 + rec->nr] >> 32;
	else
		r->overflow = true;
}

static void ring_drain(struct ring *r)
{
	struct perf_event_mmap_page *pg = r->base;
	char *data = (char *)r->base + pg->data_offset;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	uint64_t buf[4096];

	while (tail < head) {
		struct perf_event_header hdr;
		size_t off = tail % r->data_size, i;

		for (i = 0; i < sizeof(hdr); i++)
			((char *)&hdr)[i] = data[(off + i) % r->data_size];
		if (hdr.size < sizeof(hdr) || hdr.size > sizeof(buf)) {
			r->overflow = true;
			break;
		}
		for (i = 0; i < hdr.size; i++)
			((char *)buf)[i] = data[(off + i) % r->data_size];

		switch (hdr.type) {
		case PERF_RECORD_SAMPLE:
			parse_sample(r, buf + 1, hdr.size / 8 - 1);
			break;
		case PERF_RECORD_CALLCHAIN_DEFERRED:
			parse_record(r, hdr.misc, buf + 1, hdr.size / 8 - 1);
			break;
		case PERF_RECORD_LOST:
			r->lost += buf[2];
			break;
		}
		tail += hdr.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static struct perf_event_attr clock_attr(bool defer, bool output)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.size		= sizeof(attr),
		.config		= PERF_COUNT_SW_CPU_CLOCK,
		.sample_period	= 500000,	/* 0.5 ms */
		.sample_type	= PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
		.sample_id_all	= 1,
		.disabled	= 1,
		.defer_callchain = defer,
		.defer_output	= output,
	};

	return attr;
}

static int count_records(const struct ring *r, uint32_t tid, uint64_t cookie)
{
	int i, n = 0;

	for (i = 0; i < r->nr_records; i++)
		if (r->records[i].cookie == cookie && r->records[i].tid == tid)
			n++;
	return n;
}

static const struct record *find_record(const struct ring *r, uint32_t tid,
					uint64_t cookie)
{
	int i;

	for (i = 0; i < r->nr_records; i++)
		if (r->records[i].cookie == cookie && r->records[i].tid == tid)
			return &r->records[i];
	return NULL;
}

/* Kernel-mode deferred samples of @tid whose record shows the a..d chain. */
static int chain_samples(const struct ring *r, uint32_t tid,
			 const struct chain_ras *cr)
{
	const struct record *rec;
	int i, n = 0;

	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *s = &r->samples[i];

		if (s->tid != tid || !s->kernel || !s->cookie)
			continue;
		rec = find_record(r, tid, s->cookie);
		if (rec && is_chain(rec->ips, rec->nr, cr))
			n++;
	}
	return n;
}

/* Does some cookie of @tid's chain samples cover two or more samples? */
static bool shared_cookie(const struct ring *r, uint32_t tid,
			  const struct chain_ras *cr)
{
	const struct record *rec;
	int i, j;

	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *s = &r->samples[i];

		if (s->tid != tid || !s->kernel || !s->cookie)
			continue;
		rec = find_record(r, tid, s->cookie);
		if (!rec || !is_chain(rec->ips, rec->nr, cr))
			continue;
		for (j = i + 1; j < r->nr_samples; j++)
			if (r->samples[j].tid == tid &&
			    r->samples[j].cookie == s->cookie)
				return true;
	}
	return false;
}

/* The checks every deferring ring must pass. */
static void check_ring(struct __test_metadata *_metadata, const struct ring *r)
{
	int i;

	ASSERT_FALSE(r->overflow);
	ASSERT_EQ(r->lost, 0);
	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *s = &r->samples[i];

		ASSERT_FALSE(s->bad_marker);
		if (s->cookie) {
			int nr = count_records(r, s->tid, s->cookie);

			/* No immediate user part next to a deferred one. */
			ASSERT_FALSE(s->has_user);
			/*
			 * A CPU-wide event gets the record only if the task
			 * returns to user space on its CPU while it is on.
			 * Another task may have moved to another CPU or not
			 * be back yet; the pinned test thread is always back.
			 */
			if (r->cpu_wide && s->tid != r->opener_tid) {
				ASSERT_LE(nr, 1);
			} else {
				ASSERT_EQ(nr, 1)
					TH_LOG("tid %u cookie %#llx", s->tid,
					       (unsigned long long)s->cookie);
			}
		}
	}
	for (i = 0; i < r->nr_records; i++) {
		const struct record *rec = &r->records[i];
		uint64_t j;

		ASSERT_NE(rec->cookie, 0);
		ASSERT_EQ(rec->misc, PERF_RECORD_MISC_USER);
		for (j = 0; j < rec->nr && j < REC_IPS; j++)
			ASSERT_LT(rec->ips[j], USER_TOP);
	}
}

static uint32_t gettid_(void)
{
	return syscall(__NR_gettid);
}

static void enable(int fd, bool on)
{
	ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

static void setup_io(struct __test_metadata *_metadata)
{
	if (zero_fd < 0)
		zero_fd = open("/dev/zero", O_RDONLY);
	ASSERT_GE(zero_fd, 0);
	if (!read_buf) {
		read_buf = malloc(READ_SIZE);
		ASSERT_NE(read_buf, NULL);
	}
	memset(read_buf, 1, READ_SIZE);	/* no page faults in the reads */
}

struct rings {
	struct ring r[NR_THREADS];
	int nr_rings;
	uint32_t tid;
};

FIXTURE(deferred_callchain)
{
	struct rings rs;
	long saved_max_stack;	/* perf_event_max_stack to restore, or 0 */
};

static long read_long(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

static int write_long(const char *path, long val)
{
	char buf[32];
	int fd, len, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%ld\n", val);
	if (write(fd, buf, len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

FIXTURE_SETUP(deferred_callchain)
{
	self->saved_max_stack = 0;
	memset(&self->rs, 0, sizeof(self->rs));
	self->rs.tid = gettid_();
	setup_io(_metadata);
}

FIXTURE_TEARDOWN(deferred_callchain)
{
	int i;

	for (i = 0; i < self->rs.nr_rings; i++)
		ring_close(&self->rs.r[i]);
	/* Only once no callchain event is left can the sysctl change. */
	if (self->saved_max_stack > 0 &&
	    write_long(MAX_STACK_PATH, self->saved_max_stack))
		fprintf(stderr, "could not restore %s to %ld\n", MAX_STACK_PATH,
			self->saved_max_stack);
}

static void open_ring(struct __test_metadata *_metadata,
		      struct rings *self,
		      struct perf_event_attr *attr, pid_t pid, int cpu)
{
	int ret = ring_open(&self->r[self->nr_rings], attr, pid, cpu);

	ASSERT_EQ(ret, 0);
	self->nr_rings++;
}

/* Run the chain on this thread until @done or MAX_ROUNDS, draining. */
static void run_rounds(struct rings *self, int mode,
		       bool (*done)(struct rings *self))
{
	int round, i;

	/*
	 * The events stay enabled: a record goes to the events enabled when
	 * the unwind runs, so disabling them would lose the records of
	 * samples taken in the disabling ioctl() itself.
	 */
	for (i = 0; i < self->nr_rings; i++)
		enable(self->r[i].fd, true);
	for (round = 0; round < MAX_ROUNDS; round++) {
		a(mode, READS_PER_ROUND);
		for (i = 0; i < self->nr_rings; i++)
			ring_drain(&self->r[i]);
		if (done(self))
			break;
	}
}

static bool have_shared_chain(struct rings *self)
{
	return shared_cookie(&self->r[0], self->tid, &ras);
}

static bool have_d_record(struct rings *self)
{
	const struct ring *r = &self->r[0];
	const struct record *rec;
	int i;

	for (i = 0; i < r->nr_samples; i++) {
		if (!r->samples[i].kernel || !r->samples[i].cookie)
			continue;
		rec = find_record(r, r->samples[i].tid, r->samples[i].cookie);
		if (rec && in_d(rec->ips[0]))
			return true;
	}
	return false;
}

/* Samples of @tid that interrupted user space in d, with their chain. */
static int user_chain_samples(const struct ring *r, uint32_t tid)
{
	int i, n = 0;

	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *s = &r->samples[i];

		if (s->tid == tid && !s->kernel && s->nr_user &&
		    in_d(s->user_ips[0]))
			n++;
	}
	return n;
}

static bool have_user_and_deferred(struct rings *self)
{
	return user_chain_samples(&self->r[0], self->tid) >= 8 &&
	       have_d_record(self);
}

/* The ABI bits are accepted as upstream does: no extra checks. */
TEST_F(deferred_callchain, attr_flags)
{
	struct perf_event_attr attr = clock_attr(true, false);
	uint64_t flags;
	int fd;

	/* defer_callchain without PERF_SAMPLE_CALLCHAIN is accepted. */
	attr.sample_type = PERF_SAMPLE_TID;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	ASSERT_GE(fd, 0);
	close(fd);

	/* defer_output alone, on a dummy side-band event, is accepted. */
	attr = clock_attr(false, true);
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	ASSERT_GE(fd, 0);
	close(fd);

	/* The bits are 38 and 39 of the flags word. */
	attr = clock_attr(false, false);
	memcpy(&flags, (char *)&attr + offsetof(struct perf_event_attr,
						read_format) + 8, 8);
	attr.defer_callchain = 1;
	attr.defer_output = 1;
	{
		uint64_t f2;

		memcpy(&f2, (char *)&attr + offsetof(struct perf_event_attr,
						     read_format) + 8, 8);
		ASSERT_EQ(f2 ^ flags, 3ULL << 38);
	}

	/* The next bit, upstream's next flag, is still reserved: EINVAL. */
	flags |= 1ULL << 40;
	memcpy((char *)&attr + offsetof(struct perf_event_attr, read_format) + 8,
	       &flags, 8);
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	ASSERT_EQ(fd, -1);
	ASSERT_EQ(errno, EINVAL);
}

/* Kernel samples end in USER_DEFERRED + cookie; one record per cookie. */
TEST_F(deferred_callchain, kernel_samples)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	const struct record *rec;
	int i;

	open_ring(_metadata, rs, &attr, 0, -1);
	run_rounds(rs, MODE_READ, have_shared_chain);
	check_ring(_metadata, &rs->r[0]);

	/* Several samples in one read() share one cookie and one record. */
	ASSERT_TRUE(shared_cookie(&rs->r[0], rs->tid, &ras));

	for (i = 0; i < rs->r[0].nr_samples; i++) {
		const struct sample *s = &rs->r[0].samples[i];

		if (!s->kernel || !s->cookie)
			continue;
		rec = find_record(&rs->r[0], s->tid, s->cookie);
		ASSERT_NE(rec, NULL);
		ASSERT_EQ(rec->tid, rs->tid);
		if (in_d(rec->ips[0])) {
			ASSERT_TRUE(is_chain(rec->ips, rec->nr, &ras));
			if (rec->nr > 4)
				ASSERT_EQ(rec->ips[4], ras.a);
		}
	}
}

static bool both_share(struct rings *self)
{
	int i, j;

	if (!shared_cookie(&self->r[0], self->tid, &ras))
		return false;
	for (i = 0; i < self->r[0].nr_samples; i++) {
		uint64_t ck = self->r[0].samples[i].cookie;

		if (!ck || !self->r[0].samples[i].kernel)
			continue;
		for (j = 0; j < self->r[1].nr_samples; j++)
			if (self->r[1].samples[j].cookie == ck)
				return true;
	}
	return false;
}

/*
 * A sample that interrupted user space carries its user callchain at once,
 * as without defer_callchain: d, then the return addresses into c, b and a
 * that the functions recorded, and no cookie.  A sample inside the read()
 * of the same run still ends in USER_DEFERRED and gets its record.
 */
TEST_F(deferred_callchain, user_mode_sample)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	int i, in_user = 0;

	open_ring(_metadata, rs, &attr, 0, -1);
	run_rounds(rs, MODE_SPIN_READ, have_user_and_deferred);
	check_ring(_metadata, &rs->r[0]);

	for (i = 0; i < rs->r[0].nr_samples; i++) {
		const struct sample *s = &rs->r[0].samples[i];

		if (s->tid != rs->tid || s->kernel)
			continue;
		ASSERT_TRUE(s->has_user);
		ASSERT_EQ(s->cookie, 0);
		if (!in_d(s->user_ips[0]))
			continue;
		ASSERT_TRUE(is_chain(s->user_ips, s->nr_user, &ras))
			TH_LOG("user sample %d: %#llx %#llx %#llx %#llx", i,
			       (unsigned long long)s->user_ips[0],
			       (unsigned long long)s->user_ips[1],
			       (unsigned long long)s->user_ips[2],
			       (unsigned long long)s->user_ips[3]);
		if (s->nr_user > 4)
			ASSERT_EQ(s->user_ips[4], ras.a);
		in_user++;
	}
	ASSERT_GE(in_user, 8);
	ASSERT_TRUE(have_d_record(rs));
}

/* Two sampling events on one task share one unwind and one cookie. */
TEST_F(deferred_callchain, two_events)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	int i, j, n;

	open_ring(_metadata, rs, &attr, 0, -1);
#ifdef __aarch64__
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_CPU_CYCLES;
	attr.sample_period = 200000;
	if (ring_open(&rs->r[1], &attr, 0, -1) == 0) {
		rs->nr_rings++;
	} else {
		TH_LOG("no cycles event, using a second cpu-clock");
		attr = clock_attr(true, true);
	}
#endif
	if (rs->nr_rings < 2) {
		attr.sample_period = 700000;
		open_ring(_metadata, rs, &attr, 0, -1);
	}

	run_rounds(rs, MODE_READ, both_share);
	ASSERT_TRUE(both_share(rs));

	for (i = 0; i < 2; i++) {
		const struct ring *r = &rs->r[i], *o = &rs->r[!i];

		check_ring(_metadata, r);
		/*
		 * Every record of the reads, which run with both events
		 * enabled, is written once to each defer_output event.
		 */
		for (j = 0; j < r->nr_records; j++) {
			if (!in_d(r->records[j].ips[0]))
				continue;
			n = count_records(o, r->records[j].tid,
					  r->records[j].cookie);
			ASSERT_EQ(n, 1);
		}
	}
}

/* A CPU-wide event gets the records of the tasks it samples. */
TEST_F(deferred_callchain, per_cpu_event)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	cpu_set_t set, old;
	int cpu;

	ASSERT_EQ(sched_getaffinity(0, sizeof(old), &old), 0);
	cpu = sched_getcpu();
	ASSERT_GE(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);

	if (ring_open(&rs->r[0], &attr, -1, cpu)) {
		sched_setaffinity(0, sizeof(old), &old);
		SKIP(return, "CPU-wide events not permitted (%s)", strerror(errno));
	}
	rs->nr_rings = 1;

	run_rounds(rs, MODE_READ, have_shared_chain);
	sched_setaffinity(0, sizeof(old), &old);

	check_ring(_metadata, &rs->r[0]);
	ASSERT_GT(chain_samples(&rs->r[0], rs->tid, &ras), 0);
}

/* A corrupt frame-pointer chain ends cleanly after the broken frame. */
TEST_F(deferred_callchain, corrupt_frame_pointer)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	unsigned long here = (unsigned long)__builtin_frame_address(0);
	unsigned long bad[] = {
		0x1,				/* below everything */
		CORRUPT_SELF,			/* points to itself */
		CORRUPT_LOWER,			/* lower than the frame */
		here | 0x3,			/* misaligned, above */
		USER_TOP - 8,			/* too close to the top */
		~0UL << 44,			/* kernel address */
		0,				/* above, unmapped: faults */
	};
	unsigned int k, nr_bad = ARRAY_SIZE(bad);
	void *hole;
	int i, seen = 0;

	/* An inaccessible page above the stack frames, if we get one. */
	hole = mmap((void *)((here + (64UL << 20)) & ~0xfffUL), 4096, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole != MAP_FAILED && (unsigned long)hole > here)
		bad[nr_bad - 1] = (unsigned long)hole;
	else
		nr_bad--;

	open_ring(_metadata, rs, &attr, 0, -1);

	for (k = 0; k < nr_bad; k++) {
		corrupt_fp = bad[k];
		rs->r[0].nr_samples = 0;
		rs->r[0].nr_records = 0;
		run_rounds(rs, MODE_CORRUPT, have_d_record);
		check_ring(_metadata, &rs->r[0]);

		for (i = 0; i < rs->r[0].nr_samples; i++) {
			const struct sample *s = &rs->r[0].samples[i];
			const struct record *rec;

			if (!s->kernel || !s->cookie)
				continue;
			rec = find_record(&rs->r[0], s->tid, s->cookie);
			ASSERT_NE(rec, NULL);
			if (!in_d(rec->ips[0]))
				continue;
			/* d's own ip, its return into c, then the stop. */
			ASSERT_EQ(rec->nr, 2) TH_LOG("bad fp %#lx", bad[k]);
			ASSERT_EQ(rec->ips[1], ras.d);
			seen++;
		}
	}
	if (hole != MAP_FAILED)
		munmap(hole, 4096);
	ASSERT_GE(seen, nr_bad);
}

static bool have_kernel_samples(struct rings *self)
{
	int i;

	for (i = 0; i < self->r[0].nr_samples; i++)
		if (self->r[0].samples[i].kernel)
			return true;
	return false;
}

/*
 * Without defer_callchain, or with exclude_callchain_user, nothing is
 * deferred: the user part is immediate or absent, and no record is written
 * even to a defer_output event.
 */
TEST_F(deferred_callchain, not_deferred)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(false, true);
	int i, kernel = 0;

	open_ring(_metadata, rs, &attr, 0, -1);
	attr = clock_attr(true, false);
	attr.exclude_callchain_user = 1;
	attr.sample_period = 700000;
	open_ring(_metadata, rs, &attr, 0, -1);

	run_rounds(rs, MODE_READ, have_kernel_samples);

	ASSERT_EQ(rs->r[0].nr_records, 0);
	ASSERT_EQ(rs->r[1].nr_records, 0);
	for (i = 0; i < rs->r[0].nr_samples; i++) {
		const struct sample *s = &rs->r[0].samples[i];

		ASSERT_EQ(s->cookie, 0);
		ASSERT_FALSE(s->bad_marker);
		if (s->kernel) {
			ASSERT_TRUE(s->has_user);
			kernel++;
		}
	}
	for (i = 0; i < rs->r[1].nr_samples; i++) {
		ASSERT_EQ(rs->r[1].samples[i].cookie, 0);
		ASSERT_FALSE(rs->r[1].samples[i].has_user);
	}
	ASSERT_GT(kernel, 0);
}

struct exit_thread_arg {
	pthread_barrier_t *barrier;
	uint32_t tid;
};

static void *exit_thread(void *p)
{
	struct exit_thread_arg *arg = p;

	arg->tid = gettid_();
	pthread_barrier_wait(arg->barrier);	/* tid is known */
	pthread_barrier_wait(arg->barrier);	/* event is open */
	a(MODE_READ, 4);
	/* Exit straight from the kernel entry of the last read's return. */
	syscall(__NR_exit, 0);
	return NULL;
}

/* Threads that exit right after their samples still get their records. */
TEST_F(deferred_callchain, thread_exit)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	struct exit_thread_arg args[NR_THREADS];
	pthread_t threads[NR_THREADS];
	pthread_barrier_t barrier;
	int i, with_chain = 0;

	a(MODE_NOP, 0);		/* the return addresses to expect */
	attr.disabled = 0;
	pthread_barrier_init(&barrier, NULL, NR_THREADS + 1);
	for (i = 0; i < NR_THREADS; i++) {
		args[i].barrier = &barrier;
		ASSERT_EQ(pthread_create(&threads[i], NULL, exit_thread,
					 &args[i]), 0);
	}
	pthread_barrier_wait(&barrier);
	for (i = 0; i < NR_THREADS; i++)
		open_ring(_metadata, rs, &attr, args[i].tid, -1);
	pthread_barrier_wait(&barrier);
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(threads[i], NULL);

	for (i = 0; i < NR_THREADS; i++) {
		ring_drain(&rs->r[i]);
		check_ring(_metadata, &rs->r[i]);
		if (chain_samples(&rs->r[i], args[i].tid, &ras))
			with_chain++;
	}
	ASSERT_GT(with_chain, 0);
}

/* Samples taken inside execve() get the old image's stack. */
TEST_F(deferred_callchain, exec_flush)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = clock_attr(true, true);
	struct chain_ras child_ras;
	int round, pipefd[2], status;
	bool found = false;
	pid_t pid;
	char go;

	ASSERT_GT(readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1), 0);
	exec_argv[0] = self_exe;
	exec_argv[1] = "--exec-child";
	for (round = 0; round < EXEC_ARGS; round++) {
		exec_argv[2 + round] = malloc(EXEC_ARG_SIZE);
		ASSERT_NE(exec_argv[2 + round], NULL);
		memset(exec_argv[2 + round], 'x', EXEC_ARG_SIZE - 1);
		exec_argv[2 + round][EXEC_ARG_SIZE - 1] = 0;
	}
	exec_argv[2 + EXEC_ARGS] = NULL;

	/* The child runs the same chain from the same call site. */
	a(MODE_NOP, 0);
	child_ras = ras;

	for (round = 0; round < MAX_ROUNDS && !found; round++) {
		ASSERT_EQ(pipe(pipefd), 0);
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			close(pipefd[1]);
			if (read(pipefd[0], &go, 1) != 1)
				_exit(1);
			a(MODE_EXEC, 1);
			_exit(2);
		}
		close(pipefd[0]);
		attr.enable_on_exec = 0;
		attr.disabled = 0;
		open_ring(_metadata, rs, &attr, pid, -1);
		ASSERT_EQ(write(pipefd[1], "g", 1), 1);
		close(pipefd[1]);
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 0);

		ring_drain(&rs->r[0]);
		check_ring(_metadata, &rs->r[0]);
		/*
		 * Only the flush in execve() can unwind a..d: after the exec
		 * the child's stack starts afresh and never calls them.
		 */
		found = chain_samples(&rs->r[0], pid, &child_ras) > 0;
		ring_close(&rs->r[0]);
		rs->nr_rings = 0;
	}
	ASSERT_TRUE(found);
}

/*
 * A thread whose stack and, above it, a chain of frame records live in
 * one shared memfd mapping. In MODE_CHAIN d() points its saved frame
 * pointer at the chain, so the unwind of its read() walks d, c and then
 * the chain, reading CHAIN_RA(k) from frame k. MADV_DONTNEED before each
 * read() drops the chain's page table entries but not its data, so the
 * walk faults its pages in again, and the read() itself faults once into
 * fault_buf: page-fault samples taken in the kernel, also from inside
 * the unwind.
 */
struct chain_thread {
	char *map;		/* the stack, then the chain */
	size_t map_size;
	char *chain;
	size_t chain_size;
	int rounds;		/* read()s to do; < 0: until killed */
	bool touch;		/* also fault in a page from user space */
	pthread_barrier_t barrier;
	pthread_t thread;
	uint32_t tid;
	struct chain_ras ras;	/* the thread's a..d return addresses */
};

static void *chain_thread_fn(void *arg)
{
	struct chain_thread *ct = arg;
	size_t page = sysconf(_SC_PAGESIZE);
	int i;

	ct->tid = gettid_();
	pthread_barrier_wait(&ct->barrier);	/* tid is known */
	pthread_barrier_wait(&ct->barrier);	/* events are open */
	for (i = 0; ct->rounds < 0 || i < ct->rounds; i++) {
		madvise(ct->chain, ct->chain_size, MADV_DONTNEED);
		madvise(fault_buf, 2 * page, MADV_DONTNEED);
		if (ct->touch)
			__atomic_store_n(fault_buf + page, 1, __ATOMIC_RELAXED);
		a(MODE_CHAIN, 1);
	}
	ct->ras = ras;
	return NULL;
}

/* Frames @spacing bytes apart; returns once the thread's tid is known. */
static int chain_thread_start(struct chain_thread *ct, int nr_frames,
			      size_t spacing, int rounds, bool touch)
{
	size_t page = sysconf(_SC_PAGESIZE);
	pthread_attr_t attr;
	int fd, k, ret;

	memset(ct, 0, sizeof(*ct));
	ct->rounds = rounds;
	ct->touch = touch;
	ct->chain_size = (nr_frames * spacing + page - 1) / page * page;
	ct->map_size = CHAIN_STACK + ct->chain_size;

	if (zero_fd < 0)
		zero_fd = open("/dev/zero", O_RDONLY);
	if (!fault_buf) {
		fault_buf = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fault_buf == MAP_FAILED) {
			fault_buf = NULL;
			return -errno;
		}
	}
	fd = syscall(__NR_memfd_create, "chain", 0);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, ct->map_size)) {
		close(fd);
		return -errno;
	}
	ct->map = mmap(NULL, ct->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	if (ct->map == MAP_FAILED)
		return -errno;

	/* Above every frame of the thread, whose stack grows down. */
	ct->chain = ct->map + CHAIN_STACK;
	for (k = 0; k < nr_frames; k++) {
		unsigned long *f = (unsigned long *)(ct->chain + k * spacing);

		f[0] = k + 1 < nr_frames ? (unsigned long)f + spacing : 0;
		f[1] = CHAIN_RA(k);
	}
	corrupt_fp = (unsigned long)ct->chain;

	pthread_barrier_init(&ct->barrier, NULL, 2);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, ct->map, CHAIN_STACK);
	ret = pthread_create(&ct->thread, &attr, chain_thread_fn, ct);
	pthread_attr_destroy(&attr);
	if (ret)
		return -ret;
	pthread_barrier_wait(&ct->barrier);
	return 0;
}

static void chain_thread_run(struct chain_thread *ct)
{
	pthread_barrier_wait(&ct->barrier);
	pthread_join(ct->thread, NULL);
	pthread_barrier_destroy(&ct->barrier);
	munmap(ct->map, ct->map_size);
}

/* Does @rec hold d, its return into c, then the chain's frames? */
static bool is_chain_record(const struct record *rec,
			    const struct chain_thread *ct)
{
	uint64_t k;

	if (rec->tid != ct->tid || rec->nr < 2 || !in_d(rec->ips[0]) ||
	    rec->ips[1] != ct->ras.d)
		return false;
	for (k = 2; k < rec->nr && k < REC_IPS; k++)
		if (rec->ips[k] != CHAIN_RA(k - 2))
			return false;
	return true;
}

/*
 * Run a chain thread of @nr_frames frames @spacing bytes apart for @rounds
 * rounds, watched by an event of @attr on the first ring, then read that
 * ring and check it.
 */
static void run_chain_ring(struct __test_metadata *_metadata,
			   struct rings *rs, struct perf_event_attr *attr,
			   struct chain_thread *ct, int nr_frames,
			   size_t spacing, int rounds)
{
	ASSERT_EQ(chain_thread_start(ct, nr_frames, spacing, rounds, false), 0);
	open_ring(_metadata, rs, attr, ct->tid, -1);
	chain_thread_run(ct);
	ring_drain(&rs->r[0]);
	check_ring(_metadata, &rs->r[0]);
}

static struct perf_event_attr fault_attr(void)
{
	struct perf_event_attr attr = clock_attr(true, true);

	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = 1;
	attr.disabled = 0;
	return attr;
}

#define ONE_COOKIE_FRAMES	8	/* FAULT_SPACING apart */
#define ONE_COOKIE_ROUNDS	20

/*
 * All requests of one kernel entry get one cookie and one unwind, also
 * those made while the unwind runs: here the faults of the walk itself,
 * whose page-fault samples ask for the user stack again. A second cookie
 * in the same entry would show as a sample of another cookie taken before
 * a record, while that record is written.
 */
TEST_F(deferred_callchain, one_cookie_per_entry)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = fault_attr();
	const struct ring *r = &rs->r[0];
	struct chain_thread ct;
	int i, j, nested = 0, chains = 0;

	run_chain_ring(_metadata, rs, &attr, &ct, ONE_COOKIE_FRAMES, FAULT_SPACING,
		       ONE_COOKIE_ROUNDS);

	for (i = 0; i < r->nr_records; i++) {
		const struct record *rec = &r->records[i];
		int n = 0;

		for (j = 0; j < r->nr_samples; j++) {
			const struct sample *s = &r->samples[j];
			const struct record *other;

			if (s->tid != rec->tid || !s->cookie)
				continue;
			if (s->cookie == rec->cookie) {
				n++;
				continue;
			}
			if (s->seq > rec->seq)
				continue;
			/* An older cookie of the thread has its record already. */
			other = find_record(r, s->tid, s->cookie);
			ASSERT_NE(other, NULL);
			ASSERT_LT(other->seq, rec->seq)
				TH_LOG("cookie %#llx sampled before the record of %#llx",
				       (unsigned long long)s->cookie,
				       (unsigned long long)rec->cookie);
		}
		if (!is_chain_record(rec, &ct))
			continue;
		chains++;
		ASSERT_EQ(rec->nr, ONE_COOKIE_FRAMES + 2);
		/*
		 * The fault of read() and those of the walk, one per frame
		 * unless fault-around maps several frames at once.
		 */
		if (n >= 2)
			nested++;
		else
			TH_LOG("cookie %#llx: %d samples",
			       (unsigned long long)rec->cookie, n);
	}
	TH_LOG("%d samples, %d records, %d chain records, %d with the walk's faults",
	       r->nr_samples, r->nr_records, chains, nested);
	ASSERT_EQ(chains, ONE_COOKIE_ROUNDS);
	ASSERT_EQ(nested, chains);
}

#define DEEP_FRAMES	9000	/* 24 + 8 * nr overflows a u16 from 8189 */
#define DEEP_ROUNDS	10
#define MAX_STACK_MAX	655360	/* the largest kernel.perf_event_max_stack */

/*
 * With perf_event_max_stack at its maximum and sample_max_stack at 65535
 * a deferred record still holds at most UNWIND_CAP addresses, and every
 * record is well formed, however deep the user stack is.
 */
TEST_F(deferred_callchain, max_stack)
{
	struct rings *rs = &self->rs;
	struct perf_event_attr attr = fault_attr();
	const struct ring *r = &rs->r[0];
	struct chain_thread ct;
	int i, deep = 0;
	long old;

	if (geteuid())
		SKIP(return, "needs root to raise %s", MAX_STACK_PATH);
	old = read_long(MAX_STACK_PATH);
	ASSERT_GT(old, 0);
	self->saved_max_stack = old;
	ASSERT_EQ(write_long(MAX_STACK_PATH, MAX_STACK_MAX), 0);
	ASSERT_EQ(read_long(MAX_STACK_PATH), MAX_STACK_MAX);
	ASSERT_EQ(write_long(MAX_STACK_PATH, MAX_STACK_MAX + 1), -EINVAL);

	attr.sample_max_stack = 65535;
	run_chain_ring(_metadata, rs, &attr, &ct, DEEP_FRAMES, 2 * sizeof(long),
		       DEEP_ROUNDS);

	for (i = 0; i < r->nr_records; i++) {
		const struct record *rec = &r->records[i];

		ASSERT_LE(rec->nr, UNWIND_CAP);
		if (!is_chain_record(rec, &ct))
			continue;
		ASSERT_EQ(rec->nr, UNWIND_CAP);
		deep++;
	}
	TH_LOG("%d samples, %d records, %d of the deep chain",
	       r->nr_samples, r->nr_records, deep);
	ASSERT_EQ(deep, DEEP_ROUNDS);
}

#define KILL_CLOCKS	64	/* cpu-clock events on the killed thread */
#define KILL_RINGS	8	/* of which have a ring and defer_output */
#define KILL_RING_PAGES	8
#define KILL_FRAMES	120	/* FAULT_SPACING apart */
#define KILL_PERIOD	10000	/* ns, the shortest cpu-clock period */

/* Open @attr on @tid, with a ring (returned in @base) if @base is set. */
static int kill_open(struct perf_event_attr *attr, pid_t tid, void **base)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int fd;

	attr->defer_output = !!base;
	fd = syscall(__NR_perf_event_open, attr, tid, -1, -1, 0);
	if (fd < 0 || !base)
		return fd;
	*base = mmap(NULL, (KILL_RING_PAGES + 1) * page, PROT_READ | PROT_WRITE,
		     MAP_SHARED, fd, 0);
	if (*base == MAP_FAILED) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The killed child: a chain thread whose every unwind faults KILL_FRAMES
 * pages in, each fault a page-fault sample that asks for an unwind again,
 * sampled by KILL_CLOCKS cpu-clock events at the shortest period and by
 * task-clock and context-switches, records written to KILL_RINGS + 1
 * rings that nobody reads, one of them with a data_tail a broken reader
 * wrote.
 */
static void kill_child(int ready)
{
	struct perf_event_attr attr = clock_attr(true, false);
	struct perf_event_mmap_page *pg;
	struct chain_thread ct;
	void *base, *first = NULL;
	char c = 'e';
	int i;

	if (chain_thread_start(&ct, KILL_FRAMES, FAULT_SPACING, -1, true))
		goto out;
	attr.disabled = 0;
	attr.sample_period = KILL_PERIOD;
	for (i = 0; i < KILL_CLOCKS; i++)
		if (kill_open(&attr, ct.tid, i < KILL_RINGS ? &base : NULL) < 0)
			goto out;
		else if (!first)
			first = base;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	if (kill_open(&attr, ct.tid, NULL) < 0)
		goto out;
	attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	attr.sample_period = 1;
	if (kill_open(&attr, ct.tid, NULL) < 0)
		goto out;
	attr = fault_attr();
	if (kill_open(&attr, ct.tid, &base) < 0)
		goto out;
	/* What a broken reader may leave in the ring's user page. */
	pg = base;
	pg->data_tail = 0x5a5a5a5a5a5a5a5aULL;
	c = 'r';
out:
	/* 'r' and where the first ring is, for the parent to look into */
	if (write(ready, &c, 1) != 1 || c != 'r' ||
	    write(ready, &first, sizeof(first)) != sizeof(first))
		_exit(1);
	chain_thread_run(&ct);
	_exit(0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * How many PERF_RECORD_CALLCHAIN_DEFERRED records the ring that @pid
 * mapped at @base holds, read through /proc/PID/mem (nobody reads the
 * ring, so its records start at offset 0 and do not wrap); -1 if it
 * cannot be read.
 */
static int count_deferred(pid_t pid, uint64_t base)
{
	size_t page = sysconf(_SC_PAGESIZE), size = KILL_RING_PAGES * page;
	struct perf_event_mmap_page pg;
	struct perf_event_header h;
	char path[64];
	uint64_t pos, head;
	int fd, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, &pg, sizeof(pg), base) != sizeof(pg)) {
		close(fd);
		return -1;
	}
	head = pg.data_head < size ? pg.data_head : size;
	for (pos = 0; pos + sizeof(h) <= head; pos += h.size) {
		if (pread(fd, &h, sizeof(h), base + page + pos) != sizeof(h) ||
		    h.size < sizeof(h))
			break;
		n += h.type == PERF_RECORD_CALLCHAIN_DEFERRED;
	}
	close(fd);
	return n;
}

static void log_stacks(struct __test_metadata *_metadata, pid_t pid)
{
	char path[64], buf[2048];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", pid, pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		TH_LOG("%s:\n%s", path, buf);
	}
}

/*
 * A task under the heaviest deferred-callchain load built here dies
 * within a second of SIGKILL: delivering the records cannot keep it in
 * the kernel, as no request made before it returns to user space, from
 * inside the delivery included, queues a second unwind.
 */
TEST_F(deferred_callchain, sigkill)
{
	static const int load_ms[] = { 50, 300, 1000 };
	unsigned int round;

	for (round = 0; round < ARRAY_SIZE(load_ms); round++) {
		struct timespec ts = {
			.tv_sec = load_ms[round] / 1000,
			.tv_nsec = load_ms[round] % 1000 * 1000000L,
		};
		int pipefd[2], status = 0, deferred;
		double start, took;
		pid_t pid, w = 0;
		void *ring = NULL;
		char c = 0;

		ASSERT_EQ(pipe(pipefd), 0);
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			close(pipefd[0]);
			kill_child(pipefd[1]);
		}
		close(pipefd[1]);
		ASSERT_EQ(read(pipefd[0], &c, 1), 1);
		if (c != 'r' ||
		    read(pipefd[0], &ring, sizeof(ring)) != sizeof(ring)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
		close(pipefd[0]);
		ASSERT_EQ(c, 'r');
		ASSERT_NE(ring, NULL);

		nanosleep(&ts, NULL);
		/* The load is real: the child's unwinds were deferred. */
		deferred = count_deferred(pid, (uintptr_t)ring);
		start = now_ms();
		ASSERT_EQ(kill(pid, SIGKILL), 0);
		do {
			struct timespec poll = { .tv_nsec = 2000000 };

			w = waitpid(pid, &status, WNOHANG);
			took = now_ms() - start;
			if (w)
				break;
			nanosleep(&poll, NULL);
		} while (took < 1000);
		if (w != pid)
			log_stacks(_metadata, pid);
		ASSERT_EQ(w, pid) TH_LOG("alive %.0f ms after SIGKILL", took);
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(WTERMSIG(status), SIGKILL);
		ASSERT_LT(took, 1000);
		TH_LOG("load %d ms: %d deferred records in ring 0, reaped %.1f ms after SIGKILL",
		       load_ms[round], deferred, took);
		ASSERT_GT(deferred, 0);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--exec-child"))
		return 0;
	return test_harness_run(argc, argv);
}
