// SPDX-License-Identifier: GPL-2.0
/*
 * Merging deferred user callchains into their samples.
 *
 * A sample recorded with --call-graph fp,defer has the kernel part of its
 * callchain, then PERF_CONTEXT_USER_DEFERRED and a cookie.  The kernel
 * unwinds the user stack once per entry into the kernel, on the way back
 * to user space, and writes it in a PERF_RECORD_CALLCHAIN_DEFERRED record
 * of the thread with that entry's cookie, after the samples in time order.
 *
 * A thread's records come in the order of its kernel entries, so when one
 * comes, every sample of the thread still waiting either gets its user
 * part from it (same cookie) or will never get one (its record was lost,
 * or written to a buffer that was not recorded): all are released.  The
 * last record of each thread is kept, as a sample taken later in the same
 * kernel entry (the record is written in that entry) can come after it.
 *
 * Samples wait on a list per thread.  With keep_order, every event that
 * comes while a sample waits is held too, in one queue in the order the
 * events came, and delivered only once everything before it is, so that
 * tools get them in time order.  The bytes held are bounded: past the
 * limit the oldest waiting sample is delivered with its kernel part only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/err.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>

#include "deferred-callchain.h"
#include "event.h"
#include "evlist.h"
#include "hashmap.h"
#include "sample.h"

u64 deferred_callchain_queue_size = DEFERRED_CALLCHAIN_QUEUE_SIZE;

/* The user part of a callchain, from one PERF_RECORD_CALLCHAIN_DEFERRED */
struct deferred_user {
	unsigned int		refcnt;
	u64			cookie;
	u64			nr;
	u64			ips[];
};

struct deferred_entry {
	struct list_head	node;	/* in deferred_callchains.queue */
	struct list_head	wait;	/* in deferred_thread.waiting */
	struct deferred_user	*user;	/* the user part to merge, if any */
	u64			file_offset;
	const char		*file_path;
	u64			cookie;
	size_t			bytes;
	bool			waiting;
	bool			deferred;	/* a sample with a deferred callchain */
	u64			event[];	/* a copy of the event */
};

struct deferred_thread {
	struct list_head	waiting;	/* its waiting samples, oldest first */
	struct deferred_user	*last;		/* its last deferred record */
};

static size_t tid_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool tid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

struct deferred_callchains *
deferred_callchains__new(struct evlist *evlist, bool keep_order,
			 deferred_callchain_deliver_fn deliver, void *arg)
{
	struct deferred_callchains *dc = zalloc(sizeof(*dc));

	if (!dc)
		return NULL;
	dc->threads = hashmap__new(tid_hash, tid_equal, NULL);
	if (IS_ERR(dc->threads)) {
		free(dc);
		return NULL;
	}
	INIT_LIST_HEAD(&dc->queue);
	dc->evlist = evlist;
	dc->keep_order = keep_order;
	dc->max_bytes = deferred_callchain_queue_size;
	dc->deliver = deliver;
	dc->arg = arg;
	return dc;
}

static void user__put(struct deferred_callchains *dc, struct deferred_user *user)
{
	if (user && --user->refcnt == 0) {
		dc->bytes -= sizeof(*user) + user->nr * sizeof(u64);
		free(user);
	}
}

static struct deferred_user *user__get(struct deferred_user *user)
{
	if (user)
		user->refcnt++;
	return user;
}

static void entry__free(struct deferred_callchains *dc, struct deferred_entry *e)
{
	list_del(&e->node);
	if (e->waiting)
		list_del(&e->wait);
	user__put(dc, e->user);
	dc->bytes -= e->bytes;
	dc->held_bytes -= e->bytes;
	free(e);
}

static void thread__free_deferred(struct deferred_callchains *dc,
				  struct deferred_thread *t)
{
	user__put(dc, t->last);
	dc->bytes -= sizeof(*t);
	free(t);
}

