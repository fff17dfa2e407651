// SPDX-License-Identifier: GPL-2.0
/*
 * sw_aux: a software AUX area tracer.
 *
 * A timer per event writes one struct sw_aux_record per tick into the AUX
 * area of the event, the way a hardware tracer streams its packets: in
 * full-trace mode it stops at aux_tail and reports what it wrote with
 * PERF_RECORD_AUX, in snapshot (overwrite) mode it wraps around, and as the
 * group leader of sampling events it provides PERF_SAMPLE_AUX snapshots.
 * It exists so that AUX consumers and their tests run without hardware.
 *
 * Context rules:
 *  - pmu::add/del/start/stop run on the CPU of the event with interrupts
 *    disabled; the timer is pinned to that CPU and runs in hard interrupt
 *    context, so it never runs concurrently with them;
 *  - pmu::snapshot_aux runs in the interrupt (hrtimer) or NMI (hardware PMU,
 *    arm64 pseudo-NMI) of a sibling on the same CPU, so it may interrupt the
 *    timer half way through a record.  The writer therefore publishes a
 *    record only once it is complete and says while it writes one; the
 *    reader copies complete records only and takes no locks.
 */

#include <linux/hrtimer.h>
#include <linux/init.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <uapi/linux/perf_sw_aux.h>

#include <asm/irq_regs.h>

#define SW_AUX_PERIOD_MASK	GENMASK_ULL(31, 0)

/* The AUX area, from pmu::setup_aux() */
struct sw_aux_buf {
	unsigned long	size;		/* bytes, a power of 2 */
	unsigned long	filled;		/* bytes ever written, at most size */
	bool		overwrite;
	int		nr_pages;
	void		*pages[] __counted_by(nr_pages);
};

/* Per event state, event->pmu_private */
struct sw_aux_event {
	struct perf_event		*event;
	struct hrtimer			timer;
	/* tick_us as asked, and as run: no faster than the sample rate limit */
	u64				config_ns;
	u64				period_ns;
	u64				seq;
	struct perf_output_handle	handle;
	/* Set while the handle is open, read by snapshot_aux() */
	struct sw_aux_buf		*buf;
	/* Free running offset just after the newest complete record */
	unsigned long			pos;
	/* Bytes written since perf_aux_output_begin() */
	unsigned long			written;
	/* A record at @pos is being written */
	int				writing;
};

static struct pmu sw_aux_pmu;

static void *sw_aux_slot(struct sw_aux_buf *buf, unsigned long pos)
{
	unsigned long off = pos & (buf->size - 1);

	/* Records never straddle a page: 32 divides PAGE_SIZE. */
	return buf->pages[off >> PAGE_SHIFT] + offset_in_page(off);
}

/* pid and tid are those the owner of the event sees, as in samples. */
static void sw_aux_fill(struct sw_aux_record *rec, u64 seq,
			struct pid_namespace *ns)
{
	struct task_struct *task = current;

	rec->seq = seq;
	rec->time = local_clock();
	if (task->flags & (PF_KTHREAD | PF_USER_WORKER))
		rec->ip = 0;
	else
		rec->ip = instruction_pointer(task_pt_regs(task));
	rec->pid = task_tgid_nr_ns(task, ns);
	rec->tid = task_pid_nr_ns(task, ns);
}

/*
 * Write one record at sa->pos.  snapshot_aux() may run in between any two
 * statements (NMI): it reads sa->buf, sa->pos, sa->writing and buf->filled,
 * so the record is written first and published after, and the slot being
 * written is flagged.  Only compiler ordering matters: reader and writer run
 * on the same CPU.
 */
static void sw_aux_write(struct sw_aux_event *sa, struct sw_aux_buf *buf)
{
	WRITE_ONCE(sa->writing, 1);
	barrier();
	sw_aux_fill(sw_aux_slot(buf, sa->pos), sa->seq++, sa->event->ns);
	barrier();
	WRITE_ONCE(sa->pos, sa->pos + SW_AUX_RECORD_SIZE);
	WRITE_ONCE(buf->filled, min(buf->filled + SW_AUX_RECORD_SIZE, buf->size));
	barrier();
	WRITE_ONCE(sa->writing, 0);

	sa->written += SW_AUX_RECORD_SIZE;
	local64_inc(&sa->event->count);
}

/* Close the AUX transaction: posts PERF_RECORD_AUX for what was written. */
static void sw_aux_output_end(struct sw_aux_event *sa, u64 flags)
{
	struct sw_aux_buf *buf = sa->buf;
	unsigned long size = sa->written;

	WRITE_ONCE(sa->buf, NULL);
	barrier();

	if (buf->overwrite) {
		/* The data ends at the head; older data was overwritten. */
		sa->handle.head = sa->pos;
		size = min(size, buf->size);
	}
	if (flags)
		perf_aux_output_flag(&sa->handle, flags);
	perf_aux_output_end(&sa->handle, size);
	sa->written = 0;
}

