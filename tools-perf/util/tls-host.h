/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_TLS_HOST_H
#define __PERF_TLS_HOST_H

#include <sys/types.h>

struct evlist;
struct target;
struct tls_host;
struct tls_user_opts;

/* --tls-user=otel with -a, -C or -p: a read program per process */
struct tls_host *tls_host__new(struct evlist *evlist, const struct tls_user_opts *tls);
void tls_host__delete(struct tls_host *host);
int tls_host__add_sb_event(struct tls_host *host, struct evlist *sb_evlist);
int tls_host__start(struct tls_host *host, const struct target *target);
void tls_host__summary(const struct tls_host *host);
/* Calls @fn for each process that has a program now, until @fn returns non-zero */
int tls_host__visit_pids(struct tls_host *host, int (*fn)(pid_t pid, void *arg),
			 void *arg);

#endif /* __PERF_TLS_HOST_H */
