// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user-space unwinding.
 *
 * A tracer that wants the user stack of the current task asks for it from
 * any context, NMI included, and gets back a cookie at once.  The unwind
 * itself runs later, in task context on the way back to user space, where
 * user memory may be faulted in.  All requests made during one entry into
 * the kernel share one cookie and one unwind.
 *
 * The shape of the interface follows the upstream unwind_deferred core so
 * that moving to it is mostly mechanical; this version serves one user
 * (perf) and walks frame pointers only.
 */
#include <linux/unwind_deferred.h>
#include <linux/task_work.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/hardirq.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/bug.h>

static DEFINE_PER_CPU(u64, unwind_cookie_ctr);

static struct unwind_work *unwind_deferred_work;

static u64 unwind_next_cookie(void)
{
	u64 cnt;
	int cpu;

	preempt_disable_notrace();
	cpu = smp_processor_id();
	cnt = this_cpu_inc_return(unwind_cookie_ctr);
	preempt_enable_notrace();

	/*
	 * Unique across CPUs as cpu < nr_cpu_ids, and never 0 as the
	 * counter starts at 1.
	 */
	return cnt * nr_cpu_ids + cpu;
}

static void unwind_deferred_run(struct unwind_task_info *info)
{
	struct unwind_work *work = READ_ONCE(unwind_deferred_work);
	struct unwind_stacktrace trace = { };
	u64 cookie;

	/*
	 * The cookie stays: a request from here until the return to user
	 * space (an interrupt taken while this runs, a fault of the walk
	 * below) gets the same cookie and queues nothing, so there is at
	 * most one unwind per kernel entry and task_work_run() cannot be
	 * kept busy by samples taken during the delivery.
	 */
	WRITE_ONCE(info->pending, 0);
	cookie = READ_ONCE(info->cookie);
	if (WARN_ON_ONCE(!cookie) || !work)
		return;

	/* Exit flushes before exit_mm(); no mm means nothing to unwind. */
	if (!current->mm)
		return;

	/*
	 * Every request of this entry so far wanted the cookie alone.  Mark
	 * the entry so that a later request for a stack is refused (and
	 * unwinds at once) instead of waiting for an unwind that will not
	 * come; one that got in first is served here.
	 */
	if (!cmpxchg(&info->want_stack, 0, UNWIND_STACK_SKIPPED)) {
		work->func(work, NULL, cookie);
		return;
	}

	if (!info->entries)
		info->entries = kmalloc_array(UNWIND_MAX_ENTRIES,
					      sizeof(*info->entries),
					      GFP_KERNEL);
	trace.entries = info->entries;
	if (trace.entries)
		unwind_user_fp(&trace, min_t(unsigned int,
					     READ_ONCE(info->max_entries),
					     UNWIND_MAX_ENTRIES));

	work->func(work, &trace, cookie);
}

static void unwind_deferred_task_work(struct callback_head *head)
{
	unwind_deferred_run(container_of(head, struct unwind_task_info, work));
}

/**
 * unwind_deferred_request - ask for the current task's user stack, or a cookie
 * @work:	the registered unwind_work whose callback receives the trace
 * @max_entries: maximum number of entries the caller wants; the unwind
 *		never stores more than UNWIND_MAX_ENTRIES.  0 asks for the
 *		cookie and the callback alone: the user stack is unwound only
 *		when some request of the same entry asks for entries.
 * @cookie:	returns the cookie of this kernel entry
 *
 * Callable from any context, NMI included.  The callback runs in task
 * context before the task returns to user space (or at exec or exit, see
 * unwind_deferred_flush()), once per cookie.  The cookie is the same for
 * every request until the task returns to user space, also for requests
 * made after the unwind ran: those get no second unwind.
 *
 * Return: 0 if a new unwind was queued, 1 if this entry already has one,
 * queued or done (@cookie is then the same as for that request), or a
 * negative errno if the unwind cannot be deferred and the caller must
 * fall back to an immediate unwind: -EBUSY when @max_entries asks for a
 * stack after the entry's callback ran without one.
 */
