/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The software AUX PMU "sw_aux": an AUX area tracer that needs no hardware.
 *
 * Every tick of its timer writes one struct sw_aux_record into the AUX area
 * of the event. See Documentation/userspace-api/perf_sw_aux.rst.
 */
#ifndef _UAPI_LINUX_PERF_SW_AUX_H
#define _UAPI_LINUX_PERF_SW_AUX_H

#include <linux/types.h>

/* attr.config bits 0-31: tick period in microseconds, 0 selects the default */
#define SW_AUX_PERIOD_DEFAULT_US	100
#define SW_AUX_PERIOD_MIN_US		10
#define SW_AUX_PERIOD_MAX_US		1000000

#define SW_AUX_RECORD_SIZE		32

/* One record per tick, in CPU byte order. */
struct sw_aux_record {
	__u64	seq;	/* 0, 1, 2, ... per event, never reset */
	__u64	time;	/* local_clock() ns, the default perf clock */
	__u64	ip;	/* user ip of the interrupted task, 0 if none */
	__u32	pid;	/* process id, in the event owner's pid namespace */
	__u32	tid;	/* thread id, in the event owner's pid namespace */
};

#endif /* _UAPI_LINUX_PERF_SW_AUX_H */
