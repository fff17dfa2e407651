// SPDX-License-Identifier: GPL-2.0
/*
 * Tests for the software AUX PMU "sw_aux" (CONFIG_PERF_SW_AUX): full-trace
 * and snapshot AUX areas, PERF_RECORD_AUX, and AUX samples
 * (PERF_SAMPLE_AUX) taken by cpu-clock and, where a hardware PMU exists,
 * by cycles siblings of a sw_aux group leader.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/elf.h>
#include <linux/perf_event.h>
#include <linux/perf_sw_aux.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"

#define SW_AUX_TYPE_FILE	"/sys/bus/event_source/devices/sw_aux/type"
#define REC			SW_AUX_RECORD_SIZE
#define DATA_PAGES		64
#define MAX_RECORD		65536

/*
 * The function the tests spin in, without calls, until *p >= target. It is
 * only called through spin, so it is never inlined and its extent is its
 * symbol's size (see find_text()).
 */
static void spin_until(const __u64 *p, __u64 target)
{
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < target)
		;
}

void (*spin)(const __u64 *p, __u64 target) = spin_until;

/* [start, end) of spin_until() and of this program's text (libc included) */
static uintptr_t spin_start, spin_end, text_start, text_end;

static bool ip_in_spin(uint64_t ip)
{
	return ip >= spin_start && ip < spin_end;
}

/* The size of the function symbol @name in our own ELF symbol table. */
static size_t elf_func_size(const char *name)
{
	const struct elf64_shdr *sh, *strtab;
	const struct elf64_hdr *eh;
	const struct elf64_sym *sym;
	size_t size = 0, len, i, n;
	struct stat st;
	char *img;
	int fd;

	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	len = st.st_size;
	img = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return 0;

	eh = (const struct elf64_hdr *)img;
	sh = (const struct elf64_shdr *)(img + eh->e_shoff);
	for (i = 0; i < eh->e_shnum && !size; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		strtab = &sh[sh[i].sh_link];
		sym = (const struct elf64_sym *)(img + sh[i].sh_offset);
		for (n = 0; n < sh[i].sh_size / sizeof(*sym); n++) {
			if (ELF64_ST_TYPE(sym[n].st_info) == STT_FUNC &&
			    !strcmp(img + strtab->sh_offset + sym[n].st_name, name)) {
				size = sym[n].st_size;
				break;
			}
		}
	}
	munmap(img, len);
	return size;
}

/* Find spin_until() and the executable mapping of this program. */
static bool find_text(void)
{
	uintptr_t addr = (uintptr_t)spin, lo, hi;
	char line[512];
	bool found = false;
	FILE *f;

	spin_start = addr;
	spin_end = addr + elf_func_size("spin_until");
	if (spin_end == spin_start)
		return false;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    addr >= lo && addr < hi) {
			text_start = lo;
			text_end = hi;
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

/*
 * The ticks that hit this thread outside spin_until() are those on the way
 * out of the enabling ioctl() and into the disabling one, in this program's
 * own text. So a run of records is: some there, then spin_until(), then
 * some there again.
 */
struct ip_state {
	int phase;	/* 0: before spin_until(), 1: in it, 2: after it */
};

static bool ip_expected(struct ip_state *st, uint64_t ip, bool allow_after)
{
	if (ip_in_spin(ip)) {
		if (st->phase == 2)
			return false;
		st->phase = 1;
		return true;
	}
	if (st->phase == 1) {
		if (!allow_after)
			return false;
		st->phase = 2;
	}
	return ip >= text_start && ip < text_end;
}

struct rb {
	int fd;
	struct perf_event_mmap_page *page;
	size_t size;
	void *aux;
	size_t aux_size;
};

struct aux_ctx {
	uint32_t type;
	size_t page_size;
	pid_t pid, tid;
	struct rb leader, sibling;
};

FIXTURE(aux_sample)
{
	struct aux_ctx c;
};

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid,
			       int cpu, int group_fd)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group_fd,
		       PERF_FLAG_FD_CLOEXEC);
}

static void sw_aux_attr(struct perf_event_attr *attr, uint32_t type,
			uint64_t period_us)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = period_us;
	attr->disabled = 1;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
	attr->sample_id_all = 1;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
}

static void sampler_attr(struct perf_event_attr *attr, uint32_t type,
			 uint64_t config, uint64_t period, uint32_t aux_size)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
	attr->sample_period = period;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_AUX;
	attr->aux_sample_size = aux_size;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
}

