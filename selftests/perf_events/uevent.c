// SPDX-License-Identifier: GPL-2.0
/*
 * Tests for prctl(PR_TASK_PERF_UEVENT): a task writes PERF_RECORD_UEVENT
 * records into the perf events that observe it.
 */

#define _GNU_SOURCE

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
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "perf_uevent.h"

#define MAX_RB		4
/* header + type + size + payload + sample_id, with room to spare */
#define MAX_RECORD	(16 + PERF_UEVENT_MAX_SIZE + 64)

#define NR_THREADS	8
#define NR_PER_THREAD	1000

struct rb {
	int fd;
	struct perf_event_mmap_page *page;
	size_t map_size;
};

/*
 * sample_id for PERF_SAMPLE_TID | PERF_SAMPLE_TIME; with that sample_type it
 * is also the whole body of a PERF_RECORD_SAMPLE. Either way it ends the
 * record.
 */
struct id_sample {
	uint32_t pid;
	uint32_t tid;
	uint64_t time;
};

struct uevent_record {
	struct perf_event_header header;
	uint32_t type;
	uint32_t size;
	uint8_t data[];
};

struct lost_record {
	struct perf_event_header header;
	uint64_t id;
	uint64_t lost;
	struct id_sample sample_id;
};

static pid_t sys_gettid(void)
{
	return syscall(SYS_gettid);
}

static void init_attr(struct perf_event_attr *attr, bool uevents)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_DUMMY;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr->sample_id_all = 1;
	attr->uevents = uevents;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
}

/* Open an event and map data_pages of ring buffer; -1 with errno on error. */
static int rb_open(struct rb *rb, struct perf_event_attr *attr, pid_t pid,
		   int cpu, size_t data_pages)
{
	size_t page_size = sysconf(_SC_PAGESIZE);
	void *p;

	rb->fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1,
			 PERF_FLAG_FD_CLOEXEC);
	if (rb->fd < 0)
		return -1;

	rb->map_size = (data_pages + 1) * page_size;
	p = mmap(NULL, rb->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 rb->fd, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		close(rb->fd);
		rb->fd = -1;
		errno = err;
		return -1;
	}
	rb->page = p;
	return 0;
}

static void rb_close(struct rb *rb)
{
	if (rb->page)
		munmap(rb->page, rb->map_size);
	if (rb->fd >= 0)
		close(rb->fd);
	rb->page = NULL;
	rb->fd = -1;
}

static uint64_t rb_head(struct rb *rb)
{
	return __atomic_load_n(&rb->page->data_head, __ATOMIC_ACQUIRE);
}

static void rb_copy(struct rb *rb, uint64_t pos, void *dst, size_t len)
{
	const uint8_t *data = (uint8_t *)rb->page + rb->page->data_offset;
	uint64_t size = rb->page->data_size;
	size_t off = pos % size;
	size_t first = len < size - off ? len : size - off;

	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

/*
 * Copy the record at *pos into buf (MAX_RECORD bytes) and advance *pos;
 * false when there is none.
 */
static bool rb_read(struct rb *rb, uint64_t *pos, void *buf)
{
	struct perf_event_header *header = buf;

	if (*pos >= rb_head(rb))
		return false;
	rb_copy(rb, *pos, header, sizeof(*header));
	if (header->size < sizeof(*header) || header->size > MAX_RECORD)
		return false;
	rb_copy(rb, *pos, buf, header->size);
	*pos += header->size;
	return true;
}

static struct id_sample *record_id(void *buf)
{
	struct perf_event_header *header = buf;

	return (struct id_sample *)((uint8_t *)buf + header->size -
				    sizeof(struct id_sample));
}

/* Keep this thread on its first n allowed CPUs; returns how many. */
static int pin_cpus(int n, int *cpus)
{
	cpu_set_t allowed, set;
	int cpu, nr = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return 0;
	CPU_ZERO(&set);
	for (cpu = 0; cpu < CPU_SETSIZE && nr < n; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_SET(cpu, &set);
		cpus[nr++] = cpu;
	}
	if (!nr || sched_setaffinity(0, sizeof(set), &set))
		return 0;
	return nr;
}

static void fill(uint8_t *p, size_t size, unsigned int seed)
{
	size_t i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + 1);
}

/* The record in buf is a PERF_RECORD_UEVENT of this task with this payload. */
static void check_uevent(struct __test_metadata *_metadata, void *buf,
			 pid_t pid, pid_t tid, uint32_t type,
			 const void *data, uint32_t size)
{
	struct uevent_record *rec = buf;
	size_t padded = (size + 7) & ~7UL;
	struct id_sample *id = record_id(buf);
	size_t i;

	ASSERT_EQ(PERF_RECORD_UEVENT, rec->header.type);
	ASSERT_EQ(PERF_RECORD_MISC_USER, rec->header.misc);
	ASSERT_EQ(sizeof(*rec) + padded + sizeof(*id), rec->header.size);
	ASSERT_EQ(type, rec->type);
	ASSERT_EQ(size, rec->size);
	if (size)
		ASSERT_EQ(0, memcmp(rec->data, data, size));
	for (i = size; i < padded; i++)
		ASSERT_EQ(0, rec->data[i]);
	ASSERT_EQ(pid, id->pid);
	ASSERT_EQ(tid, id->tid);
}