void deferred_callchains__delete(struct deferred_callchains *dc)
{
	struct deferred_entry *e, *tmp;
	struct hashmap_entry *cur;
	size_t bkt;

	if (!dc)
		return;
	list_for_each_entry_safe(e, tmp, &dc->queue, node)
		entry__free(dc, e);
	hashmap__for_each_entry(dc->threads, cur, bkt)
		thread__free_deferred(dc, cur->pvalue);
	hashmap__free(dc->threads);
	free(dc);
}

static struct deferred_thread *
deferred_callchains__findnew_thread(struct deferred_callchains *dc, u32 tid)
{
	struct deferred_thread *t;

	if (hashmap__find(dc->threads, tid, &t))
		return t;
	t = zalloc(sizeof(*t));
	if (!t)
		return NULL;
	INIT_LIST_HEAD(&t->waiting);
	if (hashmap__add(dc->threads, tid, t)) {
		free(t);
		return NULL;
	}
	dc->bytes += sizeof(*t);
	return t;
}

/*
 * Deliver a held event: parse it again (the sample pointed into the event
 * as it came) and, for a deferred sample, put the user part after a
 * PERF_CONTEXT_USER in place of the deferred marker and the cookie, or
 * leave the kernel part alone if there is no user part.
 */
static int deferred_callchains__deliver(struct deferred_callchains *dc,
					union perf_event *event,
					struct perf_sample *sample,
					struct deferred_user *user,
					u64 file_offset, const char *file_path)
{
	struct ip_callchain *chain;
	u64 nr, user_nr = user ? user->nr : 0;
	int ret;

	/* evsel__parse_sample() set it only with nr >= 2 */
	nr = sample->callchain->nr - 2;
	chain = malloc(sizeof(*chain) + (nr + 1 + user_nr) * sizeof(u64));
	if (!chain)
		return -ENOMEM;
	memcpy(chain->ips, sample->callchain->ips, nr * sizeof(u64));
	if (user_nr) {
		chain->ips[nr++] = PERF_CONTEXT_USER;
		memcpy(&chain->ips[nr], user->ips, user_nr * sizeof(u64));
		nr += user_nr;
	}
	chain->nr = nr;

	sample->callchain = chain;
	sample->deferred_callchain = false;
	ret = dc->deliver(dc->arg, event, sample, file_offset, file_path);
	free(chain);
	return ret;
}

static int deferred_callchains__deliver_entry(struct deferred_callchains *dc,
					      struct deferred_entry *e)
{
	union perf_event *event = (union perf_event *)e->event;
	struct perf_sample sample;
	int ret;

	ret = evlist__parse_sample(dc->evlist, event, &sample);
	if (ret)
		return ret;
	if (e->deferred && sample.deferred_callchain)
		return deferred_callchains__deliver(dc, event, &sample, e->user,
						    e->file_offset, e->file_path);
	return dc->deliver(dc->arg, event, &sample, e->file_offset, e->file_path);
}

/* Deliver the held events up to the oldest sample still waiting */
static int deferred_callchains__drain(struct deferred_callchains *dc)
{
	struct deferred_entry *e;
	int ret = 0;

	while (!ret && !list_empty(&dc->queue)) {
		e = list_first_entry(&dc->queue, struct deferred_entry, node);
		if (e->waiting)
			break;
		ret = deferred_callchains__deliver_entry(dc, e);
		entry__free(dc, e);
	}
	return ret;
}

/*
 * A waiting sample gets its user part, or none: without keep_order only
 * waiting samples are held, deliver it now; with it, when all the events
 * before it are (deferred_callchains__drain()).
 */
static int deferred_callchains__release(struct deferred_callchains *dc,
					struct deferred_entry *e,
					struct deferred_user *user)
{
	int ret;

	list_del_init(&e->wait);
	e->waiting = false;
	e->user = user__get(user);
	if (dc->keep_order)
		return 0;
	ret = deferred_callchains__deliver_entry(dc, e);
	entry__free(dc, e);
	return ret;
}