/* Map the ring buffer of rb->fd; with aux_pages, also an AUX area. */
static int rb_map(struct rb *rb, size_t page_size, size_t aux_pages,
		  bool overwrite)
{
	void *p;

	rb->size = (DATA_PAGES + 1) * page_size;
	p = mmap(NULL, rb->size, PROT_READ | PROT_WRITE, MAP_SHARED, rb->fd, 0);
	if (p == MAP_FAILED)
		return -1;
	rb->page = p;
	if (!aux_pages)
		return 0;

	rb->aux_size = aux_pages * page_size;
	rb->page->aux_offset = rb->size;
	rb->page->aux_size = rb->aux_size;
	p = mmap(NULL, rb->aux_size,
		 overwrite ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
		 rb->fd, rb->size);
	if (p == MAP_FAILED)
		return -1;
	rb->aux = p;
	return 0;
}

static void rb_close(struct rb *rb)
{
	if (rb->aux)
		munmap(rb->aux, rb->aux_size);
	if (rb->page)
		munmap(rb->page, rb->size);
	if (rb->fd >= 0)
		close(rb->fd);
	memset(rb, 0, sizeof(*rb));
	rb->fd = -1;
}

/* Copy the record at *pos into buf and advance; false at the end. */
static bool rb_read(struct rb *rb, uint64_t *pos, void *buf)
{
	struct perf_event_header *hdr = buf;
	const uint8_t *data = (uint8_t *)rb->page + rb->page->data_offset;
	uint64_t head = __atomic_load_n(&rb->page->data_head, __ATOMIC_ACQUIRE);
	uint64_t size = rb->page->data_size;
	size_t i;

	if (*pos + sizeof(*hdr) > head)
		return false;
	for (i = 0; i < sizeof(*hdr); i++)
		((uint8_t *)buf)[i] = data[(*pos + i) % size];
	if (hdr->size < sizeof(*hdr) || *pos + hdr->size > head)
		return false;
	for (i = 0; i < hdr->size; i++)
		((uint8_t *)buf)[i] = data[(*pos + i) % size];
	*pos += hdr->size;
	return true;
}

struct leader_read {
	uint64_t count;		/* records written */
	uint64_t enabled;	/* PERF_FORMAT_TOTAL_TIME_ENABLED */
};

static struct leader_read read_leader(int fd)
{
	struct leader_read r = {};

	if (read(fd, &r, sizeof(r)) != sizeof(r))
		memset(&r, 0, sizeof(r));
	return r;
}

static uint64_t read_count(int fd)
{
	return read_leader(fd).count;
}

/*
 * Wait until the core has turned the event off after a TRUNCATED record:
 * it does that from irq_work, which may run after user space saw aux_head.
 * An event that is off no longer accrues enabled time.
 */
static void wait_off(int fd)
{
	uint64_t last = read_leader(fd).enabled, now;

	for (;;) {
		sched_yield();
		now = read_leader(fd).enabled;
		if (now == last)
			return;
		last = now;
	}
}

static bool rec_is_padding(const struct sw_aux_record *r)
{
	static const struct sw_aux_record zero;

	return !memcmp(r, &zero, sizeof(zero));
}

