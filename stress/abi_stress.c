// SPDX-License-Identifier: GPL-2.0
/*
 * abi-stress: a randomized stress of the whole perf_events ABI of this
 * series, run in the test guests (make stress, and a bounded share in
 * make check).
 *
 * From a seed it opens random events with every field and flag the
 * series adds, in and around their valid ranges (attr sizes around
 * PERF_ATTR_SIZE_EXT0 and EXT1, PERF_SAMPLE_TLS_USER read programs with
 * hostile offsets, hops and length fields, DEFER and REGISTERED, uevents,
 * deferred callchains, large PERF_SAMPLE_STACK_USER, PERF_SAMPLE_AUX in
 * sw_aux groups), per task and CPU-wide, inherited or not; while threads
 * and child processes register contexts, write uevents, rewrite, protect
 * and unmap the memory those read programs chase, fork, exec and get
 * killed. Every record of every mapped ring buffer is parsed by its
 * event's attr and checked against its header.size and against what
 * Documentation/userspace-api/perf_*.rst promise (sizes, zero fill,
 * cookies, where records may go). A kernel splat is caught by the guest's
 * console check (scripts/vm.sh), not here.
 *
 * What fails the run (exit status 1): a record whose fields do not add up
 * to its header.size, a header.size that is no multiple of 8, a ring walk
 * that does not end exactly at data_head, a record that breaks a promise
 * of the docs, and a child task still there 1 s after SIGKILL. Errors of
 * perf_event_open() and prctl() for invalid input are expected and
 * counted; an errno the docs do not give for that input is a warning
 * line. Every line printed carries the seed: replay with --seed N (the
 * choices replay, the timing does not).
 *
 *   abi_stress [--seed N] [--seconds N] [--keep-going] [--kill-timeout-ms N]
 *              [--avoid stack-intr,stack-zero]
 *
 * --avoid leaves out combinations that failed on two kernel bugs, to look
 * past them on a kernel without the series' first two patches, which fix
 * them (both first found with seed 1 on x86_64):
 *   stack-intr: a PERF_SAMPLE_STACK_USER dump is sized to the room left in
 *     the 16-bit header.size before PERF_SAMPLE_REGS_INTR, sized after
 *     it, is counted: sample_stack_user near 65528 with REGS_INTR wraps
 *     header.size and the sample overwrites the ring;
 *   stack-zero: a user stack dump of size 0 (sample_stack_user 0) is
 *     counted as 8 bytes (its size) but written as 16 (size and
 *     dyn_size): the rest of the sample shifts by 8 and its last 8 bytes
 *     go past header.size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/perf_event.h>
#include <linux/perf_sw_aux.h>
#include <linux/prctl.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif

#define MAX_EVENTS	28	/* open events at once, baseline ones included */
#define MAX_CHILDREN	4
#define NR_THREADS	2	/* mutator threads of the main process */
#define ARENA_SLOTS	16	/* the memory the read programs chase */
#define SLOT_WORDS	32	/* words of a slot that are pointers and lengths */
#define ATTR_BUF	4160	/* an attr of up to a page, and some bytes past it */
#define ID_HISTORY	2048	/* ids of every event opened, for deferred records */
#define UEV_MAGIC	0xab5e0000u	/* uevent type: payload from uev_buf + low bits */
#define UEV_BUF		8192
#define EXEC_DEPTH	3

/*
 * ---- counters: one line at the end and every 10 s ----
 *
 * iter		main loop iterations
 * opened	events opened; open_err: refused (expected or warned)
 * warnings	errnos, or successes, the docs do not give for the input
 * records	records parsed; samples: PERF_RECORD_SAMPLE; lost: LOST
 * tls_sample	samples with a PERF_SAMPLE_TLS_USER dump (size != 0)
 * tls_read	TLS reads that copied bytes (dyn_size != 0), in samples and
 *		in deferred records
 * tls_cookie	samples with a non-zero PERF_TLS_USER_DEFER cookie
 * tls_defer	PERF_RECORD_TLS_USER_DEFERRED records
 * tls_registered, hops, lenfield
 *		reads that copied bytes through a registered context,
 *		pointer hops (or DEREF), a length field
 * reg_ok/err	PR_TASK_PERF_CONTEXT calls that succeeded / failed
 * uevent_ok/fault/err
 *		PR_TASK_PERF_UEVENT calls: 0, EFAULT, other errors
 * uevent_rec	PERF_RECORD_UEVENT records
 * defer_callchain	PERF_RECORD_CALLCHAIN_DEFERRED records
 * cc_cookie	samples whose callchain ends in a deferred cookie
 * stack_user	samples with a user stack dump
 * aux_groups	sw_aux groups set up; aux_samples: samples with AUX data
 * forks, execs, exits, kills
 *		children forked, re-executions, children that exited by
 *		themselves, children SIGKILLed and reaped in time
 * unmaps, mprotects, rewrites
 *		changes to the memory the read programs chase
 */

#define COUNTERS(C)							\
	C(iter) C(opened) C(open_err) C(warnings) C(records) C(samples)	\
	C(lost) C(tls_sample) C(tls_read) C(tls_cookie) C(tls_defer)	\
	C(tls_registered) C(hops) C(lenfield) C(reg_ok) C(reg_err)	\
	C(uevent_ok) C(uevent_fault) C(uevent_err) C(uevent_rec)	\
	C(defer_callchain) C(cc_cookie) C(stack_user) C(aux_groups)	\
	C(aux_samples) C(forks) C(execs) C(exits) C(kills) C(unmaps)	\
	C(mprotects) C(rewrites) C(failures)
#define CTR_ENUM(n)	CTR_##n,
#define CTR_NAME(n)	#n,
enum { COUNTERS(CTR_ENUM) NR_CTR };
static const char *const ctr_names[] = { COUNTERS(CTR_NAME) };

/*
 * In a memfd shared with every child, kept across exec (--counters-fd), so
 * that what children and re-executed children do is counted too.
 */
static uint64_t *ctr;
#define COUNT(n)	__atomic_fetch_add(&ctr[CTR_##n], 1, __ATOMIC_RELAXED)

/* ---- options and global state ---- */

static uint64_t seed;
static unsigned int run_seconds = 60;
static bool keep_going;
static bool avoid_stack_intr;		/* --avoid stack-intr */
static bool avoid_stack_zero;		/* --avoid stack-zero */
static unsigned int kill_timeout_ms = 1000;
static char role[32] = "";		/* " child=PID" in children */
static char exe_path[PATH_MAX];
static int counters_fd = -1;
static long page_size;
static int ncpus;
static int max_stack = 127;		/* kernel.perf_event_max_stack */
static uint32_t sw_aux_type;		/* 0: no sw_aux PMU */
static bool have_cycles;		/* a hardware cycles event opens */
static uint64_t ok_sample_bits;		/* sample bits a cpu-clock event takes */
static intptr_t tls_off;		/* tls_words from the thread pointer */
static volatile int stop;
static pid_t thread_tids[NR_THREADS];
static unsigned int warn_printed;
static int devzero = -1;
static uint64_t proc_stream;		/* 0: main; else a child's, from its parent */

/* ---- output: every line carries the seed ---- */

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= w;
	}
}

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	char buf[1200];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "abi-stress seed=%llu%s ",
		     (unsigned long long)seed, role);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	write_all(1, buf, n);
}

static void hexdump(const char *what, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t off = 0;
	char line[160];
	int n, i;

	while (off < len) {
		/* The head and the tail of a long record are enough. */
		if (len > 1024 && off == 512) {
			size_t skip = ((len - 256) & ~(size_t)31) - off;

			say("  %s ... %zu bytes left out", what, skip);
			off += skip;
		}
		n = snprintf(line, sizeof(line), "  %s %04zx:", what, off);
		for (i = 0; i < 32 && off + i < len; i++)
			n += snprintf(line + n, sizeof(line) - n, " %02x",
				      p[off + i]);
		say("%s", line);
		off += 32;
	}
}

/* ---- random numbers: per thread, each stream derived from the seed ---- */

static __thread uint64_t rng;

static void rng_seed(uint64_t stream)
{
	uint64_t z = seed + (stream + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	rng = (z ^ (z >> 31)) | 1;
}

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int pct)
{
	return below(100) < pct;
}

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define PICK(a)		((a)[below(ARRAY_SIZE(a))])

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* ---- the architectures: thread pointer, user range, kernel addresses ---- */

#if defined(__x86_64__)
#define ARCH_NAME	"x86_64"

static void *thread_pointer(void)
{
	void *tp;

	/* The TCB's first word points to itself (TLS variant II). */
	asm volatile("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}
/* TASK_SIZE_MAX with 4-level paging; with LA57 more is user space. */
#define USER_TOP	0x00007ffffffff000ULL
static const uint64_t kernel_addrs[] = {
	0xffffffff81000000ULL,	/* kernel text */
	0xffff888000000000ULL,	/* direct map */
	0xffffffffff600000ULL,	/* vsyscall page: user readable, not user */
	0xfffffe0000001000ULL,	/* cpu entry area */
	0x8000000000000000ULL,	/* non-canonical */
	0x0000800000000000ULL,	/* non-canonical with 4 levels */
};
/* ax..ss and r8..r15: ds, es, fs and gs are not sampled on x86_64. */
#define REGS_MASK	0x0000000000ff0fffULL
#elif defined(__aarch64__)
#define ARCH_NAME	"arm64"

static void *thread_pointer(void)
{
	void *tp;

	asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}
#define USER_TOP	(1ULL << 48)
static const uint64_t kernel_addrs[] = {
	0xffff800080000000ULL,	/* kernel image */
	0xffff000000000000ULL,	/* linear map */
	0xfffffc0000000000ULL,	/* vmemmap */
	0x8000000000000000ULL,
	0x0001000000000000ULL,	/* past 48-bit user space */
	0x00ff000000001000ULL,
};
#define REGS_MASK	((1ULL << 33) - 1)	/* x0..x30, sp, pc */
#else
#error "abi-stress runs on x86_64 and arm64"
#endif

/*
 * Is [addr, addr + len) a user address range to access_ok()? Near the
 * top of user space the answer depends on the paging mode and on arm64's
 * tagged address ABI, so there it is "maybe".
 */
enum { RANGE_NO, RANGE_YES, RANGE_MAYBE };

static int user_range(uint64_t addr, uint64_t len)
{
	if (addr + len < addr || addr >= (1ULL << 63))
		return RANGE_NO;
	if (addr + len <= USER_TOP - 2 * 4096)
		return RANGE_YES;
	return RANGE_MAYBE;
}

/* ---- faults of our own writes are caught, not fatal ---- */

static __thread sigjmp_buf *volatile fault_jmp;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (fault_jmp)
		siglongjmp(*fault_jmp, 1);
	/* A fault of ours outside a guarded write: die of it. */
	signal(sig, SIG_DFL);
}

/*
 * Events with attr.sigtrap (random flags may ask for it) send SIGTRAP to
 * the task on every overflow: take it, or it kills the task.
 */
static void on_perf_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

/*
 * Write a word that another thread may have just unmapped or protected:
 * the mutators race with each other (and the read programs race with all
 * of them) on purpose.
 */
static bool safe_write64(uint64_t *p, uint64_t v)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 0)) {
		fault_jmp = NULL;
		return false;
	}
	fault_jmp = &jb;
	*(volatile uint64_t *)p = v;
	fault_jmp = NULL;
	return true;
}

/* ---- the memory the read programs chase ---- */

/*
 * TLS that the read programs start at: words 0-7 hold pointers into the
 * arena (or hostile values), words 8-15 lengths. Static TLS of the
 * executable, so its offset from the thread pointer is the same in every
 * thread, child and re-executed child.
 */
