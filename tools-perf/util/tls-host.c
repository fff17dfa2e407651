// SPDX-License-Identifier: GPL-2.0
/*
 * --tls-user=otel on more than one process (-a, -C, -p): give each process
 * perf can place its own read program (PERF_EVENT_IOC_TLS_USER_PROC), at
 * the start of the recording and whenever a process execs or forks during
 * it, so that one event per CPU reads every process at its own offset.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include "debug.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "hashmap.h"
#include "target.h"
#include "tls-host.h"
#include "tls-layout.h"
#include "tls-user.h"
#include <internal/xyarray.h>

struct tls_host {
	struct evlist			*evlist;	/* the recording's events */
	const struct tls_user_opts	*tls;
	pthread_mutex_t			lock;		/* main and side band thread */
	struct hashmap			*placed;	/* pid -> offset */
	struct tls_layout_result	res;
	int				nr_start;	/* programs at the start */
	int				nr_later;	/* for processes since */
	int				nr_dlopen;	/* symbol in dynamic TLS */
	int				nr_refused;	/* the kernel said no */
	int				last_err;
	bool				unsupported;	/* no such ioctl */
};

static size_t tls_host__hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool tls_host__equal(long a, long b, void *ctx __maybe_unused)
{
	return a == b;
}

struct tls_host *tls_host__new(struct evlist *evlist, const struct tls_user_opts *tls)
{
	struct tls_host *host = zalloc(sizeof(*host));

	if (!host)
		return NULL;
	host->placed = hashmap__new(tls_host__hash, tls_host__equal, NULL);
	if (IS_ERR(host->placed)) {
		free(host);
		return NULL;
	}
	host->evlist = evlist;
	host->tls = tls;
	pthread_mutex_init(&host->lock, NULL);
	return host;
}

void tls_host__delete(struct tls_host *host)
{
	if (!host)
		return;
	hashmap__free(host->placed);
	pthread_mutex_destroy(&host->lock);
	free(host);
}

/*
 * The events' own program for a process whose symbol is @offset bytes from
 * the thread pointer. A program that starts at the registered context
 * (the symbol's address, for otel) starts at the symbol instead.
 */
static void tls_host__prog(const struct perf_event_attr *attr, pid_t pid,
			   s64 offset, struct perf_tls_user_proc *up)
{
	memset(up, 0, sizeof(*up));
	up->pid = pid;
	up->offset = offset;
	if (attr->tls_user_flags & PERF_TLS_USER_REGISTERED)
		up->offset += attr->tls_user_offset;
	up->tls_flags = attr->tls_user_flags & PERF_TLS_USER_DEREF;
	up->deref_offset = attr->tls_user_deref_offset;
	up->len_offset = attr->tls_user_len_offset;
	up->len_size = attr->tls_user_len_size;
	up->len_shift = attr->tls_user_len_shift;
	up->len_base = attr->tls_user_len_base;
	up->hops = attr->tls_user_hops;
	memcpy(up->hop_offset, attr->tls_user_hop_offset, sizeof(up->hop_offset));
}

/* Install @pid's program on every fd of every PERF_SAMPLE_TLS_USER event. */
static int tls_host__install(struct tls_host *host, pid_t pid, s64 offset)
{
	struct perf_tls_user_proc up;
	struct evsel *evsel;
	int x, y;

	evlist__for_each_entry(host->evlist, evsel) {
		struct xyarray *fds = evsel->core.fd;

		if (!(evsel->core.attr.sample_type & PERF_SAMPLE_TLS_USER) || !fds)
			continue;
		tls_host__prog(&evsel->core.attr, pid, offset, &up);
		for (x = 0; x < xyarray__max_x(fds); x++) {
			for (y = 0; y < xyarray__max_y(fds); y++) {
				int fd = *(int *)xyarray__entry(fds, x, y);

				if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_TLS_USER_PROC, &up))
					return -errno;
			}
		}
	}
	return 0;
}

/* Install @pid's program at @offset, and count it; the lock is held. */
static void tls_host__give(struct tls_host *host, pid_t pid, long offset, bool later)
{
	int err = tls_host__install(host, pid, offset);

	if (err == -ENOTTY) {
		host->unsupported = true;
		return;
	}
	if (err == -ESRCH)		/* gone meanwhile */
		return;
	if (err) {
		if (!host->nr_refused++ || verbose > 0)
			pr_warning("--tls-user: no program for pid %d (%s at %+ld): %s\n",
				   pid, host->tls->sym, offset, strerror(-err));
		host->last_err = err;
		return;
	}
	pr_debug("--tls-user: pid %d: %s at thread pointer %+ld\n", pid,
		 host->tls->sym, offset);
	hashmap__set(host->placed, pid, offset, NULL, NULL);
	if (later)
		host->nr_later++;
	else
		host->nr_start++;
}

/*
 * Compute where @pid has the symbol and install its program. At the start
 * only processes that map an object with the symbol are looked at; one
 * that just exec'd (@later) has not mapped its libraries yet.
 */
static void __tls_host__place(struct tls_host *host, pid_t pid, bool later)
{
	if (host->unsupported)
		return;
	if (!later && !tls_layout__pid_maps_sym(pid, host->tls->sym))
		return;
	tls_layout__of_pid(pid, host->tls->sym, &host->res);
	if (host->res.err == TLS_LAYOUT_DLOPEN) {
		char comm[32];

		host->nr_dlopen++;
		tls_user__comm(pid, comm, sizeof(comm));
		pr_warning("--tls-user: pid %d (%s) has %s in dynamic TLS (dlopen()ed), out of reach\n",
			   pid, comm, host->tls->sym);
		return;
	}
	if (host->res.err == TLS_LAYOUT_OK)
		tls_host__give(host, pid, host->res.offset, later);
}

