// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of PERF_RECORD_SAMPLE sizes where several sample items share the
 * u16 header::size:
 *
 * - size_wrap: PERF_SAMPLE_STACK_USER, PERF_SAMPLE_TLS_USER and
 *   PERF_SAMPLE_AUX, every pair and all three, asked for sizes that add
 *   up to just under, exactly at and past the largest record (65528
 *   bytes, the last multiple of 8 below 65536). Every record must say its
 *   own size, items that fit must be whole, and a record cut to fit must
 *   be exactly 65528 bytes; the ring must read back record by record to
 *   its head.
 * - size_wrap.stack_regs_intr: the same with PERF_SAMPLE_REGS_INTR, which
 *   comes after the stack dump in the record.
 * - size_wrap.stack_tls_defer, stack_tls_defer_aux: the same with
 *   PERF_TLS_USER_DEFER, whose cookie comes before the TLS dump (the
 *   samples interrupt user mode and read at once).
 * - stack_dump_without_stack: samples taken while the stack pointer is 0
 *   have an empty stack dump, and then no dynamic size.
 * - shared_sample_data: two software events fed by one page fault, one
 *   with more sample items than the other; each record must have its own
 *   event's size, whichever event was opened first.
 * - aux_sched_out: a sw_aux group with a hardware sibling that takes AUX
 *   samples at a short period, through many context switches: the
 *   sibling's overflow may come while the group is being scheduled out,
 *   and must not make the kernel warn (taint flag W).
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../kselftest_harness.h"

#define SW_AUX_TYPE_FILE	"/sys/bus/event_source/devices/sw_aux/type"
#define DATA_PAGES		128	/* room for 7 records of 64 KiB */
#define AUX_PAGES		16
#define RECORD_MAX		65528	/* the last multiple of 8 below 64 KiB */
#define TLS_MAX			PERF_TLS_USER_MAX_SIZE

/* The sample items these tests ask for, besides the variable ones. */
#define BASE_TYPE		(PERF_SAMPLE_IP | PERF_SAMPLE_TID)
#define BASE_SIZE		(8 + 8 + 8)	/* header, ip, pid and tid */

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid,
			       int cpu, int group_fd)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group_fd,
		       PERF_FLAG_FD_CLOEXEC);
}

static int sw_aux_type(void)
{
	FILE *f = fopen(SW_AUX_TYPE_FILE, "r");
	int type = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

/* A user-only event of @type and @config: the base of every attr here. */
static void user_attr(struct perf_event_attr *attr, uint32_t type,
		      uint64_t config)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
}

struct ring {
	int fd;
	bool backward;		/* attr.write_backward: mapped read-only */
	long throttled;		/* PERF_RECORD_THROTTLE records read */
	void *base;
	size_t size;
	void *aux;
	size_t aux_size;
};

static int ring_map(struct ring *r, bool with_aux)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;

	r->size = (DATA_PAGES + 1) * page;
	r->base = mmap(NULL, r->size,
		       r->backward ? PROT_READ : PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return -1;
	}
	if (!with_aux)
		return 0;
	pg = r->base;
	r->aux_size = AUX_PAGES * page;
	pg->aux_offset = r->size;
	pg->aux_size = r->aux_size;
	/* Read-only: the AUX area is a snapshot (overwrite) buffer. */
	r->aux = mmap(NULL, r->aux_size, PROT_READ, MAP_SHARED, r->fd, r->size);
	if (r->aux == MAP_FAILED) {
		r->aux = NULL;
		return -1;
	}
	return 0;
}

/* Open a disabled sw_aux leader of @type for this thread, its AUX area a snapshot. */
static int open_aux_leader(struct ring *r, int type)
{
	struct perf_event_attr attr;

	user_attr(&attr, type, 100);	/* a record every 100 us */
	attr.disabled = 1;
	r->fd = sys_perf_event_open(&attr, 0, -1, -1);
	if (r->fd < 0)
		return -1;
	return ring_map(r, true);
}