static __thread uint64_t tls_words[16] __attribute__((aligned(64)));

/*
 * ARENA_SLOTS slots of two pages, each between PROT_NONE guards; a slot's
 * first SLOT_WORDS words are pointers (0-7), lengths (8-15) and data.
 * Mutators rewrite, protect, unmap and map them again under the readers.
 */
enum { SLOT_RW, SLOT_RO, SLOT_NONE, SLOT_UNMAPPED, SLOT_LOST };
static uint8_t *arena;
static size_t slot_size;
static int slot_state[ARENA_SLOTS];
static int slot_busy[ARENA_SLOTS];
static uint8_t *bus_page;	/* a mapping past the end of its file */
static uint8_t *uev_buf;	/* uevent payloads, a PROT_NONE page after */
static uint8_t *some_ring;	/* a ring buffer mapping, as a target */

static uint8_t *slot_addr(int i)
{
	return arena + (2 * i + 1) * slot_size;
}

static uint64_t good_ptr(void)
{
	return (uint64_t)(slot_addr(below(ARENA_SLOTS)) + 8 * below(16));
}

static uint64_t pick_len(void)
{
	static const uint64_t lens[] = {
		0, 1, 2, 3, 7, 8, 16, 24, 28, 100, 255, 256, 4095, 4096,
		65535, 65536, 1ULL << 31, ~0ULL,
	};

	return chance(60) ? below(64) : PICK(lens);
}

/* A pointer a read program, a registration or a uevent may be given. */
static uint64_t pick_ptr(void)
{
	uint64_t stack = (uint64_t)__builtin_frame_address(0);

	switch (below(13)) {
	case 0:
	case 1:
	case 2:
		return good_ptr();
	case 3:
		return good_ptr() + 1 + below(7);	/* unaligned */
	case 4:
		return 0;
	case 5:
		return PICK(kernel_addrs) + 8 * below(4);
	case 6:
		return USER_TOP - 4096 + 8 * below(1024);	/* the top */
	case 7:
		return (uint64_t)arena + 8 * below(page_size / 8); /* guard */
	case 8:
		return (uint64_t)bus_page + 8 * below(64);	/* SIGBUS */
	case 9:
		return good_ptr() | ((1 + below(255)) << 56);	/* tagged */
	case 10:
		return 8 * below(1024);			/* the zero page */
	case 11:
		return some_ring ? (uint64_t)some_ring + 8 * below(64) : 0;
	default:
		return (stack & ~7ULL) - 8 * below(64);
	}
}

static void fill_slot(int i)
{
	uint64_t *w = (uint64_t *)slot_addr(i);
	int k;

	for (k = 0; k < SLOT_WORDS; k++) {
		uint64_t v;

		if (k < 8)
			v = chance(80) ? good_ptr() : pick_ptr();
		else if (k < 16)
			v = chance(80) ? below(64) : pick_len();
		else
			v = 0x0101010101010101ULL * (uint8_t)(i * 16 + k);
		if (!safe_write64(&w[k], v))
			return;
	}
}

static void set_tls_words(void)
{
	int k;

	for (k = 0; k < 8; k++)
		tls_words[k] = chance(75) ? good_ptr() : pick_ptr();
	for (k = 8; k < 16; k++)
		tls_words[k] = chance(75) ? below(64) : pick_len();
}

static void setup_memory(void)
{
	size_t len;
	int fd, i;

	slot_size = 2 * page_size;
	len = (2 * ARENA_SLOTS + 1) * slot_size;
	arena = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED) {
		say("cannot map the arena: %s", strerror(errno));
		exit(2);
	}
	for (i = 0; i < ARENA_SLOTS; i++) {
		mprotect(slot_addr(i), slot_size, PROT_READ | PROT_WRITE);
		slot_state[i] = SLOT_RW;
	}
	for (i = 0; i < ARENA_SLOTS; i++)
		fill_slot(i);

	/* Two pages of a file that is then cut to nothing: reads fault. */
	fd = memfd_create("abi-stress-bus", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, 2 * page_size) == 0) {
		bus_page = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
				MAP_SHARED, fd, 0);
		if (bus_page == MAP_FAILED)
			bus_page = NULL;
		if (ftruncate(fd, 0))
			bus_page = NULL;
	}
	if (fd >= 0)
		close(fd);
	if (!bus_page)
		bus_page = arena;

	/* uevent payloads: a known pattern, then a PROT_NONE page. */
	uev_buf = mmap(NULL, UEV_BUF + page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (uev_buf == MAP_FAILED) {
		say("cannot map the uevent buffer: %s", strerror(errno));
		exit(2);
	}
	for (i = 0; i < UEV_BUF; i++)
		uev_buf[i] = (uint8_t)(i * 131 + 17);
	mprotect(uev_buf + UEV_BUF, page_size, PROT_NONE);
}

static bool slot_trylock(int i)
{
	return !__atomic_exchange_n(&slot_busy[i], 1, __ATOMIC_ACQUIRE);
}

static void slot_unlock(int i)
{
	__atomic_store_n(&slot_busy[i], 0, __ATOMIC_RELEASE);
}

/*
 * One change to the arena: what a sample's read program (in NMI or on
 * the way back to user space) must survive at any instant.
 */
static void mutate_arena(void)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ, PROT_NONE };
	static const int prot_state[] = { SLOT_RW, SLOT_RO, SLOT_NONE };
	int i = below(ARENA_SLOTS), op = below(12), p, st;
	uint8_t *a = slot_addr(i);
	uint64_t *w = (uint64_t *)a;
	void *m;

	if (op < 6) {
		int k = below(SLOT_WORDS);
		uint64_t v = k < 8 ? pick_ptr() : k < 16 ? pick_len() : rnd();

		if (safe_write64(&w[k], v))
			COUNT(rewrites);
		return;
	}
	if (!slot_trylock(i))
		return;
	st = __atomic_load_n(&slot_state[i], __ATOMIC_RELAXED);
	switch (op) {
	case 6:
	case 7:		/* PROT_NONE, read-only, or back */
		if (st > SLOT_NONE)
			break;
		p = below(3);
		if (!mprotect(a, slot_size, prots[p])) {
			st = prot_state[p];
			COUNT(mprotects);
		}
		break;
	case 8:		/* unmap: a hole that anything may fill */
		if (st > SLOT_NONE)
			break;
		if (!munmap(a, slot_size)) {
			st = SLOT_UNMAPPED;
			COUNT(unmaps);
		}
		break;
	case 9:		/* map again, where nothing else took the hole */
		if (st != SLOT_UNMAPPED)
			break;
		m = mmap(a, slot_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (m == a) {
			st = SLOT_RW;
			fill_slot(i);
		} else {
			if (m != MAP_FAILED)
				munmap(m, slot_size);
			st = SLOT_LOST;
		}
		break;
	case 10:	/* not present: a sample may not fault it in */
		if (st > SLOT_NONE)
			break;
		madvise(a, slot_size, MADV_DONTNEED);
		break;
	default:
		if (st == SLOT_RW)
			fill_slot(i);
		break;
	}
	__atomic_store_n(&slot_state[i], st, __ATOMIC_RELAXED);
	slot_unlock(i);
}

/* ---- expected errors ---- */

/*
 * What the docs say of an input: the errnos they give for each rule it
 * breaks (must_fail when one surely applies), and whether the rest of it
 * is valid as far as this program knows (strict), so that an errno the
 * docs give for nothing here is worth a warning.
 */
struct expect {
	int nerr;
	int err[12];
	bool must_fail;
	bool strict;
};

static void allow(struct expect *x, int e, bool sure)
{
	int i;

	if (sure)
		x->must_fail = true;
	for (i = 0; i < x->nerr; i++)
		if (x->err[i] == e)
			return;
	if (x->nerr < (int)ARRAY_SIZE(x->err))
		x->err[x->nerr++] = e;
}

static bool allowed(const struct expect *x, int e)
{
	int i;

	for (i = 0; i < x->nerr; i++)
		if (x->err[i] == e)
			return true;
	return false;
}

/* What the machine, not the input, can make fail. */
static bool env_errno(int e)
{
	return e == EBUSY || e == EMFILE || e == ENFILE || e == ENOMEM ||
	       e == ESRCH || e == ENOENT || e == EACCES || e == EPERM ||
	       e == ENODEV || e == EINTR || e == EAGAIN;
}

static void __attribute__((format(printf, 2, 3)))
warn(const struct expect *x, const char *fmt, ...)
{
	char msg[600], errs[120] = "";
	va_list ap;
	int i, n = 0;

	COUNT(warnings);
	if (warn_printed >= 40)
		return;
	warn_printed++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (i = 0; i < x->nerr; i++)
		n += snprintf(errs + n, sizeof(errs) - n, "%s%s", i ? "," : "",
			      strerrorname_np(x->err[i]) ?: "?");
	say("WARNING: %s (the docs allow: %s%s)", msg, n ? errs : "success",
	    x->must_fail ? "" : n ? " or success" : "");
}

/*
 * Judge a return value: 0 (or a fd) for input the docs refuse, or an
 * errno they do not give for it, is a warning; anything else counts.
 * Returns true on success.
 */
static bool judge(const struct expect *x, long ret, int e, const char *what)
{
	if (ret >= 0) {
		if (x->must_fail)
			warn(x, "%s succeeded", what);
		return true;
	}
	if (!allowed(x, e) && x->strict && !env_errno(e))
		warn(x, "%s failed with %s", what, strerrorname_np(e) ?: "?");
	return false;
}

/* ---- PR_TASK_PERF_CONTEXT and PR_TASK_PERF_UEVENT ---- */

/*
 * Register a context: good (a TLS word, an arena word), NULL, unaligned,
 * kernel, at the top of user space, unmapped; once in a while with
 * non-zero arguments 3-5.
 */
static void do_register(void)
{
	struct expect x = { .strict = true };
	uint64_t addr, a3 = 0, a4 = 0, a5 = 0;
	long ret;

	switch (below(8)) {
	case 0:
	case 1:
	case 2:
		addr = (uint64_t)&tls_words[below(16)];
		break;
	case 3:
		addr = good_ptr();
		break;
	case 4:
		addr = 0;
		break;
	case 5:
		addr = (uint64_t)&tls_words[below(16)] + 1 + below(7);
		break;
	default:
		addr = pick_ptr();
		break;
	}
	if (chance(5)) {
		switch (below(3)) {
		case 0:
			a3 = 1 + below(1000);
			break;
		case 1:
			a4 = rnd() | 1;
			break;
		default:
			a5 = ~0ULL;
			break;
		}
	}
	if (a3 || a4 || a5 || addr % 8)
		allow(&x, EINVAL, true);
	if (addr) {
		int r = user_range(addr, 8);

		if (r != RANGE_YES)
			allow(&x, EFAULT, r == RANGE_NO && addr % 8 == 0);
	}
	ret = syscall(SYS_prctl, PR_TASK_PERF_CONTEXT, addr, a3, a4, a5);
	if (judge(&x, ret, errno, "prctl(PR_TASK_PERF_CONTEXT)"))
		COUNT(reg_ok);
	else
		COUNT(reg_err);
}

/*
 * Write a uevent: sizes around 0, 256 (the stack copy) and 4096, payloads
 * good, crossing into a PROT_NONE page, NULL, kernel, unmapped, past the
 * end of a file, in a ring buffer; types past 32 bits and flags set now
 * and then. A good payload's type says where in uev_buf it starts, so
 * that the record can be checked byte for byte.
 */
