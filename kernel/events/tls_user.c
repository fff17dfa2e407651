// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_TLS_USER: bytes of the sampled thread's thread-local data in
 * each sample, found by a read program that starts at the thread pointer.
 * PERF_TLS_USER_DEFER makes the read on the way back to user space.
 * PR_TASK_PERF_CONTEXT lets a thread register where its context starts;
 * PERF_EVENT_IOC_TLS_USER_PROC lets an observer install a read program for
 * each process an event samples.
 *
 * See Documentation/userspace-api/perf_tls_user.rst.
 */

#include <linux/compat.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/perf_regs.h>
#include <linux/perf_tls_deferred_types.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/uaccess.h>
#include <linux/unwind_deferred.h>

#include <asm/tlb.h>

#include "internal.h"
#include "tls_user.h"

/*
 * The task whose switch-out is in progress on this CPU, from the end of
 * perf's sched-out hook until perf's sched-in hook of the incoming task:
 * the part of a task switch where the address space and then the thread
 * pointer register become the incoming task's while current is still the
 * outgoing one. See perf_tls_user_addr().
 */
static DEFINE_PER_CPU(struct task_struct *, perf_switch_out_task);

/* perf's sched-out hook, once the events of @task are out. */
void perf_tls_user_sched_out(struct task_struct *task)
{
	__this_cpu_write(perf_switch_out_task, task);
}

/* perf's sched-in hook: the switch is over. */
void perf_tls_user_sched_in(void)
{
	__this_cpu_write(perf_switch_out_task, NULL);
}

/*
 * The sched hooks are turned on again: a switch that was in progress when
 * they were turned off left its task here, and no hook has run since.
 */
void perf_tls_user_sched_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		per_cpu(perf_switch_out_task, cpu) = NULL;
}

/* The read program of @attr, copying at most @size bytes. */
static void perf_tls_user_prog_init(struct perf_tls_user_prog *prog,
				    const struct perf_event_attr *attr,
				    u16 size)
{
	int i;

	prog->offset = attr->tls_user_offset;
	prog->flags = attr->tls_user_flags;
	prog->hops = attr->tls_user_hops;
	for (i = 0; i < PERF_TLS_USER_HOPS; i++)
		prog->hop_offset[i] = attr->tls_user_hop_offset[i];
	if (attr->tls_user_flags & PERF_TLS_USER_DEREF) {
		prog->hops = 1;
		prog->hop_offset[0] = attr->tls_user_deref_offset;
	}
	prog->len_size = attr->tls_user_len_size;
	prog->len_shift = attr->tls_user_len_shift;
	prog->len_offset = attr->tls_user_len_offset;
	prog->len_base = attr->tls_user_len_base;
	prog->size = size;
}

/*
 * PERF_EVENT_IOC_TLS_USER_PROC: the read programs an observer installed for
 * the processes an event samples. A process is its address space: each
 * table grabs the mm of each of its entries, so the address names that
 * process and no other while the table lives, and a program stops
 * applying when its process execs (a new mm) or exits. A change replaces
 * the table whole, under perf_tls_user_procs_mutex; samples read it under
 * RCU and compare addresses only. An old table drops its mms after a
 * grace period, in a workqueue. Entries of processes that have no users of
 * their address space left are not copied into the next table.
 */
struct perf_tls_user_proc_entry {
	struct mm_struct		*mm;
	struct perf_tls_user_prog	prog;
};

struct perf_tls_user_procs {
	struct rcu_work			rwork;
	unsigned int			nr;
	struct perf_tls_user_proc_entry	entry[];	/* sorted by mm */
};

/*
 * Serializes the changes of every event's table. Not the event's context
 * mutex: the ioctl takes the process's exec_update_lock first, which
 * nests outside it.
 */
static DEFINE_MUTEX(perf_tls_user_procs_mutex);

/* Drop the grabs of @procs and free it: no sample can read it. */
static void perf_tls_user_procs_put(struct perf_tls_user_procs *procs)
{
	unsigned int i;

	for (i = 0; i < procs->nr; i++)
		mmdrop(procs->entry[i].mm);
	kfree(procs);
}

static void perf_tls_user_procs_free(struct work_struct *work)
{
	perf_tls_user_procs_put(container_of(to_rcu_work(work),
					     struct perf_tls_user_procs, rwork));
}