static long uevent_prctl(unsigned long type, unsigned long size,
			 const void *data, unsigned long flags)
{
	return prctl(PR_TASK_PERF_UEVENT, type, size, (unsigned long)data,
		     flags);
}

/* What cgroup_scope set up, for the teardown to undo whatever failed. */
struct cg_state {
	char mount[64];		/* our cgroup2 mount point, "" if none */
	char child[128];	/* the test's cgroup below it, "" if none */
	char enabled[32];	/* a controller we enabled at the root, or "" */
	bool mounted;
	bool moved;		/* this process was moved into child */
	int fd;
};

FIXTURE(uevent)
{
	struct rb rb[MAX_RB];
	struct cg_state cg;
	uint64_t buf[MAX_RECORD / sizeof(uint64_t)];
};

FIXTURE_SETUP(uevent)
{
	int i;

	for (i = 0; i < MAX_RB; i++) {
		self->rb[i].fd = -1;
		self->rb[i].page = NULL;
	}
	memset(&self->cg, 0, sizeof(self->cg));
	self->cg.fd = -1;
}

static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -1;
	close(fd);
	return ret;
}

static void cg_cleanup(struct cg_state *cg)
{
	char val[40];

	if (cg->fd >= 0)
		close(cg->fd);
	cg->fd = -1;
	if (cg->moved) {
		snprintf(val, sizeof(val), "%d", getpid());
		cg_write(cg->mount, "cgroup.procs", val);
		cg->moved = false;
	}
	if (cg->child[0])
		rmdir(cg->child);
	cg->child[0] = 0;
	if (cg->enabled[0]) {
		snprintf(val, sizeof(val), "-%s", cg->enabled);
		cg_write(cg->mount, "cgroup.subtree_control", val);
		cg->enabled[0] = 0;
	}
	if (cg->mounted)
		umount(cg->mount);
	cg->mounted = false;
	if (cg->mount[0])
		rmdir(cg->mount);
	cg->mount[0] = 0;
}

FIXTURE_TEARDOWN(uevent)
{
	int i;

	for (i = 0; i < MAX_RB; i++)
		rb_close(&self->rb[i]);
	cg_cleanup(&self->cg);
}

/* Payloads of every size class arrive byte for byte, with sample_id. */
TEST_F(uevent, payload)
{
	static const uint32_t sizes[] = {
		0, 1, 7, 8, 255, 256, 257, 4095, PERF_UEVENT_MAX_SIZE
	};
	uint8_t payload[PERF_UEVENT_MAX_SIZE + 1];
	struct perf_event_attr attr;
	uint64_t pos = 0, time = 0;
	unsigned int i;

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 8));

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		/* Odd records come from an unaligned address. */
		fill(payload + (i & 1), sizes[i], i);
		ASSERT_EQ(0, perf_uevent(0x1000 + i, payload + (i & 1), sizes[i]));
	}

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		fill(payload, sizes[i], i);
		ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
		check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
			     0x1000 + i, payload, sizes[i]);
		ASSERT_LE(time, record_id(self->buf)->time);
		time = record_id(self->buf)->time;
	}
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
}

/* One byte more than PERF_UEVENT_MAX_SIZE is refused and writes nothing. */
TEST_F(uevent, too_big)
{
	uint8_t payload[PERF_UEVENT_MAX_SIZE + 1] = { 0 };
	struct perf_event_attr attr;

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 4));

	ASSERT_EQ(-1, perf_uevent(0, payload, PERF_UEVENT_MAX_SIZE + 1));
	ASSERT_EQ(E2BIG, errno);
	ASSERT_EQ(-1, uevent_prctl(0, ~0UL, payload, 0));
	ASSERT_EQ(E2BIG, errno);
	ASSERT_EQ(0, rb_head(&self->rb[0]));
}

