/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_DEFERRED_CALLCHAIN_H
#define __PERF_DEFERRED_CALLCHAIN_H

#include <linux/list.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

struct evlist;
struct hashmap;
struct perf_sample;
union perf_event;

/*
 * Samples recorded with --call-graph fp,defer wait here for the
 * PERF_RECORD_CALLCHAIN_DEFERRED record of their thread that has the user
 * part of their callchain.  The next deferred record of the thread
 * releases all of them: merged if its cookie is theirs, with their kernel
 * part only otherwise.  So does the thread's exit, the end of the data, or
 * the limit on the bytes held (call-graph.defer-queue-size).
 */

/* Default of call-graph.defer-queue-size, in bytes */
#define DEFERRED_CALLCHAIN_QUEUE_SIZE	(64ULL << 20)

extern u64 deferred_callchain_queue_size;

/* Delivers an event; the sample of a deferred sample is already merged */
typedef int (*deferred_callchain_deliver_fn)(void *arg,
					     union perf_event *event,
					     struct perf_sample *sample,
					     u64 file_offset,
					     const char *file_path);

struct deferred_callchains {
	struct evlist			*evlist;
	/* Held events, oldest first */
	struct list_head		queue;
	/* tid -> struct deferred_thread */
	struct hashmap			*threads;
	size_t				bytes;		/* all it holds */
	size_t				held_bytes;	/* held events and TLS bytes, bounded */
	size_t				max_bytes;
	/*
	 * Hold every event behind a waiting sample, so that they are all
	 * delivered in the order they came (perf_session); otherwise only the
	 * waiting samples are held and the rest delivered at once (perf top).
	 */
	bool				keep_order;
	deferred_callchain_deliver_fn	deliver;
	void				*arg;
};

struct deferred_callchains *
deferred_callchains__new(struct evlist *evlist, bool keep_order,
			 deferred_callchain_deliver_fn deliver, void *arg);
void deferred_callchains__delete(struct deferred_callchains *dc);

/* Deliver @event, or hold it; @sample is its parsed sample */
int deferred_callchains__event(struct deferred_callchains *dc,
			       union perf_event *event,
			       struct perf_sample *sample,
			       u64 file_offset, const char *file_path);

/* At the end of the data: deliver everything held */
int deferred_callchains__flush(struct deferred_callchains *dc);

#endif /* __PERF_DEFERRED_CALLCHAIN_H */
