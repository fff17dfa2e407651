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
	unsigned int max;
	u64 cookie;

	/*
	 * Clear the cookie first: a request from here on (an interrupt taken
	 * before the return to user space) takes a new cookie and queues a
	 * new unwind, so every cookie handed out gets exactly one callback.
	 * Requests made before this point are served by this unwind; the
	 * user stack has not changed since they were made.
	 */
	cookie = xchg(&info->cookie, 0);
	if (WARN_ON_ONCE(!cookie) || !work)
		return;

	/* Exit flushes before exit_mm(); no mm means nothing to unwind. */
	if (!current->mm)
		return;

	max = READ_ONCE(info->max_entries);
	trace.entries = kmalloc_array(max, sizeof(long), GFP_KERNEL);
	if (trace.entries)
		unwind_user_fp(&trace, max);

	work->func(work, &trace, cookie);
	kfree(trace.entries);
}

static void unwind_deferred_task_work(struct callback_head *head)
{
	unwind_deferred_run(container_of(head, struct unwind_task_info, work));
}

/**
 * unwind_deferred_request - ask for the current task's user stack
 * @work:	the registered unwind_work whose callback receives the trace
 * @max_entries: maximum number of entries the caller wants
 * @cookie:	returns the cookie of this kernel entry
 *
 * Callable from any context, NMI included.  The callback runs in task
 * context before the task returns to user space (or at exec or exit, see
 * unwind_deferred_flush()), once per cookie.
 *
 * Return: 0 if a new unwind was queued, 1 if one was already queued for
 * this entry (@cookie is then the same as for that request), or a negative
 * errno if the unwind cannot be deferred and the caller must fall back to
 * an immediate unwind.
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

	if (!max_entries)
		return -EINVAL;

	old_max = READ_ONCE(info->max_entries);
	while (old_max < max_entries &&
	       !try_cmpxchg(&info->max_entries, &old_max, max_entries))
		;

	old = READ_ONCE(info->cookie);
	if (old) {
		*cookie = old;
		return 1;
	}

	new = unwind_next_cookie();
	if (!try_cmpxchg(&info->cookie, &old, new)) {
		/* An NMI nested in this request queued the unwind. */
		*cookie = old;
		return 1;
	}

	/*
	 * The non-zero cookie marks info->work as queued; nothing else adds
	 * it until unwind_deferred_run() clears the cookie again.
	 */
	mode = in_nmi() ? TWA_NMI_CURRENT : TWA_RESUME | TWAF_NO_ALLOC;
	ret = task_work_add(current, &info->work, mode);
	if (ret) {
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
 * still attached.  The caller is in task context and may sleep.
 */
void unwind_deferred_flush(void)
{
	struct unwind_task_info *info = &current->unwind_info;

	if (!READ_ONCE(info->cookie))
		return;

	might_sleep();
	if (task_work_cancel(current, &info->work))
		unwind_deferred_run(info);
}

/**
 * unwind_task_init - reset the deferred unwind state of a new task
 * @task:	the task being created by copy_process()
 */
void unwind_task_init(struct task_struct *task)
{
	struct unwind_task_info *info = &task->unwind_info;

	info->cookie = 0;
	info->max_entries = 0;
	init_task_work(&info->work, unwind_deferred_task_work);
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