static bool sw_aux_output_begin(struct sw_aux_event *sa)
{
	struct sw_aux_buf *buf;

	buf = perf_aux_output_begin(&sa->handle, sa->event);
	if (!buf)
		return false;

	sa->written = 0;
	sa->pos = sa->handle.head;
	barrier();
	WRITE_ONCE(sa->buf, buf);
	return true;
}

/*
 * One tick.  Returns false when the tracer stopped: the buffer filled up (the
 * core then disables the event, as for any AUX PMU), or no AUX area is left.
 */
static bool sw_aux_tick(struct sw_aux_event *sa)
{
	struct perf_output_handle *handle = &sa->handle;
	struct sw_aux_buf *buf = sa->buf;

	if (!buf)
		return false;

	if (!buf->overwrite && sa->written + SW_AUX_RECORD_SIZE > handle->size) {
		sw_aux_output_end(sa, PERF_AUX_FLAG_TRUNCATED);
		goto stopped;
	}

	sw_aux_write(sa, buf);

	if (!buf->overwrite && handle->head + sa->written >= handle->wakeup) {
		/* aux_watermark reached: report the data, wake the reader. */
		sw_aux_output_end(sa, 0);
		if (!sw_aux_output_begin(sa))
			goto stopped;
	}
	return true;

stopped:
	sa->event->hw.state = PERF_HES_STOPPED;
	return false;
}

/*
 * A tick that lands where the event excludes writes nothing, as cpu-clock
 * takes no sample there: exclude_user, exclude_kernel (by the interrupted
 * mode) and exclude_idle.  A tick without interrupted registers cannot
 * tell the mode: it is excluded if either mode is.
 */
static bool sw_aux_excluded(struct perf_event *event)
{
	struct pt_regs *regs = get_irq_regs();

	if (event->attr.exclude_idle && is_idle_task(current))
		return true;
	if (!regs)
		return event->attr.exclude_user || event->attr.exclude_kernel;
	if (user_mode(regs))
		return event->attr.exclude_user;
	return event->attr.exclude_kernel;
}

static enum hrtimer_restart sw_aux_timer_fn(struct hrtimer *timer)
{
	struct sw_aux_event *sa = container_of(timer, struct sw_aux_event, timer);
	struct perf_event *event = sa->event;

	if (!sw_aux_excluded(event)) {
		if (!sw_aux_tick(sa))
			return HRTIMER_NORESTART;
		/*
		 * Throttled like any sampling event, after the record that
		 * reached perf_event_max_sample_rate / HZ records in a
		 * scheduler tick, as cpu-clock keeps the sample that
		 * throttles it; the tick (perf_adjust_freq_unthr_events())
		 * starts the event again.
		 */
		if (perf_event_account_interrupt(event)) {
			if (sa->buf)
				sw_aux_output_end(sa, 0);
			event->hw.state = PERF_HES_STOPPED;
			return HRTIMER_NORESTART;
		}
	}

	hrtimer_forward_now(timer, ns_to_ktime(sa->period_ns));
	return HRTIMER_RESTART;
}

