// SPDX-License-Identifier: GPL-2.0
/*
 * Test for PERF_SAMPLE_TLS_USER: every sample must carry the thread-local
 * bytes of the thread it was taken on, read at an offset from the thread
 * pointer, optionally behind a TLS pointer, also while the thread is in a
 * system call; bad pointers must give no bytes, bad attributes the errno
 * the ABI names.
 */

#define _GNU_SOURCE

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"

#define NR_WORKERS	3
#define NR_THREADS	(NR_WORKERS + 1)	/* the workers and main */
#define MIN_SAMPLES	10			/* per thread */
#define RB_PAGES	64			/* data pages of each ring buffer */
#define MAX_CPUS	64
#define CLOCK_PERIOD	1000000			/* cpu-clock: 1 ms */
#define CYCLES_PERIOD	2000000
#define POLL_LIMIT	2000			/* polls of 10 ms before giving up */
#define SAMPLE_TYPE	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_TLS_USER)
#define SLEEP_NS	200000			/* BODY_SLEEP: 0.2 ms */

/*
 * OpenTelemetry thread context record, otel_thread_ctx_v1 points to it.
 * Its fields are naturally aligned, so it needs no packing; records are
 * kept 8-byte aligned, as the kernel dereferences aligned pointers only.
 */
struct otel_thread_ctx {
	uint8_t		trace_id[16];
	uint8_t		span_id[8];
	uint8_t		valid;
	uint8_t		trace_flags;
	uint16_t	attrs_size;
	uint8_t		attrs[4];
};

static_assert(sizeof(struct otel_thread_ctx) == 32, "otel_thread_ctx layout");
static_assert(offsetof(struct otel_thread_ctx, attrs) == 28, "otel_thread_ctx layout");

/* Static TLS of the executable: at a fixed offset from the thread pointer. */
static __thread uint64_t tls_plain[4] __attribute__((tls_model("initial-exec")));
static __thread struct otel_thread_ctx *otel_thread_ctx_v1
	__attribute__((tls_model("initial-exec")));
/* A generation and mix(thread, generation). */
static __thread uint64_t tls_gen[2] __attribute__((tls_model("initial-exec")));

enum body {
	BODY_SPIN,		/* plant, then spin in user space */
	BODY_CHANGE,		/* keep changing the planted values */
	BODY_SYSCALL,		/* plant, then spin in read() of /dev/zero */
	BODY_FAKE_TP,		/* spin with the thread pointer moved */
	BODY_SLEEP,		/* plant, then block in short sleeps */
};

#define FAKE_TLS_SIZE	(64 << 10)

struct participant {
	pthread_t	thread;
	int		index;
	pid_t		tid;
	uintptr_t	tp;
	/* What a sample of this thread must hold, by event. */
	uint64_t	plain[4];
	struct otel_thread_ctx *ctx;
	union {
		struct otel_thread_ctx records[2];	/* BODY_CHANGE: two */
		uint64_t	align;
	};
	uint8_t		below_tp[16];
	uint8_t		at_tp[16];
	uint8_t		*fake_tls;	/* BODY_FAKE_TP: another TLS area */
	uintptr_t	fake_tp;
	uint64_t	last_gen;
	int		nr_samples;
	int		nr_kernel;
};

static struct {
	enum body	body;
	uintptr_t	bad_ptr;		/* planted instead of a record */
	bool		use_bad_ptr;
	int		stop;
	int		nr_moved;		/* BODY_FAKE_TP: threads spinning */
	pthread_barrier_t barrier;
	struct participant part[NR_THREADS];
} g;

static uintptr_t thread_pointer(void)
{
	return (uintptr_t)__builtin_thread_pointer();
}

static long tls_offset(const void *var)
{
	return (const char *)var - (const char *)__builtin_thread_pointer();
}

static uint64_t mix(int index, uint64_t gen)
{
	return (gen * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)index << 56) ^ 0x5a5a;
}

static void fill_record(struct otel_thread_ctx *r, int index, uint64_t gen)
{
	uint64_t v = mix(index, gen);
	int i;

	for (i = 0; i < 16; i++)
		r->trace_id[i] = (uint8_t)(v >> (8 * (i & 7))) ^ i;
	memcpy(r->span_id, &gen, sizeof(gen));
	r->valid = 1;
	r->trace_flags = 0x01;
	r->attrs_size = 4;
	for (i = 0; i < 4; i++)
		r->attrs[i] = 0xa0 + index * 4 + i;
}

static void plant(struct participant *p)
{
	int i;

	p->tid = syscall(__NR_gettid);
	p->tp = thread_pointer();
	for (i = 0; i < 4; i++)
		tls_plain[i] = 0x0101010101010101ull * (p->index + 1) + ((uint64_t)i << 60);
	memcpy(p->plain, tls_plain, sizeof(p->plain));

	fill_record(&p->records[0], p->index, 1);
	p->ctx = &p->records[0];
	otel_thread_ctx_v1 = g.use_bad_ptr ? (void *)g.bad_ptr : p->ctx;
	tls_gen[0] = 1;
	tls_gen[1] = mix(p->index, 1);
	p->last_gen = 1;

	memcpy(p->below_tp, (void *)(p->tp - sizeof(p->below_tp)), sizeof(p->below_tp));
	memcpy(p->at_tp, (void *)p->tp, sizeof(p->at_tp));
}