static void do_uevent(void)
{
	static const uint64_t sizes[] = {
		0, 1, 7, 8, 24, 255, 256, 257, 1000, 4095, 4096, 4097, 8192,
		65536, 1ULL << 40,
	};
	struct expect x = { .strict = true };
	uint64_t type, size, data, flags = 0, off = 0;
	bool readable = false;
	int r;
	long ret;

	size = chance(50) ? below(300) : PICK(sizes);
	type = below(4);
	switch (below(10)) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 4:		/* good, now and then running into the guard page */
		off = below(4096);
		data = (uint64_t)uev_buf + off;
		type = UEV_MAGIC | off;
		readable = off + size <= UEV_BUF;
		break;
	case 5:
		data = 0;
		break;
	default:
		data = pick_ptr();
		break;
	}
	if (chance(3))
		type = (1ULL << 32) | below(8);
	if (chance(3))
		flags = 1ULL << below(64);

	if (flags || type > UINT32_MAX)
		allow(&x, EINVAL, true);
	if (size > PERF_UEVENT_MAX_SIZE)
		allow(&x, E2BIG, true);
	if (size && !readable) {
		r = user_range(data, size);
		/* An unreadable user range fails only while someone listens. */
		allow(&x, EFAULT, r == RANGE_NO);
	}
	if (size > 256)
		allow(&x, ENOMEM, false);
	ret = syscall(SYS_prctl, PR_TASK_PERF_UEVENT, type, size, data, flags);
	if (judge(&x, ret, errno, "prctl(PR_TASK_PERF_UEVENT)"))
		COUNT(uevent_ok);
	else if (errno == EFAULT)
		COUNT(uevent_fault);
	else
		COUNT(uevent_err);
}

/*
 * Kernel entries for the samples to land in: system calls, a sleep, page
 * faults, a little user time. Samples in the kernel are the ones whose
 * callchains and TLS reads are deferred.
 */
static void workload(unsigned int n)
{
	char buf[256];
	struct timespec ts;
	volatile uint64_t spin = 0;
	uint8_t *m;
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		switch (below(7)) {
		case 0:
			syscall(SYS_getppid);
			break;
		case 1:
			sched_yield();
			break;
		case 2:
			ts.tv_sec = 0;
			ts.tv_nsec = 1000 * below(300);
			nanosleep(&ts, NULL);
			break;
		case 3:
			if (devzero >= 0 && read(devzero, buf, sizeof(buf)) < 0)
				syscall(SYS_getppid);
			break;
		case 4:
			m = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m != MAP_FAILED) {
				for (k = 0; k < 4; k++)
					m[k * page_size] = k;
				munmap(m, 4 * page_size);
			}
			break;
		default:
			for (k = 0; k < 20000; k++)
				spin += k;
			break;
		}
	}
}

/* One step of a mutator thread, a child, or the main thread. */
static void worker_step(void)
{
	switch (below(12)) {
	case 0:
	case 1:
	case 2:
	case 3:
		mutate_arena();
		break;
	case 4:
		set_tls_words();
		break;
	case 5:
		do_register();
		break;
	case 6:
	case 7:
		do_uevent();
		break;
	default:
		workload(1 + below(6));
		break;
	}
}

static void *mutator(void *arg)
{
	long i = (long)arg;
	struct timespec ts = { 0, 0 };

	rng_seed(proc_stream * 16 + 1 + i);
	thread_tids[i] = gettid();
	set_tls_words();
	syscall(SYS_prctl, PR_TASK_PERF_CONTEXT, &tls_words[0], 0, 0, 0);
	while (!stop) {
		worker_step();
		ts.tv_nsec = 1000 * below(1500);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* ---- events ---- */

struct ev {
	bool used;
	bool permanent;		/* baseline events stay for the whole run */
	int fd;
	struct perf_event_attr attr;	/* as the kernel read it */
	uint64_t id;
	pid_t pid;
	int cpu;
	bool sibling;		/* opened into another event's group */
	bool sw_aux;		/* a sw_aux leader */
	bool aux_sibling;	/* a sibling of a sw_aux leader */
	uint8_t *ring;
	size_t ring_len;
	uint8_t *aux;
	size_t aux_len;
	bool aux_snapshot;
	char name[24];
};

static struct ev evs[MAX_EVENTS];

/* Every event opened: deferred TLS records name their asking event's id. */
static struct {
	uint64_t id;
	uint16_t tls_size;
	uint16_t tls_flags;
	uint8_t hops;
	uint8_t len_size;
} id_hist[ID_HISTORY];
static unsigned int id_next;

struct kind {
	uint32_t type;
	uint64_t config;
	const char *name;
	enum { PK_TIME, PK_COUNT, PK_NONE, PK_TP } period;
};

static struct kind kinds[16];
static int nkinds;

static void dump_attr(const struct perf_event_attr *a)
{
	const uint64_t *flags = (const uint64_t *)((const char *)a +
		offsetof(struct perf_event_attr, read_format) + 8);

	say("  attr: type=%u size=%u config=%#llx period=%llu sample_type=%#llx read_format=%#llx flags=%#llx",
	    a->type, a->size, (unsigned long long)a->config,
	    (unsigned long long)a->sample_period,
	    (unsigned long long)a->sample_type,
	    (unsigned long long)a->read_format, (unsigned long long)*flags);
	say("  attr: regs_user=%#llx stack_user=%u regs_intr=%#llx max_stack=%u aux_sample_size=%u clockid=%d",
	    (unsigned long long)a->sample_regs_user, a->sample_stack_user,
	    (unsigned long long)a->sample_regs_intr, a->sample_max_stack,
	    a->aux_sample_size, a->clockid);
	say("  attr: sample_tls_user=%u tls_user_offset=%d tls_user_flags=%#x deref_offset=%u hops=%u hop_offset=%d,%d,%d,%d len_size=%u len_offset=%u len_base=%u len_shift=%u",
	    a->sample_tls_user, a->tls_user_offset, a->tls_user_flags,
	    a->tls_user_deref_offset, a->tls_user_hops,
	    a->tls_user_hop_offset[0], a->tls_user_hop_offset[1],
	    a->tls_user_hop_offset[2], a->tls_user_hop_offset[3],
	    a->tls_user_len_size, a->tls_user_len_offset,
	    a->tls_user_len_base, a->tls_user_len_shift);
	hexdump("attr", a, sizeof(*a));
}

static void finish(int rc);

/*
 * A failure: the message, the event and its attr, the record in hex, the
 * counters; then out, unless --keep-going.
 */
static void __attribute__((format(printf, 4, 5)))
fail_rec(const struct ev *e, const void *rec, size_t len, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	COUNT(failures);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say("FAILURE: %s", msg);
	if (e) {
		say("  event %s fd=%d id=%llu pid=%d cpu=%d", e->name, e->fd,
		    (unsigned long long)e->id, e->pid, e->cpu);
		dump_attr(&e->attr);
	}
	if (rec)
		hexdump("record", rec, len);
	if (!keep_going)
		finish(1);
}

static unsigned int sample_id_size(uint64_t st)
{
	return 8 * __builtin_popcountll(st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					      PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
					      PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER));
}

/* A cursor over one record; take() refuses to go past its end. */
struct cur {
	const uint8_t *p, *end;
};

static const uint8_t *take(struct cur *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if (n > (uint64_t)(c->end - c->p))
		return NULL;
	c->p += n;
	return p;
}

static bool take64(struct cur *c, uint64_t *v)
{
	const uint8_t *p = take(c, 8);

	if (p)
		memcpy(v, p, 8);
	return p;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * perf_tls_user.rst: the @size bytes of a TLS dump past its @dyn bytes
 * are zero, but for data[0] when nothing was read: why, an enum
 * perf_tls_user_unread.
 */
static bool tls_rest_ok(const uint8_t *p, uint64_t size, uint64_t dyn)
{
	if (dyn || !size)
		return all_zero(p + dyn, size - dyn);
	return p[0] <= PERF_TLS_USER_UNREAD_NO_MEMORY && all_zero(p + 1, size - 1);
}

/* read_format values, as in a sample's PERF_SAMPLE_READ and a READ record. */
static bool take_read(struct cur *c, uint64_t rf)
{
	unsigned int per = 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST));
	unsigned int times = 8 * (!!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
				  !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));
	uint64_t nr;

	if (!(rf & PERF_FORMAT_GROUP))
		return take(c, per + times);
	if (!take64(c, &nr) || nr > 4096)
		return false;
	return take(c, times) && take(c, nr * per);
}

/* A NUL-terminated name padded to 8 bytes, up to the sample_id. */
static bool take_string(struct cur *c, unsigned int idsz)
{
	const uint8_t *p = c->p;
	size_t room = c->end - c->p, n;

	if (room < idsz)
		return false;
	room -= idsz;
	n = strnlen((const char *)p, room);
	if (n == room)
		return false;
	return take(c, (n + 8) & ~7UL);
}

static void *find_id(uint64_t id)
{
	unsigned int i;

	for (i = 0; i < ID_HISTORY; i++)
		if (id_hist[i].id == id && id)
			return &id_hist[i];
	return NULL;
}

/* Count what a TLS item shows of the read program it came from. */
static void count_tls_read(uint16_t flags, uint8_t hops, uint8_t len_size,
			   uint64_t dyn)
{
	if (!dyn)
		return;
	COUNT(tls_read);
	if (flags & PERF_TLS_USER_REGISTERED)
		COUNT(tls_registered);
	if (hops || (flags & PERF_TLS_USER_DEREF))
		COUNT(hops);
	if (len_size)
		COUNT(lenfield);
}

/*
 * The AUX snapshot of a sw_aux leader in a sample: whole records, oldest
 * first, then zeroes; a record never has time 0 and seq only grows.
 */
static const char *check_sw_aux_data(const uint8_t *p, uint64_t n)
{
	struct sw_aux_record r;
	bool pad = false, have = false;
	uint64_t off, seq = 0;

	for (off = 0; off + SW_AUX_RECORD_SIZE <= n; off += SW_AUX_RECORD_SIZE) {
		if (all_zero(p + off, SW_AUX_RECORD_SIZE)) {
			pad = true;
			continue;
		}
		memcpy(&r, p + off, sizeof(r));
		if (pad)
			return "a sw_aux record after the zero padding";
		if (!r.time)
			return "a sw_aux record with time 0 (half written?)";
		if (have && r.seq <= seq)
			return "sw_aux records out of seq order";
		seq = r.seq;
		have = true;
	}
	if (!all_zero(p + off, n - off))
		return "the partial sw_aux slot at the end is not zero";
	return NULL;
}

