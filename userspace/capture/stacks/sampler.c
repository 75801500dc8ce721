// SPDX-License-Identifier: MIT
/*
 * sampler.c - the stack sampler's loader (sampler.h): its own BPF object
 * (build/sample.skel.h), sharing the tracer's thread_store so that the
 * sample program finds each thread's span stack, one perf event per
 * thread, and the ring of samples into the stack store.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf_heap.h"
#include "kfeatures.h"
#include "khprof.skel.h"
#include "khprof_shared.h"
#include "log.h"
#include "record.h"
#include "sample.skel.h"
#include "sampler.h"

_Static_assert(offsetof(struct kh_thread_state, depth) == KH_TS_DEPTH_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, attribution) == KH_TS_ATTRIBUTION_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, stage) == KH_TS_STAGE_OFF, "");

struct sampler {
	struct sample_bpf *skel;
	struct ring_buffer *rb;      /* drains the ring before a record (sampler__drain) */
	uint64_t hz;
	struct bpf_link **links;
	pid_t *tids;
	size_t count, cap;
	struct stack_store store;
};

static int on_sample(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;

	if (len >= sizeof(struct kh_sample_event))
		stack_store__add(&s->store, data);
	return 0;
}

int sampler__load(struct sampler **out, struct khprof_bpf *skel, uint64_t hz)
{
	struct sampler *s = calloc(1, sizeof(*s));
	void *heap;
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->hz = hz;
	s->skel = sample_bpf__open();
	if (!s->skel) {
		err = -errno;
		log__error("cannot open the sampler's BPF object: %s", strerror(errno));
		goto fail;
	}
	err = bpf_map__reuse_fd(s->skel->maps.thread_store, bpf_map__fd(skel->maps.thread_store));
	if (err) {
		log__error("cannot share thread_store with the sampler: %s", strerror(-err));
		goto fail;
	}
	heap = btf_heap__begin(VMLINUX_BTF); /* libbpf parses it (btf_heap.h) */
	err = sample_bpf__load(s->skel);
	btf_heap__end(heap);
	if (err) {
		log__error("cannot load the sampler's BPF program: %s (run with -v for the "
			   "verifier's log)", strerror(-err));
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_sample, s, NULL);
	if (!s->rb) {
		err = -errno;
		log__error("cannot open the sample ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler__close(s);
	return err;
}

static bool sampled(const struct sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->tids[i] == tid)
			return true;
	return false;
}

/* One thread's event; a thread that ended meanwhile is no loss. */
static int sample_thread(struct sampler *s, pid_t tid)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = s->hz,
		/*
		 * Threads this one starts get an event of their own, with the
		 * program; processes it forks do not (inherit_thread, Linux
		 * 5.13): each followed process is sampled by its own tracer,
		 * and an inherited event would interrupt a child only for the
		 * program to drop the sample (it is another tgid's).
		 */
		.inherit = 1,
		.inherit_thread = 1,
	};
	struct bpf_link *link;
	int fd;

	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct bpf_link **links = realloc(s->links, cap * sizeof(*links));
		pid_t *tids;

		if (!links)
			return -ENOMEM;
		s->links = links;
		tids = realloc(s->tids, cap * sizeof(*tids));
		if (!tids)
			return -ENOMEM;
		s->tids = tids;
		s->cap = cap;
	}
	fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		/* Before 5.13: forked children get an event too, dropped at each sample. */
		attr.inherit_thread = 0;
		fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0) {
		if (errno == ESRCH)
			return 0; /* it ended meanwhile */
		s->store.threads_missed++;
		log__warn("cannot sample thread %d: perf_event_open: %s", (int)tid, strerror(errno));
		/* Listed without a link, so that the rescan does not try it again. */
		s->links[s->count] = NULL;
		s->tids[s->count++] = tid;
		return 0;
	}
	link = bpf_program__attach_perf_event(s->skel->progs.kh_sample, fd);
	if (!link) {
		int err = -errno;

		close(fd);
		log__error("cannot attach the sampler to thread %d: %s", (int)tid, strerror(-err));
		return err;
	}
	s->links[s->count] = link;
	s->tids[s->count++] = tid;
	return 0;
}

/* Opens events for the threads of pid not sampled yet; how many were new. */
static int scan_threads(struct sampler *s, pid_t pid, int *added)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	*added = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (d = readdir(dir))) {
		pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);

		if (tid <= 0 || sampled(s, tid))
			continue;
		err = sample_thread(s, tid);
		(*added)++;
	}
	closedir(dir);
	return err;
}

int sampler__attach(struct sampler *s, pid_t pid, pid_t kernel_pid)
{
	int added, err;

	stack_store__init(&s->store, pid, s->hz);
	s->skel->bss->traced_tgid = (__u32)kernel_pid;
	/*
	 * A thread started while the directory was read may be missing from
	 * it, and its parent's event may predate inherit's reach: once no
	 * new thread shows up, every later one inherits an event.
	 */
	do {
		err = scan_threads(s, pid, &added);
	} while (!err && added);
	if (err == -ESRCH)
		log__error("cannot sample PID %d: it has exited", (int)pid);
	else if (err)
		log__error("cannot sample PID %d: %s", (int)pid, strerror(-err));
	stack_store__read_maps(&s->store);
	return err;
}

int sampler__add_ring(struct sampler *s, struct ring_buffer *rb)
{
	return ring_buffer__add(rb, bpf_map__fd(s->skel->maps.samples), on_sample, s);
}

void sampler__drain(struct sampler *s)
{
	if (s && s->rb)
		ring_buffer__consume(s->rb);
}

struct stack_store *sampler__store(struct sampler *s)
{
	return &s->store;
}

uint64_t sampler__ring_full(const struct sampler *s)
{
	return s->skel && s->skel->bss ? s->skel->bss->ring_full : 0;
}

void sampler__detach(struct sampler *s)
{
	if (!s)
		return;
	sampler__drain(s);
	for (size_t i = 0; i < s->count; i++)
		bpf_link__destroy(s->links[i]);
	s->count = 0;
}

void sampler__close(struct sampler *s)
{
	if (!s)
		return;
	sampler__detach(s);
	ring_buffer__free(s->rb);
	sample_bpf__destroy(s->skel);
	stack_store__free(&s->store);
	free(s->links);
	free(s->tids);
	free(s);
}

void sampler__fill_stacks(struct kh_profile *p, uint64_t start_ns, uint64_t end_ns, void *ctx)
{
	struct sampler *s = ctx;

	if (!s)
		return;
	/* The samples up to the record's end may still wait in their ring. */
	sampler__drain(s);
	stack_store__fill(sampler__store(s), start_ns, end_ns, sampler__ring_full(s),
			  &p->ext.stacks);
}