static inline bool stopped(void)
{
	return __atomic_load_n(&g.stop, __ATOMIC_RELAXED);
}

static inline void compiler_barrier(void)
{
	asm volatile("" : : : "memory");
}

#ifdef __x86_64__
#include <sys/auxv.h>
#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE	0x2
#endif

static bool can_set_tp(void)
{
	return getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE;
}

static inline void set_tp(uintptr_t tp)
{
	asm volatile("wrfsbase %0" : : "r" (tp) : "memory");
}
#elif defined(__aarch64__)
static bool can_set_tp(void)
{
	return true;
}

static inline void set_tp(uintptr_t tp)
{
	asm volatile("msr tpidr_el0, %0" : : "r" (tp) : "memory");
}
#else
static bool can_set_tp(void)
{
	return false;
}

static inline void set_tp(uintptr_t tp)
{
}
#endif

/*
 * Move the thread pointer without a system call: the kernel must sample the
 * register, not the value it saved when the thread was last switched out.
 * No TLS (and so no libc) may be touched until it is moved back.
 */
static void spin_with_fake_tp(struct participant *p)
{
	set_tp(p->fake_tp);
	__atomic_fetch_add(&g.nr_moved, 1, __ATOMIC_SEQ_CST);
	while (!stopped())
		;
	set_tp(p->tp);
}

static void change(struct participant *p)
{
	uint64_t gen = p->last_gen;

	while (!stopped()) {
		struct otel_thread_ctx *next = &p->records[++gen & 1];

		/*
		 * Samples interrupt this thread between any two instructions:
		 * the generation is stored before its value, the new record is
		 * filled while the old one stays published.
		 */
		tls_gen[0] = gen;
		compiler_barrier();
		tls_gen[1] = mix(p->index, gen);
		compiler_barrier();
		fill_record(next, p->index, gen);
		compiler_barrier();
		otel_thread_ctx_v1 = next;
		compiler_barrier();
		p->last_gen = gen;
	}
}

static void *worker(void *arg)
{
	struct participant *p = arg;
	static char buf[1 << 20];
	int fd;

	plant(p);
	pthread_barrier_wait(&g.barrier);

	switch (g.body) {
	case BODY_SPIN:
		while (!stopped())
			;
		break;
	case BODY_CHANGE:
		change(p);
		break;
	case BODY_FAKE_TP:
		spin_with_fake_tp(p);
		break;
	case BODY_SLEEP:
		while (!stopped()) {
			struct timespec ts = { .tv_nsec = SLEEP_NS };

			nanosleep(&ts, NULL);
		}
		break;
	case BODY_SYSCALL:
		fd = open("/dev/zero", O_RDONLY);
		while (!stopped() && fd >= 0)
			if (read(fd, buf, sizeof(buf)) < 0)
				break;
		if (fd >= 0)
			close(fd);
		break;
	}
	return NULL;
}

struct sample {
	uint16_t	misc;
	uint32_t	pid, tid;
	uint64_t	size;
	const uint8_t	*data;
	uint64_t	dyn_size;
};

/*
 * An inherited task event can only be mapped when it is bound to a CPU, so
 * there is one event and ring buffer per CPU, as with perf record.
 */
struct events {
	int		nr;
	int		fd[MAX_CPUS];
	void		*rb[MAX_CPUS];
	size_t		rb_size;
	bool		threads;
};

FIXTURE(tls_user)
{
	struct events	ev;
};

static int open_errno(struct perf_event_attr *attr);
static void tls_attr(struct perf_event_attr *attr, __u16 size, __s32 offset,
		     __u16 flags, __u16 deref_offset);

FIXTURE_SETUP(tls_user)
{
	struct perf_event_attr attr;
	int err;

	memset(&g, 0, sizeof(g));
	self->ev.nr = 0;
	self->ev.threads = false;

	tls_attr(&attr, 8, 0, 0, 0);
	err = open_errno(&attr);
#if !defined(__x86_64__) && !defined(__aarch64__)
	/* Architectures without HAVE_PERF_TLS_USER refuse the sample type. */
	if (err)
		SKIP(return, "no PERF_SAMPLE_TLS_USER here: %s", strerror(err));
#endif
	ASSERT_EQ(err, 0);
}

FIXTURE_TEARDOWN(tls_user)
{
	int i;

	if (self->ev.threads) {
		__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
		for (i = 1; i < NR_THREADS; i++)
			pthread_join(g.part[i].thread, NULL);
		pthread_barrier_destroy(&g.barrier);
	}
	for (i = 0; i < self->ev.nr; i++) {
		if (self->ev.rb[i] != MAP_FAILED)
			munmap(self->ev.rb[i], self->ev.rb_size);
		close(self->ev.fd[i]);
	}
}