/* Parse a PERF_RECORD_SAMPLE in the order of perf_event.h. */
static void check_sample(struct ev *e, const uint8_t *rec, uint32_t len)
{
	const struct perf_event_attr *a = &e->attr;
	uint64_t st = a->sample_type, nr, v, size, dyn, i;
	struct cur c = { rec + 8, rec + len };
	const uint8_t *p;
	const char *what;

	COUNT(samples);
#define FIXED(bit, name)						\
	do {								\
		if ((st & (bit)) && !take(&c, 8)) {			\
			what = name;					\
			goto short_rec;					\
		}							\
	} while (0)
#define NEED(expr, name)						\
	do {								\
		if (!(expr)) {						\
			what = name;					\
			goto short_rec;					\
		}							\
	} while (0)

	FIXED(PERF_SAMPLE_IDENTIFIER, "identifier");
	FIXED(PERF_SAMPLE_IP, "ip");
	FIXED(PERF_SAMPLE_TID, "tid");
	FIXED(PERF_SAMPLE_TIME, "time");
	FIXED(PERF_SAMPLE_ADDR, "addr");
	FIXED(PERF_SAMPLE_ID, "id");
	FIXED(PERF_SAMPLE_STREAM_ID, "stream_id");
	FIXED(PERF_SAMPLE_CPU, "cpu");
	FIXED(PERF_SAMPLE_PERIOD, "period");
	if (st & PERF_SAMPLE_READ)
		NEED(take_read(&c, a->read_format), "read values");
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(take64(&c, &nr) && nr <= 65536, "callchain nr");
		NEED(p = take(&c, nr * 8), "callchain ips");
		for (i = 0; i < nr; i++) {
			memcpy(&v, p + 8 * i, 8);
			if (v != PERF_CONTEXT_USER_DEFERRED)
				continue;
			/* perf_deferred_callchain.rst: the marker, one cookie, the end */
			if (i + 2 != nr) {
				fail_rec(e, rec, len, "PERF_CONTEXT_USER_DEFERRED at %llu of a %llu-entry callchain",
					 (unsigned long long)i, (unsigned long long)nr);
				return;
			}
			memcpy(&v, p + 8 * (i + 1), 8);
			if (!v) {
				fail_rec(e, rec, len, "a deferred callchain with cookie 0");
				return;
			}
			COUNT(cc_cookie);
			break;
		}
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t raw;

		NEED(p = take(&c, 4), "raw size");
		memcpy(&raw, p, 4);
		NEED(take(&c, raw), "raw data");
		if ((raw + 4) % 8) {
			fail_rec(e, rec, len, "raw size %u leaves the sample unaligned", raw);
			return;
		}
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		NEED(take64(&c, &nr) && nr <= 1024, "branch nr");
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			NEED(take(&c, 8), "branch hw_idx");
		NEED(take(&c, nr * 24), "branch entries");
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS)
			NEED(take(&c, nr * 8), "branch counters");
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		NEED(take64(&c, &v), "regs_user abi");
		if (v)
			NEED(take(&c, 8 * __builtin_popcountll(a->sample_regs_user)),
			     "regs_user");
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		NEED(take64(&c, &size), "stack_user size");
		if (size % 8 || size > a->sample_stack_user) {
			fail_rec(e, rec, len, "stack_user size %llu (sample_stack_user %u)",
				 (unsigned long long)size, a->sample_stack_user);
			return;
		}
		if (size) {
			NEED(take(&c, size), "stack_user data");
			NEED(take64(&c, &dyn), "stack_user dyn_size");
			if (dyn > size) {
				fail_rec(e, rec, len, "stack_user dyn_size %llu > size %llu",
					 (unsigned long long)dyn, (unsigned long long)size);
				return;
			}
			COUNT(stack_user);
		}
	}
	FIXED(PERF_SAMPLE_WEIGHT_TYPE, "weight");
	FIXED(PERF_SAMPLE_DATA_SRC, "data_src");
	FIXED(PERF_SAMPLE_TRANSACTION, "transaction");
	if (st & PERF_SAMPLE_REGS_INTR) {
		NEED(take64(&c, &v), "regs_intr abi");
		if (v)
			NEED(take(&c, 8 * __builtin_popcountll(a->sample_regs_intr)),
			     "regs_intr");
	}
	FIXED(PERF_SAMPLE_PHYS_ADDR, "phys_addr");
	FIXED(PERF_SAMPLE_CGROUP, "cgroup");
	FIXED(PERF_SAMPLE_DATA_PAGE_SIZE, "data_page_size");
	FIXED(PERF_SAMPLE_CODE_PAGE_SIZE, "code_page_size");
	if (st & PERF_SAMPLE_AUX) {
		NEED(take64(&c, &size), "aux size");
		if (size % 8 || size > a->aux_sample_size) {
			fail_rec(e, rec, len, "aux size %llu (aux_sample_size %u)",
				 (unsigned long long)size, a->aux_sample_size);
			return;
		}
		NEED(p = take(&c, size), "aux data");
		if (size) {
			COUNT(aux_samples);
			what = e->aux_sibling ? check_sw_aux_data(p, size) : NULL;
			if (what) {
				fail_rec(e, rec, len, "%s", what);
				return;
			}
		}
	}
	if (st & PERF_SAMPLE_TLS_USER) {
		v = 0;
		if (a->tls_user_flags & PERF_TLS_USER_DEFER) {
			/* perf_tls_user.rst: the cookie, then the dump */
			NEED(take64(&c, &v), "tls cookie");
			if (v)
				COUNT(tls_cookie);
		}
		/* { u64 size; u8 data[size]; u64 dyn_size if size } */
		NEED(take64(&c, &size), "tls size");
		if (size % 8 || size > a->sample_tls_user || (v && size)) {
			fail_rec(e, rec, len, "tls size %llu (sample_tls_user %u, cookie %#llx)",
				 (unsigned long long)size, a->sample_tls_user,
				 (unsigned long long)v);
			return;
		}
		if (size) {
			NEED(p = take(&c, size), "tls data");
			NEED(take64(&c, &dyn), "tls dyn_size");
			if (dyn > size) {
				fail_rec(e, rec, len, "tls dyn_size %llu > size %llu",
					 (unsigned long long)dyn,
					 (unsigned long long)size);
				return;
			}
			if (!tls_rest_ok(p, size, dyn)) {
				fail_rec(e, rec, len, "tls data past dyn_size %llu is not zero",
					 (unsigned long long)dyn);
				return;
			}
			COUNT(tls_sample);
			count_tls_read(a->tls_user_flags, a->tls_user_hops,
				       a->tls_user_len_size, dyn);
		}
	}
	if (c.p != c.end)
		fail_rec(e, rec, len, "sample of %u bytes: its fields take %zu",
			 len, (size_t)(c.p - rec));
	return;

short_rec:
	fail_rec(e, rec, len, "sample of %u bytes ends inside %s", len, what);
#undef FIXED
#undef NEED
}

/* Parse one record by its event's attr and check it against header.size. */
static void check_record(struct ev *e, const uint8_t *rec, uint32_t len)
{
	const struct perf_event_attr *a = &e->attr;
	const struct perf_event_header *h = (const void *)rec;
	unsigned int idsz = a->sample_id_all ? sample_id_size(a->sample_type) : 0;
	struct cur c = { rec + 8, rec + len };
	uint64_t v, nr, size, dyn, id, i;
	uint32_t u[2];
	uint16_t tp[2];
	const uint8_t *p;
	bool ok = true;

	COUNT(records);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		check_sample(e, rec, len);
		return;
	case PERF_RECORD_MMAP:
		ok = take(&c, 32) && take_string(&c, idsz);
		break;
	case PERF_RECORD_MMAP2:
		ok = take(&c, 64) && take_string(&c, idsz);
		break;
	case PERF_RECORD_COMM:
		ok = take(&c, 8) && take_string(&c, idsz);
		break;
	case PERF_RECORD_CGROUP:
		ok = take(&c, 8) && take_string(&c, idsz);
		break;
	case PERF_RECORD_KSYMBOL:
		ok = take(&c, 16) && take_string(&c, idsz);
		break;
	case PERF_RECORD_LOST:
		COUNT(lost);
		ok = take(&c, 16);
		break;
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PERF_RECORD_AUX:
		ok = take(&c, 24);
		break;
	case PERF_RECORD_BPF_EVENT:
		ok = take(&c, 16);
		break;
	case PERF_RECORD_READ:
		ok = take(&c, 8) && take_read(&c, a->read_format);
		break;
	case PERF_RECORD_ITRACE_START:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_AUX_OUTPUT_HW_ID:
		ok = take(&c, 8);
		break;
	case PERF_RECORD_SWITCH:
		break;
	case PERF_RECORD_NAMESPACES:
		ok = take(&c, 8) && take64(&c, &nr) && nr < 64 &&
		     take(&c, 16 * nr);
		break;
	case PERF_RECORD_TEXT_POKE:
		ok = take(&c, 8) && (p = take(&c, 4));
		if (ok) {
			memcpy(tp, p, 4);
			ok = take(&c, ((4 + tp[0] + tp[1] + 7) & ~7) - 4);
		}
		break;
	case PERF_RECORD_CALLCHAIN_DEFERRED:
		/* perf_deferred_callchain.rst: cookie, nr, ips[nr] */
		if (!a->defer_output) {
			fail_rec(e, rec, len, "CALLCHAIN_DEFERRED in an event without defer_output");
			return;
		}
		ok = take64(&c, &v) && take64(&c, &nr) && nr <= 512 &&
		     (p = take(&c, 8 * nr));
		if (!ok)
			break;
		if (!v) {
			fail_rec(e, rec, len, "CALLCHAIN_DEFERRED with cookie 0");
			return;
		}
		for (i = 0; i < nr; i++) {
			memcpy(&v, p + 8 * i, 8);
			if (v >= (1ULL << 63)) {
				fail_rec(e, rec, len, "a kernel address in a deferred user callchain");
				return;
			}
		}
		COUNT(defer_callchain);
		break;
	case PERF_RECORD_TLS_USER_DEFERRED:
		/* perf_tls_user.rst: cookie, id, size, data[size], dyn_size */
		if (!a->defer_output) {
			fail_rec(e, rec, len, "TLS_USER_DEFERRED in an event without defer_output");
			return;
		}
		ok = take64(&c, &v) && take64(&c, &id) && take64(&c, &size) &&
		     size <= PERF_TLS_USER_MAX_SIZE && (p = take(&c, size)) &&
		     take64(&c, &dyn);
		if (!ok)
			break;
		if (!v || !size || size % 8 || dyn > size ||
		    !tls_rest_ok(p, size, dyn)) {
			fail_rec(e, rec, len, "TLS_USER_DEFERRED cookie %#llx size %llu dyn_size %llu: a zero cookie, a bad size, or data past dyn_size",
				 (unsigned long long)v, (unsigned long long)size,
				 (unsigned long long)dyn);
			return;
		}
		if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER) {
			fail_rec(e, rec, len, "TLS_USER_DEFERRED misc %#x", h->misc);
			return;
		}
		{
			typeof(&id_hist[0]) ask = find_id(id);

			if (ask && (!(ask->tls_flags & PERF_TLS_USER_DEFER) ||
				    ask->tls_size != size)) {
				fail_rec(e, rec, len, "TLS_USER_DEFERRED of size %llu for id %llu, whose event has sample_tls_user %u, flags %#x",
					 (unsigned long long)size,
					 (unsigned long long)id, ask->tls_size,
					 ask->tls_flags);
				return;
			}
			if (ask)
				count_tls_read(ask->tls_flags, ask->hops,
					       ask->len_size, dyn);
		}
		COUNT(tls_defer);
		break;
	case PERF_RECORD_UEVENT:
		/* perf_uevent.rst: type, size, data[size], pad[-size & 7] */
		if (!a->uevents) {
			fail_rec(e, rec, len, "UEVENT in an event without uevents");
			return;
		}
		ok = (p = take(&c, 8));
		if (!ok)
			break;
		memcpy(u, p, 8);
		ok = u[1] <= PERF_UEVENT_MAX_SIZE &&
		     (p = take(&c, (u[1] + 7) & ~7u));
		if (!ok)
			break;
		if (!all_zero(p + u[1], -u[1] & 7)) {
			fail_rec(e, rec, len, "UEVENT padding is not zero");
			return;
		}
		if ((u[0] & 0xfffff000u) == UEV_MAGIC &&
		    (u[0] & 0xfff) + u[1] <= UEV_BUF &&
		    memcmp(p, uev_buf + (u[0] & 0xfff), u[1])) {
			fail_rec(e, rec, len, "UEVENT payload differs from what was written");
			return;
		}
		COUNT(uevent_rec);
		break;
	default:
		fail_rec(e, rec, len, "unknown record type %u", h->type);
		return;
	}
	if (!ok || c.p + idsz != c.end)
		fail_rec(e, rec, len, "record type %u of %u bytes: its fields%s and a %u-byte sample_id take %s%zu",
			 h->type, len, ok ? "" : " (cut short)", idsz,
			 ok ? "" : "more than ", (size_t)(c.p - rec) + idsz);
}

