/* SPDX-License-Identifier: MIT */
/*
 * live_metrics.h - `--serve`: the metric families of `khprof export`, read
 * live while record or attach traces, at http://ADDR:PORT/metrics, from
 * the same event loop as the ring buffer.  Counters are the finished
 * sessions' records plus the open sessions' slots as they stand, so they
 * only grow while khprof runs.
 */
#ifndef KHPROF_LIVE_METRICS_H
#define KHPROF_LIVE_METRICS_H

#include <sys/types.h>

struct live_metrics;
struct tracer;
struct kh_profile;

/* Listens on where (httpd__open); one line and -errno on failure. */
int live_metrics__open(struct live_metrics **out, const char *where);
/*
 * Every family but the identities and khprof's health per container, with
 * a container label (attach --all, --exe): its id's first 12 digits, else
 * its cgroup path; at most 16 values, any more under "other".  Before the
 * first tracer is added.
 */
void live_metrics__by_container(struct live_metrics *m);
/*
 * A tracer and its process, read at each scrape from now on (m NULL: no-op).
 * A removed one's records stay in the totals, its CPU at its last reading.
 * 0 or -ENOMEM.
 */
int live_metrics__add_tracer(struct live_metrics *m, struct tracer *t, pid_t pid);
void live_metrics__remove_tracer(struct live_metrics *m, const struct tracer *t);
/* A finished session's record joins the totals. */
void live_metrics__add_profile(struct live_metrics *m, const struct kh_profile *p);
/* For the caller's epoll set; on readiness call live_metrics__service. */
int live_metrics__fd(const struct live_metrics *m);
void live_metrics__service(struct live_metrics *m);
void live_metrics__close(struct live_metrics *m);

#endif
