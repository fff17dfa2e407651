// SPDX-License-Identifier: GPL-2.0
/*
 * Write PERF_RECORD_UEVENT records with prctl(PR_TASK_PERF_UEVENT): a text
 * record, then the begin and end of a span around a second of work, for
 * perf record --uevents.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <linux/compiler.h>
#include <linux/prctl.h>
#include "../tests.h"

#define UEVENT_TEXT		0
#define UEVENT_SPAN_BEGIN	1
#define UEVENT_SPAN_END		2

/* trace_id[16], span_id[8]: the ids the shell test looks for */
static const unsigned char span[24] = {
	0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
	0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
	0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7,
};

static sig_atomic_t done;

static void sighandler(int sig __maybe_unused)
{
	WRITE_ONCE(done, 1);
}

static int write_uevent(unsigned long type, const void *data, size_t size)
{
	if (prctl(PR_TASK_PERF_UEVENT, type, size, data, 0)) {
		fprintf(stderr, "uevent: prctl(PR_TASK_PERF_UEVENT, %lu): %s\n",
			type, strerror(errno));
		return -1;
	}
	return 0;
}

static int uevent(int argc __maybe_unused, const char **argv __maybe_unused)
{
	static const char text[] = "hello from perf test";

	if (write_uevent(UEVENT_TEXT, text, sizeof(text)) ||
	    write_uevent(UEVENT_SPAN_BEGIN, span, sizeof(span)))
		return 1;

	signal(SIGINT, sighandler);
	signal(SIGALRM, sighandler);
	alarm(1);

	while (!READ_ONCE(done))
		continue;

	return write_uevent(UEVENT_SPAN_END, span, sizeof(span)) ? 1 : 0;
}

DEFINE_WORKLOAD(uevent);