FIXTURE_SETUP(aux_sample)
{
	struct aux_ctx *c = &self->c;
	cpu_set_t set;
	FILE *f;
	int cpu;

	memset(c, 0, sizeof(*c));
	c->leader.fd = -1;
	c->sibling.fd = -1;
	c->page_size = sysconf(_SC_PAGESIZE);
	c->pid = getpid();
	c->tid = syscall(SYS_gettid);

	f = fopen(SW_AUX_TYPE_FILE, "r");
	if (!f)
		SKIP(return, "no sw_aux PMU (CONFIG_PERF_SW_AUX=n)");
	ASSERT_EQ(fscanf(f, "%u", &c->type), 1);
	fclose(f);

	ASSERT_TRUE(find_text());

	/* One CPU: record times and sample times then share one clock. */
	cpu = sched_getcpu();
	ASSERT_GE(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
}

FIXTURE_TEARDOWN(aux_sample)
{
	struct aux_ctx *c = &self->c;

	rb_close(&c->sibling);
	rb_close(&c->leader);
}

/* Open the sw_aux leader for this thread and map it. */
static int open_leader(struct aux_ctx *c, uint64_t period_us,
		       size_t aux_pages, bool overwrite, uint32_t watermark)
{
	struct perf_event_attr attr;

	sw_aux_attr(&attr, c->type, period_us);
	attr.aux_watermark = watermark;
	c->leader.fd = sys_perf_event_open(&attr, 0, -1, -1);
	if (c->leader.fd < 0)
		return -1;
	return rb_map(&c->leader, c->page_size, aux_pages, overwrite);
}

/* Check one record against the previous one (or NULL) and the test. */
static void check_record(struct __test_metadata *_metadata, struct aux_ctx *c,
			 const struct sw_aux_record *r,
			 const struct sw_aux_record *prev)
{
	ASSERT_EQ(r->pid, c->pid);
	ASSERT_EQ(r->tid, c->tid);
	ASSERT_NE(r->time, 0);
	if (prev) {
		ASSERT_EQ(r->seq, prev->seq + 1);
		ASSERT_GE(r->time, prev->time);
	}
}

/*
 * Full-trace mode: the records are continuous, every PERF_RECORD_AUX
 * describes the next stretch of the area, and they add up to aux_head.
 */
TEST_F(aux_sample, full_trace)
{
	struct aux_ctx *c = &self->c;
	uint64_t pos = 0, expect_off = 0, nr_aux = 0, nr, head, i;
	const struct sw_aux_record *r, *prev = NULL;
	struct ip_state ips = {};
	struct perf_record_aux {
		struct perf_event_header header;
		uint64_t aux_offset, aux_size, flags;
	} *aux;
	static uint8_t buf[MAX_RECORD];

	ASSERT_EQ(open_leader(c, 100, 16, false, 4096), 0);

	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	spin(&c->leader.page->aux_head, 8192);
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	head = c->leader.page->aux_head;
	ASSERT_GE(head, 8192);
	ASSERT_LT(head, c->leader.aux_size);
	ASSERT_EQ(head % REC, 0);
	nr = head / REC;
	ASSERT_EQ(read_count(c->leader.fd), nr);

	while (rb_read(&c->leader, &pos, buf)) {
		aux = (void *)buf;
		if (aux->header.type != PERF_RECORD_AUX)
			continue;
		ASSERT_EQ(aux->aux_offset, expect_off);
		ASSERT_NE(aux->aux_size, 0);
		ASSERT_EQ(aux->aux_size % REC, 0);
		ASSERT_EQ(aux->flags, 0);
		expect_off += aux->aux_size;
		nr_aux++;
	}
	/* The watermark (4096) cut the 8 KiB into at least two records. */
	ASSERT_GE(nr_aux, 2);
	ASSERT_EQ(expect_off, head);

	/* All records come from this thread, most from spin_until(). */
	for (i = 0; i < nr; i++) {
		r = (void *)((uint8_t *)c->leader.aux + i * REC);
		ASSERT_EQ(r->seq, i);
		check_record(_metadata, c, r, prev);
		ASSERT_TRUE(ip_expected(&ips, r->ip, true))
			TH_LOG("record %llu ip %llx", (unsigned long long)r->seq,
			       (unsigned long long)r->ip);
		prev = r;
	}
	ASSERT_NE(ips.phase, 0);
}

/*
 * A full area ends in a PERF_RECORD_AUX with TRUNCATED and turns the event
 * off; once user space made room and enabled it again, seq goes on.
 */
TEST_F(aux_sample, truncated)
{
	struct aux_ctx *c = &self->c;
	struct perf_record_aux {
		struct perf_event_header header;
		uint64_t aux_offset, aux_size, flags;
	} *aux, last = {};
	const struct sw_aux_record *r;
	static uint8_t buf[MAX_RECORD];
	uint64_t pos = 0, head, nr, i;
	size_t size;

	ASSERT_EQ(open_leader(c, 100, 1, false, 0), 0);
	size = c->leader.aux_size;

	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	/* One byte stays free (CIRC_SPACE), so the last slot stays unused. */
	spin(&c->leader.page->aux_head, size - REC);

	head = c->leader.page->aux_head;
	ASSERT_EQ(head, size - REC);
	nr = head / REC;
	while (rb_read(&c->leader, &pos, buf)) {
		aux = (void *)buf;
		if (aux->header.type == PERF_RECORD_AUX)
			last = *aux;
	}
	ASSERT_EQ(last.flags, PERF_AUX_FLAG_TRUNCATED);
	ASSERT_EQ(last.aux_offset + last.aux_size, head);

	/* The core turns it off: its count stays. */
	wait_off(c->leader.fd);
	ASSERT_EQ(read_count(c->leader.fd), nr);
	for (i = 0; i < nr; i++) {
		r = (void *)((uint8_t *)c->leader.aux + i * REC);
		ASSERT_EQ(r->seq, i);
	}

	/* Consume everything and enable again: seq continues. */
	__atomic_store_n(&c->leader.page->aux_tail, head, __ATOMIC_RELEASE);
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	spin(&c->leader.page->aux_head, head + size / 2);
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	r = (void *)((uint8_t *)c->leader.aux + head % size);
	ASSERT_EQ(r->seq, nr);
}

/*
 * Snapshot mode: the area wraps around; at disable, a PERF_RECORD_AUX with
 * OVERWRITE says where the data ends, and the area holds the newest records.
 */
TEST_F(aux_sample, overwrite)
{
	struct aux_ctx *c = &self->c;
	struct perf_record_aux {
		struct perf_event_header header;
		uint64_t aux_offset, aux_size, flags;
	} *aux;
	const struct sw_aux_record *r, *prev = NULL;
	static uint8_t buf[MAX_RECORD];
	uint64_t pos = 0, count, head, nr_aux = 0, i, slots, end = 0, written;
	size_t size;

	ASSERT_EQ(open_leader(c, 100, 1, true, 0), 0);
	size = c->leader.aux_size;
	slots = size / REC;

	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	while (read_count(c->leader.fd) < 3 * slots)
		;
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	count = read_count(c->leader.fd);
	head = c->leader.page->aux_head;
	ASSERT_EQ(head, count * REC);

	/*
	 * One PERF_RECORD_AUX per stop that follows some writing: the
	 * disable, and each time the thread was scheduled out. Each ends at
	 * the head of its stop and holds what was written since the start
	 * before it, at most the whole area.
	 */
	while (rb_read(&c->leader, &pos, buf)) {
		aux = (void *)buf;
		if (aux->header.type != PERF_RECORD_AUX)
			continue;
		ASSERT_EQ(aux->flags, PERF_AUX_FLAG_OVERWRITE);
		ASSERT_GT(aux->aux_offset, end);
		written = aux->aux_offset - end;
		ASSERT_EQ(aux->aux_size, written < size ? written : size);
		end = aux->aux_offset;
		nr_aux++;
	}
	ASSERT_GE(nr_aux, 1);
	ASSERT_EQ(end, head);

	/* The area holds the newest "slots" records, oldest at head. */
	for (i = 0; i < slots; i++) {
		r = (void *)((uint8_t *)c->leader.aux + (head + i * REC) % size);
		ASSERT_EQ(r->seq, count - slots + i);
		check_record(_metadata, c, r, prev);
		prev = r;
	}
}

struct sample {
	struct perf_event_header header;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t aux_size;
	struct sw_aux_record rec[];
};

/*
 * Sample this thread with a sampler sibling of a sw_aux leader and check
 * every AUX sample. Returns the number of samples; *with_records counts
 * the samples that held at least one record.
 */
static uint64_t check_samples(struct __test_metadata *_metadata,
			      struct aux_ctx *c,
			      uint32_t aux_sample_size, uint64_t nr_samples,
			      bool check_ip, uint64_t *with_records)
{
	uint64_t pos = 0, n = 0, target, i, nr;
	static uint8_t buf[MAX_RECORD];
	struct sample *s;
	size_t sample_size = sizeof(*s) + aux_sample_size;
	const struct sw_aux_record *r, *prev;
	struct ip_state ips = {};

	*with_records = 0;
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	target = nr_samples * sample_size;
	spin(&c->sibling.page->data_head, target);
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	while (rb_read(&c->sibling, &pos, buf)) {
		s = (void *)buf;
		if (s->header.type != PERF_RECORD_SAMPLE)
			continue;
		n++;
		ASSERT_EQ(s->header.size, sample_size);
		ASSERT_EQ(s->pid, c->pid);
		ASSERT_EQ(s->tid, c->tid);
		ASSERT_EQ(s->aux_size, aux_sample_size);

		/* Whole records first, then zero padding. */
		nr = aux_sample_size / REC;
		for (i = 0; i < nr && !rec_is_padding(&s->rec[i]); i++)
			;
		nr = i;
		for (; i < aux_sample_size / REC; i++)
			ASSERT_TRUE(rec_is_padding(&s->rec[i]));
		if (!nr)
			continue;
		(*with_records)++;

		prev = NULL;
		ips.phase = 0;
		for (i = 0; i < nr; i++) {
			r = &s->rec[i];
			ASSERT_EQ(r->pid, c->pid);
			ASSERT_EQ(r->tid, c->tid);
			ASSERT_NE(r->time, 0);
			/* Taken in spin_until(): no record from after it. */
			if (check_ip && ip_in_spin(s->ip))
				ASSERT_TRUE(ip_expected(&ips, r->ip, false))
					TH_LOG("record %llu ip %llx",
					       (unsigned long long)r->seq,
					       (unsigned long long)r->ip);
			if (prev) {
				ASSERT_EQ(r->seq, prev->seq + 1);
				ASSERT_GE(r->time, prev->time);
			}
			prev = r;
		}
		/* The newest record was written before the sample. */
		ASSERT_LE(prev->time, s->time);
	}
	return n;
}

static int open_sibling(struct aux_ctx *c, uint32_t type,
			uint64_t config, uint64_t period, uint32_t aux_size)
{
	struct perf_event_attr attr;

	sampler_attr(&attr, type, config, period, aux_size);
	c->sibling.fd = sys_perf_event_open(&attr, 0, -1, c->leader.fd);
	if (c->sibling.fd < 0)
		return -1;
	return rb_map(&c->sibling, c->page_size, 0, false);
}

/* cpu-clock samples carry the newest records of the sw_aux leader. */
TEST_F(aux_sample, sample_cpu_clock)
{
	struct aux_ctx *c = &self->c;
	uint64_t n, with_records;

	ASSERT_EQ(open_leader(c, 100, 4, true, 0), 0);
	ASSERT_EQ(open_sibling(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			       1000000, 8 * REC), 0);

	n = check_samples(_metadata, c, 8 * REC, 50, true, &with_records);
	ASSERT_GE(n, 50);
	ASSERT_GT(with_records, 0);
}

/* The same in full-trace mode, and with a size that is no multiple of 32. */
TEST_F(aux_sample, sample_full_trace)
{
	struct aux_ctx *c = &self->c;
	uint64_t n, with_records;

	ASSERT_EQ(open_leader(c, 100, 16, false, 0), 0);
	ASSERT_EQ(open_sibling(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			       1000000, 3 * REC + 8), 0);

	n = check_samples(_metadata, c, 3 * REC + 8, 20, true, &with_records);
	ASSERT_GE(n, 20);
	ASSERT_GT(with_records, 0);
}

/*
 * An AUX sample as large as the AUX area would overflow the u16 size of
 * the record: it is cut to what fits after the sample's other fields,
 * rounded down to 8 bytes.
 */
TEST_F(aux_sample, sample_size_truncated)
{
	struct aux_ctx *c = &self->c;
	uint32_t fits = (UINT16_MAX - sizeof(struct sample)) & ~7u;
	uint64_t n, with_records;

	ASSERT_EQ(open_leader(c, 10, 32, true, 0), 0);
	ASSERT_EQ(open_sibling(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			       1000000, 32 * c->page_size), 0);

	/* The data area holds 4 such samples; nobody moves its tail. */
	n = check_samples(_metadata, c, fits, 3, true, &with_records);
	ASSERT_GE(n, 3);
	ASSERT_GT(with_records, 0);
}

/* Hardware cycles samples (arm64: from pseudo-NMI, nested in the tick). */
TEST_F(aux_sample, sample_cycles)
{
	struct aux_ctx *c = &self->c;
	uint64_t n, with_records;

	ASSERT_EQ(open_leader(c, 100, 4, true, 0), 0);
	if (open_sibling(c, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
			 100000, 8 * REC)) {
		ASSERT_TRUE(errno == ENOENT || errno == EOPNOTSUPP)
			TH_LOG("cycles sibling: %s", strerror(errno));
		SKIP(return, "no hardware PMU for cycles (%s)", strerror(errno));
	}

	n = check_samples(_metadata, c, 8 * REC, 50, true, &with_records);
	ASSERT_GE(n, 50);
	ASSERT_GT(with_records, 0);
}

/* Without an AUX area, AUX samples are empty. */
TEST_F(aux_sample, no_aux_area)
{
	struct aux_ctx *c = &self->c;
	uint64_t n, with_records;

	ASSERT_EQ(open_leader(c, 100, 0, false, 0), 0);
	ASSERT_EQ(open_sibling(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			       1000000, 0x100), 0);

	n = check_samples(_metadata, c, 0, 10, false, &with_records);
	ASSERT_GE(n, 10);
	ASSERT_EQ(with_records, 0);
}

/* Every malformed request fails with upstream's errno. */
TEST_F(aux_sample, bad_input)
{
	struct aux_ctx *c = &self->c;
	struct perf_event_attr attr;
	int fd, leader;

	/* sw_aux itself: bad config bits, bad periods, sampling. */
	sw_aux_attr(&attr, c->type, 0);
	attr.config = 1ULL << 32;
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	sw_aux_attr(&attr, c->type, 0);
	attr.config1 = 1;
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	sw_aux_attr(&attr, c->type, SW_AUX_PERIOD_MIN_US - 1);
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	sw_aux_attr(&attr, c->type, SW_AUX_PERIOD_MAX_US + 1);
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	sw_aux_attr(&attr, c->type, 0);
	attr.sample_period = 1000;
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	sw_aux_attr(&attr, c->type, 0);
	attr.freq = 1;
	attr.sample_freq = 100;
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	/* The limits themselves are fine. */
	sw_aux_attr(&attr, c->type, SW_AUX_PERIOD_MIN_US);
	fd = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(fd, 0);
	close(fd);
	sw_aux_attr(&attr, c->type, SW_AUX_PERIOD_MAX_US);
	fd = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(fd, 0);
	close(fd);

	/* One sw_aux event per context. */
	sw_aux_attr(&attr, c->type, 0);
	leader = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(leader, 0);
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EBUSY);
	close(leader);

	/* aux_sample_size without an AUX leader. */
	sampler_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		     1000000, 64);
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, -1), -1);
	ASSERT_EQ(errno, EINVAL);

	/*
	 * ... with aux_output: a PMU without PERF_PMU_CAP_AUX_OUTPUT (all
	 * software events) fails that check first, with EOPNOTSUPP.
	 */
	sw_aux_attr(&attr, c->type, 0);
	leader = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(leader, 0);
	sampler_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		     1000000, 64);
	attr.aux_output = 1;
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, leader), -1);
	ASSERT_EQ(errno, EOPNOTSUPP);

	/* A good sibling of the same leader is fine. */
	sampler_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		     1000000, 64);
	fd = sys_perf_event_open(&attr, 0, -1, leader);
	ASSERT_GE(fd, 0);
	close(fd);
	close(leader);

	/* A leader without snapshot_aux (a software event). */
	sampler_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
		     1000000, 0);
	attr.disabled = 1;
	leader = sys_perf_event_open(&attr, 0, -1, -1);
	ASSERT_GE(leader, 0);
	sampler_attr(&attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
		     1000000, 64);
	ASSERT_EQ(sys_perf_event_open(&attr, 0, -1, leader), -1);
	ASSERT_EQ(errno, EINVAL);
	close(leader);
}

