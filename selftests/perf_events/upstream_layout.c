// SPDX-License-Identifier: GPL-2.0
/*
 * A program built against mainline's struct perf_event_attr, which ends
 * with config4 at offset 136 (PERF_ATTR_SIZE_VER9, 144 bytes) and knows
 * none of this kernel's additions, must see this kernel as it sees an
 * unpatched 6.12: events open, sample and read as usual, and what 6.12
 * does not know (config4, mainline's next flag and sample bits, bytes of
 * mainline's next attr sizes) is refused as 6.12 refuses it.
 *
 * Each attr is passed at the very end of a mapping, followed by a page
 * without access, so a kernel that read beyond the attr size it was given
 * would fail the call with EFAULT.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"

/* Mainline's PERF_ATTR_SIZE_VER9 layout: this header's first 144 bytes. */
#define UPSTREAM_ATTR_SIZE	144
#define UPSTREAM_CONFIG4	136

#define SAMPLE_TYPE	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_PERIOD)
#define READ_FORMAT	(PERF_FORMAT_TOTAL_TIME_ENABLED | \
			 PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID)

static long page_size;

/* @size bytes that end where an inaccessible page begins */
static void *attr_at_page_end(size_t size)
{
	char *map;

	map = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	if (mprotect(map + page_size, page_size, PROT_NONE)) {
		munmap(map, 2 * page_size);
		return NULL;
	}
	return map + page_size - size;
}

static void attr_free(void *attr)
{
	munmap((void *)((uintptr_t)attr & ~(page_size - 1)), 2 * page_size);
}

/* A cpu-clock sampling attr as mainline's headers would build it */
static void *upstream_attr(size_t size)
{
	struct perf_event_attr attr;
	void *p = attr_at_page_end(size);

	if (!p)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 100000;	/* 100 us */
	attr.sample_type = SAMPLE_TYPE;
	attr.read_format = READ_FORMAT;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.size = size;
	memset(p, 0, size);
	memcpy(p, &attr, size < sizeof(attr) ? size : sizeof(attr));
	return p;
}

static int perf_open(void *attr)
{
	return syscall(__NR_perf_event_open, attr, 0, -1, -1, 0);
}

/* errno of perf_event_open(), 0 if it opened */
static int open_errno(void *attr)
{
	int fd = perf_open(attr);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static uint32_t attr_size(void *attr)
{
	return ((struct perf_event_attr *)attr)->size;
}

static void burn_cpu(unsigned int ms)
{
	struct timespec start, now;
	unsigned long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 100000; i++)
			asm ("" : "+r" (n) : "r" (i));	/* not optimized away */
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 +
		 (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

/* The cases are named upstream_layout.* */
FIXTURE(upstream_layout) {};
FIXTURE_SETUP(upstream_layout) {}
FIXTURE_TEARDOWN(upstream_layout) {}

/* The parts of the layout a mainline program relies on */
TEST_F(upstream_layout, layout)
{
	struct perf_event_attr attr;
	uint64_t flags;

	ASSERT_EQ(PERF_ATTR_SIZE_VER8, 136);
	ASSERT_EQ(PERF_ATTR_SIZE_VER9, UPSTREAM_ATTR_SIZE);
	ASSERT_EQ(offsetof(struct perf_event_attr, config3), 128);
	ASSERT_EQ(offsetof(struct perf_event_attr, config4), UPSTREAM_CONFIG4);
	ASSERT_EQ(offsetof(struct perf_event_attr, __reserved_2), 110);
	ASSERT_EQ(offsetof(struct perf_event_attr, aux_sample_size), 112);
	ASSERT_EQ(offsetof(struct perf_event_attr, sig_data), 120);
	ASSERT_EQ((uint64_t)PERF_SAMPLE_MAX, 1ULL << 25);
	ASSERT_EQ(PERF_RECORD_CALLCHAIN_DEFERRED, 22);
	ASSERT_EQ((int64_t)PERF_CONTEXT_USER_DEFERRED, -640);

	/* The flag word follows read_format: defer_* are bits 38 and 39. */
	memset(&attr, 0, sizeof(attr));
	attr.defer_callchain = 1;
	memcpy(&flags, (char *)&attr + offsetof(struct perf_event_attr, read_format) + 8, 8);
	ASSERT_EQ(flags, 1ULL << 38);
	memset(&attr, 0, sizeof(attr));
	attr.defer_output = 1;
	memcpy(&flags, (char *)&attr + offsetof(struct perf_event_attr, read_format) + 8, 8);
	ASSERT_EQ(flags, 1ULL << 39);
}

/* A 144-byte attr opens, samples into the ring buffer and reads */
TEST_F(upstream_layout, sample_and_read)
{
	struct {
		uint64_t value, enabled, running, id;
	} rd;
	struct perf_event_mmap_page *pg;
	size_t data_size = 16 * page_size;
	uint64_t id, head, off, samples = 0, bad = 0;
	void *attr;
	char *map;
	int fd;

	attr = upstream_attr(UPSTREAM_ATTR_SIZE);
	ASSERT_NE(attr, NULL);
	fd = perf_open(attr);
	ASSERT_GE(fd, 0) TH_LOG("perf_event_open: %s", strerror(errno));
	/* A valid attr is not written back */
	EXPECT_EQ(attr_size(attr), UPSTREAM_ATTR_SIZE);

	map = mmap(NULL, page_size + data_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	ASSERT_NE(map, MAP_FAILED);
	pg = (struct perf_event_mmap_page *)map;

	ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_ID, &id), 0);
	ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	burn_cpu(100);
	ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);

	ASSERT_EQ(read(fd, &rd, sizeof(rd)), sizeof(rd));
	EXPECT_GT(rd.value, 0);
	EXPECT_GT(rd.enabled, 0);
	EXPECT_EQ(rd.id, id);

	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	for (off = pg->data_tail; off + sizeof(struct perf_event_header) <= head;) {
		struct perf_event_header hdr;
		struct {
			uint64_t ip;
			uint32_t pid, tid;
			uint64_t time, period;
		} s;
		size_t pos = off % data_size;

		if (pos + sizeof(hdr) > data_size)
			break;		/* wrapped: enough seen */
		memcpy(&hdr, map + page_size + pos, sizeof(hdr));
		if (!hdr.size)
			break;
		if (hdr.type == PERF_RECORD_SAMPLE) {
			if (hdr.size != sizeof(hdr) + sizeof(s) ||
			    pos + hdr.size > data_size) {
				bad++;
			} else {
				memcpy(&s, map + page_size + pos + sizeof(hdr), sizeof(s));
				if (s.pid != (uint32_t)getpid() || s.tid != (uint32_t)gettid() ||
				    !s.ip || !s.time || s.period != 100000)
					bad++;
				else
					samples++;
			}
		}
		off += hdr.size;
	}
	EXPECT_GT(samples, 0);
	EXPECT_EQ(bad, 0);

	munmap(map, page_size + data_size);
	close(fd);
	attr_free(attr);
}

