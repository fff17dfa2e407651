/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Write PERF_RECORD_UEVENT records into the perf events that observe the
 * calling thread; see Documentation/userspace-api/perf_uevent.rst.
 */
#ifndef _PERF_UEVENT_H
#define _PERF_UEVENT_H

#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>		/* and with it linux/prctl.h */
#include <linux/perf_event.h>

#ifndef PR_TASK_PERF_UEVENT
#error "perf_uevent.h needs uapi headers with PR_TASK_PERF_UEVENT"
#endif

/* Payload types that the perf tool decodes. */
#define PERF_UEVENT_TYPE_TEXT		0	/* a string */
#define PERF_UEVENT_TYPE_SPAN_BEGIN	1	/* struct perf_uevent_span */
#define PERF_UEVENT_TYPE_SPAN_END	2	/* struct perf_uevent_span */

struct perf_uevent_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

/*
 * Returns 0 when the record was written or no event listens, -1 with errno
 * set otherwise (EINVAL, E2BIG, EFAULT, ENOMEM).
 */
static inline int perf_uevent(uint32_t type, const void *data, size_t size)
{
	return prctl(PR_TASK_PERF_UEVENT, (unsigned long)type,
		     (unsigned long)size, (unsigned long)data, 0UL);
}

static inline int perf_uevent_text(const char *text)
{
	return perf_uevent(PERF_UEVENT_TYPE_TEXT, text, strlen(text));
}

#endif /* _PERF_UEVENT_H */