static void tls_attr(struct perf_event_attr *attr, __u16 size, __s32 offset,
		     __u16 flags, __u16 deref_offset)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = CLOCK_PERIOD;
	attr->sample_type = SAMPLE_TYPE;
	attr->sample_tls_user = size;
	attr->tls_user_offset = offset;
	attr->tls_user_flags = flags;
	attr->tls_user_deref_offset = deref_offset;
	attr->disabled = 1;
	attr->inherit = 1;
	attr->exclude_hv = 1;
}

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Open @attr for @pid on @cpu, or on every CPU, and map the ring buffers. */
static int open_event(struct events *ev, struct perf_event_attr *attr,
		      pid_t pid, int cpu)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long page = sysconf(_SC_PAGESIZE);
	int i;

	if (nr_cpus > MAX_CPUS)
		nr_cpus = MAX_CPUS;
	ev->rb_size = (RB_PAGES + 1) * page;
	for (i = cpu < 0 ? 0 : cpu; i < (cpu < 0 ? nr_cpus : cpu + 1); i++) {
		int fd = perf_open(attr, pid, i);

		if (fd < 0)
			return -errno;
		ev->fd[ev->nr] = fd;
		ev->rb[ev->nr] = mmap(NULL, ev->rb_size, PROT_READ | PROT_WRITE,
				      MAP_SHARED, fd, 0);
		ev->nr++;
		if (ev->rb[ev->nr - 1] == MAP_FAILED)
			return -errno;
	}
	return 0;
}

static int events_ioctl(struct events *ev, unsigned long request)
{
	int i;

	for (i = 0; i < ev->nr; i++)
		if (ioctl(ev->fd[i], request, 0))
			return -errno;
	return 0;
}

/*
 * Call @fn on every sample written so far. The tails are never moved, so
 * the kernel never wraps: the records lie in [0, data_head).
 */
static int walk_samples(struct events *ev,
			int (*fn)(const struct sample *, void *), void *arg)
{
	int i, ret = 0;

	for (i = 0; i < ev->nr && !ret; i++) {
		struct perf_event_mmap_page *pg = ev->rb[i];
		const uint8_t *base = (const uint8_t *)pg + pg->data_offset;
		uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
		uint64_t pos = 0;

		while (!ret && pos + sizeof(struct perf_event_header) <= head) {
			const struct perf_event_header *hdr = (const void *)(base + pos);
			const uint8_t *rec = (const uint8_t *)(hdr + 1);
			const uint8_t *end = base + pos + hdr->size;
			struct sample s = {};

			if (hdr->size < sizeof(*hdr) || pos + hdr->size > head)
				return -EPROTO;
			pos += hdr->size;
			if (hdr->type != PERF_RECORD_SAMPLE)
				continue;

			s.misc = hdr->misc;
			memcpy(&s.pid, rec, 4);
			memcpy(&s.tid, rec + 4, 4);
			rec += 8 + 8;			/* tid, time */
			memcpy(&s.size, rec, 8);
			rec += 8;
			s.data = rec;
			if (s.size) {
				memcpy(&s.dyn_size, rec + s.size, 8);
				rec += s.size + 8;
			}
			if (rec != end)
				return -EPROTO;
			ret = fn(&s, arg);
		}
	}
	return ret;
}

static struct participant *find(uint32_t tid)
{
	int i;

	for (i = 0; i < NR_THREADS; i++)
		if (g.part[i].tid == (pid_t)tid)
			return &g.part[i];
	return NULL;
}