/* Every older size opens too, reading no byte past it */
TEST_F(upstream_layout, older_sizes)
{
	static const uint32_t sizes[] = {
		PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER1, PERF_ATTR_SIZE_VER2,
		PERF_ATTR_SIZE_VER3, PERF_ATTR_SIZE_VER4, PERF_ATTR_SIZE_VER5,
		PERF_ATTR_SIZE_VER6, PERF_ATTR_SIZE_VER7, PERF_ATTR_SIZE_VER8,
	};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		void *attr = upstream_attr(sizes[i]);

		ASSERT_NE(attr, NULL);
		EXPECT_EQ(open_errno(attr), 0) TH_LOG("size %u", sizes[i]);
		attr_free(attr);
	}
}

/*
 * 6.12 knows no PMU that uses config4: a non-zero config4 is refused as a
 * byte past the 136 bytes 6.12 knows, with E2BIG and attr.size set to 136.
 */
TEST_F(upstream_layout, config4_e2big)
{
	uint64_t config4 = 1;
	void *attr = upstream_attr(UPSTREAM_ATTR_SIZE);

	ASSERT_NE(attr, NULL);
	memcpy((char *)attr + UPSTREAM_CONFIG4, &config4, sizeof(config4));
	EXPECT_EQ(open_errno(attr), E2BIG);
	EXPECT_EQ(attr_size(attr), PERF_ATTR_SIZE_VER8);
	attr_free(attr);
}

/* So is a field of mainline's next attr size (VER10, 152 bytes) */
TEST_F(upstream_layout, next_size_e2big)
{
	void *attr = upstream_attr(UPSTREAM_ATTR_SIZE + 8);

	ASSERT_NE(attr, NULL);
	EXPECT_EQ(open_errno(attr), 0);
	((char *)attr)[UPSTREAM_ATTR_SIZE] = 1;
	EXPECT_EQ(open_errno(attr), E2BIG);
	EXPECT_EQ(attr_size(attr), PERF_ATTR_SIZE_VER8);
	attr_free(attr);
}

/* Mainline's next flag bit (40) is reserved here: EINVAL, as in 6.12 */
TEST_F(upstream_layout, next_flag_einval)
{
	uint64_t flags;
	void *attr = upstream_attr(UPSTREAM_ATTR_SIZE);
	size_t word = offsetof(struct perf_event_attr, read_format) + 8;

	ASSERT_NE(attr, NULL);
	memcpy(&flags, (char *)attr + word, sizeof(flags));
	flags |= 1ULL << 40;
	memcpy((char *)attr + word, &flags, sizeof(flags));
	EXPECT_EQ(open_errno(attr), EINVAL);
	attr_free(attr);
}

/* Mainline's next sample type (bit 25) is unknown here: EINVAL */
TEST_F(upstream_layout, next_sample_bit_einval)
{
	struct perf_event_attr *attr = upstream_attr(UPSTREAM_ATTR_SIZE);

	ASSERT_NE(attr, NULL);
	attr->sample_type |= 1ULL << 25;
	EXPECT_EQ(open_errno(attr), EINVAL);
	attr_free(attr);
}

/* __reserved_2 is still reserved: EINVAL */
TEST_F(upstream_layout, reserved_2_einval)
{
	struct perf_event_attr *attr = upstream_attr(UPSTREAM_ATTR_SIZE);

	ASSERT_NE(attr, NULL);
	attr->__reserved_2 = 1;
	EXPECT_EQ(open_errno(attr), EINVAL);
	attr_free(attr);
}

int main(int argc, char **argv)
{
	page_size = sysconf(_SC_PAGESIZE);
	return test_harness_run(argc, argv);
}
