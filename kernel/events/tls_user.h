/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KERNEL_EVENTS_TLS_USER_H
#define _KERNEL_EVENTS_TLS_USER_H

#include <linux/perf_event.h>

/*
 * PERF_SAMPLE_TLS_USER (tls_user.c): what perf's core calls. The read
 * program, the deferred reads, the registered contexts and the programs
 * observers install per process are kept there.
 */

void perf_tls_user_sched_out(struct task_struct *task);
void perf_tls_user_sched_in(void);
void perf_tls_user_sched_reset(void);

int perf_tls_user_check_attr(const struct perf_event_attr *attr);
int perf_tls_user_proc_ioctl(struct perf_event *event, void __user *arg);
void perf_tls_user_procs_release(struct perf_event *event);
void perf_prepare_sample_tls_user(struct perf_sample_data *data,
				  struct perf_event *event,
				  struct pt_regs *regs);
void perf_output_sample_tls_user(struct perf_output_handle *handle,
				 struct perf_event *event,
				 struct perf_sample_data *data);

#ifdef CONFIG_UNWIND_USER_DEFERRED
void perf_tls_deferred_output_all(u64 cookie);
#else
static inline void perf_tls_deferred_output_all(u64 cookie) { }
#endif

#endif /* _KERNEL_EVENTS_TLS_USER_H */