static int count_sample(const struct sample *s, void *arg)
{
	struct participant *p = find(s->tid);

	if (p) {
		p->nr_samples++;
		if ((s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
			p->nr_kernel++;
	}
	return 0;
}

/* Enough samples of every worker (in the kernel, with @kernel) yet? */
static bool enough(struct events *ev, bool kernel)
{
	int i;

	for (i = 0; i < NR_THREADS; i++) {
		g.part[i].nr_samples = 0;
		g.part[i].nr_kernel = 0;
	}
	if (walk_samples(ev, count_sample, NULL))
		return true;	/* let the check report it */
	for (i = 1; i < NR_THREADS; i++) {
		if (g.part[i].nr_samples < MIN_SAMPLES)
			return false;
		if (kernel && g.part[i].nr_kernel < MIN_SAMPLES)
			return false;
	}
	return true;
}

/* Main plants too, as its own samples are checked like the others. */
static void start_threads(struct __test_metadata *_metadata,
			  struct events *ev, enum body kind)
{
	int i;

	g.body = kind;
	pthread_barrier_init(&g.barrier, NULL, NR_THREADS);
	for (i = 0; i < NR_THREADS; i++)
		g.part[i].index = i;
	plant(&g.part[0]);
	for (i = 1; i < NR_THREADS; i++)
		ASSERT_EQ(pthread_create(&g.part[i].thread, NULL, worker, &g.part[i]), 0);
	ev->threads = true;
	pthread_barrier_wait(&g.barrier);
}

/* Sample until every worker has enough samples, then stop the workers. */
static void run_threads(struct __test_metadata *_metadata,
			struct events *ev, enum body kind, bool kernel)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	int i;

	start_threads(_metadata, ev, kind);
	while (kind == BODY_FAKE_TP &&
	       __atomic_load_n(&g.nr_moved, __ATOMIC_SEQ_CST) < NR_WORKERS)
		nanosleep(&ts, NULL);
	ASSERT_EQ(events_ioctl(ev, PERF_EVENT_IOC_ENABLE), 0);
	for (i = 0; i < POLL_LIMIT && !enough(ev, kernel); i++)
		nanosleep(&ts, NULL);
	ASSERT_EQ(events_ioctl(ev, PERF_EVENT_IOC_DISABLE), 0);
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	for (i = 1; i < NR_THREADS; i++)
		ASSERT_EQ(pthread_join(g.part[i].thread, NULL), 0);
	pthread_barrier_destroy(&g.barrier);
	ev->threads = false;
}

struct check {
	struct __test_metadata *_metadata;
	uint64_t	size;
	int		(*fn)(struct check *c, struct participant *p,
			      const struct sample *s);
	bool		nmi;		/* samples come from an NMI */
	uint8_t		unread;		/* want_nothing: the reason */
	int		nr_bad;
	int		nr_switching;	/* NMI samples inside a task switch */
	int		nr_total;
	uint64_t	gens[NR_THREADS][2];	/* BODY_CHANGE: lowest, highest */
};

/*
 * Nothing read: dyn_size 0, data[0] the reason @unread, the other bytes
 * zero.
 */
static bool unread(const struct sample *s, uint8_t why)
{
	for (uint64_t i = 1; i < s->size; i++)
		if (s->data[i])
			return false;
	return s->size && !s->dyn_size && s->data[0] == why;
}

/*
 * An NMI that lands in the kernel's task switch may not dump the TLS, as
 * the thread pointer register and address space are changing under it:
 * such a sample is in kernel mode and reads nothing, "not now".
 */
static bool switching(const struct check *c, const struct sample *s)
{
	return c->nmi && unread(s, PERF_TLS_USER_UNREAD_NOT_NOW) &&
	       (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

static int check_sample(const struct sample *s, void *arg)
{
	struct check *c = arg;
	struct participant *p = find(s->tid);

	if (!p || s->pid != (uint32_t)getpid()) {
		fprintf(stderr, "sample of unknown task %u/%u\n", s->pid, s->tid);
		c->nr_bad++;
		return 0;
	}
	if (s->size != c->size) {
		fprintf(stderr, "tid %u: size %llu, want %llu\n", s->tid,
			(unsigned long long)s->size, (unsigned long long)c->size);
		c->nr_bad++;
		return 0;
	}
	c->nr_total++;
	if (switching(c, s)) {
		c->nr_switching++;
		return 0;
	}
	if (c->fn(c, p, s)) {
		fprintf(stderr, "tid %u (thread %d) misc %#x: bad sample, dyn_size %llu:",
			s->tid, p->index, s->misc, (unsigned long long)s->dyn_size);
		for (uint64_t i = 0; i < s->size && i < 48; i++)
			fprintf(stderr, " %02x", s->data[i]);
		fprintf(stderr, "\n");
		c->nr_bad++;
	}
	return 0;
}

/* Check every sample with @fn; each worker must have MIN_SAMPLES good ones. */
static void check_samples(struct __test_metadata *_metadata,
			  struct events *ev, struct check *c, bool kernel)
{
	int i;

	c->_metadata = _metadata;
	ASSERT_EQ(walk_samples(ev, check_sample, c), 0);
	EXPECT_EQ(c->nr_bad, 0);
	enough(ev, kernel);
	for (i = 0; i < NR_THREADS; i++) {
		TH_LOG("thread %d: %d samples, %d in the kernel, generations %llu..%llu",
		       i, g.part[i].nr_samples, g.part[i].nr_kernel,
		       (unsigned long long)c->gens[i][0], (unsigned long long)c->gens[i][1]);
		if (!i)
			continue;
		EXPECT_GE(g.part[i].nr_samples, MIN_SAMPLES);
		if (kernel)
			EXPECT_GE(g.part[i].nr_kernel, MIN_SAMPLES);
	}
}

static int full_copy(const struct sample *s, const void *want, size_t len)
{
	return s->dyn_size != len || memcmp(s->data, want, len);
}

static int want_plain(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, p->plain, sizeof(p->plain));
}

static int want_fake(struct check *c, struct participant *p, const struct sample *s)
{
	const uint8_t *want = p->fake_tls ? p->fake_tls + FAKE_TLS_SIZE / 2 : (void *)p->plain;

	return full_copy(s, want, sizeof(p->plain));
}

static int want_otel(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, p->ctx, sizeof(*p->ctx));
}

static int want_span_id(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, p->ctx->span_id, sizeof(p->ctx->span_id));
}

static int want_below_tp(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, p->below_tp, sizeof(p->below_tp));
}

static int want_at_tp(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, p->at_tp, sizeof(p->at_tp));
}

static int want_nothing(struct check *c, struct participant *p, const struct sample *s)
{
	return !unread(s, c->unread);
}

static void note_gen(struct check *c, struct participant *p, uint64_t gen)
{
	uint64_t *lo = &c->gens[p->index][0], *hi = &c->gens[p->index][1];

	if (!*lo || gen < *lo)
		*lo = gen;
	if (gen > *hi)
		*hi = gen;
}

/* A generation the thread did plant, and the value planted with it. */
static int want_gen(struct check *c, struct participant *p, const struct sample *s)
{
	uint64_t v[2];

	if (s->dyn_size != sizeof(v))
		return 1;
	memcpy(v, s->data, sizeof(v));
	if (!v[0] || v[0] > p->last_gen + 1)
		return 1;
	/* Sampled between the two stores: the value is the previous one's. */
	if (v[1] != mix(p->index, v[0]) && v[1] != mix(p->index, v[0] - 1))
		return 1;
	note_gen(c, p, v[0]);
	return 0;
}

static int want_otel_gen(struct check *c, struct participant *p, const struct sample *s)
{
	struct otel_thread_ctx want;
	uint64_t gen;

	if (s->dyn_size != sizeof(want))
		return 1;
	memcpy(&gen, s->data + offsetof(struct otel_thread_ctx, span_id), sizeof(gen));
	if (!gen || gen > p->last_gen)
		return 1;
	fill_record(&want, p->index, gen);
	if (memcmp(s->data, &want, sizeof(want)))
		return 1;
	note_gen(c, p, gen);
	return 0;
}