static void ring_copy(void *dst, const uint8_t *data, uint64_t size,
		      uint64_t pos, uint64_t n)
{
	uint64_t off = pos & (size - 1), first = size - off;

	if (first >= n) {
		memcpy(dst, data + off, n);
	} else {
		memcpy(dst, data + off, first);
		memcpy((uint8_t *)dst + first, data, n - first);
	}
}

/*
 * Walk an event's ring from data_tail to data_head, record by record:
 * each header.size a multiple of 8 that fits, the walk ending exactly at
 * data_head.
 */
static void drain(struct ev *e)
{
	static uint8_t rec[65536] __attribute__((aligned(8)));
	struct perf_event_mmap_page *pg = (void *)e->ring;
	struct perf_event_header h, prev = { 0, 0, 0 };
	uint64_t head, tail, from, to, size, prev_pos = 0;
	const uint8_t *data;

	if (!e->ring)
		return;
	size = pg->data_size;
	data = e->ring + pg->data_offset;
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	tail = pg->data_tail;
	/*
	 * A ring written backward (attr.write_backward) grows down from 0:
	 * its new records run from data_head up to where the last walk
	 * began (data_tail, set to data_head after each walk).
	 */
	from = e->attr.write_backward ? head : tail;
	to = e->attr.write_backward ? tail : head;
	if (to - from > size) {
		fail_rec(e, NULL, 0, "data_head %llu is past data_tail %llu by more than the %llu-byte buffer",
			 (unsigned long long)head, (unsigned long long)tail,
			 (unsigned long long)size);
		return;
	}
	while (from != to) {
		if (to - from < sizeof(h)) {
			fail_rec(e, NULL, 0, "the walk ends %llu bytes before data_head",
				 (unsigned long long)(to - from));
			break;
		}
		ring_copy(&h, data, size, from, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > to - from) {
			ring_copy(rec, data, size, from,
				  to - from < 256 ? to - from : 256);
			fail_rec(e, rec, to - from < 256 ? to - from : 256,
				 "header.size %u of a type %u record at %llu, %llu bytes before data_head (the record before: type %u, size %u, at %llu%s)",
				 h.size, h.type, (unsigned long long)from,
				 (unsigned long long)(to - from), prev.type,
				 prev.size, (unsigned long long)prev_pos,
				 prev.size ? "" : ", none read in this walk");
			break;
		}
		ring_copy(rec, data, size, from, h.size);
		check_record(e, rec, h.size);
		/* Full-trace AUX: hand the data back, start again if truncated. */
		if (h.type == PERF_RECORD_AUX && e->aux && !e->aux_snapshot) {
			uint64_t aux[3];

			memcpy(aux, rec + 8, sizeof(aux));
			__atomic_store_n(&pg->aux_tail, aux[0] + aux[1], __ATOMIC_RELEASE);
			if (aux[2] & PERF_AUX_FLAG_TRUNCATED)
				ioctl(e->fd, PERF_EVENT_IOC_ENABLE, 0);
		}
		prev = h;
		prev_pos = from;
		from += h.size;
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
}

static void drain_all(void)
{
	int i;

	for (i = 0; i < MAX_EVENTS; i++)
		if (evs[i].used)
			drain(&evs[i]);
}

static bool finishing;

static void close_event(struct ev *e)
{
	if (!finishing)
		drain(e);
	if (e->aux)
		munmap(e->aux, e->aux_len);
	if (e->ring)
		munmap(e->ring, e->ring_len);
	if (e->ring == some_ring)
		some_ring = NULL;
	close(e->fd);
	memset(e, 0, sizeof(*e));
}

static struct ev *free_slot(void)
{
	int i, tries;

	for (i = 0; i < MAX_EVENTS; i++)
		if (!evs[i].used)
			return &evs[i];
	/* Full: close a random event that is not a baseline one. */
	for (tries = 0; tries < 64; tries++) {
		struct ev *e = &evs[below(MAX_EVENTS)];

		if (!e->permanent) {
			close_event(e);
			return e;
		}
	}
	return NULL;
}

/*
 * The attr as the kernel reads it: size 0 is PERF_ATTR_SIZE_VER0, bytes
 * at and past size are zero. Also the errnos perf_event_open() may give
 * for what the series adds (perf_tls_user.rst, perf_uevent.rst,
 * perf_deferred_callchain.rst "Errors") and the core rules this program
 * breaks on purpose.
 */
static void predict(const uint8_t *raw, const struct perf_event_attr *leader,
		    bool task, struct perf_event_attr *a, struct expect *x)
{
	const struct perf_event_attr *r = (const void *)raw;
	uint32_t size = r->size ? r->size : PERF_ATTR_SIZE_VER0;
	uint64_t flags;
	int i;

	memset(a, 0, sizeof(*a));
	if (size < PERF_ATTR_SIZE_VER0 || size > page_size ||
	    (size > sizeof(*a) && !all_zero(raw + sizeof(*a), size - sizeof(*a)))) {
		allow(x, E2BIG, true);
		return;
	}
	memcpy(a, raw, size < sizeof(*a) ? size : sizeof(*a));
	a->size = size;

	if (a->config4 || !all_zero((const uint8_t *)a->__reserved_upstream,
				    sizeof(a->__reserved_upstream)))
		allow(x, E2BIG, true);
	memcpy(&flags, (const uint8_t *)a +
	       offsetof(struct perf_event_attr, read_format) + 8, 8);
	if (flags & (((1ULL << 23) - 1) << 40))	/* bits 40-62 */
		allow(x, EINVAL, true);
	if (a->sample_type & ~(PERF_SAMPLE_MAX - 1) & ~PERF_SAMPLE_TLS_USER)
		allow(x, EINVAL, true);

	if (a->sample_type & PERF_SAMPLE_TLS_USER) {
		uint16_t s = a->sample_tls_user;
		uint16_t f = a->tls_user_flags;

		if (!s || s > PERF_TLS_USER_MAX_SIZE || s % 8)
			allow(x, EINVAL, true);
		if (f & ~(PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER |
			  PERF_TLS_USER_REGISTERED))
			allow(x, EINVAL, true);
		if (!(f & PERF_TLS_USER_DEREF) && a->tls_user_deref_offset)
			allow(x, EINVAL, true);
		if (a->tls_user_hops > PERF_TLS_USER_MAX_HOPS ||
		    (a->tls_user_hops && (f & PERF_TLS_USER_DEREF)))
			allow(x, EINVAL, true);
		for (i = a->tls_user_hops; i < PERF_TLS_USER_MAX_HOPS; i++)
			if (a->tls_user_hop_offset[i])
				allow(x, EINVAL, true);
		switch (a->tls_user_len_size) {
		case 0:
			if (a->tls_user_len_offset || a->tls_user_len_base ||
			    a->tls_user_len_shift)
				allow(x, EINVAL, true);
			break;
		case 1:
		case 2:
		case 4:
		case 8:
			if (a->tls_user_len_offset + a->tls_user_len_size > s ||
			    a->tls_user_len_base > s ||
			    a->tls_user_len_shift > PERF_TLS_USER_MAX_LEN_SHIFT)
				allow(x, EINVAL, true);
			break;
		default:
			allow(x, EINVAL, true);
		}
	} else if (a->sample_tls_user || a->tls_user_offset ||
		   a->tls_user_flags || a->tls_user_deref_offset ||
		   a->tls_user_hops || a->tls_user_len_size ||
		   a->tls_user_len_offset || a->tls_user_len_base ||
		   a->tls_user_len_shift ||
		   !all_zero((const uint8_t *)a->tls_user_hop_offset,
			     sizeof(a->tls_user_hop_offset))) {
		allow(x, EINVAL, true);
	}
	if (!all_zero(a->__reserved_tls, sizeof(a->__reserved_tls)) ||
	    a->__reserved_tls_1)
		allow(x, EINVAL, true);

	if (a->uevents && (!a->sample_id_all || !(a->sample_type & PERF_SAMPLE_TID)))
		allow(x, EINVAL, true);

	/* Core rules the generator goes near (a short size zeroes masks). */
	if ((a->sample_type & PERF_SAMPLE_REGS_USER) && !a->sample_regs_user)
		allow(x, EINVAL, true);
	if ((a->sample_type & PERF_SAMPLE_REGS_INTR) && !a->sample_regs_intr)
		allow(x, EINVAL, true);
	if ((a->sample_type & PERF_SAMPLE_STACK_USER) &&
	    (a->sample_stack_user >= 65535 || a->sample_stack_user % 8))
		allow(x, EINVAL, true);
	if ((a->sample_type & PERF_SAMPLE_CALLCHAIN) &&
	    a->sample_max_stack > max_stack)
		allow(x, EOVERFLOW, true);
	if (a->inherit && (a->sample_type & PERF_SAMPLE_READ) &&
	    !(a->sample_type & PERF_SAMPLE_TID))
		allow(x, EINVAL, true);
	/* The kernel may lower the sample rate under load. */
	if (a->freq)
		allow(x, EINVAL, false);
	/* Only software PMUs take clocks that are not NMI safe. */
	if (a->use_clockid && a->type != PERF_TYPE_SOFTWARE &&
	    a->clockid != CLOCK_MONOTONIC && a->clockid != CLOCK_MONOTONIC_RAW)
		allow(x, EINVAL, true);
	/* PMU drivers refuse what they cannot filter (arm64: exclude_idle). */
	if (a->type == PERF_TYPE_HARDWARE && a->exclude_idle)
		allow(x, EOPNOTSUPP, false);
	/* A group has one clock, and a task's group one inherit. */
	if (leader && (leader->use_clockid != a->use_clockid ||
		       (a->use_clockid && leader->clockid != a->clockid)))
		allow(x, EINVAL, true);
	if (leader && task && leader->inherit != a->inherit)
		allow(x, EINVAL, true);
}

/* ---- the attr generator ---- */

static void gen_tls(struct perf_event_attr *a)
{
	static const uint16_t bad_sizes[] = { 0, 4, 12, 4097, 4104, 8192, 65528, 65535 };
	static const int32_t bad_offsets[] = {
		0, 1, -8, 4096, -4096, INT32_MIN, INT32_MAX, 65536, -65536,
	};
	static const int32_t bad_hop_offsets[] = {
		INT32_MIN, INT32_MAX, -8, 1, 4, 4096, -4096, 65536, -1,
	};
	static const uint8_t bad_len_sizes[] = { 3, 5, 16, 255 };
	uint16_t s;
	int i;

	a->sample_type |= PERF_SAMPLE_TLS_USER;
	switch (below(20)) {
	case 0:
		s = PICK(bad_sizes);
		break;
	case 1:
		s = PERF_TLS_USER_MAX_SIZE;
		break;
	case 2:
	case 3:
	case 4:
		s = 8 * (1 + below(512));
		break;
	default:
		s = 8 * (1 + below(12));
		break;
	}
	a->sample_tls_user = s;

	if (chance(35))
		a->tls_user_flags |= PERF_TLS_USER_DEREF;
	if (chance(35))
		a->tls_user_flags |= PERF_TLS_USER_DEFER;
	if (chance(35))
		a->tls_user_flags |= PERF_TLS_USER_REGISTERED;
	if (chance(4))
		a->tls_user_flags |= 1u << (3 + below(13));	/* unknown */

	/* Registered: from the registered address (a TLS or arena word). */
	if (chance(75))
		a->tls_user_offset = (a->tls_user_flags & PERF_TLS_USER_REGISTERED) ?
			8 * (int)below(8) : tls_off + 8 * ((int)below(12) - 2);
	else
		a->tls_user_offset = chance(50) ? PICK(bad_offsets) : (int32_t)rnd();

	if (a->tls_user_flags & PERF_TLS_USER_DEREF) {
		a->tls_user_deref_offset = chance(80) ? 8 * below(16) : (uint16_t)rnd();
		if (chance(5))
			a->tls_user_hops = 1 + below(4);	/* invalid */
	} else {
		if (chance(4))
			a->tls_user_deref_offset = 8;		/* invalid */
		a->tls_user_hops = chance(70) ? below(5) : 0;
		if (chance(3))
			a->tls_user_hops = 5 + below(251);	/* invalid */
	}
	for (i = 0; i < a->tls_user_hops && i < PERF_TLS_USER_MAX_HOPS; i++)
		a->tls_user_hop_offset[i] = chance(75) ? 8 * (int)below(16) :
					    PICK(bad_hop_offsets);
	if (chance(3))	/* an offset past the hops: invalid */
		a->tls_user_hop_offset[PERF_TLS_USER_MAX_HOPS - 1] = 8;

	/* A length field: words 8-15 of a slot or of tls_words hold lengths. */
	if (chance(50)) {
		a->tls_user_len_size = chance(95) ? 1 << below(4) : PICK(bad_len_sizes);
		a->tls_user_len_offset = chance(70) ? 64 + 8 * below(8) :
					 below(s + 2);
		if (a->tls_user_len_size <= 8 && chance(30))
			a->tls_user_len_offset += below(8) & ~(a->tls_user_len_size - 1);
		a->tls_user_len_base = chance(90) ? below(s + 1) : s + 8u;
		a->tls_user_len_shift = chance(95) ? below(PERF_TLS_USER_MAX_LEN_SHIFT + 1) :
					13 + below(243);
		/* Mostly keep it inside the dump, as the docs require. */
		if (chance(85) && a->tls_user_len_size <= 8 &&
		    a->tls_user_len_offset + a->tls_user_len_size > s)
			a->tls_user_len_offset = s - a->tls_user_len_size;
	} else if (chance(4)) {
		a->tls_user_len_shift = 1;			/* invalid */
	}
	if (chance(2))
		a->__reserved_tls[below(3)] = 1;
	if (chance(2))
		a->__reserved_tls_1 = 1;
}

static void gen_stack_user(struct perf_event_attr *a)
{
	static const uint32_t sizes[] = {
		8, 64, 512, 4096, 8192, 16384, 32768, 65528, 65528, 65535,
		65536, 12, 0,
	};

	a->sample_type |= PERF_SAMPLE_STACK_USER;
	do
		a->sample_stack_user = PICK(sizes);
	while (avoid_stack_zero && !a->sample_stack_user);
	if (chance(50)) {
		a->sample_type |= PERF_SAMPLE_REGS_USER;
		a->sample_regs_user = REGS_MASK & (rnd() | 1);
	}
}

/* Sample bits besides the series' own, from those this kernel takes. */
static uint64_t gen_sample_bits(unsigned int pct)
{
	uint64_t st = 0;
	int b;

	for (b = 0; b < 64; b++)
		if ((ok_sample_bits & (1ULL << b)) && chance(pct))
			st |= 1ULL << b;
	if ((st & PERF_SAMPLE_WEIGHT) && (st & PERF_SAMPLE_WEIGHT_STRUCT))
		st &= ~PERF_SAMPLE_WEIGHT_STRUCT;
	return st;
}

/*
 * A random attr in raw (ATTR_BUF bytes, zeroed): a kind of event, sample
 * bits, the series' fields, and a size around the extension sizes. Returns
 * false when it broke a rule of the core that predict() does not model
 * (the chaos share): errnos then give no warnings.
 */
static bool gen_attr(uint8_t *raw, const struct kind *k, bool task, bool aux_sibling)
{
	static const uint32_t sizes[] = {
		0, 64, 120, 136, 144, 200, 256, 264, 268, 270, 271, 272, 273,
		276, 280, 288, 291, 292, 295, 297, 300, 304, 312, 512, 1024,
		4096, 4097, 8192, 63, 8,
	};
	struct perf_event_attr *a = (void *)raw;
	bool rest_ok = true;

	a->type = k->type;
	a->config = k->config;
	switch (k->period) {
	case PK_TIME:
		if (chance(15)) {
			a->freq = 1;
			a->sample_freq = 100 + below(3900);
		} else {
			a->sample_period = 100000 + below(1900000);
		}
		break;
	case PK_COUNT:
		a->sample_period = 1 + below(8);
		break;
	case PK_TP:
		a->sample_period = 1 + below(4);
		break;
	case PK_NONE:
		break;
	}
	a->sample_type = gen_sample_bits(k->period == PK_TP ? 40 : 25);
	if (k->period == PK_TP && chance(60))
		a->sample_type |= PERF_SAMPLE_RAW & ok_sample_bits;
	if (a->sample_type & PERF_SAMPLE_REGS_USER)
		a->sample_regs_user = REGS_MASK & (rnd() | 1);
	if (a->sample_type & PERF_SAMPLE_REGS_INTR)
		a->sample_regs_intr = REGS_MASK & (rnd() | 1);
	if (a->sample_type & PERF_SAMPLE_STACK_USER || chance(15))
		gen_stack_user(a);
	a->read_format = below(PERF_FORMAT_MAX);
	if (chance(35))
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		static const uint16_t stacks[] = { 1, 2, 8, 32, 127, 128, 512, 65535 };

		if (chance(50))
			a->sample_max_stack = PICK(stacks);
		a->exclude_callchain_user = chance(5);
		a->exclude_callchain_kernel = chance(5);
	}
	a->defer_callchain = chance(35);
	a->defer_output = chance(30);
	a->uevents = chance(30);
	a->sample_id_all = chance(85);
	if (a->uevents && chance(85)) {
		a->sample_id_all = 1;
		a->sample_type |= PERF_SAMPLE_TID;
	}
	a->disabled = chance(8);
	if (task && chance(30)) {
		a->inherit = 1;
		a->inherit_thread = chance(20);
		a->inherit_stat = chance(5);
		if (a->sample_type & PERF_SAMPLE_READ)
			a->sample_type |= PERF_SAMPLE_TID;
	}
	a->exclude_user = chance(4);
	a->exclude_kernel = chance(12);
	a->exclude_hv = chance(50);
	a->exclude_idle = chance(5);
	a->mmap = chance(8);
	a->mmap2 = a->mmap && chance(50);
	a->comm = chance(8);
	a->comm_exec = a->comm && chance(50);
	a->task = chance(8);
	a->context_switch = chance(8);
	a->remove_on_exec = chance(5);
	if (a->disabled && !a->remove_on_exec && chance(30))
		a->enable_on_exec = 1;
	if (chance(10)) {
		static const int clocks[] = {
			CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME,
			CLOCK_BOOTTIME, CLOCK_TAI,
		};

		/* The last three are not NMI safe: software PMUs only. */
		a->use_clockid = 1;
		a->clockid = clocks[below(k->type == PERF_TYPE_SOFTWARE ? 5 : 2)];
	}
	if (chance(10)) {
		a->watermark = 1;
		a->wakeup_watermark = 1 + below(4096);
	} else {
		a->wakeup_events = below(8);
	}

	if (chance(aux_sibling ? 40 : 60))
		gen_tls(a);
	else if (chance(4))	/* TLS fields without PERF_SAMPLE_TLS_USER */
		a->tls_user_offset = 8;
	if (chance(2))
		a->sample_type |= 1ULL << (25 + below(37));	/* unknown bit */
	if (chance(2)) {	/* a reserved flag bit, 40-62 */
		uint64_t *flags = (uint64_t *)(raw +
			offsetof(struct perf_event_attr, read_format) + 8);

		*flags |= 1ULL << (40 + below(23));
	}
	if (chance(2))
		a->config4 = 1;
	if (chance(2))
		a->__reserved_upstream[below(14)] = 1ULL << below(64);

	/* Chaos: flip bits anywhere in the fields before config4. */
	if (chance(8)) {
		int n = 1 + below(3);

		while (n--) {
			unsigned int byte = 8 + below(136 - 8);

			raw[byte] ^= 1 << below(8);
		}
		rest_ok = false;
	}

	switch (below(10)) {
	case 0:
	case 1:
		a->size = PICK(sizes);
		break;
	case 2:
		a->size = PERF_ATTR_SIZE_EXT0;
		break;
	default:
		a->size = PERF_ATTR_SIZE_EXT1;
		break;
	}
	if (avoid_stack_intr && (a->sample_type & PERF_SAMPLE_STACK_USER))
		a->sample_type &= ~PERF_SAMPLE_REGS_INTR;
	if (avoid_stack_zero && !a->sample_stack_user)
		a->sample_type &= ~PERF_SAMPLE_STACK_USER;
	/* Bytes past the kernel's struct: zero, or not (E2BIG). */
	if (a->size > sizeof(*a) && a->size <= ATTR_BUF && chance(20))
		raw[sizeof(*a) + below(a->size - sizeof(*a))] = 0x5a;
	return rest_ok;
}