static void tls_host__place(struct tls_host *host, pid_t pid, bool later)
{
	pthread_mutex_lock(&host->lock);
	__tls_host__place(host, pid, later);
	pthread_mutex_unlock(&host->lock);
}

/*
 * At the start: the processes of -p/-t, or every process perf can see.
 * Returns -ENOTTY when the kernel cannot take a program per process.
 */
int tls_host__start(struct tls_host *host, const struct target *target)
{
	const char *list = target->pid ?: target->tid;
	struct dirent *d;
	DIR *dir;

	if (list) {
		char *buf = strdup(list), *tok, *saveptr = NULL;

		if (!buf)
			return -ENOMEM;
		for (tok = strtok_r(buf, ",", &saveptr); tok;
		     tok = strtok_r(NULL, ",", &saveptr))
			tls_host__place(host, strtol(tok, NULL, 10), false);
		free(buf);
	} else {
		dir = opendir("/proc");
		if (!dir)
			return -errno;
		while ((d = readdir(dir)) != NULL && !host->unsupported) {
			char *end;
			long pid = strtol(d->d_name, &end, 10);

			if (!*end && pid > 0 && pid != getpid())
				tls_host__place(host, pid, false);
		}
		closedir(dir);
	}
	return host->unsupported ? -ENOTTY : 0;
}

/*
 * A forked process has its parent's layout: give it the parent's offset,
 * without reading any file, if perf placed the parent; otherwise it has
 * no variable to place either.
 */
static void tls_host__fork(struct tls_host *host, pid_t pid, pid_t ppid)
{
	long offset;

	pthread_mutex_lock(&host->lock);
	if (!host->unsupported && hashmap__find(host->placed, ppid, &offset)) {
		pr_debug("--tls-user: pid %d forked by %d\n", pid, ppid);
		tls_host__give(host, pid, offset, true);
	}
	pthread_mutex_unlock(&host->lock);
}

/* Side band: a process that execs or forks gets its program at once. */
static int tls_host__sb_event(union perf_event *event, void *data)
{
	struct tls_host *host = data;

	switch (event->header.type) {
	case PERF_RECORD_COMM:
		if (event->header.misc & PERF_RECORD_MISC_COMM_EXEC &&
		    event->comm.pid == event->comm.tid) {
			pthread_mutex_lock(&host->lock);
			hashmap__delete(host->placed, event->comm.pid, NULL, NULL);
			pthread_mutex_unlock(&host->lock);
			tls_host__place(host, event->comm.pid, true);
		}
		break;
	case PERF_RECORD_FORK:
		if (event->fork.pid == event->fork.tid &&
		    event->fork.pid != event->fork.ppid)
			tls_host__fork(host, event->fork.pid, event->fork.ppid);
		break;
	case PERF_RECORD_EXIT:
		if (event->fork.pid == event->fork.tid) {
			pthread_mutex_lock(&host->lock);
			hashmap__delete(host->placed, event->fork.pid, NULL, NULL);
			pthread_mutex_unlock(&host->lock);
		}
		break;
	default:
		break;
	}
	return 0;
}

int tls_host__add_sb_event(struct tls_host *host, struct evlist *sb_evlist)
{
	struct perf_event_attr attr = {
		.type		  = PERF_TYPE_SOFTWARE,
		.config		  = PERF_COUNT_SW_DUMMY,
		.size		  = sizeof(attr),
		.comm		  = 1,
		.comm_exec	  = 1,
		.task		  = 1,
		.sample_id_all	  = 1,
		.watermark	  = 1,
		.wakeup_watermark = 1,
		.exclude_kernel	  = 1,
		.exclude_hv	  = 1,
	};

	return evlist__add_sb_event(sb_evlist, &attr, tls_host__sb_event, host);
}

int tls_host__visit_pids(struct tls_host *host, int (*fn)(pid_t pid, void *arg),
			 void *arg)
{
	struct hashmap_entry *entry;
	size_t bkt, nr = 0, i;
	pid_t *pids;
	int err = 0;

	/* A copy: @fn reads /proc while the side band thread places more */
	pthread_mutex_lock(&host->lock);
	pids = calloc(hashmap__size(host->placed) ?: 1, sizeof(*pids));
	if (pids) {
		hashmap__for_each_entry(host->placed, entry, bkt)
			pids[nr++] = entry->key;
	}
	pthread_mutex_unlock(&host->lock);
	if (!pids)
		return -ENOMEM;
	for (i = 0; i < nr && !err; i++)
		err = fn(pids[i], arg);
	free(pids);
	return err;
}

void tls_host__summary(const struct tls_host *host)
{
	if (host->unsupported)
		return;
	pr_info("--tls-user: %s placed in %d processes at the start and %d started since\n",
		host->tls->sym, host->nr_start, host->nr_later);
	if (host->nr_refused)
		pr_warning("--tls-user: %d processes got no program: %s\n",
			   host->nr_refused, strerror(-host->last_err));
	if (host->nr_dlopen)
		pr_warning("--tls-user: %d processes have %s in dynamic TLS, out of reach\n",
			   host->nr_dlopen, host->tls->sym);
}