/* Bytes planted by each thread in its own TLS: cpu-clock samples. */
TEST_F(tls_user, threads_plain)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(tls_plain), .fn = want_plain };

	tls_attr(&attr, sizeof(tls_plain), tls_offset(tls_plain), 0, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
}

/* A thread pointer moved by the thread itself is seen at once. */
TEST_F(tls_user, live_thread_pointer)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(tls_plain), .fn = want_fake };
	long off = tls_offset(tls_plain);
	int i, j;

	if (!can_set_tp())
		SKIP(return, "user space cannot set its thread pointer here (no FSGSBASE)");
	ASSERT_LT(labs(off), FAKE_TLS_SIZE / 2 - 64);

	/* The bytes at the fake thread pointer + off differ from the real ones. */
	for (i = 1; i < NR_THREADS; i++) {
		g.part[i].fake_tls = calloc(1, FAKE_TLS_SIZE);
		ASSERT_NE(g.part[i].fake_tls, NULL);
		g.part[i].fake_tp = (uintptr_t)g.part[i].fake_tls + FAKE_TLS_SIZE / 2 - off;
		for (j = 0; j < (int)sizeof(tls_plain); j++)
			g.part[i].fake_tls[FAKE_TLS_SIZE / 2 + j] = 0xf0 + i + j;
	}

	tls_attr(&attr, sizeof(tls_plain), off, 0, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_FAKE_TP, false);
	check_samples(_metadata, &self->ev, &c, false);
	for (i = 1; i < NR_THREADS; i++)
		free(g.part[i].fake_tls);
}

/* OpenTelemetry-style record behind a TLS pointer. */
TEST_F(tls_user, threads_deref_otel)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(struct otel_thread_ctx), .fn = want_otel };

	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
}

/* Only the span id: tls_user_deref_offset into the record. */
TEST_F(tls_user, threads_deref_offset)
{
	struct perf_event_attr attr;
	struct check c = { .size = 8, .fn = want_span_id };

	tls_attr(&attr, 8, tls_offset(&otel_thread_ctx_v1), PERF_TLS_USER_DEREF,
		 offsetof(struct otel_thread_ctx, span_id));
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
}

/* As threads_deref_otel, sampled by the hardware cycles event (NMI). */
TEST_F(tls_user, threads_hw_cycles)
{
	struct perf_event_attr attr;
	struct check c = {
		.size = sizeof(struct otel_thread_ctx), .fn = want_otel, .nmi = true,
	};
	int ret;

	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_CPU_CYCLES;
	attr.sample_period = CYCLES_PERIOD;
	ret = open_event(&self->ev, &attr, 0, -1);
	if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV)
		SKIP(return, "no hardware cycles event (%s)", strerror(-ret));
	ASSERT_EQ(ret, 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
	/* The switch is a small part of the time spent spinning. */
	TH_LOG("%d of %d samples inside a task switch", c.nr_switching, c.nr_total);
	EXPECT_LT(c.nr_switching * 4, c.nr_total);
}

/* Two TLS words rewritten all the time: a generation and its value. */
TEST_F(tls_user, changing_plain)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(tls_gen), .fn = want_gen };
	int i;

	tls_attr(&attr, sizeof(tls_gen), tls_offset(tls_gen), 0, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_CHANGE, false);
	check_samples(_metadata, &self->ev, &c, false);
	for (i = 1; i < NR_THREADS; i++)
		EXPECT_LT(c.gens[i][0], c.gens[i][1]);
}

/* A writer publishing a new OpenTelemetry record by swapping the pointer. */
TEST_F(tls_user, changing_deref)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(struct otel_thread_ctx), .fn = want_otel_gen };
	int i;

	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_CHANGE, false);
	check_samples(_metadata, &self->ev, &c, false);
	for (i = 1; i < NR_THREADS; i++)
		EXPECT_LT(c.gens[i][0], c.gens[i][1]);
}

/* Samples taken in the kernel, in read(), carry the user TLS too. */
TEST_F(tls_user, in_syscall)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(struct otel_thread_ctx), .fn = want_otel };
	int fd, ret;

	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		SKIP(return, "no /dev/zero (%s)", strerror(errno));
	close(fd);

	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	ret = open_event(&self->ev, &attr, 0, -1);
	if (ret == -EACCES)
		SKIP(return, "kernel samples not permitted (perf_event_paranoid)");
	ASSERT_EQ(ret, 0);
	run_threads(_metadata, &self->ev, BODY_SYSCALL, true);
	check_samples(_metadata, &self->ev, &c, true);
}

