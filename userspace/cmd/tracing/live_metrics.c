// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"
#include "live_metrics.h"
#include "log.h"
#include "openmetrics.h"
#include "procfs.h"
#include "trace.h"

struct traced {
	struct tracer *tracer;
	pid_t pid;
	uint64_t cpu_ms; /* at the last scrape */
};

struct live_metrics {
	struct httpd *httpd;
	struct traced *traced;       /* the processes traced now */
	size_t traced_count;
	uint64_t exited_cpu_ms;      /* processes no longer traced, at their last scrape */
	struct om_counters finished; /* records of sessions that ended */
	struct om_info_set info;     /* their identities */
};

/* One scrape: the finished totals with the open slots added. */
struct scrape {
	struct om_counters counters;
	struct om_info_set info; /* finished identities, then open ones (owned) */
	struct om_live live;
};

static void add_live_slot(const struct tracer_live_slot *slot, void *ctx)
{
	struct scrape *s = ctx;

	om_counters__add_slot(&s->counters, &slot->sum, slot->spans);
	if (!slot->profile)
		return;
	s->counters.sessions_started++;
	s->counters.identity_unreadable += slot->profile->ext.identity_unreadable;
	if (slot->state < KH_STATE_COUNT)
		s->live.open_by_state[slot->state]++;
	om_info_set__add(&s->info, slot->profile);
}

static char *render(void *ctx, const char *accept, const char **content_type)
{
	struct live_metrics *m = ctx;
	enum om_format format = om__format_for_accept(accept);
	struct scrape s = { .counters = m->finished, .info = m->info };
	size_t finished_identities = m->info.count;
	char *text;

	s.live.have_process = m->traced_count > 0 || m->exited_cpu_ms > 0;
	s.live.process_cpu_ms = m->exited_cpu_ms;
	for (size_t i = 0; i < m->traced_count; i++) {
		struct traced *p = &m->traced[i];
		struct kh_resource_snapshot now = { 0 };
		uint64_t used, size;

		tracer__read_live(p->tracer, add_live_slot, &s);
		if (tracer__ringbuf_usage(p->tracer, &used, &size) == 0) {
			s.live.ringbuf_used_bytes += used;
			s.live.ringbuf_size_bytes += size;
		}
		procfs__sample(p->pid, &now);
		if (now.cpu_time_ms.present)
			p->cpu_ms = now.cpu_time_ms.value;
		s.live.process_cpu_ms += p->cpu_ms;
		if (now.resident_bytes.present) {
			s.live.have_process_rss = true;
			s.live.process_rss_bytes += now.resident_bytes.value;
		}
	}
	httpd__rejected(m->httpd, s.live.http_rejected);
	text = om__render(&s.counters, &s.info, &s.live, format);
	/* The finished identities are m's; only the open ones are this scrape's. */
	for (size_t i = finished_identities; i < s.info.count; i++)
		free(s.info.labels[i]);
	*content_type = om__content_type(format);
	return text;
}

int live_metrics__open(struct live_metrics **out, const char *where)
{
	struct live_metrics *m = calloc(1, sizeof(*m));
	int err;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	err = httpd__open(&m->httpd, where, "/metrics", render, m);
	if (err) {
		free(m);
		return err;
	}
	log__note("serving metrics at http://%s/metrics", httpd__address(m->httpd));
	*out = m;
	return 0;
}

int live_metrics__add_tracer(struct live_metrics *m, struct tracer *t, pid_t pid)
{
	struct traced *grown;

	if (!m)
		return 0;
	grown = realloc(m->traced, (m->traced_count + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	m->traced = grown;
	m->traced[m->traced_count++] = (struct traced){ t, pid, 0 };
	return 0;
}

void live_metrics__remove_tracer(struct live_metrics *m, const struct tracer *t)
{
	for (size_t i = 0; m && i < m->traced_count; i++) {
		if (m->traced[i].tracer != t)
			continue;
		m->exited_cpu_ms += m->traced[i].cpu_ms;
		m->traced[i] = m->traced[--m->traced_count];
		return;
	}
}

void live_metrics__add_profile(struct live_metrics *m, const struct kh_profile *p)
{
	om_counters__add_profile(&m->finished, p);
	om_info_set__add(&m->info, p);
}

int live_metrics__fd(const struct live_metrics *m)
{
	return httpd__fd(m->httpd);
}

void live_metrics__service(struct live_metrics *m)
{
	httpd__service(m->httpd);
}

void live_metrics__close(struct live_metrics *m)
{
	if (!m)
		return;
	httpd__close(m->httpd);
	om_info_set__free(&m->info);
	free(m->traced);
	free(m);
}