static struct deferred_entry *
deferred_callchains__hold(struct deferred_callchains *dc, union perf_event *event,
			  u64 file_offset, const char *file_path)
{
	size_t bytes = sizeof(struct deferred_entry) + event->header.size;
	struct deferred_entry *e = malloc(bytes);

	if (!e)
		return NULL;
	memcpy(e->event, event, event->header.size);
	INIT_LIST_HEAD(&e->wait);
	e->user = NULL;
	e->file_offset = file_offset;
	e->file_path = file_path;
	e->bytes = bytes;
	e->cookie = 0;
	e->waiting = false;
	e->deferred = false;
	list_add_tail(&e->node, &dc->queue);
	dc->bytes += bytes;
	dc->held_bytes += bytes;
	return e;
}

/* Past the limit, the oldest waiting samples go without their user part */
static int deferred_callchains__limit(struct deferred_callchains *dc)
{
	struct deferred_entry *e;
	int ret = 0;

	while (!ret && dc->held_bytes > dc->max_bytes && !list_empty(&dc->queue)) {
		e = list_first_entry(&dc->queue, struct deferred_entry, node);
		/* Without keep_order only waiting samples are held */
		if (!e->waiting && !dc->keep_order)
			break;
		if (e->waiting) {
			dc->evlist->stats.nr_deferred_over_limit++;
			ret = deferred_callchains__release(dc, e, NULL);
		}
		if (!ret && dc->keep_order)
			ret = deferred_callchains__drain(dc);
	}
	return ret;
}

static int deferred_callchains__sample(struct deferred_callchains *dc,
				       union perf_event *event,
				       struct perf_sample *sample,
				       u64 file_offset, const char *file_path)
{
	struct deferred_thread *t;
	struct deferred_entry *e;

	t = deferred_callchains__findnew_thread(dc, sample->tid);
	if (!t)
		return -ENOMEM;

	/* A later kernel entry: no sample can have the last record's cookie */
	if (t->last && t->last->cookie != sample->deferred_cookie) {
		user__put(dc, t->last);
		t->last = NULL;
	}

	/* Taken in the kernel entry of the last record, after it */
	if (t->last && t->last->cookie == sample->deferred_cookie) {
		if (!dc->keep_order || list_empty(&dc->queue))
			return deferred_callchains__deliver(dc, event, sample,
							    t->last, file_offset,
							    file_path);
		e = deferred_callchains__hold(dc, event, file_offset, file_path);
		if (!e)
			return -ENOMEM;
		e->deferred = true;
		e->user = user__get(t->last);
		return deferred_callchains__limit(dc);
	}

	e = deferred_callchains__hold(dc, event, file_offset, file_path);
	if (!e)
		return -ENOMEM;
	e->deferred = true;
	e->cookie = sample->deferred_cookie;
	e->waiting = true;
	list_add_tail(&e->wait, &t->waiting);
	return deferred_callchains__limit(dc);
}

/*
 * A record of @t came: release its waiting samples that have its cookie
 * (all of them, if @only_cookie) with its user part, and the ones taken
 * before them without one.  Those taken after the last sample with the
 * record's cookie wait on: the kernel may write the record of an entry
 * only at the end of the next entry, when the unwind was requested in the
 * exit path after the pending work ran, so they may be the next entry's.
 * Without such a sample, the record releases all of them.
 */
static int deferred_callchains__release_thread(struct deferred_callchains *dc,
					       struct deferred_thread *t,
					       struct deferred_user *user,
					       bool only_cookie)
{
	struct deferred_entry *e, *tmp, *last = NULL;
	int ret = 0;

	if (user) {
		list_for_each_entry(e, &t->waiting, wait)
			if (e->cookie == user->cookie)
				last = e;
	}
	list_for_each_entry_safe(e, tmp, &t->waiting, wait) {
		bool match = user && e->cookie == user->cookie;
		bool stop = e == last;

		if (!only_cookie || match) {
			if (!match)
				dc->evlist->stats.nr_deferred_unmatched++;
			ret = deferred_callchains__release(dc, e, match ? user : NULL);
			if (ret)
				break;
		}
		if (stop)
			break;
	}
	return ret;
}