static void ring_close(struct ring *r)
{
	if (r->aux)
		munmap(r->aux, r->aux_size);
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

static uint64_t ring_head(struct ring *r)
{
	struct perf_event_mmap_page *pg = r->base;

	return __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
}

/* What one sample says of its variable items. */
struct items {
	uint64_t regs_intr;	/* registers dumped, 0 without */
	uint64_t stack_size, stack_dyn;
	uint64_t tls_size, tls_dyn;
	uint64_t aux_size;
};

/* Take the u64 at *@off of a record of @size bytes, if it is there. */
static bool take(const uint8_t *rec, size_t size, size_t *off, uint64_t *v)
{
	if (*off + 8 > size)
		return false;
	memcpy(v, rec + *off, 8);
	*off += 8;
	return true;
}

/*
 * Take a user dump laid out as PERF_SAMPLE_STACK_USER's, which
 * PERF_SAMPLE_TLS_USER's also is: { size, data[size], dyn_size if size }.
 */
static bool take_dump(const uint8_t *rec, size_t size, size_t *off,
		      uint64_t *dump_size, uint64_t *dyn_size)
{
	if (!take(rec, size, off, dump_size))
		return false;
	*off += *dump_size;
	return !*dump_size || take(rec, size, off, dyn_size);
}

/*
 * The length that a PERF_RECORD_SAMPLE of @type has by its own fields, or
 * 0 when a field runs past @size bytes.
 */
static size_t sample_len(const uint8_t *rec, size_t size,
			 const struct perf_event_attr *attr, struct items *it)
{
	size_t off = sizeof(struct perf_event_header);
	uint64_t type = attr->sample_type, v;

	memset(it, 0, sizeof(*it));
	if ((type & PERF_SAMPLE_IP) && !take(rec, size, &off, &v))
		return 0;
	if ((type & PERF_SAMPLE_TID) && !take(rec, size, &off, &v))
		return 0;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (!take(rec, size, &off, &v) || v > size / 8)
			return 0;
		off += v * 8;
	}
	if ((type & PERF_SAMPLE_STACK_USER) &&
	    !take_dump(rec, size, &off, &it->stack_size, &it->stack_dyn))
		return 0;
	if (type & PERF_SAMPLE_REGS_INTR) {
		if (!take(rec, size, &off, &v))
			return 0;
		if (v) {
			it->regs_intr = __builtin_popcountll(attr->sample_regs_intr);
			off += it->regs_intr * 8;
		}
	}
	if (type & PERF_SAMPLE_AUX) {
		if (!take(rec, size, &off, &it->aux_size))
			return 0;
		off += it->aux_size;
	}
	/* PERF_TLS_USER_DEFER: the cookie, then the dump */
	if ((type & PERF_SAMPLE_TLS_USER) &&
	    (attr->tls_user_flags & PERF_TLS_USER_DEFER) &&
	    !take(rec, size, &off, &v))
		return 0;
	if ((type & PERF_SAMPLE_TLS_USER) &&
	    !take_dump(rec, size, &off, &it->tls_size, &it->tls_dyn))
		return 0;
	return off <= size ? off : 0;
}

/*
 * Walk the ring from its start to its head. Every sample must be as long
 * as its fields say, and the walk must end exactly at the head. A ring
 * written backward (attr.write_backward, mapped read-only) holds the
 * newest record first: one that ran past its end overwrote the header of
 * the record written before it. Calls
 * @fn for each sample (if any) and returns the number of samples, or -1.
 */
