// SPDX-License-Identifier: GPL-2.0
/*
 * PR_TASK_PERF_UEVENT: a process writes its own PERF_RECORD_UEVENT into
 * every perf event that observes it.
 *
 * See Documentation/userspace-api/perf_uevent.rst.
 */

#include <linux/ktime.h>
#include <linux/perf_event.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "internal.h"

/*
 * User-space event records: prctl(PR_TASK_PERF_UEVENT)
 */

/* Payloads up to this size are copied to the stack, larger ones to kmalloc. */
#define PERF_UEVENT_STACK_SIZE	256

/* header, type and size: what the rate limit counts besides the payload */
#define PERF_UEVENT_HEADER_SIZE	16

struct perf_uevent_event {
	const void	*data;
	u32		pad;
	/*
	 * Past the writer's rate for events not attached to a task: asked
	 * of the limit when the record is offered to the first of them,
	 * whether or not its buffer has room.
	 */
	bool		limit_checked;
	bool		over_limit;

	struct {
		struct perf_event_header	header;

		u32				type;
		u32				size;
	} event_id;
};

/*
 * A generic cell rate limit per process: the theoretical arrival time
 * advances by the cost of each record written and may run ahead of now by
 * at most the burst. The threads of a process share it, so it is updated
 * with a cmpxchg loop: a thread retries only when another one got its
 * record in, and a record refused does not use up any budget. Task
 * context only (prctl), called from perf_iterate_sb() under RCU with
 * preemption disabled, so it must not sleep; CLOCK_MONOTONIC, as the
 * threads may run on different CPUs.
 */
static bool perf_uevent_tat_over(u32 bytes)
{
	const u64 ns_per_byte = NSEC_PER_SEC / PERF_UEVENT_CPU_RATE;
	const u64 burst_ns = PERF_UEVENT_CPU_BURST * ns_per_byte;
	atomic64_t *tatp = &current->signal->perf_uevent_tat;
	u64 now = ktime_get_ns();
	s64 old = atomic64_read(tatp);
	u64 tat;

	do {
		tat = max_t(u64, old, now) + bytes * ns_per_byte;
		if (tat > now + burst_ns)
			return true;
	} while (!atomic64_try_cmpxchg(tatp, &old, tat));

	return false;
}

/* Counts a record once, however many events not attached to a task take it. */
static bool perf_uevent_over_limit(struct perf_uevent_event *uevent_event)
{
	if (!uevent_event->limit_checked) {
		uevent_event->over_limit =
			perf_uevent_tat_over(PERF_UEVENT_HEADER_SIZE +
					     uevent_event->event_id.size +
					     uevent_event->pad);
		uevent_event->limit_checked = true;
	}
	return uevent_event->over_limit;
}

static void perf_event_uevent_output(struct perf_event *event, void *data)
{
	struct perf_uevent_event *uevent_event = data;
	/*
	 * Every field of these two that is read is written first; leave
	 * out the zeroing of CONFIG_INIT_STACK_ALL_ZERO, which would be a
	 * good part of the cost of a small record.
	 */
	struct perf_output_handle handle __uninitialized;
	struct perf_sample_data sample __uninitialized;
	u64 zero = 0;

	if (!event->attr.uevents)
		return;

	/*
	 * A CPU-wide or cgroup listener, root's perf record -a for one,
	 * takes records from every task on the CPU: a writer past its rate
	 * only costs it a lost record, so its samples keep flowing.
	 */
	if (!(event->attach_state & PERF_ATTACH_TASK) &&
	    perf_uevent_over_limit(uevent_event)) {
		struct perf_buffer *rb = rcu_dereference(event->rb);

		if (rb) {
			local_inc(&rb->lost);
			atomic64_inc(&event->lost_samples);
		}
		return;
	}

	perf_sample_data_init(&sample, 0, 0);
	perf_event_header__init(&uevent_event->event_id.header, &sample,
				PERF_RECORD_UEVENT, PERF_RECORD_MISC_USER,
				sizeof(uevent_event->event_id) +
				uevent_event->event_id.size + uevent_event->pad,
				event);

	if (perf_output_begin(&handle, &sample, event,
			      uevent_event->event_id.header.size))
		return;

	perf_output_put(&handle, uevent_event->event_id);
	__output_copy(&handle, uevent_event->data, uevent_event->event_id.size);
	if (uevent_event->pad)
		__output_copy(&handle, &zero, uevent_event->pad);

	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * Copy the payload once, here in task context where a page fault can be
 * served, before perf_iterate_sb() enters its RCU section. Out of line, so
 * that the caller does not set up the bounce buffer when nobody listens.
 */
static noinline int perf_event_uevent_write(u32 type, u32 size,
					    const void __user *data)
{
	/* Only the bytes copied from user space are ever read. */
	u8 stack_buf[PERF_UEVENT_STACK_SIZE] __aligned(8) __uninitialized;
	struct perf_uevent_event uevent_event;
	void *buf = stack_buf;
	int ret = 0;

	if (size > sizeof(stack_buf)) {
		buf = kmalloc(size, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	if (copy_from_user(buf, data, size)) {
		ret = -EFAULT;
		goto out;
	}

	uevent_event = (struct perf_uevent_event){
		.data	= buf,
		.pad	= ALIGN(size, sizeof(u64)) - size,
		.event_id = {
			.type	= type,
			.size	= size,
		},
	};

	perf_iterate_sb(perf_event_uevent_output, &uevent_event, NULL);
out:
	if (buf != stack_buf)
		kfree(buf);
	return ret;
}

/**
 * perf_event_uevent - write a PERF_RECORD_UEVENT for the current task
 * @type: payload type, chosen by user space
 * @size: payload size in bytes, at most PERF_UEVENT_MAX_SIZE
 * @data: user pointer to the payload
 * @flags: must be zero
 *
 * The record goes to every event with attr.uevents that observes current:
 * its task events (inherited ones included), the events of the CPU it runs
 * on and the cgroup events of its cgroup. The kernel fills in sample_id,
 * so the task cannot forge who wrote the record or when. Events not
 * attached to a task get at most PERF_UEVENT_CPU_RATE bytes per second
 * (bursts of PERF_UEVENT_CPU_BURST) from each process, all its threads
 * together; the rest is counted as lost there.
 *
 * Return: 0 when the record was written or nobody listens, else -errno.
 */
int perf_event_uevent(unsigned long type, unsigned long size,
		      const void __user *data, unsigned long flags)
{
	/* The largest record, with a sample_id of six u64, fits header.size. */
	BUILD_BUG_ON(sizeof_field(struct perf_uevent_event, event_id) +
		     PERF_UEVENT_MAX_SIZE + 6 * sizeof(u64) > U16_MAX);
	BUILD_BUG_ON(sizeof_field(struct perf_uevent_event, event_id) !=
		     PERF_UEVENT_HEADER_SIZE);

	if (flags || type > U32_MAX)
		return -EINVAL;
	if (size > PERF_UEVENT_MAX_SIZE)
		return -E2BIG;
	if (size && !access_ok(data, size))
		return -EFAULT;

	if (!atomic_read(&perf_nr_uevent_events))
		return 0;

	return perf_event_uevent_write(type, size, data);
}
