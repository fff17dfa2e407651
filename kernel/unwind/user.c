// SPDX-License-Identifier: GPL-2.0
/*
 * Frame-pointer unwind of the current task's user stack, in task context.
 *
 * The 64-bit frame record is the same on x86_64 and arm64: the frame
 * pointer register points at the saved caller frame pointer, and the
 * return address sits in the next word.  User memory is read with
 * get_user(), so this may fault and sleep and must not be called from
 * atomic context.
 */
#include <linux/unwind_deferred.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/ptrace.h>
#include <asm/unwind_user.h>

/**
 * unwind_user_fp_supported - can the user stack behind @regs be walked
 * @regs:	the user register state of the current task
 *
 * Compat (32-bit) tasks are not supported.
 */
bool unwind_user_fp_supported(struct pt_regs *regs)
{
	return user_mode(regs) && arch_unwind_user_fp_supported(regs);
}

static bool unwind_user_addr_ok(unsigned long addr)
{
	return addr && addr < TASK_SIZE;
}

/**
 * unwind_user_fp - walk the current task's user frame-pointer chain
 * @trace:	entries to fill; @trace->nr is set to the number stored
 * @max_entries: size of @trace->entries
 *
 * Starts at the user register state saved on kernel entry.  The walk stops
 * at a zero, misaligned or non-increasing frame pointer (the stack grows
 * down, so each caller's frame lies above its callee's), at a frame or
 * return address outside the user address range, on a fault, or when a
 * fatal signal is pending (after storing the current frame).  Only
 * user addresses are stored.
 *
 * Return: 0, or -EINVAL if the task's user stack cannot be walked.
 */
int unwind_user_fp(struct unwind_stacktrace *trace, unsigned int max_entries)
{
	struct pt_regs *regs = task_pt_regs(current);
	unsigned long ip, fp, next_fp, ra;

	might_fault();

	trace->nr = 0;
	if (!current->mm || !unwind_user_fp_supported(regs))
		return -EINVAL;

	ip = instruction_pointer(regs);
	fp = frame_pointer(regs);

	while (trace->nr < max_entries && unwind_user_addr_ok(ip)) {
		trace->entries[trace->nr++] = ip;

		/* A task being killed stops here; its frames do not matter. */
		if (fatal_signal_pending(current))
			break;

		if (!fp || !IS_ALIGNED(fp, sizeof(long)) ||
		    fp >= TASK_SIZE - 2 * sizeof(long))
			break;

		if (get_user(next_fp, (unsigned long __user *)fp) ||
		    get_user(ra, (unsigned long __user *)(fp + sizeof(long))))
			break;

		ip = arch_unwind_user_fp_ra(ra);

		/* A frame at or below this one ends the walk after its ip. */
		fp = next_fp > fp ? next_fp : 0;
	}

	return 0;
}