/*
 * The fastest tick with fast sampling, with the group scheduled out and in
 * again and again: every sample stays well formed and the kernel quiet.
 */
TEST_F(aux_sample, stress)
{
	struct aux_ctx *c = &self->c;
	struct perf_event_attr attr;
	uint64_t pos = 0, n = 0, i, j;
	static uint8_t buf[MAX_RECORD];
	struct rb cycles = { .fd = -1 };
	const struct sample *s;

	ASSERT_EQ(open_leader(c, SW_AUX_PERIOD_MIN_US, 4, true, 0), 0);
	ASSERT_EQ(open_sibling(c, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			       10000, 4 * REC), 0);

	/* On arm64 also hardware cycles from pseudo-NMI. */
	sampler_attr(&attr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
		     20000, 4 * REC);
	cycles.fd = sys_perf_event_open(&attr, 0, -1, c->leader.fd);
	if (cycles.fd >= 0)
		ASSERT_EQ(rb_map(&cycles, c->page_size, 0, false), 0);

	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (i = 0; i < 100; i++) {
		for (j = 0; j < 20000; j++)
			asm volatile("" : : : "memory");
		sched_yield();
	}
	ASSERT_EQ(ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	while (rb_read(&c->sibling, &pos, buf)) {
		s = (void *)buf;
		if (s->header.type != PERF_RECORD_SAMPLE)
			continue;
		ASSERT_EQ(s->aux_size, 4 * REC);
		n++;
	}
	ASSERT_GT(n, 0);
	ASSERT_GT(read_count(c->leader.fd), 0);
	if (cycles.fd >= 0) {
		pos = 0;
		while (rb_read(&cycles, &pos, buf)) {
			s = (void *)buf;
			if (s->header.type == PERF_RECORD_SAMPLE)
				ASSERT_EQ(s->aux_size, 4 * REC);
		}
	}
	rb_close(&cycles);
}

/* Spin in user space for @ms milliseconds of CLOCK_MONOTONIC. */
static void spin_ms(long ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

#define MAX_SAMPLE_RATE	"/proc/sys/kernel/perf_event_max_sample_rate"

static long read_sysctl(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool write_sysctl(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

/*
 * The tick is no faster than perf_event_max_sample_rate: 10 us asked,
 * 1000 Hz allowed, so 200 ms of spinning give about 200 records, not the
 * 20000 of an unclamped tick.
 */
TEST_F(aux_sample, rate_clamped)
{
	struct aux_ctx *c = &self->c;
	long saved = read_sysctl(MAX_SAMPLE_RATE);
	uint64_t n;

	ASSERT_GT(saved, 0);
	if (!write_sysctl(MAX_SAMPLE_RATE, 1000))
		SKIP(return, "cannot set %s (not root?)", MAX_SAMPLE_RATE);

	if (open_leader(c, SW_AUX_PERIOD_MIN_US, 64, false, 0)) {
		write_sysctl(MAX_SAMPLE_RATE, saved);
		ASSERT_TRUE(false);
	}
	ioctl(c->leader.fd, PERF_EVENT_IOC_ENABLE, 0);
	spin_ms(200);
	ioctl(c->leader.fd, PERF_EVENT_IOC_DISABLE, 0);
	n = read_count(c->leader.fd);
	ASSERT_TRUE(write_sysctl(MAX_SAMPLE_RATE, saved));

	TH_LOG("%llu records in 200 ms at a 1000 Hz limit",
	       (unsigned long long)n);
	ASSERT_GT(n, 0);
	/* 200 at most, with room for a start that lands mid-period. */
	ASSERT_LE(n, 210);
}

/* Open a sw_aux event on @pid, wait for @nr records, check pid/tid. */
static int ns_check_records(size_t page_size, uint32_t type, pid_t pid,
			    pid_t want_pid, pid_t want_tid)
{
	struct perf_event_attr attr;
	struct rb rb = { .fd = -1 };
	const struct sw_aux_record *r;
	uint64_t i, nr;
	int ret = 1;

	sw_aux_attr(&attr, type, 100);
	rb.fd = sys_perf_event_open(&attr, pid, -1, -1);
	if (rb.fd < 0 || rb_map(&rb, page_size, 4, false))
		goto out;
	ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0);
	if (pid) {
		int ms;

		/* the watched task spins: 4 records take 4 ms; give it 5 s */
		for (ms = 0; __atomic_load_n(&rb.page->aux_head,
					     __ATOMIC_ACQUIRE) < 4 * REC; ms++) {
			if (ms == 5000)
				goto out;
			usleep(1000);
		}
	} else {
		spin(&rb.page->aux_head, 4 * REC);
	}
	ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);

	nr = rb.page->aux_head / REC;
	ret = 0;
	for (i = 0; i < nr; i++) {
		r = (void *)((uint8_t *)rb.aux + i * REC);
		if (r->pid != (uint32_t)want_pid || r->tid != (uint32_t)want_tid) {
			fprintf(stderr, "record %llu: pid/tid %u/%u, want %d/%d\n",
				(unsigned long long)i, r->pid, r->tid,
				want_pid, want_tid);
			ret = 1;
		}
	}
out:
	rb_close(&rb);
	return ret;
}

/*
 * Die with the parent (and check it has not died already), so that no
 * helper of a failed test outlives it.
 */
static void die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(3);
}

/* Read one byte from @fd within @ms milliseconds; 0 on success. */
static int read_byte_within(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b;

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	/* 0 is EOF: the writer died before it said anything */
	return read(fd, &b, 1) == 1 ? 0 : -1;
}

/* waitpid() within @ms milliseconds, else SIGKILL and reap; -1 then. */
static int wait_within(pid_t pid, int *status, int ms)
{
	for (; ms > 0; ms -= 10) {
		pid_t ret = waitpid(pid, status, WNOHANG);

		if (ret == pid)
			return 0;
		if (ret < 0)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}

/*
 * pid and tid are given in the pid namespace of the event's owner: a task
 * in a new namespace sees itself as 1, and the parent that opens an event
 * on that task sees the pid it knows it by. Every wait is bounded, every
 * process closes the pipe ends it does not use (so that a death is seen
 * as EOF) and dies with its parent.
 */
TEST_F(aux_sample, pid_namespace)
{
	struct aux_ctx *c = &self->c;
	int ready[2], done[2], status, outside;
	pid_t test = getpid(), middle, inner;

	ASSERT_EQ(pipe(ready), 0);
	ASSERT_EQ(pipe(done), 0);
	middle = fork();
	ASSERT_GE(middle, 0);
	if (!middle) {
		die_with_parent(test);
		if (unshare(CLONE_NEWPID))
			_exit(errno == EPERM ? 4 : errno == EINVAL ? 5 : 3);
		inner = fork();
		if (inner < 0)
			_exit(3);
		if (!inner) {
			close(ready[0]);
			close(done[1]);
			/* our parent is in the namespace above: pid 0 here */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != 0)
				_exit(3);
			/* pid 1 of the new namespace, its own event first */
			if (getpid() != 1 ||
			    ns_check_records(c->page_size, c->type, 0, 1, 1))
				_exit(1);
			/* then spin while the parent's event watches us */
			fcntl(done[0], F_SETFL, O_NONBLOCK);
			if (write(ready[1], "r", 1) != 1)
				_exit(3);
			for (;;) {
				char b;
				ssize_t n = read(done[0], &b, 1);

				if (n == 1)
					_exit(0);
				if (n == 0 || errno != EAGAIN)
					_exit(3);	/* the middle died */
			}
		}
		close(ready[1]);
		close(done[0]);
		if (read_byte_within(ready[0], 10000)) {
			wait_within(inner, &status, 0);
			_exit(3);
		}
		outside = ns_check_records(c->page_size, c->type, inner, inner,
					   inner);
		if (write(done[1], "d", 1) != 1 ||
		    wait_within(inner, &status, 10000) || !WIFEXITED(status))
			_exit(3);
		_exit(WEXITSTATUS(status) ? WEXITSTATUS(status) : outside ? 2 : 0);
	}
	close(ready[0]);
	close(ready[1]);
	close(done[0]);
	close(done[1]);
	ASSERT_EQ(wait_within(middle, &status, 20000), 0);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "no CAP_SYS_ADMIN for a new pid namespace");
	if (WEXITSTATUS(status) == 5)
		SKIP(return, "no pid namespaces (CONFIG_PID_NS=n)");
	/* 1: wrong ids in the namespace, 2: wrong ids seen from outside */
	ASSERT_EQ(WEXITSTATUS(status), 0);
}