static int perf_open(void *attr, pid_t pid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group,
		       PERF_FLAG_FD_CLOEXEC);
}

static void name_event(struct ev *e, const char *name)
{
	snprintf(e->name, sizeof(e->name), "%s", name);
}

static void remember_id(struct ev *e)
{
	unsigned int i = id_next++ % ID_HISTORY;

	if (ioctl(e->fd, PERF_EVENT_IOC_ID, &e->id))
		e->id = 0;
	id_hist[i].id = e->id;
	id_hist[i].tls_size = e->attr.sample_tls_user;
	id_hist[i].tls_flags = e->attr.tls_user_flags;
	id_hist[i].hops = e->attr.tls_user_hops;
	id_hist[i].len_size = e->attr.tls_user_len_size;
}

/* Map 1 + 2^n pages of ring buffer (n 0-3, now and then 4). */
static void map_ring(struct ev *e, int data_pages)
{
	void *p;

	e->ring_len = (1 + data_pages) * page_size;
	p = mmap(NULL, e->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	if (p == MAP_FAILED) {
		e->ring = NULL;
		return;
	}
	e->ring = p;
	if (chance(30))
		some_ring = p;
}

static int ring_pages(void)
{
	return chance(5) ? 16 : 1 << below(4);
}

/*
 * Open one attr; on success, keep it in slot e with its ring. The attr
 * kept is what predict() says the kernel read.
 */
static bool open_one(struct ev *e, uint8_t *raw, bool rest_ok, pid_t pid,
		     int cpu, const struct ev *leader, const char *name)
{
	struct perf_event_attr eff;
	struct expect x = { .strict = rest_ok };
	int fd;

	predict(raw, leader ? &leader->attr : NULL, pid != -1, &eff, &x);
	fd = perf_open(raw, pid, cpu, leader ? leader->fd : -1);
	if (!judge(&x, fd, errno, "perf_event_open")) {
		if (!x.nerr && x.strict && !env_errno(errno) && warn_printed < 40)
			dump_attr(&eff);
		COUNT(open_err);
		return false;
	}
	if (x.must_fail && warn_printed < 40)
		dump_attr(&eff);
	COUNT(opened);
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->fd = fd;
	e->attr = eff;
	e->pid = pid;
	e->cpu = cpu;
	e->sibling = leader;
	name_event(e, name);
	remember_id(e);
	return true;
}

static void pick_target(pid_t *pid, int *cpu, pid_t child)
{
	switch (below(10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		*pid = 0;
		break;
	case 4:
	case 5:
		*pid = thread_tids[below(NR_THREADS)];
		break;
	case 6:
		*pid = child > 0 ? child : 0;
		break;
	default:
		*pid = -1;
		break;
	}
	*cpu = (*pid == -1 || chance(50)) ? (int)below(ncpus) : -1;
}

static pid_t some_child(void);

/* A random event of a random kind, alone or in another event's group. */
static void open_random_event(void)
{
	static uint8_t raw[ATTR_BUF] __attribute__((aligned(8)));
	const struct kind *k = &kinds[below(nkinds)];
	struct ev *e = free_slot(), *leader = NULL;
	struct perf_event_attr *a = (void *)raw;
	int cpu, i;
	bool rest_ok;
	pid_t pid;

	if (!e)
		return;
	pick_target(&pid, &cpu, some_child());
	if (chance(15)) {	/* join the group of an event of the same target */
		i = below(MAX_EVENTS);
		if (evs[i].used && &evs[i] != e && evs[i].pid == pid &&
		    evs[i].cpu == cpu && !evs[i].sw_aux && !evs[i].sibling)
			leader = &evs[i];
	}
	memset(raw, 0, sizeof(raw));
	rest_ok = gen_attr(raw, k, pid != -1, false);
	if (leader) {
		if (chance(50))
			a->read_format |= PERF_FORMAT_GROUP;
		if (chance(95)) {	/* a group has one clock, one inherit */
			a->use_clockid = leader->attr.use_clockid;
			a->clockid = leader->attr.clockid;
			a->inherit = leader->attr.inherit;
			if (!a->inherit) {
				a->inherit_thread = 0;
				a->inherit_stat = 0;
			}
		}
	}
	if (!open_one(e, raw, rest_ok, pid, cpu, leader, k->name))
		return;
	/* mmap of an inherited event with cpu -1 fails (a core rule). */
	map_ring(e, ring_pages());
}

/*
 * A sw_aux group: the sw_aux leader with its AUX area (snapshot or full
 * trace), and 1-3 siblings taking PERF_SAMPLE_AUX snapshots, with TLS
 * dumps, large user stacks and callchains beside them in the same 16-bit
 * record.
 */
static void open_aux_group(void)
{
	static const uint64_t ticks[] = { 0, 10, 20, 50, 100, 1000 };
	static const uint64_t bad_ticks[] = { 5, 9, 1000001, 1ULL << 32 };
	static const uint32_t aux_sizes[] = {
		8, 32, 96, 100, 256, 1000, 4096, 16384, 65536, 1 << 20, 0,
	};
	static uint8_t raw[ATTR_BUF] __attribute__((aligned(8)));
	struct perf_event_attr *a = (void *)raw;
	struct ev *l, *s;
	int cpu, n, i, pages;
	bool rest_ok, opened = false;
	pid_t pid;
	void *p;

	if (!sw_aux_type || !(l = free_slot()))
		return;
	pick_target(&pid, &cpu, some_child());
	memset(raw, 0, sizeof(raw));
	a->size = chance(80) ? PERF_ATTR_SIZE_EXT1 : PERF_ATTR_SIZE_EXT0;
	a->type = sw_aux_type;
	a->config = chance(85) ? PICK(ticks) : PICK(bad_ticks);
	a->disabled = chance(70);
	a->exclude_kernel = chance(30);
	a->exclude_hv = 1;
	a->sample_id_all = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 (chance(50) ? PERF_SAMPLE_ID : 0);
	a->read_format = below(PERF_FORMAT_MAX) & ~PERF_FORMAT_GROUP;
	rest_ok = true;
	if (chance(4)) {	/* the docs refuse these for sw_aux */
		a->sample_period = 1000;
		rest_ok = false;
	}
	if (chance(3)) {
		a->config1 = 1;
		rest_ok = false;
	}
	if (a->config && (a->config < SW_AUX_PERIOD_MIN_US ||
			  a->config > SW_AUX_PERIOD_MAX_US))
		rest_ok = false;
	if (!open_one(l, raw, rest_ok, pid, cpu, NULL, "sw_aux"))
		return;
	l->sw_aux = true;
	l->permanent = true;	/* until the group is set up */
	map_ring(l, ring_pages());
	if (l->ring && chance(90)) {
		struct perf_event_mmap_page *pg = (void *)l->ring;

		pages = 1 << below(5);
		l->aux_len = pages * page_size;
		l->aux_snapshot = chance(50);
		pg->aux_offset = l->ring_len;
		pg->aux_size = l->aux_len;
		p = mmap(NULL, l->aux_len,
			 PROT_READ | (l->aux_snapshot ? 0 : PROT_WRITE),
			 MAP_SHARED, l->fd, l->ring_len);
		l->aux = p == MAP_FAILED ? NULL : p;
	}

	n = 1 + below(3);
	for (i = 0; i < n; i++) {
		const struct kind *k;
		struct kind cyc = {
			PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles", PK_TIME,
		};

		if (!(s = free_slot()))
			break;
		switch (below(have_cycles ? 5 : 4)) {
		case 0:
		case 1:
			k = &kinds[0];	/* cpu-clock */
			break;
		case 2:
			k = &kinds[1];	/* task-clock */
			break;
		case 3:
			k = &kinds[2];	/* page-faults */
			break;
		default:
			k = &cyc;
			break;
		}
		memset(raw, 0, sizeof(raw));
		rest_ok = gen_attr(raw, k, false, true);
		a->inherit = 0;
		a->inherit_thread = 0;
		a->inherit_stat = 0;
		a->enable_on_exec = 0;
		a->freq = 0;
		a->use_clockid = 0;	/* the leader's clock */
		a->clockid = 0;
		if (k == &cyc)
			a->sample_period = 200000 + below(2000000);
		else if (k->period == PK_TIME)
			a->sample_period = 100000 + below(900000);
		if (chance(95)) {
			a->sample_type |= PERF_SAMPLE_AUX;
			a->aux_sample_size = PICK(aux_sizes);
			if (!a->aux_sample_size)
				rest_ok = false;
		}
		if (chance(30))
			gen_stack_user(a);
		if (avoid_stack_intr)
			a->sample_type &= ~PERF_SAMPLE_REGS_INTR;
		if (!open_one(s, raw, rest_ok, pid, cpu, l, k->name))
			continue;
		s->aux_sibling = true;
		map_ring(s, ring_pages());
		opened = true;
	}
	if (opened)
		COUNT(aux_groups);
	if (l->attr.disabled)
		ioctl(l->fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	l->permanent = false;
}

/* Enable, disable, reset, pause the output of, or re-period an event. */
static void toggle_event(void)
{
	struct ev *e = &evs[below(MAX_EVENTS)];
	uint64_t period;

	if (!e->used)
		return;
	switch (below(6)) {
	case 0:
		ioctl(e->fd, PERF_EVENT_IOC_DISABLE, 0);
		break;
	case 1:
	case 2:
		ioctl(e->fd, PERF_EVENT_IOC_ENABLE, 0);
		break;
	case 3:
		ioctl(e->fd, PERF_EVENT_IOC_RESET, 0);
		break;
	case 4:
		ioctl(e->fd, PERF_EVENT_IOC_PAUSE_OUTPUT, below(2));
		break;
	default:
		period = 1 + below(1000000);
		ioctl(e->fd, PERF_EVENT_IOC_PERIOD, &period);
		break;
	}
}

/* Take a sw_aux leader's AUX area away under its sampling siblings. */
static void unmap_aux(void)
{
	struct ev *e = &evs[below(MAX_EVENTS)];

	if (!e->used || !e->aux)
		return;
	drain(e);
	munmap(e->aux, e->aux_len);
	e->aux = NULL;
}

/*
 * The baseline: events that stay for the whole run, so that every part
 * is exercised whatever the random share does. On each CPU a dummy event
 * takes uevents and the deferred records of every task; the main thread
 * has a cpu-clock event with deferred callchains and a deferred TLS read,
 * and a context-switch event whose immediate TLS read goes through the
 * registered context, a hop and a length field.
 */
static void open_baseline(void)
{
	static uint8_t raw[ATTR_BUF] __attribute__((aligned(8)));
	struct perf_event_attr *a = (void *)raw;
	struct ev *e;
	int c;

	for (c = 0; c < ncpus && c < 8; c++) {
		memset(raw, 0, sizeof(raw));
		a->size = PERF_ATTR_SIZE_EXT1;
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_id_all = 1;
		a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				 PERF_SAMPLE_ID | PERF_SAMPLE_CPU;
		a->uevents = 1;
		a->defer_output = 1;
		a->task = 1;
		e = free_slot();
		if (e && open_one(e, raw, true, -1, c, NULL, "base-dummy")) {
			e->permanent = true;
			map_ring(e, 8);
		}
	}

	memset(raw, 0, sizeof(raw));
	a->size = PERF_ATTR_SIZE_EXT1;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = 1000000;
	a->sample_id_all = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_ID | PERF_SAMPLE_CALLCHAIN |
			 PERF_SAMPLE_TLS_USER;
	a->defer_callchain = 1;
	a->defer_output = 1;
	a->uevents = 1;
	a->sample_tls_user = 64;
	a->tls_user_offset = tls_off;
	a->tls_user_flags = PERF_TLS_USER_DEFER;
	e = free_slot();
	if (e && open_one(e, raw, true, 0, -1, NULL, "base-clock")) {
		e->permanent = true;
		map_ring(e, 8);
	}

	memset(raw, 0, sizeof(raw));
	a->size = PERF_ATTR_SIZE_EXT1;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->sample_id_all = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_TLS_USER;
	a->sample_tls_user = 128;
	a->tls_user_offset = 0;		/* the registered &tls_words[0] */
	a->tls_user_flags = PERF_TLS_USER_REGISTERED;
	a->tls_user_hops = 1;		/* tls_words[0]: an arena pointer */
	a->tls_user_hop_offset[0] = 0;
	a->tls_user_len_size = 8;	/* arena word 8: a length */
	a->tls_user_len_offset = 64;
	a->tls_user_len_base = 72;
	e = free_slot();
	if (e && open_one(e, raw, true, 0, -1, NULL, "base-cs")) {
		e->permanent = true;
		map_ring(e, 8);
	}
}

/* ---- what this kernel offers ---- */

static uint32_t read_u32_file(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtoul(buf, NULL, 10) : 0;
}

static void add_kind(uint32_t type, uint64_t config, const char *name, int period)
{
	if (nkinds < (int)ARRAY_SIZE(kinds))
		kinds[nkinds++] = (struct kind){ type, config, name, period };
}

static void probe(void)
{
	static const char *const tps[] = {
		"sched/sched_switch", "raw_syscalls/sys_enter",
		"syscalls/sys_enter_getppid", "exceptions/page_fault_user",
	};
	struct perf_event_attr a;
	char path[128];
	uint32_t id, v;
	unsigned int i;
	int b, fd;

	/* kinds[0-2] are the AUX siblings' cpu-clock, task-clock, page-faults. */
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "cpu-clock", PK_TIME);
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "task-clock", PK_TIME);
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults", PK_COUNT);
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "cs", PK_COUNT);
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "migrations", PK_COUNT);
	add_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, "dummy", PK_NONE);
	for (i = 0; i < ARRAY_SIZE(tps); i++) {
		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", tps[i]);
		id = read_u32_file(path);
		if (!id) {
			snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/events/%s/id",
				 tps[i]);
			id = read_u32_file(path);
		}
		if (id)
			add_kind(PERF_TYPE_TRACEPOINT, id, tps[i], PK_TP);
	}

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.sample_period = 1000000;
	a.exclude_kernel = 1;
	fd = perf_open(&a, 0, -1, -1);
	if (fd >= 0) {
		have_cycles = true;
		close(fd);
		add_kind(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles", PK_TIME);
	}

	/* The sample bits a plain cpu-clock event takes on this kernel. */
	for (b = 0; b < 25; b++) {
		uint64_t bit = 1ULL << b;

		if (bit == PERF_SAMPLE_BRANCH_STACK || bit == PERF_SAMPLE_AUX ||
		    bit == PERF_SAMPLE_STACK_USER)
			continue;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
		a.sample_period = 1000000;
		a.sample_type = PERF_SAMPLE_TID | bit;
		a.sample_regs_user = REGS_MASK;
		a.sample_regs_intr = REGS_MASK;
		fd = perf_open(&a, 0, -1, -1);
		if (fd >= 0) {
			ok_sample_bits |= bit;
			close(fd);
		}
	}
	ok_sample_bits |= PERF_SAMPLE_TID;

	sw_aux_type = read_u32_file("/sys/bus/event_source/devices/sw_aux/type");
	v = read_u32_file("/proc/sys/kernel/perf_event_max_stack");
	if (v)
		max_stack = v;
	say("kernel: sw_aux type %u, cycles %s, %d event kinds, sample bits %#llx, max_stack %d, tls offset %ld",
	    sw_aux_type, have_cycles ? "yes" : "no", nkinds,
	    (unsigned long long)ok_sample_bits, max_stack, (long)tls_off);
}

