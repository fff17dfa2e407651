/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sw_aux: the software AUX area PMU
 */

#ifndef __PERF_SW_AUX_H__
#define __PERF_SW_AUX_H__

#define SW_AUX_PMU_NAME "sw_aux"

enum {
	SW_AUX_PMU_TYPE,
	SW_AUX_AUXTRACE_PRIV_MAX,
};

#define SW_AUX_AUXTRACE_PRIV_SIZE (SW_AUX_AUXTRACE_PRIV_MAX * sizeof(u64))

union perf_event;
struct evlist;
struct perf_session;

struct auxtrace_record *sw_aux_recording_init(struct evlist *evlist, int *err);

int sw_aux_process_auxtrace_info(union perf_event *event,
				 struct perf_session *session);

#endif
