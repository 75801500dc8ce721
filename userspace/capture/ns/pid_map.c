// SPDX-License-Identifier: MIT
/*
 * pid_map.c - khprof in a PID namespace of its own (a container without
 * the host's, a pod's shared namespace): the BPF side sees tasks by their
 * pid in the kernel's initial namespace, khprof by its own.  Where pids
 * cross (the traced process's tgid given to the BPF side, a forked child
 * or a new process it names, the threads it lists), they are translated
 * here, through bpf/pidns.bpf.h's task iterator, which gives every task
 * khprof can see both ids.  In the initial namespace they are one, and
 * nothing runs.
 *
 * The pairs of the last iteration are kept for the whole khprof process
 * (its namespace does not change), read again when a pid is not among
 * them: a process started since.  One iteration reads every task of the
 * machine, about 1 µs each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fileio.h"
#include "khprof.skel.h"
#include "log.h"
#include "ns.h"
#include "tracer_impl.h"

static int initial = -1; /* unknown yet */
static uint32_t own_inum;  /* khprof's PID namespace, once initial is known */
static struct kh_pid_pair *pairs;
static size_t pair_count;

bool pid_map__needed(void)
{
	if (initial < 0) {
		own_inum = ns__own_pid_ns_inum();
		initial = ns__in_initial_pid_ns();
	}
	return !initial;
}

uint32_t pid_map__own_ns_inum(void)
{
	return pid_map__needed() ? own_inum : 0;
}

/* A machine's tasks, as pairs: far more than any machine runs. */
#define PAIRS_MAX (4u << 20)

/* Every task khprof's namespace has, read with t's iterator. */
static int refresh(struct tracer *t)
{
	struct bpf_link *link;
	char *read_pairs;
	size_t len;
	int fd, err;

	link = bpf_program__attach_iter(t->skel->progs.kh_pid_map, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	err = fd < 0 ? -errno : fd__read_all(fd, &read_pairs, &len,
					       PAIRS_MAX * sizeof(struct kh_pid_pair));
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	if (err)
		return err;
	free(pairs);
	pairs = (struct kh_pid_pair *)read_pairs;
	pair_count = len / sizeof(*pairs);
	return 0;
}

/* The pair whose side (kernel or local) is id; refreshed once on a miss. */
static const struct kh_pid_pair *find(struct tracer *t, pid_t id, bool kernel)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		for (size_t i = 0; i < pair_count; i++)
			if ((pid_t)(kernel ? pairs[i].kernel_tid : pairs[i].local_tid) == id)
				return &pairs[i];
		if (attempt == 0 && refresh(t) != 0)
			break;
	}
	return NULL;
}

pid_t pid_map__kernel(struct tracer *t, pid_t local)
{
	const struct kh_pid_pair *p;

	if (!pid_map__needed())
		return local;
	p = find(t, local, false);
	if (!p)
		log__debug("PID %d: no pid in the kernel's namespace found", (int)local);
	return p ? (pid_t)p->kernel_tid : 0;
}

pid_t pid_map__local(struct tracer *t, pid_t kernel)
{
	const struct kh_pid_pair *p;

	if (!pid_map__needed())
		return kernel;
	p = find(t, kernel, true);
	return p ? (pid_t)p->local_tid : 0;
}