/* ---- children: fork, exec, exit, SIGKILL ---- */

static pid_t children[MAX_CHILDREN];

static pid_t some_child(void)
{
	return children[below(MAX_CHILDREN)];
}

static void start_threads(pthread_t *t, int n)
{
	long i;

	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, mutator, (void *)i))
			t[i] = 0;
}

/*
 * A child's life, after fork() or a re-exec (--child): mutator threads
 * and its own steps for a while, then exec itself again, exit, or wait
 * for the SIGKILL; never longer than 20 s.
 */
static void child_main(int depth, unsigned int ms)
{
	char sseed[24], sfd[16], sdepth[16], sms[16], sstream[24];
	pthread_t t[NR_THREADS];
	uint64_t end = now_ms() + ms;
	int what;

	snprintf(role, sizeof(role), " child=%d", getpid());
	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	rng_seed(proc_stream * 16);
	set_tls_words();
	syscall(SYS_prctl, PR_TASK_PERF_CONTEXT, &tls_words[0], 0, 0, 0);
	memset(thread_tids, 0, sizeof(thread_tids));
	start_threads(t, below(NR_THREADS + 1));
	while (now_ms() < end) {
		worker_step();
		workload(2);
	}
	what = below(3);
	if (what == 0 && depth < EXEC_DEPTH) {
		snprintf(sseed, sizeof(sseed), "%llu", (unsigned long long)seed);
		snprintf(sfd, sizeof(sfd), "%d", counters_fd);
		snprintf(sdepth, sizeof(sdepth), "%d", depth + 1);
		snprintf(sms, sizeof(sms), "%u", (unsigned int)below(400));
		snprintf(sstream, sizeof(sstream), "%llu", (unsigned long long)rnd());
		COUNT(execs);
		execl(exe_path, exe_path, "--child", "--seed", sseed,
		      "--counters-fd", sfd, "--depth", sdepth, "--ms", sms,
		      "--stream", sstream, (char *)NULL);
		_exit(3);
	}
	if (what == 1)
		_exit(0);
	/* Wait for the SIGKILL, busy in and out of the kernel. */
	end = now_ms() + 20000;
	while (now_ms() < end) {
		worker_step();
		workload(4);
	}
	_exit(0);
}