static int deferred_callchains__record(struct deferred_callchains *dc,
				       struct perf_sample *sample)
{
	struct ip_callchain *chain = sample->callchain;
	struct deferred_user *user;
	struct deferred_thread *t;
	size_t bytes;
	int ret = 0;

	bytes = sizeof(*user) + chain->nr * sizeof(u64);
	user = malloc(bytes);
	if (!user)
		return -ENOMEM;
	user->refcnt = 1;
	user->cookie = sample->deferred_cookie;
	user->nr = chain->nr;
	memcpy(user->ips, chain->ips, chain->nr * sizeof(u64));
	dc->bytes += bytes;

	if (sample->tid == (u32)-1) {
		/* No sample_id_all: the thread is not known, only the cookie */
		struct hashmap_entry *cur;
		size_t bkt;

		hashmap__for_each_entry(dc->threads, cur, bkt) {
			ret = deferred_callchains__release_thread(dc, cur->pvalue,
								  user, true);
			if (ret)
				break;
		}
		user__put(dc, user);
		return ret;
	}

	t = deferred_callchains__findnew_thread(dc, sample->tid);
	if (!t) {
		user__put(dc, user);
		return -ENOMEM;
	}
	user__put(dc, t->last);
	t->last = user;
	return deferred_callchains__release_thread(dc, t, user, false);
}

/*
 * The kernel does a thread's pending unwinds before it exits: what still
 * waits lost its record.
 */
static int deferred_callchains__exit(struct deferred_callchains *dc, u32 tid)
{
	struct deferred_thread *t;
	int ret;

	if (!hashmap__find(dc->threads, tid, &t))
		return 0;
	ret = deferred_callchains__release_thread(dc, t, NULL, false);
	if (ret)
		return ret;
	hashmap__delete(dc->threads, tid, NULL, NULL);
	thread__free_deferred(dc, t);
	return ret;
}

int deferred_callchains__event(struct deferred_callchains *dc,
			       union perf_event *event,
			       struct perf_sample *sample,
			       u64 file_offset, const char *file_path)
{
	struct deferred_entry *e;
	int ret = 0;

	switch (event->header.type) {
	case PERF_RECORD_SAMPLE:
		if (sample->deferred_callchain)
			return deferred_callchains__sample(dc, event, sample,
							   file_offset, file_path);
		break;
	case PERF_RECORD_CALLCHAIN_DEFERRED:
		if (sample->callchain)
			ret = deferred_callchains__record(dc, sample);
		break;
	case PERF_RECORD_EXIT:
		if (event->header.size >= offsetof(struct perf_record_fork, time))
			ret = deferred_callchains__exit(dc, event->fork.tid);
		break;
	default:
		break;
	}
	if (!ret && dc->keep_order)
		ret = deferred_callchains__drain(dc);
	if (ret)
		return ret;

	if (!dc->keep_order || list_empty(&dc->queue))
		return dc->deliver(dc->arg, event, sample, file_offset, file_path);

	/* Behind a waiting sample */
	e = deferred_callchains__hold(dc, event, file_offset, file_path);
	if (!e)
		return -ENOMEM;
	return deferred_callchains__limit(dc);
}

int deferred_callchains__flush(struct deferred_callchains *dc)
{
	struct deferred_entry *e, *tmp;
	int ret = 0;

	if (!dc)
		return 0;
	list_for_each_entry_safe(e, tmp, &dc->queue, node) {
		if (e->waiting) {
			dc->evlist->stats.nr_deferred_unmatched++;
			ret = deferred_callchains__release(dc, e, NULL);
			if (ret)
				return ret;
		}
	}
	if (dc->keep_order)
		ret = deferred_callchains__drain(dc);
	return ret;
}
