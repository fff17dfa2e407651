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
 *
 * Thread-local data read with PERF_TLS_USER_DEFER comes the same way: the
 * sample has the cookie of its kernel entry, and the bytes come in a
 * PERF_RECORD_TLS_USER_DEFERRED of the thread with that cookie and the id
 * of the event that asked, written by the same callback as the deferred
 * callchain, once per event.  A sample waits until it has what it asked
 * for, its user callchain or its bytes or both; any record of the thread
 * with a later cookie releases it with what it has.  As for callchains,
 * the last TLS records of each thread, one per event, are kept for the
 * samples taken later in their kernel entry (while they are written, or
 * after), which come after them.  A sample with cookie 0 has its bytes,
 * read at once, and does not wait.
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

/* The bytes of one PERF_RECORD_TLS_USER_DEFERRED, as the thread had them */
struct deferred_tls {
	unsigned int		refcnt;
	u64			cookie;
	struct evsel		*evsel;		/* the event that asked */
	u64			id;		/* its id, as the record says */
	u64			size;
	u64			dyn_size;
	bool			swapped;	/* as in struct tls_dump */
	u8			data[];
};

struct deferred_entry {
	struct list_head	node;	/* in deferred_callchains.queue */
	struct list_head	wait;	/* in deferred_thread.waiting */
	struct deferred_user	*user;	/* the user part to merge, if any */
	struct deferred_tls	*tls;	/* the TLS bytes to merge, if any */
	struct evsel		*evsel;	/* of a sample with deferred TLS */
	u64			tls_id;	/* its sample id, if has_tls_id */
	size_t			tls_held; /* bytes of the tls it holds */
	u64			file_offset;
	const char		*file_path;
	u64			cookie;
	u64			tls_cookie;
	size_t			bytes;
	bool			waiting;	/* for wait_user or wait_tls */
	bool			wait_user;
	bool			wait_tls;
	bool			deferred;	/* a sample with a deferred callchain */
	bool			deferred_tls;	/* a sample with deferred TLS */
	bool			has_tls_id;	/* its event has sample ids */
	bool			tls_over_limit;	/* released past the limit */
	u64			event[];	/* a copy of the event */
};

/* A deferred record of a thread, what samples wait for */
struct deferred_record {
	u64			cookie;
	struct deferred_user	*user;	/* a PERF_RECORD_CALLCHAIN_DEFERRED */
	struct deferred_tls	*tls;	/* or a PERF_RECORD_TLS_USER_DEFERRED */
};

/* The kernel writes at most four TLS records per kernel entry */
#define DEFERRED_TLS_LAST	4

struct deferred_thread {
	struct list_head	waiting;	/* its waiting samples, oldest first */
	struct deferred_user	*last;		/* its last deferred record */
	struct deferred_tls	*last_tls[DEFERRED_TLS_LAST]; /* of its last entry */
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

static void tls__put(struct deferred_callchains *dc, struct deferred_tls *tls)
{
	if (tls && --tls->refcnt == 0) {
		dc->bytes -= sizeof(*tls) + tls->size;
		free(tls);
	}
}

static struct deferred_tls *tls__get(struct deferred_tls *tls)
{
	if (tls)
		tls->refcnt++;
	return tls;
}

/*
 * A held sample takes the bytes of a TLS record: they count against the
 * limit as long as it holds them, once per sample that does (a record
 * a thread keeps for later samples is not held by itself).
 */
static void entry__take_tls(struct deferred_callchains *dc,
			    struct deferred_entry *e, struct deferred_tls *tls)
{
	e->tls = tls__get(tls);
	if (tls) {
		e->tls_held = sizeof(*tls) + tls->size;
		dc->held_bytes += e->tls_held;
	}
}

static void entry__free(struct deferred_callchains *dc, struct deferred_entry *e)
{
	list_del(&e->node);
	if (e->waiting)
		list_del(&e->wait);
	user__put(dc, e->user);
	tls__put(dc, e->tls);
	dc->bytes -= e->bytes;
	dc->held_bytes -= e->bytes + e->tls_held;
	free(e);
}

/*
 * @tls is what a sample of @evsel asked for: the record of its event, by
 * the sample's id when its event has ids (each CPU's event of a CPU-wide
 * evsel has its own, and so its own read), else by the evsel.
 */
static bool tls__is_for(const struct deferred_tls *tls, const struct evsel *evsel,
			bool has_id, u64 id)
{
	return tls->evsel == evsel && (!has_id || tls->id == id);
}

static void thread__free_deferred(struct deferred_callchains *dc,
				  struct deferred_thread *t)
{
	int i;