#define SLEEP_MS	100
/* The smallest gap in record times that can hold the sleep, see below. */
#define SLEEP_GAP_MS	95

struct sleep_result {
	uint64_t count;		/* records between the two reads of the count */
	uint64_t gap_ns;	/* largest gap between consecutive records */
};

/*
 * Over a SLEEP_MS nanosleep of this task, with the event on @rb enabled:
 * how many records it wrote between the two reads of its count around the
 * sleep, and the largest gap between the times of consecutive records,
 * from 4 records before the sleep to 4 after it (spinning).
 */
static struct sleep_result records_over_sleep(struct rb *rb)
{
	const struct timespec sleep = { .tv_nsec = SLEEP_MS * 1000000L };
	struct sleep_result res = { 0 };
	const struct sw_aux_record *r;
	uint64_t before, head, i;

	ioctl(rb->fd, PERF_EVENT_IOC_ENABLE, 0);
	spin(&rb->page->aux_head, 4 * REC);
	before = read_count(rb->fd);
	nanosleep(&sleep, NULL);
	res.count = read_count(rb->fd) - before;
	head = __atomic_load_n(&rb->page->aux_head, __ATOMIC_ACQUIRE);
	spin(&rb->page->aux_head, head + 4 * REC);
	ioctl(rb->fd, PERF_EVENT_IOC_DISABLE, 0);