/* Every way to get the arguments wrong, and the edges that are right. */
TEST_F(uevent, errnos)
{
	size_t page_size = sysconf(_SC_PAGESIZE);
	uint8_t payload[PERF_UEVENT_MAX_SIZE] = { 0 };
	const void *kernel_ptr = (const void *)-4096L;
	struct perf_event_attr attr;
	uint64_t pos = 0;
	uint8_t *map;

	/* Not a user address: refused even when nobody listens. */
	ASSERT_EQ(-1, uevent_prctl(0, 8, kernel_ptr, 0));
	ASSERT_EQ(EFAULT, errno);

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 4));

	ASSERT_EQ(-1, uevent_prctl(0, 8, payload, 1));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, uevent_prctl(0, 8, payload, ~0UL));
	ASSERT_EQ(EINVAL, errno);
	if (sizeof(long) == 8) {
		ASSERT_EQ(-1, uevent_prctl(0xffffffffUL + 1, 8, payload, 0));
		ASSERT_EQ(EINVAL, errno);
		ASSERT_EQ(-1, uevent_prctl(~0UL, 8, payload, 0));
		ASSERT_EQ(EINVAL, errno);
	}
	ASSERT_EQ(-1, uevent_prctl(0, PERF_UEVENT_MAX_SIZE + 1, payload, 0));
	ASSERT_EQ(E2BIG, errno);

	ASSERT_EQ(-1, uevent_prctl(0, 8, NULL, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, uevent_prctl(0, 8, kernel_ptr, 0));
	ASSERT_EQ(EFAULT, errno);
	if (sizeof(long) == 8) {
		ASSERT_EQ(-1, uevent_prctl(0, 8, (const void *)(1UL << (8 * sizeof(long) - 1)), 0));
		ASSERT_EQ(EFAULT, errno);
	}

	/* Unmapped: all of it, its tail, and through the kmalloc path. */
	map = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page_size, page_size));
	ASSERT_EQ(-1, uevent_prctl(0, 8, map + page_size, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, uevent_prctl(0, 8, map + page_size - 4, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, uevent_prctl(0, PERF_UEVENT_MAX_SIZE, map + 16, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(0, munmap(map, page_size));
	ASSERT_EQ(-1, uevent_prctl(0, 1, map, 0));
	ASSERT_EQ(EFAULT, errno);

	/* None of the failed calls wrote anything. */
	ASSERT_EQ(0, rb_head(&self->rb[0]));

	/* The largest type, and no payload with no pointer, are fine. */
	ASSERT_EQ(0, uevent_prctl(0xffffffffUL, 0, NULL, 0));
	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
		     0xffffffffU, NULL, 0);
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
}

/*
 * A record's timestamp is on the samples' clock and is taken during the
 * call: sorted by time, as perf does, each record follows the samples the
 * task read before it made the call, and a later sample follows it. In the
 * buffer, a sample that fires during the call may come on either side of
 * the record, as with every other side-band record.
 */
TEST_F(uevent, time_order)
{
	uint64_t pos = 0, last_sample = 0, last_uevent = 0;
	struct perf_event_attr attr;
	int cpu, i, uevents = 0;

	/* One CPU: perf's clock is only monotonic per CPU. */
	ASSERT_EQ(1, pin_cpus(1, &cpu));

	init_attr(&attr, true);
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 100000;	/* ns of CPU time */
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 64));

	for (i = 0; i < 20; i++) {
		/* The latest sample the task has seen before the call. */
		uint64_t before = last_sample, uevent_time = 0;
		unsigned long spins = 0;
		bool sampled_after = false;

		ASSERT_EQ(0, perf_uevent(PERF_UEVENT_TYPE_TEXT, &i, sizeof(i)));

		/* Read on until this call's record and a later sample are in. */
		while (!uevent_time || !sampled_after) {
			struct perf_event_header *header = (void *)self->buf;
			struct id_sample *id;

			if (!rb_read(&self->rb[0], &pos, self->buf)) {
				ASSERT_LT(spins++, 1000000000UL);
				continue;
			}
			id = record_id(self->buf);

			switch (header->type) {
			case PERF_RECORD_UEVENT:
				check_uevent(_metadata, self->buf, getpid(),
					     sys_gettid(), PERF_UEVENT_TYPE_TEXT,
					     &uevents, sizeof(uevents));
				uevents++;
				ASSERT_LT(before, id->time);
				ASSERT_LT(last_uevent, id->time);
				uevent_time = id->time;
				last_uevent = id->time;
				break;
			case PERF_RECORD_SAMPLE:
				ASSERT_EQ(getpid(), id->pid);
				ASSERT_EQ(sys_gettid(), id->tid);
				/* The samples of one CPU are in order. */
				ASSERT_LE(last_sample, id->time);
				last_sample = id->time;
				if (uevent_time && id->time > uevent_time)
					sampled_after = true;
				break;
			case PERF_RECORD_THROTTLE:
			case PERF_RECORD_UNTHROTTLE:
				break;
			default:
				ASSERT_EQ(0, header->type);
			}
		}
	}
	ASSERT_EQ(20, uevents);
}

/* An event without attr.uevents gets none, next to one that does. */
TEST_F(uevent, no_bit)
{
	static const char text[] = "only where asked for";
	struct perf_event_attr attr;
	uint64_t pos = 0;

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 4));
	init_attr(&attr, false);
	ASSERT_EQ(0, rb_open(&self->rb[1], &attr, 0, -1, 4));

	ASSERT_EQ(0, perf_uevent_text(text));

	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
		     PERF_UEVENT_TYPE_TEXT, text, strlen(text));
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
	ASSERT_EQ(0, rb_head(&self->rb[1]));
}