int unwind_deferred_request(struct unwind_work *work, unsigned int max_entries,
			    u64 *cookie)
{
	struct unwind_task_info *info = &current->unwind_info;
	enum task_work_notify_mode mode;
	unsigned int old_max;
	u64 old, new;
	int ret;

	if (WARN_ON_ONCE(work != READ_ONCE(unwind_deferred_work)))
		return -EINVAL;

	/* Kernel threads, io workers and exiting tasks never return to user. */
	if ((current->flags & (PF_KTHREAD | PF_USER_WORKER | PF_EXITING)) ||
	    !current->mm)
		return -EINVAL;

	if (!unwind_user_fp_supported(task_pt_regs(current)))
		return -EOPNOTSUPP;

	if (max_entries) {
		max_entries = min_t(unsigned int, max_entries,
				    UNWIND_MAX_ENTRIES);
		old_max = READ_ONCE(info->max_entries);
		while (old_max < max_entries &&
		       !try_cmpxchg(&info->max_entries, &old_max, max_entries))
			;
		/* Too late once the entry's callback ran without a stack. */
		if (cmpxchg(&info->want_stack, 0, UNWIND_STACK_WANTED) ==
		    UNWIND_STACK_SKIPPED)
			return -EBUSY;
	}

	old = READ_ONCE(info->cookie);
	if (old) {
		*cookie = old;
		return 1;
	}

	/* A task that is being killed queues no new work. */
	if (fatal_signal_pending(current))
		return -EINTR;

	new = unwind_next_cookie();
	if (!try_cmpxchg(&info->cookie, &old, new)) {
		/* An NMI nested in this request queued the unwind. */
		*cookie = old;
		return 1;
	}

	/*
	 * Only the request that set the cookie of this entry gets here, so
	 * info->work is added at most once per entry, and never while it is
	 * queued: the cookie is only cleared on the way to user space when
	 * no unwind is pending (unwind_reset_info()).
	 */
	WRITE_ONCE(info->pending, 1);
	mode = in_nmi() ? TWA_NMI_CURRENT : TWA_RESUME | TWAF_NO_ALLOC;
	ret = task_work_add(current, &info->work, mode);
	if (ret) {
		WRITE_ONCE(info->pending, 0);
		WRITE_ONCE(info->cookie, 0);
		return ret;
	}

	*cookie = new;
	return 0;
}

/**
 * unwind_deferred_flush - run the current task's pending unwind now
 *
 * Called at exec before the old mm goes away and at exit before the mm and
 * the perf contexts are torn down, so that the unwind describes the stack
 * the samples were taken on and is delivered while the consumers are
 * still attached.  The cookie ends here: at exec the user stack of the
 * entry is gone, so a later request of the same execve() takes a new
 * cookie and unwinds the new image.  The caller is in task context and
 * may sleep.
 */
void unwind_deferred_flush(void)
{
	struct unwind_task_info *info = &current->unwind_info;

	if (!READ_ONCE(info->cookie))
		return;

	might_sleep();
	if (READ_ONCE(info->pending) &&
	    task_work_cancel(current, &info->work))
		unwind_deferred_run(info);

	WRITE_ONCE(info->want_stack, 0);
	WRITE_ONCE(info->cookie, 0);
}

/**
 * unwind_task_init - reset the deferred unwind state of a new task
 * @task:	the task being created by copy_process()
 *
 * Called right after dup_task_struct(), before any error path can free
 * @task, so that @task never owns its parent's trace buffer.
 */
void unwind_task_init(struct task_struct *task)
{
	struct unwind_task_info *info = &task->unwind_info;

	info->cookie = 0;
	info->pending = 0;
	info->want_stack = 0;
	info->max_entries = 0;
	info->entries = NULL;
	init_task_work(&info->work, unwind_deferred_task_work);
}

/**
 * unwind_task_free - free the trace buffer of a task
 * @task:	the task being freed
 */
void unwind_task_free(struct task_struct *task)
{
	kfree(task->unwind_info.entries);
	task->unwind_info.entries = NULL;
}

/**
 * unwind_deferred_init - register the user of the deferred unwind
 * @work:	the unwind_work to register
 * @func:	the callback that receives the trace and cookie
 *
 * This version supports a single user.
 */
int unwind_deferred_init(struct unwind_work *work, unwind_callback_t func)
{
	work->func = func;
	if (WARN_ON_ONCE(cmpxchg(&unwind_deferred_work, NULL, work)))
		return -EBUSY;
	return 0;
}