static void sw_aux_start(struct perf_event *event, int flags)
{
	struct sw_aux_event *sa = event->pmu_private;

	if (!sw_aux_output_begin(sa)) {
		event->hw.state = PERF_HES_STOPPED;
		return;
	}

	/*
	 * No faster than perf_event_max_sample_rate, read at every start: the
	 * core lowers it when sampling interrupts take too long.
	 */
	sa->period_ns = max_t(u64, sa->config_ns,
			      NSEC_PER_SEC / READ_ONCE(sysctl_perf_event_sample_rate));
	event->hw.state = 0;
	hrtimer_start(&sa->timer, ns_to_ktime(sa->period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static void sw_aux_stop(struct perf_event *event, int flags)
{
	struct sw_aux_event *sa = event->pmu_private;

	/* The timer is pinned to this CPU and we run with IRQs disabled. */
	hrtimer_cancel(&sa->timer);

	if (event->hw.state & PERF_HES_STOPPED)
		return;
	event->hw.state = PERF_HES_STOPPED;

	if (sa->buf)
		sw_aux_output_end(sa, 0);
}

static int sw_aux_add(struct perf_event *event, int flags)
{
	event->hw.state = PERF_HES_STOPPED;
	if (flags & PERF_EF_START)
		sw_aux_start(event, 0);

	return 0;
}

static void sw_aux_del(struct perf_event *event, int flags)
{
	sw_aux_stop(event, PERF_EF_UPDATE);
}

static void sw_aux_read(struct perf_event *event)
{
	/* event->count is the number of records written, kept by the timer. */
}

/*
 * Copy the newest complete records, oldest first, then zeroes up to @size:
 * the core sized the sample before calling us and expects exactly @size
 * bytes.  A record with time 0 is such padding.
 *
 * Runs with IRQs disabled, possibly in NMI on top of sw_aux_write() or of
 * sw_aux_output_end()/begin() on this CPU.  sa->buf is set only while this
 * event holds an AUX reference, so the pages can't go away under us.
 */
static long sw_aux_snapshot_aux(struct perf_event *event,
				struct perf_output_handle *handle,
				unsigned long size)
{
	static const u8 zeroes[SW_AUX_RECORD_SIZE];
	struct sw_aux_event *sa = event->pmu_private;
	unsigned long nr = 0, pos = 0, done, len, i;
	struct sw_aux_buf *buf;

	buf = READ_ONCE(sa->buf);
	if (buf) {
		barrier();
		pos = READ_ONCE(sa->pos);
		nr = size / SW_AUX_RECORD_SIZE;
		nr = min(nr, READ_ONCE(buf->filled) / SW_AUX_RECORD_SIZE);
		/* Leave out the slot that is being overwritten, if any. */
		if (READ_ONCE(sa->writing))
			nr = min(nr, buf->size / SW_AUX_RECORD_SIZE - 1);
	}

	for (i = nr; i > 0; i--)
		perf_output_copy(handle,
				 sw_aux_slot(buf, pos - i * SW_AUX_RECORD_SIZE),
				 SW_AUX_RECORD_SIZE);

	for (done = nr * SW_AUX_RECORD_SIZE; done < size; done += len) {
		len = min(size - done, sizeof(zeroes));
		perf_output_copy(handle, zeroes, len);
	}

	return size;
}

static void *sw_aux_setup_aux(struct perf_event *event, void **pages,
			      int nr_pages, bool overwrite)
{
	int node = event->cpu == -1 ? NUMA_NO_NODE : cpu_to_node(event->cpu);
	struct sw_aux_buf *buf;

	if (!nr_pages)
		return NULL;

	buf = kzalloc_node(struct_size(buf, pages, nr_pages), GFP_KERNEL, node);
	if (!buf)
		return NULL;

	buf->nr_pages = nr_pages;
	memcpy(buf->pages, pages, nr_pages * sizeof(*pages));
	buf->size = (unsigned long)nr_pages << PAGE_SHIFT;
	buf->overwrite = overwrite;

	return buf;
}

static void sw_aux_free_aux(void *aux)
{
	kfree(aux);
}

static void sw_aux_event_destroy(struct perf_event *event)
{
	struct sw_aux_event *sa = event->pmu_private;

	hrtimer_cancel(&sa->timer);
	kfree(sa);
	event->pmu_private = NULL;
}

static int sw_aux_event_init(struct perf_event *event)
{
	struct perf_event_attr *attr = &event->attr;
	struct sw_aux_event *sa;
	u64 period_us;

	if (attr->type != sw_aux_pmu.type)
		return -ENOENT;

	/* A tracer, not a sampler: samples come from its group siblings. */
	if (is_sampling_event(event) || attr->freq)
		return -EINVAL;

	if ((attr->config & ~SW_AUX_PERIOD_MASK) || attr->config1 ||
	    attr->config2 || attr->config3)
		return -EINVAL;

	period_us = attr->config & SW_AUX_PERIOD_MASK;
	if (!period_us)
		period_us = SW_AUX_PERIOD_DEFAULT_US;
	if (period_us < SW_AUX_PERIOD_MIN_US || period_us > SW_AUX_PERIOD_MAX_US)
		return -EINVAL;

	sa = kzalloc(sizeof(*sa), GFP_KERNEL);
	if (!sa)
		return -ENOMEM;

	sa->event = event;
	sa->config_ns = period_us * NSEC_PER_USEC;
	sa->period_ns = sa->config_ns;
	hrtimer_init(&sa->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	sa->timer.function = sw_aux_timer_fn;

	event->pmu_private = sa;
	event->destroy = sw_aux_event_destroy;

	return 0;
}

PMU_FORMAT_ATTR(tick_us, "config:0-31");

static struct attribute *sw_aux_format_attrs[] = {
	&format_attr_tick_us.attr,
	NULL,
};

static const struct attribute_group sw_aux_format_group = {
	.name	= "format",
	.attrs	= sw_aux_format_attrs,
};

static const struct attribute_group *sw_aux_attr_groups[] = {
	&sw_aux_format_group,
	NULL,
};

static struct pmu sw_aux_pmu = {
	/* Like the hardware tracers, so that it can lead a group of HW events */
	.task_ctx_nr	= perf_sw_context,
	/*
	 * One AUX writer per context, as for Intel PT: two sw_aux events of
	 * a context could share a buffer (PERF_EVENT_IOC_SET_OUTPUT) and nest
	 * perf_aux_output_begin(), which the AUX code does not allow.
	 */
	.capabilities	= PERF_PMU_CAP_EXCLUSIVE,
	.attr_groups	= sw_aux_attr_groups,
	.event_init	= sw_aux_event_init,
	.add		= sw_aux_add,
	.del		= sw_aux_del,
	.start		= sw_aux_start,
	.stop		= sw_aux_stop,
	.read		= sw_aux_read,
	.setup_aux	= sw_aux_setup_aux,
	.free_aux	= sw_aux_free_aux,
	.snapshot_aux	= sw_aux_snapshot_aux,
};

static int __init sw_aux_init(void)
{
	return perf_pmu_register(&sw_aux_pmu, "sw_aux", -1);
}
device_initcall(sw_aux_init);