	for (i = 0; i < DEFERRED_TLS_LAST; i++)
		tls__put(dc, t->last_tls[i]);
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

/* The kept TLS record of @t's kernel entry @cookie for a sample, if any */
static struct deferred_tls *thread__last_tls(struct deferred_thread *t,
					     u64 cookie, struct evsel *evsel,
					     bool has_id, u64 id)
{
	int i;

	for (i = 0; i < DEFERRED_TLS_LAST; i++) {
		if (t->last_tls[i] && t->last_tls[i]->cookie == cookie &&
		    tls__is_for(t->last_tls[i], evsel, has_id, id))
			return t->last_tls[i];
	}
	return NULL;
}

/*
 * Keep @tls for the samples of its kernel entry that come after it: a
 * record of a later entry replaces all those of the earlier one, and one
 * of the same entry and event id (two nested samples of one event may
 * each have taken a read) the earlier.
 */
static void thread__keep_tls(struct deferred_callchains *dc,
			     struct deferred_thread *t, struct deferred_tls *tls)
{
	int i, free = -1;

	for (i = 0; i < DEFERRED_TLS_LAST; i++) {
		struct deferred_tls *old = t->last_tls[i];

		if (old && (old->cookie != tls->cookie ||
			    (old->evsel == tls->evsel && old->id == tls->id))) {
			tls__put(dc, old);
			t->last_tls[i] = NULL;
			old = NULL;
		}
		if (!old && free < 0)
			free = i;
	}
	/* More events than the kernel serves: the first ones stay */
	if (free >= 0)
		t->last_tls[free] = tls__get(tls);
}

/*
 * Deliver a sample with what came for it: for a deferred callchain, put
 * the user part after a PERF_CONTEXT_USER in place of the deferred marker
 * and the cookie, or leave the kernel part alone if there is no user
 * part; for deferred TLS, the bytes of its record as the sample's own
 * PERF_SAMPLE_TLS_USER dump, or none.
 */
static int deferred_callchains__deliver(struct deferred_callchains *dc,
					union perf_event *event,
					struct perf_sample *sample,
					bool merge_user,
					struct deferred_user *user,
					struct deferred_tls *tls,
					u64 file_offset, const char *file_path)
{
	struct ip_callchain *chain = NULL;
	u64 nr, user_nr = user ? user->nr : 0;
	int ret;

	if (merge_user && sample->deferred_callchain) {
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
	}

	if (sample->deferred_tls) {
		/* The flags stay the sample's event's, PERF_TLS_USER_DEFER too */
		if (tls) {
			sample->tls_user.size = tls->size;
			sample->tls_user.dyn_size = tls->dyn_size;
			sample->tls_user.data = tls->size ? (char *)tls->data : NULL;
			sample->tls_user.swapped = tls->swapped;
		}
		sample->tls_no_record = !tls;
		sample->deferred_tls = false;
	}

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
	sample.tls_over_limit = e->tls_over_limit;
	if (e->deferred || e->deferred_tls)
		return deferred_callchains__deliver(dc, event, &sample, e->deferred,
						    e->user, e->tls,
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
 * A waiting sample has all that will come for it: without keep_order only
 * waiting samples are held, deliver it now; with it, when all the events
 * before it are (deferred_callchains__drain()).
 */
static int deferred_callchains__release(struct deferred_callchains *dc,
					struct deferred_entry *e)
{
	int ret;

	list_del_init(&e->wait);
	e->waiting = false;
	if (dc->keep_order)
		return 0;
	ret = deferred_callchains__deliver_entry(dc, e);
	entry__free(dc, e);
	return ret;
}

/* What a waiting sample still waits for will not come */
static int deferred_callchains__give_up(struct deferred_callchains *dc,
					struct deferred_entry *e)
{
	if (e->wait_user)
		dc->evlist->stats.nr_deferred_unmatched++;
	if (e->wait_tls)
		dc->evlist->stats.nr_deferred_tls_unmatched++;
	e->wait_user = false;
	e->wait_tls = false;
	return deferred_callchains__release(dc, e);
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
	e->tls = NULL;
	e->tls_held = 0;
	e->evsel = NULL;
	e->tls_id = 0;
	e->has_tls_id = false;
	e->tls_over_limit = false;
	e->file_offset = file_offset;
	e->file_path = file_path;
	e->bytes = bytes;
	e->cookie = 0;
	e->tls_cookie = 0;
	e->waiting = false;
	e->wait_user = false;
	e->wait_tls = false;
	e->deferred = false;
	e->deferred_tls = false;
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
			if (e->wait_user)
				dc->evlist->stats.nr_deferred_over_limit++;
			if (e->wait_tls) {
				dc->evlist->stats.nr_deferred_tls_over_limit++;
				e->tls_over_limit = true;
			}
			e->wait_user = false;
			e->wait_tls = false;
			ret = deferred_callchains__release(dc, e);
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
	struct deferred_user *user = NULL;
	struct deferred_tls *tls = NULL;
	struct deferred_thread *t;
	struct deferred_entry *e;
	bool wait_user = false, wait_tls = false, has_id = false;
	struct evsel *evsel = NULL;

	t = deferred_callchains__findnew_thread(dc, sample->tid);
	if (!t)
		return -ENOMEM;

	if (sample->deferred_callchain) {
		/* A later kernel entry: no sample can have the last record's cookie */
		if (t->last && t->last->cookie != sample->deferred_cookie) {
			user__put(dc, t->last);
			t->last = NULL;
		}
		/* Taken in the kernel entry of the last record, after it */
		user = t->last;
		wait_user = !user;
	}

	if (sample->deferred_tls) {
		evsel = evlist__event2evsel(dc->evlist, event);
		has_id = evsel && (evsel->core.attr.sample_type &
				   (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER));
		/* Taken in the kernel entry of its event's last record, after it */
		tls = thread__last_tls(t, sample->tls_cookie, evsel, has_id,
				       sample->id);
		wait_tls = !tls;
	}

	if (!wait_user && !wait_tls &&
	    (!dc->keep_order || list_empty(&dc->queue)))
		return deferred_callchains__deliver(dc, event, sample, true, user,
						    tls, file_offset, file_path);

	e = deferred_callchains__hold(dc, event, file_offset, file_path);
	if (!e)
		return -ENOMEM;
	e->deferred = sample->deferred_callchain;
	e->deferred_tls = sample->deferred_tls;
	e->user = user__get(user);
	entry__take_tls(dc, e, tls);
	e->cookie = sample->deferred_cookie;
	e->tls_cookie = sample->tls_cookie;
	e->evsel = evsel;
	e->has_tls_id = has_id;
	e->tls_id = sample->id;
	e->wait_user = wait_user;
	e->wait_tls = wait_tls;
	if (e->wait_user || e->wait_tls) {
		e->waiting = true;
		list_add_tail(&e->wait, &t->waiting);
	}
	return deferred_callchains__limit(dc);
}

/* @e is of the kernel entry of @rec */
static bool deferred_entry__same_entry(const struct deferred_entry *e,
				       const struct deferred_record *rec)
{
	return (e->deferred && e->cookie == rec->cookie) ||
	       (e->deferred_tls && e->tls_cookie == rec->cookie);
}

/* @rec is what @e waits for: take it */
static bool deferred_entry__take(struct deferred_callchains *dc,
				 struct deferred_entry *e,
				 const struct deferred_record *rec)
{
	if (rec->user && e->wait_user && e->cookie == rec->cookie) {
		e->user = user__get(rec->user);
		e->wait_user = false;
		return true;
	}
	if (rec->tls && e->wait_tls && e->tls_cookie == rec->cookie &&
	    tls__is_for(rec->tls, e->evsel, e->has_tls_id, e->tls_id)) {
		entry__take_tls(dc, e, rec->tls);
		e->wait_tls = false;
		return true;
	}
	return false;
}

/*
 * A record of @t came: the waiting samples of its kernel entry take what
 * they wait for from it, and the ones taken before the last of them get
 * what they have, as their entries' records all came (or were lost).
 * Those taken after the last sample of the record's entry wait on: the
 * kernel may write the records of an entry only at the end of the next
 * entry, when the unwind was requested in the exit path after the pending
 * work ran, so they may be the next entry's.  Without such a sample, the
 * record releases all of them.  With @only_cookie (the thread is not
 * known), only the samples of the record's entry take from it.
 */
static int deferred_callchains__release_thread(struct deferred_callchains *dc,
					       struct deferred_thread *t,
					       const struct deferred_record *rec,
					       bool only_cookie)
{
	struct deferred_entry *e, *tmp, *last = NULL;
	int ret = 0;

	if (rec) {
		list_for_each_entry(e, &t->waiting, wait)
			if (deferred_entry__same_entry(e, rec))
				last = e;
	}
	list_for_each_entry_safe(e, tmp, &t->waiting, wait) {
		bool same = rec && deferred_entry__same_entry(e, rec);
		bool stop = e == last;

		if (same) {
			if (deferred_entry__take(dc, e, rec) && !e->wait_user &&
			    !e->wait_tls)
				ret = deferred_callchains__release(dc, e);
		} else if (!only_cookie) {
			ret = deferred_callchains__give_up(dc, e);
		}
		if (ret || stop)
			break;
	}
	return ret;
}

/* Release the waiting samples of @rec's thread, or of all if not known */
static int deferred_callchains__record_thread(struct deferred_callchains *dc,
					      u32 tid,
					      const struct deferred_record *rec,
					      struct deferred_thread **tp)
{
	struct deferred_thread *t;

	if (tid == (u32)-1) {
		/* No sample_id_all: the thread is not known, only the cookie */
		struct hashmap_entry *cur;
		size_t bkt;
		int ret;

		hashmap__for_each_entry(dc->threads, cur, bkt) {
			ret = deferred_callchains__release_thread(dc, cur->pvalue,
								  rec, true);
			if (ret)
				return ret;
		}
		return 0;
	}

	t = deferred_callchains__findnew_thread(dc, tid);
	if (!t)
		return -ENOMEM;
	if (tp)
		*tp = t;
	return deferred_callchains__release_thread(dc, t, rec, false);
}

static int deferred_callchains__record(struct deferred_callchains *dc,
				       struct perf_sample *sample)
{
	struct ip_callchain *chain = sample->callchain;
	struct deferred_record rec = { .cookie = sample->deferred_cookie };
	struct deferred_thread *t = NULL;
	struct deferred_user *user;
	size_t bytes;
	int ret;

	bytes = sizeof(*user) + chain->nr * sizeof(u64);
	user = malloc(bytes);
	if (!user)
		return -ENOMEM;
	user->refcnt = 1;
	user->cookie = sample->deferred_cookie;
	user->nr = chain->nr;
	memcpy(user->ips, chain->ips, chain->nr * sizeof(u64));
	dc->bytes += bytes;

	rec.user = user;
	ret = deferred_callchains__record_thread(dc, sample->tid, &rec, &t);
	if (t) {
		/* Kept for samples taken later in its kernel entry */
		user__put(dc, t->last);
		t->last = user;
	} else {
		user__put(dc, user);
	}
	return ret;
}

static int deferred_callchains__tls_record(struct deferred_callchains *dc,
					   struct perf_sample *sample)
{
	struct deferred_record rec = { .cookie = sample->tls_cookie };
	struct deferred_thread *t = NULL;
	struct deferred_tls *tls;
	size_t bytes;
	int ret;

	/* evsel__parse_sample() checked size <= PERF_TLS_USER_MAX_SIZE */
	bytes = sizeof(*tls) + sample->tls_user.size;
	tls = malloc(bytes);
	if (!tls)
		return -ENOMEM;
	tls->refcnt = 1;
	tls->cookie = sample->tls_cookie;
	tls->evsel = evlist__tls_deferred_evsel(dc->evlist, sample);
	tls->id = sample->tls_id;
	tls->size = sample->tls_user.size;
	tls->dyn_size = sample->tls_user.dyn_size;
	/*
	 * The bytes as the record has them, swapped as u64s in a cross-endian
	 * file (size is a multiple of 8): the reader of the merged sample
	 * still needs to know the recording machine's byte order.
	 */
	tls->swapped = sample->tls_user.swapped;
	if (tls->size)
		memcpy(tls->data, sample->tls_user.data, tls->size);
	dc->bytes += bytes;

	rec.tls = tls;
	/* A record of no event of the session that asked serves no sample */
	ret = tls->evsel ? deferred_callchains__record_thread(dc, sample->tid,
							      &rec, &t) : 0;
	/* Kept for samples taken later in its kernel entry */
	if (t)
		thread__keep_tls(dc, t, tls);
	tls__put(dc, tls);
	return ret;
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
		if (sample->deferred_callchain || sample->deferred_tls)
			return deferred_callchains__sample(dc, event, sample,
							   file_offset, file_path);
		break;
	case PERF_RECORD_CALLCHAIN_DEFERRED:
		if (sample->callchain)
			ret = deferred_callchains__record(dc, sample);
		break;
	case PERF_RECORD_TLS_USER_DEFERRED:
		ret = deferred_callchains__tls_record(dc, sample);
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
			ret = deferred_callchains__give_up(dc, e);
			if (ret)
				return ret;
		}
	}
	if (dc->keep_order)
		ret = deferred_callchains__drain(dc);
	return ret;
}
