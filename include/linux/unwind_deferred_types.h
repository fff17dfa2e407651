/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_UNWIND_DEFERRED_TYPES_H
#define _LINUX_UNWIND_DEFERRED_TYPES_H

#include <linux/types.h>

#define UNWIND_STACK_WANTED	1
#define UNWIND_STACK_SKIPPED	2

/**
 * struct unwind_task_info - per-task state of the deferred user unwind
 * @cookie:	cookie of the current kernel entry, 0 until the first request
 *		of the entry; kept until the task returns to user space, so
 *		that every request of the entry gets it
 * @pending:	the task_work is queued and has not started yet
 * @want_stack:	UNWIND_STACK_WANTED once a request of this entry asked for
 *		the user stack, UNWIND_STACK_SKIPPED once the callback ran
 *		without one; 0 while neither (requests that only need the
 *		cookie and the task_work leave it alone)
 * @max_entries: largest depth any requester asked for (high-water mark),
 *		at most UNWIND_MAX_ENTRIES
 * @entries:	the trace buffer, UNWIND_MAX_ENTRIES long, allocated by the
 *		first unwind of the task and freed with the task
 * @work:	the task_work that runs the unwind
 */
struct unwind_task_info {
	u64			cookie;
	u32			pending;
	u32			want_stack;
	u32			max_entries;
	unsigned long		*entries;
	struct callback_head	work;
};

#endif /* _LINUX_UNWIND_DEFERRED_TYPES_H */