/* The TCB at the thread pointer: per thread, and its own address on x86_64. */
TEST_F(tls_user, at_thread_pointer)
{
	struct perf_event_attr attr;
	struct check c = { .size = 16, .fn = want_at_tp };
	int i;

	tls_attr(&attr, 16, 0, 0, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
	for (i = 0; i < NR_THREADS; i++) {
#ifdef __x86_64__
		EXPECT_EQ(memcmp(g.part[i].at_tp, &g.part[i].tp, 8), 0);
#endif
		if (i)
			EXPECT_NE(memcmp(g.part[i].at_tp, g.part[0].at_tp, 16), 0);
	}
}

/* x86_64 (TLS variant II): static TLS lies just below the FS base. */
TEST_F(tls_user, below_thread_pointer)
{
	struct perf_event_attr attr;
	struct check c = { .size = 16, .fn = want_below_tp };

#ifndef __x86_64__
	SKIP(return, "static TLS is below the thread pointer only on x86_64");
#endif
	ASSERT_LT(tls_offset(tls_plain), 0);
	tls_attr(&attr, 16, -16, 0, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
}

/* A pointer the read cannot go through: nothing read, and @why. */
static void run_bad_ptr(struct __test_metadata *_metadata,
			struct events *ev, uintptr_t ptr, __u16 deref_offset,
			uint8_t why)
{
	struct perf_event_attr attr;
	struct check c = {
		.size	= sizeof(struct otel_thread_ctx),
		.fn	= want_nothing,
		.unread	= why,
	};

	g.use_bad_ptr = true;
	g.bad_ptr = ptr;
	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, deref_offset);
	ASSERT_EQ(open_event(ev, &attr, 0, -1), 0);
	run_threads(_metadata, ev, BODY_SPIN, false);
	check_samples(_metadata, ev, &c, false);
	TH_LOG("pointer %#lx + %u: %d bad samples", (unsigned long)ptr,
	       deref_offset, c.nr_bad);
}

#ifdef __x86_64__
#define KERNEL_ADDRESS	0xffffffff81000000ul
#else
#define KERNEL_ADDRESS	0xffff800080000000ul
#endif

TEST_F(tls_user, deref_null)
{
	run_bad_ptr(_metadata, &self->ev, 0, 0, PERF_TLS_USER_UNREAD_NULL_POINTER);
}

/* A user address nothing is mapped at: low, below where mmap() places. */
TEST_F(tls_user, deref_unmapped)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = (void *)(16 * page);

	ASSERT_EQ(msync(p, page, MS_ASYNC), -1);
	ASSERT_EQ(errno, ENOMEM);
	run_bad_ptr(_metadata, &self->ev, (uintptr_t)p, 0, PERF_TLS_USER_UNREAD_FAULT);
}

/* Mapped, but not readable. */
TEST_F(tls_user, deref_prot_none)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(p, MAP_FAILED);
	run_bad_ptr(_metadata, &self->ev, (uintptr_t)p, 0, PERF_TLS_USER_UNREAD_FAULT);
	munmap(p, page);
}

TEST_F(tls_user, deref_kernel_address)
{
	run_bad_ptr(_metadata, &self->ev, KERNEL_ADDRESS, 0,
		    PERF_TLS_USER_UNREAD_BAD_ADDRESS);
}

/* A pointer whose sum with tls_user_deref_offset wraps to a user address. */
TEST_F(tls_user, deref_wrapping)
{
	run_bad_ptr(_metadata, &self->ev, (uintptr_t)-8, 16,
		    PERF_TLS_USER_UNREAD_BAD_ADDRESS);
}

TEST_F(tls_user, deref_misaligned)
{
	static uint64_t record[8];

	run_bad_ptr(_metadata, &self->ev, (uintptr_t)record + 4, 0,
		    PERF_TLS_USER_UNREAD_BAD_ADDRESS);
}

static uint8_t partial_want[32];

static int want_partial(struct check *c, struct participant *p, const struct sample *s)
{
	return full_copy(s, partial_want, 8) || memcmp(s->data, partial_want, 32);
}

/* A record that runs into an unreadable page: what is readable, then zeroes. */
TEST_F(tls_user, deref_partial)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(partial_want), .fn = want_partial };
	uint8_t *p;

	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(p, MAP_FAILED);
	ASSERT_EQ(mprotect(p + page, page, PROT_NONE), 0);
	memset(p + page - 8, 0x5c, 8);
	memset(partial_want, 0, sizeof(partial_want));
	memset(partial_want, 0x5c, 8);

	g.use_bad_ptr = true;
	g.bad_ptr = (uintptr_t)(p + page - 8);
	tls_attr(&attr, sizeof(partial_want), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	ASSERT_EQ(open_event(&self->ev, &attr, 0, -1), 0);
	run_threads(_metadata, &self->ev, BODY_SPIN, false);
	check_samples(_metadata, &self->ev, &c, false);
	munmap(p, 2 * page);
}

/* CPU-wide: kernel threads (the idle task) get size 0, ours its bytes. */
struct cpu_wide {
	pid_t		tid;
	uint64_t	plain[4];
	struct {
		int	ours, idle, user, bad;
	} nr;
};

static int check_cpu_wide(const struct sample *s, void *arg)
{
	struct cpu_wide *w = arg;

	if (s->pid == 0) {
		w->nr.idle++;
		if (s->size != 0)
			w->nr.bad++;
	} else if (s->tid == (uint32_t)w->tid) {
		w->nr.ours++;
		if (s->size != sizeof(w->plain) || s->dyn_size != sizeof(w->plain) ||
		    memcmp(s->data, w->plain, sizeof(w->plain)))
			w->nr.bad++;
	} else if (s->size) {
		w->nr.user++;
	}
	return 0;
}

