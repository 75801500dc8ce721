// SPDX-License-Identifier: MIT
/*
 * --serve: the families of `khprof export`, live.  A watch of many
 * processes (attach --all, --exe) keeps them per container, the label a
 * container's id or cgroup (docs/FLEET.md): at most LIVE_GROUPS_MAX
 * values, the processes of any more under container="other", so that the
 * series stay bounded however many containers come and go.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"
#include "live_metrics.h"
#include "log.h"
#include "ns.h"
#include "openmetrics.h"
#include "procfs.h"
#include "trace.h"

/* Distinct container label values; the rest share "other". */
#define LIVE_GROUPS_MAX 16
/* A container id's first digits, as `docker ps` shows it. */
#define SHORT_ID_LEN 12

struct group {
	char label[OM_LABEL_VALUE_MAX + 1];
	struct om_counters finished; /* records of sessions that ended */
	uint64_t exited_cpu_ms;      /* processes no longer traced, at their last scrape */
};

struct traced {
	struct tracer *tracer;
	pid_t pid;
	size_t group;
	uint64_t cpu_ms; /* at the last scrape */
};

struct live_metrics {
	struct httpd *httpd;
	struct traced *traced;       /* the processes traced now */
	size_t traced_count;
	bool by_container;
	struct group groups[LIVE_GROUPS_MAX + 1]; /* the last: "other" */
	size_t group_count;
	struct om_info_set info;     /* finished sessions' identities */
};

/* One scrape: the finished totals with the open slots added, per group. */
struct scrape {
	struct om_counters counters[LIVE_GROUPS_MAX + 1];
	struct om_live live[LIVE_GROUPS_MAX + 1];
	struct om_info_set info; /* finished identities, then open ones (owned) */
	size_t group;            /* the group of the tracer being read */
};

/* A process's container as a label value: its id's first digits, else its cgroup. */
static void label_of(const char *container_id, const char *cgroup, char *out, size_t len)
{
	if (container_id && container_id[0])
		snprintf(out, len, "%.*s", SHORT_ID_LEN, container_id);
	else
		snprintf(out, len, "%s", cgroup && cgroup[0] ? cgroup : "unknown");
}

static size_t group_for(struct live_metrics *m, const char *container_id, const char *cgroup)
{
	char label[OM_LABEL_VALUE_MAX + 1];

	if (!m->by_container)
		return 0;
	label_of(container_id, cgroup, label, sizeof(label));
	for (size_t i = 0; i < m->group_count; i++)
		if (!strcmp(m->groups[i].label, label))
			return i;
	if (m->group_count == LIVE_GROUPS_MAX) {
		snprintf(m->groups[LIVE_GROUPS_MAX].label, sizeof(m->groups[0].label), "other");
		return LIVE_GROUPS_MAX;
	}
	snprintf(m->groups[m->group_count].label, sizeof(m->groups[0].label), "%s", label);
	return m->group_count++;
}

static void add_live_slot(const struct tracer_live_slot *slot, void *ctx)
{
	struct scrape *s = ctx;
	struct om_counters *c = &s->counters[s->group];

	om_counters__add_slot(c, &slot->sum, slot->spans);
	if (!slot->profile)
		return;
	c->sessions_started++;
	c->identity_unreadable += slot->profile->ext.identity_unreadable;
	if (slot->state < KH_STATE_COUNT)
		s->live[s->group].open_by_state[slot->state]++;
	om_info_set__add(&s->info, slot->profile);
}

static char *render(void *ctx, const char *accept, const char **content_type)
{
	struct live_metrics *m = ctx;
	enum om_format format = om__format_for_accept(accept);
	struct scrape *s = calloc(1, sizeof(*s));
	struct om_group groups[LIVE_GROUPS_MAX + 1];
	struct om_live health = { 0 };
	size_t finished_identities = m->info.count, count = 0;
	char *text;

	if (!s)
		return NULL;
	s->info = m->info;
	for (size_t g = 0; g <= LIVE_GROUPS_MAX; g++) {
		s->counters[g] = m->groups[g].finished;
		s->live[g].have_process = m->groups[g].exited_cpu_ms > 0;
		s->live[g].process_cpu_ms = m->groups[g].exited_cpu_ms;
	}
	for (size_t i = 0; i < m->traced_count; i++) {
		struct traced *p = &m->traced[i];
		struct om_live *live = &s->live[p->group];
		struct kh_resource_snapshot now = { 0 };
		uint64_t used, size;

		s->group = p->group;
		tracer__read_live(p->tracer, add_live_slot, s);
		if (tracer__ringbuf_usage(p->tracer, &used, &size) == 0) {
			health.ringbuf_used_bytes += used;
			health.ringbuf_size_bytes += size;
		}
		procfs__sample(p->pid, &now);
		if (now.cpu_time_ms.present)
			p->cpu_ms = now.cpu_time_ms.value;
		live->have_process = true;
		live->process_cpu_ms += p->cpu_ms;
		if (now.resident_bytes.present) {
			live->have_process_rss = true;
			live->process_rss_bytes += now.resident_bytes.value;
		}
	}
	httpd__rejected(m->httpd, health.http_rejected);
	/* Without containers one group, unlabelled; with them each seen so far, then "other". */
	for (size_t g = 0; g <= LIVE_GROUPS_MAX; g++) {
		bool seen = m->by_container ? g < m->group_count ||
						      (g == LIVE_GROUPS_MAX && m->groups[g].label[0])
					    : g == 0;

		if (seen)
			groups[count++] = (struct om_group){
				m->by_container ? m->groups[g].label : NULL, &s->counters[g], &s->live[g]
			};
	}
	if (!count) /* a watch that saw no process yet: the families, zeros */
		groups[count++] = (struct om_group){ NULL, &s->counters[0], &s->live[0] };
	text = om__render_groups(groups, count, &s->info, &health, format);
	/* The finished identities are m's; only the open ones are this scrape's. */
	for (size_t i = finished_identities; i < s->info.count; i++)
		free(s->info.labels[i]);
	free(s);
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

void live_metrics__by_container(struct live_metrics *m)
{
	if (m)
		m->by_container = true;
}

int live_metrics__add_tracer(struct live_metrics *m, struct tracer *t, pid_t pid)
{
	struct ns_identity id;
	struct traced *grown;
	size_t group = 0;

	if (!m)
		return 0;
	if (m->by_container) {
		if (ns__identity(pid, &id) != 0)
			memset(&id, 0, sizeof(id));
		group = group_for(m, id.container_id, id.cgroup);
	}
	grown = realloc(m->traced, (m->traced_count + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	m->traced = grown;
	m->traced[m->traced_count++] = (struct traced){ t, pid, group, 0 };
	return 0;
}

void live_metrics__remove_tracer(struct live_metrics *m, const struct tracer *t)
{
	for (size_t i = 0; m && i < m->traced_count; i++) {
		if (m->traced[i].tracer != t)
			continue;
		m->groups[m->traced[i].group].exited_cpu_ms += m->traced[i].cpu_ms;
		m->traced[i] = m->traced[--m->traced_count];
		return;
	}
}

void live_metrics__add_profile(struct live_metrics *m, const struct kh_profile *p)
{
	size_t group = group_for(m, p->ext.container_id, p->ext.cgroup);

	om_counters__add_profile(&m->groups[group].finished, p);
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