/* A child's record reaches the parent's event through inheritance. */
TEST_F(uevent, inherit)
{
	static const char text[] = "from the child";
	struct perf_event_attr attr;
	uint64_t pos = 0;
	int cpu, status;
	pid_t child;

	/*
	 * Inherited per-task events cannot be mmapped, per-CPU ones can: keep
	 * parent and child on one CPU and watch that.
	 */
	ASSERT_EQ(1, pin_cpus(1, &cpu));
	init_attr(&attr, true);
	attr.inherit = 1;
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, cpu, 4));

	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		_exit(perf_uevent_text(text) ? 1 : 0);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	check_uevent(_metadata, self->buf, child, child,
		     PERF_UEVENT_TYPE_TEXT, text, strlen(text));
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
}

/* A CPU-wide event gets the records of the tasks that run on its CPU. */
TEST_F(uevent, per_cpu)
{
	static const char text[] = "on this CPU";
	struct perf_event_attr attr;
	int cpus[2], nr, found = 0;
	uint64_t pos = 0;

	nr = pin_cpus(2, cpus);
	ASSERT_LE(1, nr);
	init_attr(&attr, true);
	if (rb_open(&self->rb[0], &attr, -1, cpus[0], 4)) {
		if (errno == EACCES || errno == EPERM)
			SKIP(return, "CPU-wide events need paranoid <= 0 or CAP_PERFMON");
		ASSERT_EQ(0, errno);
	}
	if (nr == 2)
		ASSERT_EQ(0, rb_open(&self->rb[1], &attr, -1, cpus[1], 4));

	ASSERT_EQ(1, pin_cpus(1, cpus));
	ASSERT_EQ(0, perf_uevent_text(text));

	/* Other tasks may write records too: look for this one's. */
	while (rb_read(&self->rb[0], &pos, self->buf)) {
		if (record_id(self->buf)->pid != getpid())
			continue;
		check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
			     PERF_UEVENT_TYPE_TEXT, text, strlen(text));
		found++;
	}
	ASSERT_EQ(1, found);

	/* Nothing of it on the other CPU. */
	pos = 0;
	while (nr == 2 && rb_read(&self->rb[1], &pos, self->buf))
		ASSERT_NE(getpid(), record_id(self->buf)->pid);
}

/*
 * A task that nobody observes succeeds and writes nowhere, not even into
 * the event of the process it is watching.
 */
TEST_F(uevent, unobserved)
{
	static const char text[] = "child's own";
	uint8_t payload[PERF_UEVENT_MAX_SIZE] = { 1, 2, 3 };
	struct perf_event_attr attr;
	int go[2], status;
	uint64_t pos = 0;
	pid_t child;
	char c;

	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(perf_uevent_text(text) ? 1 : 0);
	}
	close(go[0]);

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, child, -1, 4));

	ASSERT_EQ(0, perf_uevent_text("parent"));
	ASSERT_EQ(0, perf_uevent(3, payload, 8));
	ASSERT_EQ(0, perf_uevent(3, payload, sizeof(payload)));
	ASSERT_EQ(0, rb_head(&self->rb[0]));

	/* The child, which the event does observe, does get through. */
	ASSERT_EQ(1, write(go[1], "x", 1));
	close(go[1]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	check_uevent(_metadata, self->buf, child, child,
		     PERF_UEVENT_TYPE_TEXT, text, strlen(text));
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
}

struct thread_arg {
	pthread_t thread;
	uint32_t index;
	pid_t tid;
	int failed;
};

static void *emitter(void *p)
{
	struct thread_arg *arg = p;
	uint32_t payload[2] = { arg->index };

	arg->tid = sys_gettid();
	for (payload[1] = 0; payload[1] < NR_PER_THREAD; payload[1]++)
		arg->failed += !!perf_uevent(9, payload, sizeof(payload));
	return NULL;
}