static long ring_walk(struct __test_metadata *_metadata, struct ring *r,
		      const struct perf_event_attr *attr,
		      void (*fn)(struct __test_metadata *, const struct items *,
				 size_t, void *), void *arg)
{
	struct perf_event_mmap_page *pg = r->base;
	const uint8_t *data = (uint8_t *)r->base + pg->data_offset;
	uint64_t head = ring_head(r), dsize = pg->data_size, i;
	/* Forward: from 0 up to head; backward: from head up to 0. */
	uint64_t start = r->backward ? head : 0;
	uint64_t end = r->backward ? -head : head, pos = 0;
	static uint8_t rec[1 << 16];
	struct perf_event_header hdr;
	struct items it;
	long n = 0;
	size_t len;

	if (end > dsize) {
		TH_LOG("the ring wrapped: %llu bytes", (unsigned long long)end);
		return -1;
	}
	while (pos < end) {
		if (end - pos < sizeof(hdr)) {
			TH_LOG("a partial header at %llu, head %llu",
			       (unsigned long long)pos, (unsigned long long)head);
			return -1;
		}
		for (i = 0; i < sizeof(hdr); i++)
			((uint8_t *)&hdr)[i] = data[(start + pos + i) % dsize];
		if (hdr.size < sizeof(hdr) || hdr.size % 8 || pos + hdr.size > end) {
			TH_LOG("record at %llu: type %u size %u, head %llu",
			       (unsigned long long)pos, hdr.type, hdr.size,
			       (unsigned long long)head);
			return -1;
		}
		for (i = 0; i < hdr.size; i++)
			rec[i] = data[(start + pos + i) % dsize];
		if (hdr.type == PERF_RECORD_SAMPLE) {
			len = sample_len(rec, hdr.size, attr, &it);
			if (len != hdr.size) {
				TH_LOG("sample at %llu: header.size %u, its fields %zu",
				       (unsigned long long)pos, hdr.size, len);
				return -1;
			}
			if (fn)
				fn(_metadata, &it, hdr.size, arg);
			n++;
		} else if (hdr.type == PERF_RECORD_THROTTLE) {
			r->throttled++;
		} else if (hdr.type != PERF_RECORD_LOST &&
			   hdr.type != PERF_RECORD_UNTHROTTLE) {
			TH_LOG("record at %llu: unexpected type %u",
			       (unsigned long long)pos, hdr.type);
			return -1;
		}
		pos += hdr.size;
	}
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * size_wrap: a thread of its own (its stack is a mapping far below
 * TASK_SIZE, so the stack dump is never cut by the top of the address
 * space) opens a task-clock sampler with the items of the variant, in a
 * sw_aux group when it asks for AUX, and runs until the ring holds enough
 * samples.
 */
FIXTURE(size_wrap)
{
	int aux_type;
};

FIXTURE_VARIANT(size_wrap)
{
	bool stack, tls, aux, regs_intr;
	bool defer;	/* PERF_TLS_USER_DEFER: a cookie before the TLS dump */
};

FIXTURE_VARIANT_ADD(size_wrap, stack_aux)
{
	.stack = true, .aux = true,
};

FIXTURE_VARIANT_ADD(size_wrap, stack_tls)
{
	.stack = true, .tls = true,
};

FIXTURE_VARIANT_ADD(size_wrap, tls_aux)
{
	.tls = true, .aux = true,
};

FIXTURE_VARIANT_ADD(size_wrap, stack_tls_aux)
{
	.stack = true, .tls = true, .aux = true,
};

FIXTURE_VARIANT_ADD(size_wrap, stack_tls_defer)
{
	.stack = true, .tls = true, .defer = true,
};

FIXTURE_VARIANT_ADD(size_wrap, stack_tls_defer_aux)
{
	.stack = true, .tls = true, .aux = true, .defer = true,
};

FIXTURE_VARIANT_ADD(size_wrap, stack_regs_intr)
{
	.stack = true, .regs_intr = true,
};

FIXTURE_SETUP(size_wrap)
{
	self->aux_type = sw_aux_type();
	if (variant->aux && self->aux_type < 0)
		SKIP(return, "no sw_aux PMU (CONFIG_PERF_SW_AUX=n)");
}

FIXTURE_TEARDOWN(size_wrap)
{
}

/* Eight registers, valid on x86_64 (ax..sp) and arm64 (x0..x7). */
#define REGS_INTR_MASK	0xffULL

struct wrap_run {
	struct perf_event_attr attr;	/* the sampler's */
	int aux_type;			/* its sw_aux leader's, if AUX */
	struct ring leader, sampler;
	int err;
};

static void *wrap_thread(void *arg)
{
	struct wrap_run *w = arg;
	double end;
	int group = -1;

	if (w->attr.sample_type & PERF_SAMPLE_AUX) {
		if (open_aux_leader(&w->leader, w->aux_type))
			goto fail;
		group = w->leader.fd;
	}

	w->attr.disabled = group < 0;
	w->sampler.fd = sys_perf_event_open(&w->attr, 0, -1, group);
	if (w->sampler.fd < 0 || ring_map(&w->sampler, false))
		goto fail;

	if (ioctl(group < 0 ? w->sampler.fd : group, PERF_EVENT_IOC_ENABLE, 0))
		goto fail;
	/* Enough for the ring to be full: records that do not fit are lost. */
	end = now() + 10;
	while (ring_head(&w->sampler) < 6 * RECORD_MAX && now() < end)
		;
	ioctl(group < 0 ? w->sampler.fd : group, PERF_EVENT_IOC_DISABLE, 0);
	return NULL;
fail:
	w->err = errno ? errno : EINVAL;
	return NULL;
}

/* What the room left in a record allows after @size bytes, in u64s. */
static uint32_t room_after(uint32_t size)
{
	return size >= 65535 ? 0 : (65535 - size) / 8 * 8;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * The record the documented sizing gives: the interrupt registers, then
 * the stack dump, keeping room for the size fields of the TLS dump (and
 * its cookie with PERF_TLS_USER_DEFER) and of the AUX snapshot after it,
 * then the TLS dump, keeping room for the AUX size field, then the AUX
 * snapshot with what is left. The samples interrupt user mode, so a
 * deferred event reads at once: cookie 0 and the dump.
 */
static void wrap_model(const struct perf_event_attr *attr, struct items *it,
		       uint32_t *total)
{
	bool tls = attr->sample_type & PERF_SAMPLE_TLS_USER;
	bool aux = attr->sample_type & PERF_SAMPLE_AUX;
	bool defer = tls && (attr->tls_user_flags & PERF_TLS_USER_DEFER);
	uint32_t cur = BASE_SIZE;

	memset(it, 0, sizeof(*it));
	if (attr->sample_type & PERF_SAMPLE_REGS_INTR) {
		it->regs_intr = __builtin_popcountll(attr->sample_regs_intr);
		cur += 8 + 8 * it->regs_intr;
	}
	if (attr->sample_type & PERF_SAMPLE_STACK_USER) {
		it->stack_size = min_u32(attr->sample_stack_user,
					 room_after(cur + 16 + 8 * tls + 8 * defer +
						    8 * aux));
		cur += 8 + (it->stack_size ? it->stack_size + 8 : 0);
	}
	if (defer)
		cur += 8;
	if (tls) {
		it->tls_size = min_u32(attr->sample_tls_user,
				       room_after(cur + 16 + 8 * aux));
		cur += 8 + (it->tls_size ? it->tls_size + 8 : 0);
	}
	if (aux) {
		it->aux_size = min_u32(attr->aux_sample_size, room_after(cur + 8));
		cur += 8 + it->aux_size;
	}
	*total = cur;
}

struct wrap_expect {
	struct items it;	/* the sizes every record must have */
	uint32_t total;
};

static void wrap_check(struct __test_metadata *_metadata,
		       const struct items *it, size_t size, void *arg)
{
	struct wrap_expect *e = arg;

	EXPECT_EQ(size, e->total);
	EXPECT_LE(size, RECORD_MAX);
	EXPECT_EQ(it->regs_intr, e->it.regs_intr);
	EXPECT_EQ(it->stack_size, e->it.stack_size);
	EXPECT_LE(it->stack_dyn, it->stack_size);
	EXPECT_EQ(it->tls_size, e->it.tls_size);
	EXPECT_LE(it->tls_dyn, it->tls_size);
	EXPECT_EQ(it->aux_size, e->it.aux_size);
}

/*
 * Ask for sizes that add up to RECORD_MAX + delta bytes, for deltas just
 * under, at and past it: up to RECORD_MAX every item is whole and the
 * record is exactly that long; past it the items are cut as documented,
 * and the record is never longer than RECORD_MAX.
 */
TEST_F_TIMEOUT(size_wrap, around_u16_max, 600)
{
	static const int deltas[] = { -16, -8, 0, 8, 16, 4096, 8192 };
	struct perf_event_attr *attr;
	struct wrap_expect e;
	struct wrap_run w;
	uint32_t want, fixed, rest;
	unsigned int i;
	pthread_t th;
	long n;

	for (i = 0; i < ARRAY_SIZE(deltas); i++) {
		memset(&w, 0, sizeof(w));
		w.leader.fd = -1;
		w.sampler.fd = -1;
		w.aux_type = self->aux_type;
		attr = &w.attr;
		user_attr(attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
		attr->sample_period = 2000000;
		attr->sample_type = BASE_TYPE;
		want = RECORD_MAX + deltas[i];

		/* The fixed part: registers and the items' size fields. */
		fixed = BASE_SIZE;
		if (variant->regs_intr) {
			attr->sample_type |= PERF_SAMPLE_REGS_INTR;
			attr->sample_regs_intr = REGS_INTR_MASK;
			fixed += 8 + 8 * __builtin_popcountll(REGS_INTR_MASK);
		}
		if (variant->stack) {
			attr->sample_type |= PERF_SAMPLE_STACK_USER;
			fixed += 16;
		}
		if (variant->tls) {
			attr->sample_type |= PERF_SAMPLE_TLS_USER;
			attr->sample_tls_user = TLS_MAX;
			fixed += 16;
		}
		if (variant->defer) {
			attr->tls_user_flags = PERF_TLS_USER_DEFER;
			fixed += 8;
		}
		if (variant->aux) {
			attr->sample_type |= PERF_SAMPLE_AUX;
			attr->aux_sample_size = 4096;
			fixed += 8;
		}
		/*
		 * The stack takes the rest, up to the largest dump that may be
		 * asked for, or the AUX sample does without a stack.
		 */
		rest = want - fixed - attr->sample_tls_user;
		if (variant->stack) {
			rest -= attr->aux_sample_size;
			attr->sample_stack_user = min_u32(rest, RECORD_MAX);
			want += attr->sample_stack_user - rest;
		} else {
			attr->aux_sample_size = rest;
		}

		wrap_model(attr, &e.it, &e.total);
		if (want <= RECORD_MAX) {
			/* The model agrees: nothing is cut, nothing is left. */
			ASSERT_EQ(e.total, want);
			ASSERT_EQ(e.it.stack_size, attr->sample_stack_user);
			ASSERT_EQ(e.it.tls_size, attr->sample_tls_user);
			ASSERT_EQ(e.it.aux_size, attr->aux_sample_size);
		}

		ASSERT_EQ(pthread_create(&th, NULL, wrap_thread, &w), 0);
		ASSERT_EQ(pthread_join(th, NULL), 0);
		ASSERT_EQ(w.err, 0) TH_LOG("opening the events: %s", strerror(w.err));

		n = ring_walk(_metadata, &w.sampler, attr, wrap_check, &e);
		TH_LOG("asked %u bytes (stack %u, tls %u, aux %u): %ld samples of %u",
		       want, attr->sample_stack_user, attr->sample_tls_user,
		       attr->aux_sample_size, n, e.total);
		ASSERT_GE(n, 2);

		ring_close(&w.sampler);
		ring_close(&w.leader);
	}
}

/*
 * Spin @n (> 0) times with the user stack pointer at 0, using no stack:
 * every sample taken meanwhile has no stack to dump. No signal may come
 * meanwhile (its frame would go below 0); this test takes none.
 */
static void spin_without_stack(unsigned long n)
{
#if defined(__x86_64__)
	asm volatile("mov %%rsp, %%r11\n\t"
		     "xor %%esp, %%esp\n\t"
		     "1: dec %0\n\t"
		     "jnz 1b\n\t"
		     "mov %%r11, %%rsp\n\t"
		     : "+r" (n) : : "r11", "cc", "memory");
#elif defined(__aarch64__)
	asm volatile("mov x9, sp\n\t"
		     "mov x10, #0\n\t"
		     "mov sp, x10\n\t"
		     "1: subs %0, %0, #1\n\t"
		     "b.ne 1b\n\t"
		     "mov sp, x9\n\t"
		     : "+r" (n) : : "x9", "x10", "cc", "memory");
#endif
}

struct empty_count {
	long empty;	/* samples with an empty stack dump */
};

static void empty_check(struct __test_metadata *_metadata,
			const struct items *it, size_t size, void *arg)
{
	struct empty_count *c = arg;

	if (it->stack_size)
		return;
	/* The size field alone: no data, no dynamic size. */
	EXPECT_EQ(size, BASE_SIZE + 8);
	c->empty++;
}

TEST(stack_dump_without_stack)
{
	struct perf_event_attr attr;
	struct empty_count c = {};
	struct ring r = { .fd = -1 };
	long n;

#if !defined(__x86_64__) && !defined(__aarch64__)
	SKIP(return, "no stack-less spin for this architecture");
#endif
	user_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	attr.sample_period = 1000000;
	attr.sample_type = BASE_TYPE | PERF_SAMPLE_STACK_USER;
	attr.sample_stack_user = 4096;
	attr.disabled = 1;
	/*
	 * Written backward, a record that runs past its end overwrites the
	 * header of the one before it, where ring_walk() sees it.
	 */
	attr.write_backward = 1;
	r.backward = true;
	r.fd = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(r.fd, 0);
	ASSERT_EQ(ring_map(&r, false), 0);

	ASSERT_EQ(ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	spin_without_stack(200000000UL);
	ASSERT_EQ(ioctl(r.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	n = ring_walk(_metadata, &r, &attr, empty_check, &c);
	TH_LOG("%ld samples, %ld of them without a stack", n, c.empty);
	ring_close(&r);
	ASSERT_GE(n, 1);
	ASSERT_GE(c.empty, 1);
}

/*
 * shared_sample_data: a page fault feeds every page-fault event of the
 * task from one occurrence. Two such events in one group, one with a
 * callchain or a TLS dump the other lacks; the newer one is served first.
 */
FIXTURE(shared_sample_data)
{
	struct ring plain, rich;
};

FIXTURE_VARIANT(shared_sample_data)
{
	uint64_t rich_type;	/* what the second event asks for besides */
	bool rich_first;	/* opened first, so fed last */
};

FIXTURE_VARIANT_ADD(shared_sample_data, callchain_newer)
{
	.rich_type = PERF_SAMPLE_CALLCHAIN,
};

FIXTURE_VARIANT_ADD(shared_sample_data, callchain_older)
{
	.rich_type = PERF_SAMPLE_CALLCHAIN, .rich_first = true,
};

FIXTURE_VARIANT_ADD(shared_sample_data, tls_user_newer)
{
	.rich_type = PERF_SAMPLE_TLS_USER,
};

FIXTURE_VARIANT_ADD(shared_sample_data, tls_user_older)
{
	.rich_type = PERF_SAMPLE_TLS_USER, .rich_first = true,
};

FIXTURE_SETUP(shared_sample_data)
{
	self->plain.fd = -1;
	self->rich.fd = -1;
}

FIXTURE_TEARDOWN(shared_sample_data)
{
	ring_close(&self->plain);
	ring_close(&self->rich);
}

static void fault_attr(struct perf_event_attr *attr, uint64_t extra)
{
	user_attr(attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	attr->sample_period = 1;
	attr->sample_type = BASE_TYPE | extra;
	if (extra & PERF_SAMPLE_TLS_USER)
		attr->sample_tls_user = 64;
}

static int open_fault_event(struct ring *r, uint64_t extra, int group)
{
	struct perf_event_attr attr;

	fault_attr(&attr, extra);
	attr.disabled = group < 0;
	r->fd = sys_perf_event_open(&attr, 0, -1, group);
	if (r->fd < 0)
		return -1;
	return ring_map(r, false);
}

static void plain_check(struct __test_metadata *_metadata,
			const struct items *it, size_t size, void *arg)
{
	EXPECT_EQ(size, BASE_SIZE);
}

static void tls_check(struct __test_metadata *_metadata,
		      const struct items *it, size_t size, void *arg)
{
	EXPECT_EQ(size, BASE_SIZE + 8 + 64 + 8);
	EXPECT_EQ(it->tls_size, 64);
}

#define FAULT_PAGES	64

TEST_F(shared_sample_data, own_size)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr;
	struct ring *first, *second;
	long n_plain, n_rich;
	uint64_t first_type, second_type;
	char *mem;
	int i;

	if (variant->rich_first) {
		first = &self->rich;
		second = &self->plain;
		first_type = variant->rich_type;
		second_type = 0;
	} else {
		first = &self->plain;
		second = &self->rich;
		first_type = 0;
		second_type = variant->rich_type;
	}
	ASSERT_EQ(open_fault_event(first, first_type, -1), 0);
	ASSERT_EQ(open_fault_event(second, second_type, first->fd), 0);

	mem = mmap(NULL, FAULT_PAGES * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	/* One fault per page: no (multi-size) huge pages. */
	madvise(mem, FAULT_PAGES * page, MADV_NOHUGEPAGE);

	ASSERT_EQ(ioctl(first->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (i = 0; i < FAULT_PAGES; i++)
		mem[i * page] = 1;
	ASSERT_EQ(ioctl(first->fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	munmap(mem, FAULT_PAGES * page);

	fault_attr(&attr, 0);
	n_plain = ring_walk(_metadata, &self->plain, &attr, plain_check, NULL);
	fault_attr(&attr, variant->rich_type);
	n_rich = ring_walk(_metadata, &self->rich, &attr,
			   variant->rich_type == PERF_SAMPLE_TLS_USER ? tls_check : NULL,
			   NULL);
	TH_LOG("%ld samples without, %ld with the extra item, %ld throttled",
	       n_plain, n_rich, self->plain.throttled);
	ASSERT_GE(n_plain, 1);
	/* Unless a lowered sample rate throttled them, one per fault. */
	if (!self->plain.throttled)
		ASSERT_GE(n_plain, FAULT_PAGES);
	/* One group: both events saw the same faults. */
	ASSERT_EQ(n_plain, n_rich);
}

/*
 * aux_sched_out: the sampling sibling is a hardware event whose overflow
 * interrupt can be an NMI (arm64: pseudo-NMI), at a short period, while
 * two threads on one CPU hand a byte back and forth through pipes, so
 * that the group is scheduled out and in again on every hand-over.
 */
FIXTURE(aux_sched_out)
{
	struct ring leader, sampler;
	int ping[2], pong[2];
};

FIXTURE_SETUP(aux_sched_out)
{
	self->leader.fd = -1;
	self->sampler.fd = -1;
	ASSERT_EQ(pipe(self->ping), 0);
	ASSERT_EQ(pipe(self->pong), 0);
}

FIXTURE_TEARDOWN(aux_sched_out)
{
	ring_close(&self->sampler);
	ring_close(&self->leader);
	close(self->ping[0]);
	close(self->ping[1]);
	close(self->pong[0]);
	close(self->pong[1]);
}

/* Hands back every byte it reads, until it reads 0. */
static void *pong_thread(void *arg)
{
	int *fds = arg;		/* ping read end, pong write end */
	char c;

	while (read(fds[0], &c, 1) == 1 && c)
		if (write(fds[1], &c, 1) != 1)
			break;
	return NULL;
}

/* Whether the kernel has warned since boot: taint flag W, bit 9. */
static bool kernel_warned(void)
{
	unsigned long taint = 0;
	FILE *f = fopen("/proc/sys/kernel/tainted", "r");

	if (f) {
		if (fscanf(f, "%lu", &taint) != 1)
			taint = 0;
		fclose(f);
	}
	return (taint >> 9) & 1;
}

TEST_F_TIMEOUT(aux_sched_out, sched_out_window, 600)
{
	struct perf_event_attr attr;
	int aux_type = sw_aux_type();
	int fds[2] = { self->ping[0], self->pong[1] };
	bool warned_before;
	char cmdline[1024] = "", c = 1;
	long n, rounds = 0;
	cpu_set_t set;
	pthread_t th;
	double end;
	FILE *f;

	if (aux_type < 0)
		SKIP(return, "no sw_aux PMU (CONFIG_PERF_SW_AUX=n)");

	ASSERT_EQ(open_aux_leader(&self->leader, aux_type), 0);

	user_attr(&attr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	attr.sample_period = 10000;
	attr.sample_type = BASE_TYPE | PERF_SAMPLE_AUX;
	attr.aux_sample_size = 4096;
	self->sampler.fd = sys_perf_event_open(&attr, 0, -1, self->leader.fd);
	if (self->sampler.fd < 0) {
		ASSERT_TRUE(errno == ENOENT || errno == EOPNOTSUPP)
			TH_LOG("cycles sibling: %s", strerror(errno));
		SKIP(return, "no hardware PMU for cycles (%s)", strerror(errno));
	}
	ASSERT_EQ(ring_map(&self->sampler, false), 0);

	f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
#ifdef __aarch64__
	if (!strstr(cmdline, "irqchip.gicv3_pseudo_nmi=1"))
		TH_LOG("no pseudo-NMI: the PMU interrupt is no NMI here");
#endif
	warned_before = kernel_warned();
	if (warned_before)
		TH_LOG("the kernel has warned before this test: a warning from it cannot be told");

	/* Both threads on this CPU: every hand-over is a context switch. */
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
	ASSERT_EQ(pthread_create(&th, NULL, pong_thread, fds), 0);

	ASSERT_EQ(ioctl(self->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	end = now() + 20;
	while (now() < end && rounds < 200000) {
		if (write(self->ping[1], &c, 1) != 1 ||
		    read(self->pong[0], &c, 1) != 1)
			break;
		rounds++;
	}
	ASSERT_EQ(ioctl(self->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	c = 0;
	ASSERT_EQ(write(self->ping[1], &c, 1), 1);
	ASSERT_EQ(pthread_join(th, NULL), 0);

	n = ring_walk(_metadata, &self->sampler, &attr, NULL, NULL);
	TH_LOG("%ld round trips, %ld samples", rounds, n);
	ASSERT_GE(rounds, 1000);
	ASSERT_GE(n, 1);
	if (!warned_before)
		ASSERT_FALSE(kernel_warned())
			TH_LOG("the kernel warned during the test (see its log)");
}

TEST_HARNESS_MAIN