TEST_F(tls_user, cpu_wide_idle)
{
	struct timespec nap = { .tv_nsec = 2 * 1000 * 1000 };
	struct perf_event_attr attr;
	struct cpu_wide w = {};
	cpu_set_t set;
	int i, ret;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);

	tls_attr(&attr, sizeof(tls_plain), tls_offset(tls_plain), 0, 0);
	attr.inherit = 0;
	ret = open_event(&self->ev, &attr, -1, 0);
	if (ret == -EACCES)
		SKIP(return, "CPU-wide events not permitted (perf_event_paranoid)");
	ASSERT_EQ(ret, 0);

	for (i = 0; i < 4; i++)
		tls_plain[i] = 0xc0ffee0000000000ull + i;
	memcpy(w.plain, tls_plain, sizeof(w.plain));
	w.tid = syscall(__NR_gettid);

	ASSERT_EQ(events_ioctl(&self->ev, PERF_EVENT_IOC_ENABLE), 0);
	for (i = 0; i < POLL_LIMIT; i++) {
		struct timespec t0, t;

		/* Run for a while, then leave the CPU idle for a while. */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000l + t.tv_nsec - t0.tv_nsec <
		       2 * CLOCK_PERIOD);
		nanosleep(&nap, NULL);

		memset(&w.nr, 0, sizeof(w.nr));
		ASSERT_EQ(walk_samples(&self->ev, check_cpu_wide, &w), 0);
		if (w.nr.ours >= MIN_SAMPLES && w.nr.idle >= MIN_SAMPLES)
			break;
	}
	ASSERT_EQ(events_ioctl(&self->ev, PERF_EVENT_IOC_DISABLE), 0);
	TH_LOG("%d own, %d idle, %d other user samples", w.nr.ours, w.nr.idle, w.nr.user);
	EXPECT_EQ(w.nr.bad, 0);
	EXPECT_GE(w.nr.ours, MIN_SAMPLES);
	EXPECT_GE(w.nr.idle, MIN_SAMPLES);
}

static int open_errno(struct perf_event_attr *attr)
{
	int fd = perf_open(attr, 0, -1);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

/* Every malformed attribute fails with EINVAL; the limits are accepted. */
TEST_F(tls_user, bad_attr)
{
	struct perf_event_attr attr;

	tls_attr(&attr, 8, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), 0);
	tls_attr(&attr, PERF_TLS_USER_MAX_SIZE, -PERF_TLS_USER_MAX_SIZE, 0, 0);
	EXPECT_EQ(open_errno(&attr), 0);
	tls_attr(&attr, 8, 0, PERF_TLS_USER_DEREF, 0xfff8);
	EXPECT_EQ(open_errno(&attr), 0);

	/* Size: a multiple of 8, not 0, at most PERF_TLS_USER_MAX_SIZE. */
	tls_attr(&attr, 12, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 1, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, PERF_TLS_USER_MAX_SIZE + 8, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0xfff8, 0, 0, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);

	/* Unknown flags (bits 1 and 2: see tls_deferred). */
	tls_attr(&attr, 8, 0, 1 << 3, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 8, 0, PERF_TLS_USER_DEREF | 0x8000, 0);
	EXPECT_EQ(open_errno(&attr), EINVAL);

	/* A deref offset without PERF_TLS_USER_DEREF. */
	tls_attr(&attr, 8, 0, 0, 8);
	EXPECT_EQ(open_errno(&attr), EINVAL);

	/* TLS fields without PERF_SAMPLE_TLS_USER. */
	tls_attr(&attr, 8, 0, 0, 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0, -8, 0, 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0, 0, PERF_TLS_USER_DEREF, 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0, 0, 0, 8);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 0, 0, 0, 0);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	EXPECT_EQ(open_errno(&attr), 0);
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
 * Off-CPU samples: a thread going to sleep is sampled by the scheduler
 * after it made the next task the CPU's task, but with its own thread
 * pointer and address space still loaded, so the samples carry its TLS.
 * Every sample is one of a thread switching out, so none may be empty.
 */
static void run_sched_out(struct __test_metadata *_metadata,
			  struct events *ev, __u32 type, __u64 config)
{
	struct perf_event_attr attr;
	struct check c = { .size = sizeof(struct otel_thread_ctx), .fn = want_otel };
	int i;

	tls_attr(&attr, sizeof(struct otel_thread_ctx), tls_offset(&otel_thread_ctx_v1),
		 PERF_TLS_USER_DEREF, 0);
	attr.type = type;
	attr.config = config;
	attr.sample_period = 1;
	ASSERT_EQ(open_event(ev, &attr, 0, -1), 0);
	run_threads(_metadata, ev, BODY_SLEEP, true);
	check_samples(_metadata, ev, &c, true);
	for (i = 1; i < NR_THREADS; i++)
		ASSERT_EQ(g.part[i].nr_samples, g.part[i].nr_kernel);
}

/* sched:sched_switch samples of a blocking thread carry its TLS. */
TEST_F(tls_user, sched_switch_tracepoint)
{
	long id = tracepoint_id("sched/sched_switch");

	ASSERT_GT(id, 0) TH_LOG("no sched/sched_switch tracepoint: %s",
				strerror(-id));
	run_sched_out(_metadata, &self->ev, PERF_TYPE_TRACEPOINT, id);
}

/* So do context-switches samples, which the scheduler takes there too. */
TEST_F(tls_user, sched_switch_context_switches)
{
	run_sched_out(_metadata, &self->ev, PERF_TYPE_SOFTWARE,
		      PERF_COUNT_SW_CONTEXT_SWITCHES);
}