/* Threads writing at once lose nothing while the buffer has room. */
TEST_F(uevent, threads)
{
	static struct thread_arg args[NR_THREADS];
	static uint8_t seen[NR_THREADS][NR_PER_THREAD];
	struct perf_event_attr attr;
	int cpus[2], nr, i, total = 0;

	memset(seen, 0, sizeof(seen));
	nr = pin_cpus(2, cpus);
	ASSERT_LE(1, nr);

	/*
	 * Per-CPU inherited events, as perf record uses them: each has room
	 * for every record (40 bytes each) even if all land on it.
	 */
	init_attr(&attr, true);
	attr.inherit = 1;
	for (i = 0; i < nr; i++) {
		if (rb_open(&self->rb[i], &attr, 0, cpus[i], 128)) {
			if (errno == EPERM)
				SKIP(return, "512 KiB buffers exceed the locked memory limit");
			ASSERT_EQ(0, errno);
		}
	}

	for (i = 0; i < NR_THREADS; i++) {
		args[i] = (struct thread_arg){ .index = i };
		ASSERT_EQ(0, pthread_create(&args[i].thread, NULL, emitter,
					    &args[i]));
	}
	for (i = 0; i < NR_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(args[i].thread, NULL));
		ASSERT_EQ(0, args[i].failed);
	}

	for (i = 0; i < nr; i++) {
		uint64_t pos = 0;

		while (rb_read(&self->rb[i], &pos, self->buf)) {
			struct uevent_record *rec = (void *)self->buf;
			struct id_sample *id = record_id(self->buf);
			uint32_t *payload = (uint32_t *)rec->data;

			ASSERT_EQ(PERF_RECORD_UEVENT, rec->header.type);
			ASSERT_EQ(9, rec->type);
			ASSERT_EQ(8, rec->size);
			ASSERT_LT(payload[0], NR_THREADS);
			ASSERT_LT(payload[1], NR_PER_THREAD);
			ASSERT_EQ(getpid(), id->pid);
			ASSERT_EQ(args[payload[0]].tid, id->tid);
			ASSERT_EQ(0, seen[payload[0]][payload[1]]);
			seen[payload[0]][payload[1]] = 1;
			total++;
		}
	}
	ASSERT_EQ(NR_THREADS * NR_PER_THREAD, total);
}

/* A full buffer drops records and says so with PERF_RECORD_LOST. */
TEST_F(uevent, full_buffer_lost)
{
	const size_t rec_size = sizeof(struct uevent_record) + 8 +
				sizeof(struct id_sample);
	struct perf_event_attr attr;
	uint64_t pos = 0, id, seq, n, fit;
	struct lost_record *lost;

	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 1));
	ASSERT_EQ(0, ioctl(self->rb[0].fd, PERF_EVENT_IOC_ID, &id));

	/* The writer never fills the last byte: head must not reach tail. */
	fit = (self->rb[0].page->data_size - 1) / rec_size;
	n = fit * 2 + 3;
	for (seq = 0; seq < n; seq++)
		ASSERT_EQ(0, perf_uevent(4, &seq, sizeof(seq)));

	for (seq = 0; seq < fit; seq++) {
		ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
		check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
			     4, &seq, sizeof(seq));
	}
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));

	/* Consume everything; the next record comes after the loss report. */
	__atomic_store_n(&self->rb[0].page->data_tail, pos, __ATOMIC_RELEASE);
	ASSERT_EQ(0, perf_uevent(4, &n, sizeof(n)));

	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	lost = (void *)self->buf;
	ASSERT_EQ(PERF_RECORD_LOST, lost->header.type);
	ASSERT_EQ(sizeof(*lost), lost->header.size);
	ASSERT_EQ(id, lost->id);
	ASSERT_EQ(n - fit, lost->lost);
	ASSERT_EQ(getpid(), lost->sample_id.pid);

	ASSERT_TRUE(rb_read(&self->rb[0], &pos, self->buf));
	check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
		     4, &n, sizeof(n));
	ASSERT_FALSE(rb_read(&self->rb[0], &pos, self->buf));
}

/*
 * A listener learns who wrote each record from its sample_id: uevents
 * without sample_id_all and PERF_SAMPLE_TID are refused.
 */
TEST_F(uevent, needs_sample_id)
{
	struct perf_event_attr attr;
	int fd;

	init_attr(&attr, true);
	attr.sample_id_all = 0;
	ASSERT_EQ(-1, syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0));
	ASSERT_EQ(EINVAL, errno);

	init_attr(&attr, true);
	attr.sample_type = PERF_SAMPLE_TIME;
	ASSERT_EQ(-1, syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0));
	ASSERT_EQ(EINVAL, errno);

	/* Without uevents neither is needed. */
	init_attr(&attr, false);
	attr.sample_id_all = 0;
	attr.sample_type = PERF_SAMPLE_TIME;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	ASSERT_LE(0, fd);
	close(fd);

	init_attr(&attr, true);
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	ASSERT_LE(0, fd);
	close(fd);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#define FLOOD_CALLS	200

/*
 * One thread writing 4 KiB records as fast as it can into a CPU-wide
 * listener: the listener gets at most the burst plus the rate over the
 * time it took, every other record is reported lost, and a cpu-clock
 * sampling event in the same buffer keeps its samples. A listener on the
 * writer's own task gets every record.
 */