	head = rb->page->aux_head;
	for (i = 1; i < head / REC && (i + 1) * REC <= rb->aux_size; i++) {
		r = (const void *)((const uint8_t *)rb->aux + i * REC);
		if (r->time - r[-1].time > res.gap_ns)
			res.gap_ns = r->time - r[-1].time;
	}
	return res;
}

/*
 * Records are written while the task is on a CPU: nothing while it sleeps.
 * The rule tested: among the records of the event, from before the sleep
 * to after it, two consecutive ones are at least SLEEP_GAP_MS apart (the
 * sleep, less 5% for the rates of local_clock() and CLOCK_MONOTONIC). A
 * timer that ran on while the task sleeps would fill the sleep with
 * records. How many records fall between the two reads of the count
 * around the sleep is only logged: those are ticks that interrupted the
 * user instructions around the sleep (with exclude_kernel) and also the
 * kernel's way into and out of it (without), and under emulation (QEMU
 * TCG on a loaded host) guest time runs on while the vCPU waits for a
 * host CPU, so those few instructions can take several periods: arm64
 * guests saw up to 7 with exclude_kernel.
 */
TEST_F(aux_sample, exclude_kernel_sleep)
{
	struct aux_ctx *c = &self->c;
	struct perf_event_attr attr;
	struct sleep_result res;

	ASSERT_EQ(open_leader(c, 100, 64, false, 0), 0);
	res = records_over_sleep(&c->leader);
	TH_LOG("exclude_kernel: %llu records over a %d ms sleep, largest gap %llu us",
	       (unsigned long long)res.count, SLEEP_MS,
	       (unsigned long long)res.gap_ns / 1000);
	ASSERT_GE(res.gap_ns, SLEEP_GAP_MS * 1000000ULL);
	rb_close(&c->leader);

	sw_aux_attr(&attr, c->type, 100);
	attr.exclude_kernel = 0;
	c->leader.fd = sys_perf_event_open(&attr, 0, -1, -1);
	if (c->leader.fd < 0 && errno == EACCES)
		SKIP(return, "kernel-mode ticks not allowed (perf_event_paranoid)");
	ASSERT_GE(c->leader.fd, 0);
	ASSERT_EQ(rb_map(&c->leader, c->page_size, 64, false), 0);
	res = records_over_sleep(&c->leader);
	TH_LOG("kernel included: %llu records over a %d ms sleep, largest gap %llu us",
	       (unsigned long long)res.count, SLEEP_MS,
	       (unsigned long long)res.gap_ns / 1000);
	ASSERT_GE(res.gap_ns, SLEEP_GAP_MS * 1000000ULL);
}

TEST_HARNESS_MAIN