/*
 * The largest user stack dump and a TLS dump in one sample: the stack takes
 * what the u16 header size leaves, minus the TLS size field, so every
 * record's header.size is the length of what it holds, never wrapped.
 */
TEST_F(tls_user, full_stack_dump)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t rb_size = (RB_PAGES + 1) * page;
	struct perf_event_mmap_page *pg;
	struct perf_event_attr attr;
	uint64_t head, pos = 0, n = 0;
	const uint8_t *base;
	time_t t0 = time(NULL);
	int fd;

	tls_attr(&attr, 8, 0, 0, 0);
	attr.inherit = 0;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_STACK_USER |
			   PERF_SAMPLE_TLS_USER;
	attr.sample_stack_user = 65528;
	fd = perf_open(&attr, 0, -1);
	ASSERT_GE(fd, 0);
	pg = mmap(NULL, rb_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(pg, MAP_FAILED);
	base = (const uint8_t *)pg + pg->data_offset;

	ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	while (!__atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) &&
	       time(NULL) - t0 < 10)
		;
	ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	ASSERT_GT(head, 0);
	while (pos < head) {
		struct perf_event_header h;
		uint64_t len = sizeof(h) + 8, sz;

		memcpy(&h, base + pos % pg->data_size, sizeof(h));
		ASSERT_GE(h.size, sizeof(h));
		ASSERT_LE(pos + h.size, head);
		if (h.type == PERF_RECORD_SAMPLE) {
			/* pid/tid, then the stack dump, then the TLS dump */
			memcpy(&sz, base + (pos + len) % pg->data_size, 8);
			len += 8 + (sz ? sz + 8 : 0);
			memcpy(&sz, base + (pos + len) % pg->data_size, 8);
			EXPECT_LE(sz, 8);
			len += 8 + (sz ? sz + 8 : 0);
			EXPECT_EQ(len, h.size);
			n++;
		}
		pos += h.size;
	}
	TH_LOG("%llu samples of up to 64 KiB", (unsigned long long)n);
	EXPECT_GT(n, 0);
	munmap(pg, rb_size);
	close(fd);
}

/*
 * The TLS fields start at PERF_ATTR_EXT_OFFSET, after mainline's config4
 * and the room left to mainline's next sizes; PERF_ATTR_SIZE_EXT1 covers
 * them, and smaller sizes leave them 0.
 */
TEST_F(tls_user, attr_size)
{
	struct {
		struct perf_event_attr attr;
		uint64_t tail;
	} big;
	struct perf_event_attr attr;

	ASSERT_EQ(sizeof(attr), PERF_ATTR_SIZE_EXT1);
	ASSERT_EQ(offsetof(struct perf_event_attr, config4), PERF_ATTR_SIZE_VER8);
	ASSERT_EQ(PERF_ATTR_SIZE_VER9, 144);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_offset), PERF_ATTR_EXT_OFFSET);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_flags), 260);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_deref_offset), 262);
	ASSERT_EQ(offsetof(struct perf_event_attr, sample_tls_user), 264);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_len_offset), 266);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_len_size), 268);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_len_shift), 269);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_len_base), 270);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_hops), PERF_ATTR_SIZE_EXT0);
	ASSERT_EQ(offsetof(struct perf_event_attr, tls_user_hop_offset), 276);

	/* VER9 ends before the TLS fields: sample_tls_user reads as 0. */
	tls_attr(&attr, 8, 0, 0, 0);
	attr.size = PERF_ATTR_SIZE_VER9;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	attr.sample_type &= ~PERF_SAMPLE_TLS_USER;
	attr.tls_user_deref_offset = 8;
	EXPECT_EQ(open_errno(&attr), 0);

	/* The rest of the TLS block is reserved. */
	tls_attr(&attr, 8, 0, 0, 0);
	attr.__reserved_tls[2] = 1;
	EXPECT_EQ(open_errno(&attr), EINVAL);
	tls_attr(&attr, 8, 0, 0, 0);
	attr.__reserved_tls_1 = 1;
	EXPECT_EQ(open_errno(&attr), EINVAL);

	/* EXT0 ends before the hops: a program without them still opens. */
	tls_attr(&attr, 8, 0, 0, 0);
	attr.tls_user_len_size = 2;
	attr.size = PERF_ATTR_SIZE_EXT0;
	EXPECT_EQ(open_errno(&attr), 0);

	/* Mainline's part past VER8 is refused as unknown, size set to VER8. */
	tls_attr(&attr, 8, 0, 0, 0);
	attr.config4 = 1;
	EXPECT_EQ(open_errno(&attr), E2BIG);
	EXPECT_EQ(attr.size, PERF_ATTR_SIZE_VER8);
	tls_attr(&attr, 8, 0, 0, 0);
	attr.__reserved_upstream[13] = 1;
	EXPECT_EQ(open_errno(&attr), E2BIG);
	EXPECT_EQ(attr.size, PERF_ATTR_SIZE_VER8);

	/* A larger attr is fine while its tail is zero. */
	memset(&big, 0, sizeof(big));
	tls_attr(&big.attr, 8, 0, PERF_TLS_USER_DEREF, 8);
	big.attr.size = sizeof(big);
	EXPECT_EQ(open_errno(&big.attr), 0);
	big.tail = 1;
	EXPECT_EQ(open_errno(&big.attr), E2BIG);
	EXPECT_EQ(big.attr.size, PERF_ATTR_SIZE_EXT1);
}

TEST_HARNESS_MAIN