TEST_F(uevent, flood)
{
	static uint8_t payload[PERF_UEVENT_MAX_SIZE];
	const uint64_t rec_bytes = 16 + PERF_UEVENT_MAX_SIZE;
	uint64_t pos = 0, got = 0, lost = 0, samples = 0, own = 0;
	uint64_t t0, t1, allowed, i;
	struct perf_event_attr attr;
	int cpu, fd;

	ASSERT_EQ(1, pin_cpus(1, &cpu));
	fill(payload, sizeof(payload), 5);

	init_attr(&attr, true);
	if (rb_open(&self->rb[0], &attr, -1, cpu, 64)) {
		if (errno == EACCES || errno == EPERM)
			SKIP(return, "CPU-wide events need paranoid <= 0 or CAP_PERFMON");
		ASSERT_EQ(0, errno);
	}
	/* cpu-clock samples every 1 ms into the same buffer */
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1000000;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, self->rb[0].fd));

	/* The writer's own task listener: 200 records of 4 KiB fit 1 MiB. */
	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[1], &attr, 0, -1, 256));

	t0 = now_ns();
	for (i = 0; i < FLOOD_CALLS; i++)
		ASSERT_EQ(0, perf_uevent(11, payload, sizeof(payload)));
	t1 = now_ns();
	/* let the sampler run while nothing floods */
	while (now_ns() - t1 < 20000000)
		;
	close(fd);

	while (rb_read(&self->rb[0], &pos, self->buf)) {
		struct perf_event_header *h = (void *)self->buf;

		if (h->type == PERF_RECORD_LOST)
			lost += ((struct lost_record *)self->buf)->lost;
		else if (h->type == PERF_RECORD_SAMPLE)
			samples++;
		else if (h->type == PERF_RECORD_UEVENT &&
			 record_id(self->buf)->tid == (uint32_t)sys_gettid())
			got++;
	}
	pos = 0;
	while (rb_read(&self->rb[1], &pos, self->buf))
		own += ((struct perf_event_header *)self->buf)->type ==
		       PERF_RECORD_UEVENT;

	allowed = (PERF_UEVENT_CPU_BURST +
		   (t1 - t0) * PERF_UEVENT_CPU_RATE / 1000000000ULL) / rec_bytes + 1;
	TH_LOG("%llu calls in %llu us: %llu written, %llu lost, %llu allowed, %llu samples",
	       (unsigned long long)FLOOD_CALLS,
	       (unsigned long long)(t1 - t0) / 1000, (unsigned long long)got,
	       (unsigned long long)lost, (unsigned long long)allowed,
	       (unsigned long long)samples);
	/* The burst always gets through: 65536 / 4112 bytes = 15 records. */
	ASSERT_LE(PERF_UEVENT_CPU_BURST / rec_bytes, got);
	ASSERT_LE(got, allowed);
	/* Other writers on the CPU may add to lost, never take from it. */
	ASSERT_LE(FLOOD_CALLS - got, lost);
	ASSERT_LT(0, samples);
	ASSERT_EQ(FLOOD_CALLS, own);
}

/*
 * The budget is spent only on records offered to events not attached to
 * a task: a process that floods only its own task listener still gets
 * its whole burst into a CPU-wide listener. The CPU-wide one is open but
 * off during the flood (an event that is off is offered nothing), so that
 * the old rule, which charged every record while any event had uevents
 * set, has no time to refill the budget before the burst is written.
 */
TEST_F(uevent, task_listener_keeps_budget)
{
	static uint8_t payload[PERF_UEVENT_MAX_SIZE];
	const uint64_t rec_bytes = 16 + PERF_UEVENT_MAX_SIZE;
	const uint64_t burst = PERF_UEVENT_CPU_BURST / rec_bytes;
	uint64_t pos = 0, got = 0, own = 0, t0, i;
	struct perf_event_attr attr;
	int cpu;

	ASSERT_EQ(1, pin_cpus(1, &cpu));
	fill(payload, sizeof(payload), 7);

	init_attr(&attr, true);
	attr.disabled = 1;
	if (rb_open(&self->rb[1], &attr, -1, cpu, 64)) {
		if (errno == EACCES || errno == EPERM)
			SKIP(return, "CPU-wide events need paranoid <= 0 or CAP_PERFMON");
		ASSERT_EQ(0, errno);
	}

	/* 200 records of 4 KiB, 12 times the burst, into 1 MiB of task ring */
	init_attr(&attr, true);
	ASSERT_EQ(0, rb_open(&self->rb[0], &attr, 0, -1, 256));
	for (i = 0; i < FLOOD_CALLS; i++)
		ASSERT_EQ(0, perf_uevent(12, payload, sizeof(payload)));

	t0 = now_ns();
	ASSERT_EQ(0, ioctl(self->rb[1].fd, PERF_EVENT_IOC_ENABLE, 0));
	for (i = 0; i < burst; i++)
		ASSERT_EQ(0, perf_uevent(13, payload, sizeof(payload)));
	TH_LOG("burst written %llu us after the flood",
	       (unsigned long long)(now_ns() - t0) / 1000);

	while (rb_read(&self->rb[0], &pos, self->buf))
		own += ((struct perf_event_header *)self->buf)->type ==
		       PERF_RECORD_UEVENT;
	pos = 0;
	while (rb_read(&self->rb[1], &pos, self->buf)) {
		struct perf_event_header *h = (void *)self->buf;

		/* Other writers on the CPU may add records and lost ones. */
		if (h->type != PERF_RECORD_UEVENT ||
		    record_id(self->buf)->tid != (uint32_t)sys_gettid())
			continue;
		check_uevent(_metadata, self->buf, getpid(), sys_gettid(), 13,
			     payload, sizeof(payload));
		got++;
	}
	/* 65536 / 4112 bytes = 15 records, all of them in */
	ASSERT_EQ(FLOOD_CALLS + burst, own);
	ASSERT_EQ(burst, got);
}