/* Free @procs once no sample can read it any more. */
static void perf_tls_user_procs_retire(struct perf_tls_user_procs *procs)
{
	if (!procs)
		return;
	INIT_RCU_WORK(&procs->rwork, perf_tls_user_procs_free);
	queue_rcu_work(system_wq, &procs->rwork);
}

/* At the event's end: its programs go with it. */
void perf_tls_user_procs_release(struct perf_event *event)
{
	perf_tls_user_procs_retire(rcu_dereference_protected(event->tls_user_procs,
							     true));
}

/* The entry of @mm in @procs (which may be NULL), or NULL. */
static const struct perf_tls_user_proc_entry *
perf_tls_user_procs_entry(const struct perf_tls_user_procs *procs,
			  const struct mm_struct *mm)
{
	unsigned int lo = 0, hi = procs ? procs->nr : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (procs->entry[mid].mm == mm)
			return &procs->entry[mid];
		if ((unsigned long)procs->entry[mid].mm < (unsigned long)mm)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The program an observer installed for current's process in @event (an
 * inherited event has its parent's), copied to @prog. Callable in NMI.
 */
static bool perf_tls_user_proc_find(struct perf_event *event,
				    struct perf_tls_user_prog *prog)
{
	struct perf_event *owner = event->parent ?: event;
	const struct perf_tls_user_proc_entry *e;
	struct mm_struct *mm = current->mm;

	if (!mm || !rcu_access_pointer(owner->tls_user_procs))
		return false;

	rcu_read_lock();
	e = perf_tls_user_procs_entry(rcu_dereference(owner->tls_user_procs), mm);
	if (e)
		*prog = e->prog;
	rcu_read_unlock();
	return e;
}

/*
 * The read program of @event for current, copying at most @size bytes:
 * the one an observer installed for current's process, unless the event
 * reads registered contexts and current registered one, else the event's.
 */
static void perf_tls_user_event_prog(struct perf_event *event,
				     struct perf_tls_user_prog *prog, u16 size)
{
	const struct perf_event_attr *attr = &event->attr;

	if ((!(attr->tls_user_flags & PERF_TLS_USER_REGISTERED) ||
	     !READ_ONCE(current->perf_tls_context)) &&
	    perf_tls_user_proc_find(event, prog)) {
		prog->size = size;
		return;
	}
	perf_tls_user_prog_init(prog, attr, size);
}

/*
 * Copy @n bytes of current's user memory at @addr to @dst: without
 * faulting where the sample is taken (NMI included), faulting when
 * @may_fault, in task context. The range is checked untagged and read
 * with the address as given, tag included, as the final copy is.
 * Returns PERF_TLS_USER_UNREAD_EMPTY (0) when all @n bytes were copied,
 * else why they were not.
 */
static u8 perf_tls_user_get(void *dst, unsigned long addr, size_t n,
			    bool may_fault)
{
	const void __user *uaddr = (const void __user *)addr;
	unsigned long rem;

	if (!__access_ok(untagged_addr(uaddr), n))
		return PERF_TLS_USER_UNREAD_BAD_ADDRESS;
	if (may_fault) {
		rem = copy_from_user(dst, uaddr, n);
	} else {
		pagefault_disable();
		rem = __copy_from_user_inatomic(dst, uaddr, n);
		pagefault_enable();
	}
	return rem ? PERF_TLS_USER_UNREAD_FAULT : PERF_TLS_USER_UNREAD_EMPTY;
}

/*
 * Run the read program @prog in current: follow its pointers, read its
 * length field, and return the user address to copy from, with the
 * number of bytes to copy there in @len (at most @prog->size). Returns 0
 * when nothing may be copied, and why in @unread. Reads only inside
 * current's user address space, and faults only when @may_fault.
 */
static unsigned long perf_tls_user_resolve(const struct perf_tls_user_prog *prog,
					   bool may_fault, u16 *len, u8 *unread)
{
	union {
		u8	b;
		u16	h;
		u32	w;
		u64	d;
	} field;
	unsigned long addr;
	u64 ptr, n;
	int i;

	/* 0 also for compat tasks, whose pointers are 32 bits wide. */
	addr = perf_tls_user_base();
	if (!addr) {
		*unread = PERF_TLS_USER_UNREAD_NO_THREAD_POINTER;
		return 0;
	}
	if (prog->flags & PERF_TLS_USER_REGISTERED) {
		addr = READ_ONCE(current->perf_tls_context);
		if (!addr) {
			*unread = PERF_TLS_USER_UNREAD_UNREGISTERED;
			return 0;
		}
	}
	addr += prog->offset;

	for (i = 0; i < prog->hops; i++) {
		*unread = PERF_TLS_USER_UNREAD_BAD_ADDRESS;
		if (!IS_ALIGNED(addr, sizeof(ptr)))
			return 0;
		*unread = perf_tls_user_get(&ptr, addr, sizeof(ptr), may_fault);
		if (*unread)
			return 0;

		if (!ptr) {
			*unread = PERF_TLS_USER_UNREAD_NULL_POINTER;
			return 0;
		}
		/* The pointer itself must be a user address, not just the sum. */
		*unread = PERF_TLS_USER_UNREAD_BAD_ADDRESS;
		if (!IS_ALIGNED(ptr, sizeof(u64)) ||
		    !__access_ok(untagged_addr((const void __user *)ptr), 1))
			return 0;
		addr = ptr + prog->hop_offset[i];
	}

	n = prog->size;
	if (prog->len_size) {
		*unread = PERF_TLS_USER_UNREAD_BAD_ADDRESS;
		if (!IS_ALIGNED(addr + prog->len_offset, prog->len_size))
			return 0;
		*unread = perf_tls_user_get(&field, addr + prog->len_offset,
					    prog->len_size, may_fault);
		if (*unread)
			return 0;

		switch (prog->len_size) {
		case 1:
			n = field.b;
			break;
		case 2:
			n = field.h;
			break;
		case 4:
			n = field.w;
			break;
		default:
			n = field.d;
			break;
		}
		/*
		 * Cut at size, which the sample may have made smaller than
		 * len_base; n << len_shift alone may overflow.
		 */
		if (prog->len_base >= prog->size ||
		    n > (u64)(prog->size - prog->len_base) >> prog->len_shift)
			n = prog->size;
		else
			n = prog->len_base + (n << prog->len_shift);
	}

	*unread = PERF_TLS_USER_UNREAD_BAD_ADDRESS;
	if (!__access_ok(untagged_addr((const void __user *)addr), n))
		return 0;

	*unread = PERF_TLS_USER_UNREAD_EMPTY;
	*len = n;
	return addr;
}

/*
 * Where the PERF_SAMPLE_TLS_USER dump of current starts, or 0 when nothing
 * may be copied (and why in @unread), with the number of bytes to copy in
 * @len. This runs wherever the sample is taken, NMI included, so user
 * memory is read only without faulting, only while the user address space
 * of current is the one loaded, and only inside that address space.
 */
static unsigned long perf_tls_user_addr(struct perf_event *event, u16 size,
					u16 *len, u8 *unread)
{
	struct perf_tls_user_prog prog;

	*unread = PERF_TLS_USER_UNREAD_NOT_NOW;

	/* Disallow cross-task dumps, as for user callchains. */
	if (event->ctx->task && event->ctx->task != current)
		return 0;

	/*
	 * The scheduler makes next the CPU's task (so task_curr(current) is
	 * false) before the sched_switch tracepoint and perf's sched-out
	 * hook, which sample prev while its mm and thread pointer are still
	 * loaded. Only after perf's sched-out hook does it switch the mm and
	 * then the thread pointer register (x86 FS base in __switch_to(),
	 * arm64 TPIDR_EL0 in tls_thread_switch()), and current becomes next
	 * only at the end of switch_to(). An NMI (x86, arm64 pseudo-NMI), a
	 * kprobe or a tracepoint in that window must not dump next's TLS as
	 * prev's: perf_switch_out_task marks it. TLS events keep the sched
	 * hooks on (account_event()).
	 */
	if (unlikely(!task_curr(current)) &&
	    this_cpu_read(perf_switch_out_task) == current)
		return 0;

	if (!nmi_uaccess_okay())
		return 0;

	perf_tls_user_event_prog(event, &prog, size);
	return perf_tls_user_resolve(&prog, false, len, unread);
}

void perf_output_sample_tls_user(struct perf_output_handle *handle,
				 struct perf_event *event,
				 struct perf_sample_data *data)
{
	u16 size = data->tls_user_size;
	u64 static_size = size, dyn_size;
	unsigned long addr;
	unsigned int rem;
	u16 len = 0;
	u8 unread;

	/*
	 * PERF_TLS_USER_DEFER: the entry's cookie, with no dump when the
	 * bytes come later, or 0 and the dump of a read made at once.
	 */
	if (event->attr.tls_user_flags & PERF_TLS_USER_DEFER)
		perf_output_put(handle, data->tls_user_cookie);

	/* Static size, 0 when there is nothing to dump. */
	perf_output_put(handle, static_size);
	if (!size)
		return;

	addr = perf_tls_user_addr(event, size, &len, &unread);
	rem = len;
	if (addr) {
		rem = __output_copy_user(handle, (void *)addr, len);
		if (len && rem == len)
			unread = PERF_TLS_USER_UNREAD_FAULT;
	}
	dyn_size = len - rem;

	/*
	 * What was not copied reads as zeroes, never as stale data; when
	 * nothing was, the first byte says why.
	 */
	if (!dyn_size) {
		perf_output_put(handle, unread);
		__output_zero(handle, NULL, size - sizeof(unread));
	} else {
		__output_zero(handle, NULL, size - dyn_size);
	}

	/* Dynamic size, the bytes really copied. */
	perf_output_put(handle, dyn_size);
}

#ifdef CONFIG_UNWIND_USER_DEFERRED
/*
 * PERF_TLS_USER_DEFER: ask for the TLS read of @event on the way back to
 * user space, sharing the cookie and the task_work of deferred callchains,
 * and return the cookie the sample carries. 0 means the sample reads at
 * once instead: no deferral (exiting task, fatal signal, no user context),
 * the entry's slots are taken by other events, or its records are being
 * written or were, without this event's. Callable in NMI; nothing here
 * touches user memory.
 */
static u64 perf_tls_deferred_request(struct perf_event *event)
{
	const struct perf_event_attr *attr = &event->attr;
	struct perf_tls_deferred *td = &current->perf_tls_deferred;
	struct perf_tls_deferred_slot *slot;
	u64 id = primary_event_id(event);
	u64 cookie, old;
	int i;

	/* Disallow cross-task reads, as for user callchains. */
	if (event->ctx->task && event->ctx->task != current)
		return 0;

	if (!is_user_task(current) || !current->mm)
		return 0;

	if (unwind_deferred_request(&perf_unwind_work, 0, &cookie) < 0)
		return 0;

	/*
	 * One slot per event and entry: its read serves all the samples of
	 * the entry, also those taken while the entry's records are written
	 * or after (in the read's own page fault, on the rest of the way
	 * out), whose record then comes before them.
	 */
	for (i = 0; i < PERF_TLS_DEFERRED_EVENTS; i++) {
		slot = &td->slot[i];
		if (READ_ONCE(slot->ready) == cookie && slot->id == id)
			return cookie;
	}

	/*
	 * Too late to ask once the records of the entry are being written.
	 * Only samples of current (this task's interrupts and NMIs, on its
	 * CPU, or its own task context) get here, and the task work runs in
	 * current too, so td->done does not change under this function, and
	 * perf_tls_deferred_output_all() sees every slot taken before it set
	 * td->done.
	 */
	if (READ_ONCE(td->done) == cookie)
		return 0;

	/*
	 * Take a slot of an earlier entry. The cmpxchg only races with a
	 * nested sample, and compiler barriers order the rest against the
	 * task_work: on the same CPU, or after a migration, whose scheduler
	 * barriers order it.
	 */
	for (i = 0; i < PERF_TLS_DEFERRED_EVENTS; i++) {
		slot = &td->slot[i];
		old = READ_ONCE(slot->claim);
		if (old == cookie || !try_cmpxchg(&slot->claim, &old, cookie))
			continue;

		slot->id = id;
		perf_tls_user_event_prog(event, &slot->prog,
					 attr->sample_tls_user);
		barrier();
		WRITE_ONCE(slot->ready, cookie);
		return cookie;
	}
	return 0;
}
#else
static u64 perf_tls_deferred_request(struct perf_event *event)
{
	return 0;
}
#endif

/*
 * Size the PERF_SAMPLE_TLS_USER item of @event's sample and, in deferred
 * mode, ask for the event's read.
 */
void perf_prepare_sample_tls_user(struct perf_sample_data *data,
				  struct perf_event *event,
				  struct pt_regs *regs)
{
	u32 fixed = 2 * sizeof(u64);	/* static and dynamic size */
	u16 tls_size = 0;

	data->sample_flags |= PERF_SAMPLE_TLS_USER;
	data->tls_user_cookie = 0;

	/*
	 * Deferred: the cookie, then a dump only when the read is made at
	 * once. A sample taken in the kernel asks for the read of its entry;
	 * one that interrupted user mode has nothing to wait for (the read
	 * costs what it costs in the sample mode), and one whose read cannot
	 * be deferred reads what it can now rather than nothing.
	 */
	if (event->attr.tls_user_flags & PERF_TLS_USER_DEFER) {
		data->dyn_size += sizeof(u64);
		if (!user_mode(regs))
			data->tls_user_cookie = perf_tls_deferred_request(event);
	}

	/* The AUX size field comes after the dump and is always there. */
	if (event->attr.sample_type & PERF_SAMPLE_AUX)
		fixed += sizeof(u64);

	if (!data->tls_user_cookie && is_user_task(current))
		tls_size = min(event->attr.sample_tls_user,
			       perf_sample_room(data, event, fixed));

	data->tls_user_size = tls_size;
	data->dyn_size += sizeof(u64);
	if (tls_size)
		data->dyn_size += tls_size + sizeof(u64);
}

#ifdef CONFIG_UNWIND_USER_DEFERRED
struct perf_tls_deferred_event {
	const void			*data;
	struct {
		struct perf_event_header	header;
		u64				cookie;
		u64				id;
		u64				size;
	} event;
	u64				dyn_size;
	u8				unread;	/* with dyn_size 0 */
};

static void perf_tls_deferred_output(struct perf_event *event, void *data)
{
	struct perf_tls_deferred_event *tls = data;
	struct perf_output_handle handle;
	struct perf_sample_data sample;
	u64 size = tls->event.size;

	if (!event->attr.defer_output)
		return;

	/* The read is at most PERF_TLS_USER_MAX_SIZE, so the record fits. */
	BUILD_BUG_ON(sizeof(tls->event) + PERF_TLS_USER_MAX_SIZE +
		     sizeof(u64) + 6 * sizeof(u64) > U16_MAX);
	if (WARN_ON_ONCE(size > PERF_TLS_USER_MAX_SIZE))
		return;

	perf_event_header__init(&tls->event.header, &sample,
				PERF_RECORD_TLS_USER_DEFERRED,
				PERF_RECORD_MISC_USER,
				sizeof(tls->event) + size + sizeof(u64), event);
	if (perf_output_begin(&handle, &sample, event, tls->event.header.size))
		return;

	perf_output_put(&handle, tls->event);
	if (tls->dyn_size) {
		__output_copy(&handle, tls->data, size);
	} else {
		/* Nothing read: the first byte says why, as in a sample. */
		perf_output_put(&handle, tls->unread);
		__output_zero(&handle, NULL, size - sizeof(tls->unread));
	}
	perf_output_put(&handle, tls->dyn_size);
	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * The deferred PERF_SAMPLE_TLS_USER read of one event, in task context:
 * user memory may be faulted in here. Returns the number of bytes copied
 * to @buf, from its start; the rest of the @prog->size bytes are zero.
 * When it is 0, @unread says why.
 */
static u64 perf_tls_deferred_read(const struct perf_tls_user_prog *prog,
				  void *buf, u8 *unread)
{
	unsigned long addr;
	u16 len = 0;
	u64 copied;

	memset(buf, 0, prog->size);

	addr = perf_tls_user_resolve(prog, true, &len, unread);
	if (!addr)
		return 0;

	copied = len - copy_from_user(buf, (const void __user *)addr, len);
	if (len && !copied)
		*unread = PERF_TLS_USER_UNREAD_FAULT;
	return copied;
}

/*
 * Make the deferred TLS reads of the entry @cookie names, one per event
 * that asked, and write each to every defer_output event that sees this
 * task or this CPU.
 */
void perf_tls_deferred_output_all(u64 cookie)
{
	struct perf_tls_deferred *td = &current->perf_tls_deferred;
	struct perf_tls_deferred_event tls = { };
	struct perf_tls_deferred_slot slot;
	void *buf = NULL;
	int i;

	/* A sample of this entry without a slot now reads at once. */
	WRITE_ONCE(td->done, cookie);
	barrier();

	for (i = 0; i < PERF_TLS_DEFERRED_EVENTS; i++) {
		if (READ_ONCE(td->slot[i].ready) != cookie)
			continue;
		barrier();
		slot = td->slot[i];
		if (WARN_ON_ONCE(slot.prog.size > PERF_TLS_USER_MAX_SIZE))
			continue;

		if (!buf)
			buf = kmalloc(PERF_TLS_USER_MAX_SIZE, GFP_KERNEL);

		tls.event.cookie = cookie;
		tls.event.id = slot.id;
		tls.event.size = slot.prog.size;
		if (buf) {
			tls.data = buf;
			tls.dyn_size = perf_tls_deferred_read(&slot.prog, buf,
							      &tls.unread);
		} else {
			/* Still answer the samples: nothing read. */
			tls.data = NULL;
			tls.dyn_size = 0;
			tls.unread = PERF_TLS_USER_UNREAD_NO_MEMORY;
		}
		perf_iterate_sb(perf_tls_deferred_output, &tls, NULL);
	}

	kfree(buf);
}
#endif

/* The PERF_SAMPLE_TLS_USER read program of @attr, sample_tls_user set. */
static int perf_tls_user_validate(const struct perf_event_attr *attr)
{
	u32 len_end = attr->tls_user_len_offset + attr->tls_user_len_size;
	int i;

	BUILD_BUG_ON(PERF_TLS_USER_HOPS != PERF_TLS_USER_MAX_HOPS);

	if (attr->tls_user_flags & ~(PERF_TLS_USER_DEREF | PERF_TLS_USER_DEFER |
				     PERF_TLS_USER_REGISTERED))
		return -EINVAL;

	/* The deferred read rides on the deferred unwind's task_work. */
	if ((attr->tls_user_flags & PERF_TLS_USER_DEFER) &&
	    !IS_ENABLED(CONFIG_UNWIND_USER_DEFERRED))
		return -EOPNOTSUPP;

	if (!(attr->tls_user_flags & PERF_TLS_USER_DEREF) &&
	    attr->tls_user_deref_offset)
		return -EINVAL;

	/* PERF_TLS_USER_DEREF is the one-hop program of the first ABI. */
	if (attr->tls_user_hops > PERF_TLS_USER_MAX_HOPS ||
	    (attr->tls_user_hops && (attr->tls_user_flags & PERF_TLS_USER_DEREF)))
		return -EINVAL;
	for (i = attr->tls_user_hops; i < PERF_TLS_USER_MAX_HOPS; i++) {
		if (attr->tls_user_hop_offset[i])
			return -EINVAL;
	}

	switch (attr->tls_user_len_size) {
	case 0:
		if (attr->tls_user_len_offset || attr->tls_user_len_shift ||
		    attr->tls_user_len_base)
			return -EINVAL;
		return 0;
	case 1:
	case 2:
	case 4:
	case 8:
		break;
	default:
		return -EINVAL;
	}

	/* The length field lies inside the largest dump. */
	if (len_end > attr->sample_tls_user ||
	    attr->tls_user_len_base > attr->sample_tls_user ||
	    attr->tls_user_len_shift > PERF_TLS_USER_MAX_LEN_SHIFT)
		return -EINVAL;

	return 0;
}

/*
 * The PERF_SAMPLE_TLS_USER fields of @attr: a valid read program when the
 * sample type asks for the dump, zero otherwise.
 */
int perf_tls_user_check_attr(const struct perf_event_attr *attr)
{
	int ret;

	if (attr->sample_type & PERF_SAMPLE_TLS_USER) {
		if (!attr->sample_tls_user ||
		    attr->sample_tls_user > PERF_TLS_USER_MAX_SIZE ||
		    !IS_ALIGNED(attr->sample_tls_user, sizeof(u64)))
			return -EINVAL;

		ret = perf_tls_user_validate(attr);
		if (ret)
			return ret;
	} else if (attr->sample_tls_user || attr->tls_user_offset ||
		   attr->tls_user_flags || attr->tls_user_deref_offset ||
		   attr->tls_user_hops || attr->tls_user_len_size ||
		   memchr_inv(attr->tls_user_hop_offset, 0,
			      sizeof(attr->tls_user_hop_offset)) ||
		   attr->tls_user_len_offset || attr->tls_user_len_shift ||
		   attr->tls_user_len_base) {
		return -EINVAL;
	}

	if (memchr_inv(attr->__reserved_tls, 0, sizeof(attr->__reserved_tls)) ||
	    attr->__reserved_tls_1)
		return -EINVAL;

	return 0;
}

/* The user address space of @pid (0: current) if current may read it. */
static struct mm_struct *perf_tls_user_proc_mm(pid_t pid)
{
	struct task_struct *task;
	struct mm_struct *mm;
	int ret;

	task = pid ? find_get_task_by_vpid(pid) : get_task_struct(current);
	if (!task)
		return ERR_PTR(-ESRCH);

	/*
	 * Never more than the observer may read of the process, checked as
	 * perf_event_open() checks a task event, against an exec that
	 * changes the process's credentials and address space meanwhile.
	 */
	ret = down_read_interruptible(&task->signal->exec_update_lock);
	if (ret) {
		mm = ERR_PTR(ret);
		goto out;
	}
	mm = get_task_mm(task);
	if (!mm) {
		mm = ERR_PTR(-ESRCH);
	} else if (!ptrace_may_access(task, PTRACE_MODE_READ_REALCREDS)) {
		mmput(mm);
		mm = ERR_PTR(-EACCES);
	}
	up_read(&task->signal->exec_update_lock);
out:
	put_task_struct(task);
	return mm;
}

/*
 * A copy of @old without @mm and without processes that are gone, with
 * @prog for @mm in its place unless @prog is NULL. Each entry of the
 * copy holds a grab of its mm.
 */
static struct perf_tls_user_procs *
perf_tls_user_procs_copy(struct perf_tls_user_procs *old, struct mm_struct *mm,
			 const struct perf_tls_user_prog *prog)
{
	unsigned int i, nr_old = old ? old->nr : 0;
	struct perf_tls_user_procs *new;
	struct perf_tls_user_proc_entry *e;

	new = kmalloc(struct_size(new, entry, nr_old + 1), GFP_KERNEL);
	if (!new)
		return ERR_PTR(-ENOMEM);

	new->nr = 0;
	for (i = 0; i <= nr_old; i++) {
		e = i < nr_old ? &old->entry[i] : NULL;
		if (prog && (!e || (unsigned long)mm < (unsigned long)e->mm)) {
			mmgrab(mm);
			new->entry[new->nr].mm = mm;
			new->entry[new->nr++].prog = *prog;
			prog = NULL;
		}
		if (!e)
			break;
		if (e->mm == mm || !atomic_read(&e->mm->mm_users))
			continue;
		mmgrab(e->mm);
		new->entry[new->nr++] = *e;
	}
	return new;
}

/**
 * perf_tls_user_proc_ioctl - PERF_EVENT_IOC_TLS_USER_PROC
 * @event: a PERF_SAMPLE_TLS_USER event; its context mutex not held
 * @arg: user address of a struct perf_tls_user_proc
 *
 * Install the read program of @event for the samples of one process, or
 * with PERF_TLS_USER_PROC_REMOVE remove it, so that one CPU-wide event
 * serves processes whose thread contexts lie at different places, none
 * of which has to register anything. The program replaces the event's
 * own for that process, except for threads that registered a context
 * when the event reads registered contexts.
 *
 * Return: 0, or -EFAULT when @arg cannot be read; -EINVAL for an event
 * without PERF_SAMPLE_TLS_USER, unknown flags, a non-zero reserved byte,
 * tls_flags other than PERF_TLS_USER_DEREF, a program that the same
 * fields of the event's attr would make invalid, or program fields with
 * PERF_TLS_USER_PROC_REMOVE; -ESRCH when there is no such thread or it
 * has no user address space; -EACCES when the caller may not read it
 * (ptrace access mode PTRACE_MODE_READ_REALCREDS); -EINTR when a signal
 * came while an exec of the process was in progress; -ENOENT to remove a
 * program the process does not have; -ENOSPC when the event has
 * programs for PERF_TLS_USER_MAX_PROCS live processes already; -ENOMEM.
 */
int perf_tls_user_proc_ioctl(struct perf_event *event, void __user *arg)
{
	struct perf_tls_user_procs *old, *new;
	struct perf_tls_user_prog prog;
	struct perf_event_attr attr;
	struct perf_tls_user_proc up;
	bool remove;
	struct mm_struct *mm;
	int ret = 0;

	if (copy_from_user(&up, arg, sizeof(up)))
		return -EFAULT;

	if (!(event->attr.sample_type & PERF_SAMPLE_TLS_USER) ||
	    (up.flags & ~PERF_TLS_USER_PROC_REMOVE) || up.__reserved ||
	    (up.tls_flags & ~PERF_TLS_USER_DEREF))
		return -EINVAL;

	/* The program is checked as the same fields of an attr are. */
	memset(&attr, 0, sizeof(attr));
	attr.sample_tls_user = event->attr.sample_tls_user;
	attr.tls_user_offset = up.offset;
	attr.tls_user_flags = up.tls_flags;
	attr.tls_user_deref_offset = up.deref_offset;
	attr.tls_user_len_offset = up.len_offset;
	attr.tls_user_len_size = up.len_size;
	attr.tls_user_len_shift = up.len_shift;
	attr.tls_user_len_base = up.len_base;
	attr.tls_user_hops = up.hops;
	BUILD_BUG_ON(sizeof(attr.tls_user_hop_offset) != sizeof(up.hop_offset));
	memcpy(attr.tls_user_hop_offset, up.hop_offset, sizeof(up.hop_offset));

	remove = up.flags & PERF_TLS_USER_PROC_REMOVE;
	if (remove) {
		if (up.offset || up.tls_flags || up.deref_offset ||
		    up.len_offset || up.len_size || up.len_shift ||
		    up.len_base || up.hops ||
		    memchr_inv(up.hop_offset, 0, sizeof(up.hop_offset)))
			return -EINVAL;
	} else {
		ret = perf_tls_user_validate(&attr);
		if (ret)
			return ret;
		perf_tls_user_prog_init(&prog, &attr, attr.sample_tls_user);
	}

	mm = perf_tls_user_proc_mm(up.pid);
	if (IS_ERR(mm))
		return PTR_ERR(mm);

	mutex_lock(&perf_tls_user_procs_mutex);
	old = rcu_dereference_protected(event->tls_user_procs,
					lockdep_is_held(&perf_tls_user_procs_mutex));
	if (remove && !perf_tls_user_procs_entry(old, mm)) {
		ret = -ENOENT;
		goto out;
	}
	new = perf_tls_user_procs_copy(old, mm, remove ? NULL : &prog);
	if (IS_ERR(new)) {
		ret = PTR_ERR(new);
		goto out;
	}
	if (new->nr > PERF_TLS_USER_MAX_PROCS) {
		/* Never published: no sample has seen it. */
		perf_tls_user_procs_put(new);
		ret = -ENOSPC;
		goto out;
	}

	if (!new->nr) {
		kfree(new);
		new = NULL;
	}
	rcu_assign_pointer(event->tls_user_procs, new);
	perf_tls_user_procs_retire(old);
out:
	mutex_unlock(&perf_tls_user_procs_mutex);
	mmput(mm);
	return ret;
}

/**
 * perf_event_set_context - register where current keeps its thread context
 * @addr: user address, 8-byte aligned; 0 unregisters
 * @flags: must be zero
 * @arg4: must be zero
 * @arg5: must be zero
 *
 * PERF_SAMPLE_TLS_USER events with PERF_TLS_USER_REGISTERED start their
 * read at @addr instead of at the thread pointer, so that one CPU-wide
 * event serves processes whose context lies at different places. The
 * address is the thread's own: a new thread (CLONE_VM) starts without
 * one, a fork()ed child keeps its parent's, exec clears it (see
 * perf_event_exec_context()). Registering
 * reads nothing; what it names is read only by events allowed to read
 * this thread's memory, with the checks of every PERF_SAMPLE_TLS_USER read.
 *
 * Return: 0, or -EINVAL for non-zero @flags, @arg4 or @arg5, an unaligned
 * @addr, a compat caller or an architecture without PERF_SAMPLE_TLS_USER,
 * -EFAULT when @addr is not a user address.
 */
int perf_event_set_context(unsigned long addr, unsigned long flags,
			   unsigned long arg4, unsigned long arg5)
{
	if (flags || arg4 || arg5)
		return -EINVAL;

	/* Nothing reads it where PERF_SAMPLE_TLS_USER is missing. */
	if (!IS_ENABLED(CONFIG_HAVE_PERF_TLS_USER))
		return -EINVAL;

	/* The read program follows 64-bit pointers. */
	if (in_compat_syscall())
		return -EINVAL;

	if (!IS_ALIGNED(addr, sizeof(u64)))
		return -EINVAL;

	if (addr && !access_ok((const void __user *)addr, sizeof(u64)))
		return -EFAULT;

	WRITE_ONCE(current->perf_tls_context, addr);
	return 0;
}

/*
 * At exec, once the pending deferred reads of the old image are made and
 * before the new image's memory is installed: the registered context is
 * an address of the old image.
 */
void perf_event_exec_context(void)
{
	WRITE_ONCE(current->perf_tls_context, 0);
}
