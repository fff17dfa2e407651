/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_PERF_TLS_DEFERRED_TYPES_H
#define _LINUX_PERF_TLS_DEFERRED_TYPES_H

#include <linux/types.h>

/* Events whose deferred TLS read one kernel entry can carry. */
#define PERF_TLS_DEFERRED_EVENTS	4

/* Pointers one PERF_SAMPLE_TLS_USER read may follow. */
#define PERF_TLS_USER_HOPS		4

/**
 * struct perf_tls_user_prog - how one PERF_SAMPLE_TLS_USER read is made
 * @offset:	start, from the thread pointer or the registered context
 * @hop_offset:	added to each pointer read (PERF_TLS_USER_DEREF is one hop)
 * @flags:	perf_event_attr::tls_user_flags
 * @hops:	pointers to follow, at most PERF_TLS_USER_HOPS
 * @len_size:	bytes of the length field, 0 for none
 * @len_shift:	the length field counts units of 1 << @len_shift bytes
 * @len_offset:	where the length field is, from the final address
 * @len_base:	bytes before the counted part
 * @size:	most bytes to copy
 */
struct perf_tls_user_prog {
	s32	offset;
	s32	hop_offset[PERF_TLS_USER_HOPS];
	u16	flags;
	u8	hops;
	u8	len_size;
	u8	len_shift;
	u16	len_offset;
	u16	len_base;
	u16	size;
};

/**
 * struct perf_tls_deferred_slot - one event's deferred TLS read
 * @claim:	cookie of the entry the slot was taken for
 * @ready:	cookie of the entry whose read the fields below describe;
 *		written after them, so a reader that sees its cookie here
 *		sees the fields of that entry
 * @id:		primary id of the event that asked
 * @prog:	the read that event asked for
 */
struct perf_tls_deferred_slot {
	u64				claim;
	u64				ready;
	u64				id;
	struct perf_tls_user_prog	prog;
};

/**
 * struct perf_tls_deferred - the deferred TLS reads of a task's kernel entry
 * @done:	cookie of the last entry whose reads were made; a sample of
 *		that entry that asks later, for an event without a slot in
 *		it, reads at once
 * @slot:	the events that asked, at most one slot per event and entry
 */
struct perf_tls_deferred {
	u64				done;
	struct perf_tls_deferred_slot	slot[PERF_TLS_DEFERRED_EVENTS];
};

#endif /* _LINUX_PERF_TLS_DEFERRED_TYPES_H */
