/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_UNWIND_DEFERRED_H
#define _LINUX_UNWIND_DEFERRED_H

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/unwind_deferred_types.h>

struct pt_regs;
struct task_struct;
struct unwind_work;

/**
 * struct unwind_stacktrace - a user stack trace taken in task context
 * @nr:		number of valid entries
 * @entries:	user return addresses, innermost first
 */
struct unwind_stacktrace {
	unsigned int		nr;
	unsigned long		*entries;
};

/*
 * @trace is NULL when no request of the entry asked for the user stack
 * (every one passed max_entries 0).
 */
typedef void (*unwind_callback_t)(struct unwind_work *work,
				  struct unwind_stacktrace *trace, u64 cookie);

struct unwind_work {
	unwind_callback_t	func;
};

/* One page of entries per task, as upstream's per-task unwind cache. */
#define UNWIND_MAX_ENTRIES	(SZ_4K / sizeof(unsigned long))

#ifdef CONFIG_UNWIND_USER_DEFERRED

int unwind_deferred_init(struct unwind_work *work, unwind_callback_t func);
int unwind_deferred_request(struct unwind_work *work, unsigned int max_entries,
			    u64 *cookie);
void unwind_task_init(struct task_struct *task);
void unwind_task_free(struct task_struct *task);
void unwind_deferred_flush(void);

bool unwind_user_fp_supported(struct pt_regs *regs);
int unwind_user_fp(struct unwind_stacktrace *trace, unsigned int max_entries);

/**
 * unwind_reset_info - end the current kernel entry's deferred unwind state
 *
 * Called on the way back to user space, after the last task_work ran and
 * with interrupts disabled, so that the next entry takes a new cookie.
 * Until then every request gets the cookie of this entry and no second
 * unwind is queued, also once the unwind has run.  An unwind that was
 * queued (from NMI) after the task_work ran keeps its cookie: it runs on
 * the next return to user space, with the same user stack.
 */
static __always_inline void unwind_reset_info(void)
{
	struct unwind_task_info *info = &current->unwind_info;

	if (likely(!READ_ONCE(info->cookie)))
		return;

	if (READ_ONCE(info->pending))
		return;

	/*
	 * An NMI in between sees no cookie and may set want_stack for the
	 * next entry, which then unwinds once for nothing; the other order
	 * could lose a stack that a request of the next entry asked for.
	 */
	WRITE_ONCE(info->want_stack, 0);
	WRITE_ONCE(info->cookie, 0);
}

#else /* !CONFIG_UNWIND_USER_DEFERRED */

static inline int unwind_deferred_init(struct unwind_work *work,
				       unwind_callback_t func)
{
	return -EOPNOTSUPP;
}

static inline int unwind_deferred_request(struct unwind_work *work,
					  unsigned int max_entries, u64 *cookie)
{
	return -EOPNOTSUPP;
}

static inline void unwind_task_init(struct task_struct *task) { }
static inline void unwind_task_free(struct task_struct *task) { }
static inline void unwind_deferred_flush(void) { }
static inline void unwind_reset_info(void) { }

#endif /* CONFIG_UNWIND_USER_DEFERRED */

#endif /* _LINUX_UNWIND_DEFERRED_H */