static void fork_child(void)
{
	uint64_t stream;
	unsigned int ms;
	int i;
	pid_t pid;

	for (i = 0; i < MAX_CHILDREN; i++)
		if (!children[i])
			break;
	if (i == MAX_CHILDREN)
		return;
	stream = rnd();
	ms = below(600);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		proc_stream = stream;
		child_main(0, ms);
	}
	children[i] = pid;
	COUNT(forks);
}

static void show_proc(pid_t pid, const char *file)
{
	char path[64], buf[2048];
	int fd;
	ssize_t n;
	char *line, *save;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		say("  /proc/%d/%s: %s", pid, file, line);
}

/*
 * SIGKILL a child and wait for it: it must be gone (its pidfd readable)
 * and reaped within kill_timeout_ms, whatever it was doing (a deferred
 * read, an exec, an exit, threads in the middle of all of it).
 */
static void kill_child(int i)
{
	pid_t pid = children[i];
	struct pollfd pfd;
	uint64_t t0;
	int fd, st, r = 0;

	if (!pid)
		return;
	fd = syscall(SYS_pidfd_open, pid, 0);
	t0 = now_ms();
	kill(pid, SIGKILL);
	if (fd >= 0) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		do {
			r = poll(&pfd, 1, kill_timeout_ms - (now_ms() - t0));
		} while (r < 0 && errno == EINTR && now_ms() - t0 < kill_timeout_ms);
		close(fd);
		if (r > 0)
			r = waitpid(pid, &st, 0) == pid;
	} else {
		while (!(r = waitpid(pid, &st, WNOHANG) == pid) &&
		       now_ms() - t0 < kill_timeout_ms)
			usleep(1000);
	}
	children[i] = 0;
	COUNT(kills);
	if (r)
		return;
	say("FAILURE: task past SIGKILL: pid %d not reaped %u ms after SIGKILL",
	    pid, kill_timeout_ms);
	show_proc(pid, "status");
	show_proc(pid, "wchan");
	show_proc(pid, "stack");
	COUNT(failures);
	if (!keep_going)
		finish(1);
	/* --keep-going: give it 10 s more, then leave it. */
	for (t0 = now_ms(); now_ms() - t0 < 10000; usleep(10000))
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
}

static void reap_children(void)
{
	int i, st;

	for (i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] && waitpid(children[i], &st, WNOHANG) == children[i]) {
			children[i] = 0;
			COUNT(exits);
		}
	}
}

/* ---- the main loop ---- */

static uint64_t t_start;

static void counters_line(const char *prefix)
{
	char buf[1100];
	int i, n = 0;

	for (i = 0; i < NR_CTR; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%s=%llu", i ? " " : "",
			      ctr_names[i],
			      (unsigned long long)__atomic_load_n(&ctr[i], __ATOMIC_RELAXED));
	say("%s%s", prefix, buf);
}

static pthread_t threads[NR_THREADS];

/* Kill the children, stop the threads, close everything, the last lines. */
static void finish(int rc)
{
	char prefix[64], zero[400] = "";
	int i, n = 0;

	if (finishing)
		return;
	finishing = true;
	for (i = 0; i < MAX_CHILDREN; i++)
		kill_child(i);
	stop = 1;
	for (i = 0; i < NR_THREADS; i++)
		if (threads[i])
			pthread_join(threads[i], NULL);
	if (!rc)
		drain_all();
	for (i = 0; i < MAX_EVENTS; i++)
		if (evs[i].used)
			close_event(&evs[i]);
	if (ctr[CTR_failures])
		rc = 1;
	for (i = 0; i < NR_CTR; i++)
		if (!ctr[i] && i != CTR_failures && i != CTR_warnings)
			n += snprintf(zero + n, sizeof(zero) - n, " %s", ctr_names[i]);
	say("coverage: %s%s", n ? "counters at zero:" : "every counter is non-zero", zero);
	snprintf(prefix, sizeof(prefix), "result=%s seconds=%llu ",
		 rc ? "FAIL" : "pass", (unsigned long long)(now_ms() - t_start) / 1000);
	counters_line(prefix);
	exit(rc);
}

/* One action of the main thread, drawn by weight out of 100. */
static void main_step(void)
{
	unsigned int w = below(100);
	struct ev *e;

	if (w < 25) {
		open_random_event();
	} else if (w < 31) {
		open_aux_group();
	} else if (w < 36) {
		e = &evs[below(MAX_EVENTS)];
		if (e->used && !e->permanent)
			close_event(e);
	} else if (w < 40) {
		toggle_event();
	} else if (w < 41) {
		unmap_aux();
	} else if (w < 46) {
		do_register();
	} else if (w < 53) {
		do_uevent();
	} else if (w < 61) {
		worker_step();
	} else if (w < 85) {
		workload(1 + below(8));
	} else if (w < 90) {
		set_tls_words();
	} else if (w < 95) {
		fork_child();
	} else {
		kill_child(below(MAX_CHILDREN));
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: abi_stress [--seed N] [--seconds N] [--keep-going] [--kill-timeout-ms N] [--avoid stack-intr,stack-zero]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	bool child = false, have_seed = false;
	int depth = 0, i;
	unsigned int child_ms = 0;
	uint64_t end, next_report;
	ssize_t n;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(arg, "--keep-going")) {
			keep_going = true;
			continue;
		}
		if (!strcmp(arg, "--child")) {
			child = true;
			continue;
		}
		if (!val)
			usage();
		i++;
		if (!strcmp(arg, "--avoid")) {
			char list[64], *name, *save;

			snprintf(list, sizeof(list), "%s", val);
			for (name = strtok_r(list, ",", &save); name;
			     name = strtok_r(NULL, ",", &save)) {
				if (!strcmp(name, "stack-intr"))
					avoid_stack_intr = true;
				else if (!strcmp(name, "stack-zero"))
					avoid_stack_zero = true;
				else
					usage();
			}
		} else if (!strcmp(arg, "--seed")) {
			seed = strtoull(val, NULL, 0);
			have_seed = true;
		} else if (!strcmp(arg, "--seconds")) {
			run_seconds = strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--kill-timeout-ms")) {
			kill_timeout_ms = strtoul(val, NULL, 0);
		} else if (!strcmp(arg, "--counters-fd")) {
			counters_fd = atoi(val);
		} else if (!strcmp(arg, "--depth")) {
			depth = atoi(val);
		} else if (!strcmp(arg, "--stream")) {
			proc_stream = strtoull(val, NULL, 0);
		} else if (!strcmp(arg, "--ms")) {
			child_ms = strtoul(val, NULL, 0);
		} else {
			usage();
		}
	}
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (ts.tv_sec * 1000003ULL) ^ ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		seed %= 1000000000000ULL;
	}
	rng_seed(0);
	page_size = sysconf(_SC_PAGESIZE);
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	if (n > 0)
		exe_path[n] = 0;
	else
		snprintf(exe_path, sizeof(exe_path), "%s", argv[0]);
	devzero = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sa.sa_sigaction = on_perf_trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGTRAP, &sa, NULL);

	if (counters_fd < 0) {
		counters_fd = memfd_create("abi-stress-counters", 0);
		if (counters_fd < 0 || ftruncate(counters_fd, page_size)) {
			say("cannot make the counters: %s", strerror(errno));
			return 2;
		}
	}
	ctr = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, counters_fd, 0);
	if (ctr == MAP_FAILED)
		return 2;
	tls_off = (char *)tls_words - (char *)thread_pointer();
	setup_memory();

	if (child) {
		child_main(depth, child_ms);
		return 0;
	}

	t_start = now_ms();
	say("start: arch %s, %u s, %d cpus, page %ld; replay with --seed %llu",
	    ARCH_NAME, run_seconds, ncpus, page_size, (unsigned long long)seed);
	probe();
	set_tls_words();
	syscall(SYS_prctl, PR_TASK_PERF_CONTEXT, &tls_words[0], 0, 0, 0);
	start_threads(threads, NR_THREADS);
	while (!thread_tids[NR_THREADS - 1] && now_ms() - t_start < 2000)
		usleep(1000);
	open_baseline();

	end = t_start + run_seconds * 1000ULL;
	next_report = t_start + 10000;
	while (now_ms() < end) {
		COUNT(iter);
		main_step();
		drain_all();
		reap_children();
		if (now_ms() >= next_report) {
			char prefix[32];

			snprintf(prefix, sizeof(prefix), "t=%llus ",
				 (unsigned long long)(now_ms() - t_start) / 1000);
			counters_line(prefix);
			next_report += 10000;
		}
	}
	finish(0);
	return 0;
}