#define FLOOD_THREADS	8

struct flood_arg {
	pthread_t thread;
	const uint8_t *payload;
	uint32_t calls;
	int failed;
};

static void *flood_writer(void *p)
{
	struct flood_arg *arg = p;
	uint32_t i;

	for (i = 0; i < arg->calls; i++)
		arg->failed += !!perf_uevent(12, arg->payload,
					     PERF_UEVENT_MAX_SIZE);
	return NULL;
}

/*
 * The rate limit is per process: FLOOD_THREADS threads writing 4 KiB
 * records at once into a CPU-wide listener get through, all together, at
 * most the burst plus the rate over the time they took, not
 * FLOOD_THREADS times that. The bound is exact (the kernel and the test
 * both use CLOCK_MONOTONIC, and the budget starts at the first call, after
 * t0, and ends at the last, before t1); the margin of one record covers
 * the two clock reads. Every record past it is reported lost, and the
 * cpu-clock samples in the same buffer keep flowing.
 */
TEST_F(uevent, flood_threads)
{
	static uint8_t payload[PERF_UEVENT_MAX_SIZE];
	static struct flood_arg args[FLOOD_THREADS];
	const uint64_t rec_bytes = 16 + PERF_UEVENT_MAX_SIZE;
	const uint64_t calls = FLOOD_THREADS * FLOOD_CALLS;
	uint64_t pos = 0, got = 0, lost = 0, samples = 0;
	uint64_t t0, t1, allowed_bytes, counts[2];
	struct perf_event_attr attr;
	int cpu, fd, i;

	/* The threads inherit the affinity: all write on the listener's CPU. */
	ASSERT_EQ(1, pin_cpus(1, &cpu));
	fill(payload, sizeof(payload), 6);

	/*
	 * 1 MiB, more than one process may write in a second, so that the
	 * limit, not the buffer, is what refuses records; PERF_FORMAT_LOST
	 * counts every record this listener lost, however.
	 */
	init_attr(&attr, true);
	attr.read_format = PERF_FORMAT_LOST;
	if (rb_open(&self->rb[0], &attr, -1, cpu, 256)) {
		if (errno == EACCES || errno == EPERM)
			SKIP(return, "CPU-wide events need paranoid <= 0 or CAP_PERFMON");
		ASSERT_EQ(0, errno);
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1000000;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, self->rb[0].fd));

	t0 = now_ns();
	for (i = 0; i < FLOOD_THREADS; i++) {
		args[i] = (struct flood_arg){
			.payload = payload,
			.calls = FLOOD_CALLS,
		};
		ASSERT_EQ(0, pthread_create(&args[i].thread, NULL,
					    flood_writer, &args[i]));
	}
	for (i = 0; i < FLOOD_THREADS; i++)
		ASSERT_EQ(0, pthread_join(args[i].thread, NULL));
	t1 = now_ns();
	/* let the sampler run while nothing floods */
	while (now_ns() - t1 < 20000000)
		;
	close(fd);

	for (i = 0; i < FLOOD_THREADS; i++)
		ASSERT_EQ(0, args[i].failed);
	ASSERT_EQ(sizeof(counts), read(self->rb[0].fd, counts, sizeof(counts)));

	while (rb_read(&self->rb[0], &pos, self->buf)) {
		struct perf_event_header *h = (void *)self->buf;

		if (h->type == PERF_RECORD_LOST)
			lost += ((struct lost_record *)self->buf)->lost;
		else if (h->type == PERF_RECORD_SAMPLE)
			samples++;
		else if (h->type == PERF_RECORD_UEVENT &&
			 record_id(self->buf)->pid == (uint32_t)getpid())
			got++;
	}

	allowed_bytes = PERF_UEVENT_CPU_BURST +
			(t1 - t0) * PERF_UEVENT_CPU_RATE / 1000000000ULL;
	TH_LOG("%d threads, %llu calls, %llu us: %llu (%llu B) in, %llu lost, %llu B allowed",
	       FLOOD_THREADS, (unsigned long long)calls,
	       (unsigned long long)(t1 - t0) / 1000, (unsigned long long)got,
	       (unsigned long long)(got * rec_bytes), (unsigned long long)lost,
	       (unsigned long long)allowed_bytes);
	TH_LOG("%llu samples, PERF_FORMAT_LOST %llu", (unsigned long long)samples,
	       (unsigned long long)counts[1]);
	/* The burst always gets through: 65536 / 4112 bytes = 15 records. */
	ASSERT_LE(PERF_UEVENT_CPU_BURST / rec_bytes, got);
	ASSERT_LE(got * rec_bytes, allowed_bytes + rec_bytes);
	/* Other writers on the CPU may add to lost, never take from it. */
	ASSERT_LE(calls - got, counts[1]);
	/* and the loss is reported in the stream, while samples flow */
	ASSERT_LT(0, lost);
	ASSERT_LT(0, samples);
}

/*
 * Make the perf_event controller reach the cgroups created below the root
 * of the default hierarchy. It is an implicit controller there, but the
 * root passes it on to new children only once some controller has been
 * enabled in the root's cgroup.subtree_control: until then (a machine
 * where no init system ever wrote that file, as the test guests) a
 * cgroup event on any cgroup below the root fails with ENOENT. Enable the
 * first controller the root offers, if none is on yet; cg_cleanup() turns
 * it off again.
 */
static void cg_enable_one(struct cg_state *cg)
{
	char path[128], list[256], *name;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", cg->mount);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, list, sizeof(list) - 1);
	close(fd);
	if (n != 0)
		return;		/* something is on already, or unreadable */

	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->mount);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, list, sizeof(list) - 1);
	close(fd);
	if (n <= 0)
		return;
	list[n] = 0;
	name = strtok(list, "\n ");
	if (!name || strlen(name) >= sizeof(cg->enabled))
		return;
	snprintf(path, sizeof(path), "+%s", name);
	if (!cg_write(cg->mount, "cgroup.subtree_control", path))
		snprintf(cg->enabled, sizeof(cg->enabled), "%s", name);
}

/*
 * A CPU-wide listener scoped to a cgroup gets the records of writers in
 * that cgroup only (or below it). Everything set up is in the fixture, so
 * the teardown undoes it when an assert fails half way.
 */
TEST_F(uevent, cgroup_scope)
{
	static const char inside[] = "inside the cgroup", outside[] = "outside";
	struct cg_state *cg = &self->cg;
	struct perf_event_attr attr;
	int cpu, n_in = 0, n_out = 0;
	uint64_t pos = 0;
	char pid[16];

	ASSERT_EQ(1, pin_cpus(1, &cpu));
	snprintf(cg->mount, sizeof(cg->mount), "/tmp/uevent-cgroup-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(cg->mount));
	if (mount("none", cg->mount, "cgroup2", 0, NULL))
		SKIP(return, "cannot mount cgroup2: %s", strerror(errno));
	cg->mounted = true;
	cg_enable_one(cg);
	/* unique: the mount point is */
	snprintf(cg->child, sizeof(cg->child), "%s/uevent-test-%s-%d",
		 cg->mount, strrchr(cg->mount, '-') + 1, getpid());
	ASSERT_EQ(0, mkdir(cg->child, 0755));
	cg->fd = open(cg->child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, cg->fd);

	init_attr(&attr, true);
	self->rb[0].fd = syscall(__NR_perf_event_open, &attr, cg->fd, cpu, -1,
				 PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
	if (self->rb[0].fd < 0 && errno == ENOENT && !cg->enabled[0])
		SKIP(return, "perf_event not below the cgroup2 root, no controller to enable");
	ASSERT_LE(0, self->rb[0].fd) TH_LOG("cgroup event: %s", strerror(errno));
	self->rb[0].map_size = 5 * sysconf(_SC_PAGESIZE);
	self->rb[0].page = mmap(NULL, self->rb[0].map_size,
				PROT_READ | PROT_WRITE, MAP_SHARED,
				self->rb[0].fd, 0);
	ASSERT_NE(MAP_FAILED, self->rb[0].page);

	/* Outside first, then move in and write again, then back out. */
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, perf_uevent_text(outside));
	cg->moved = true;
	ASSERT_EQ(0, cg_write(cg->child, "cgroup.procs", pid));
	ASSERT_EQ(0, perf_uevent_text(inside));
	ASSERT_EQ(0, cg_write(cg->mount, "cgroup.procs", pid));
	cg->moved = false;
	ASSERT_EQ(0, perf_uevent_text(outside));

	while (rb_read(&self->rb[0], &pos, self->buf)) {
		struct uevent_record *rec = (void *)self->buf;

		if (rec->header.type != PERF_RECORD_UEVENT)
			continue;
		if (record_id(self->buf)->pid != (uint32_t)getpid())
			continue;
		if (rec->size == strlen(inside) &&
		    !memcmp(rec->data, inside, rec->size)) {
			check_uevent(_metadata, self->buf, getpid(), sys_gettid(),
				     PERF_UEVENT_TYPE_TEXT, inside, strlen(inside));
			n_in++;
		} else {
			n_out++;
		}
	}
	ASSERT_EQ(1, n_in);
	ASSERT_EQ(0, n_out);
}

TEST_HARNESS_MAIN
