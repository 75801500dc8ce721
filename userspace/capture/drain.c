// SPDX-License-Identifier: MIT
/*
 * After a detach from a live process: the spans its threads completed
 * while khprof was attached but had not handed over yet are read from
 * their buffers with process_vm_readv, where the BPF side learned them
 * (thread_list; what of each was counted is in its task storage,
 * thread_store, looked up by a pidfd of the thread), and counted as the
 * BPF side would (buffers.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <x86intrin.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buffers.h"
#include "khprof.skel.h"
#include "log.h"
#include "tracer_impl.h"

/* pidfd_open's flag for a thread that is not its group's leader (Linux 6.9). */
#define KH_PIDFD_THREAD O_EXCL

/*
 * What the BPF side knows of thread tid of process pid: 1 found, 0 listed
 * without a record (its creation failed, bpf/thread_ends.bpf.h) or not
 * to be looked up here, -1 the thread is gone.  Before Linux 6.9 a pidfd
 * names a whole process, so only the main thread's storage can be read.
 */
static int thread_info(const struct tracer *t, int store_fd, pid_t pid, __u32 tid,
		       struct kh_thread_info *info)
{
	int pidfd, found;

	/* Without task storage it is a hash map by thread id (bpf/task_state.bpf.h). */
	if (!features__has(&t->features, KH_FEAT_TASK_STORAGE))
		return bpf_map_lookup_elem(store_fd, &tid, info) == 0;
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)tid, KH_PIDFD_THREAD);
	if (pidfd < 0 && errno == EINVAL && (pid_t)tid == pid)
		pidfd = (int)syscall(SYS_pidfd_open, (pid_t)tid, 0);
	if (pidfd < 0 && errno == EINVAL)
		return 0; /* another thread, on a kernel before 6.9: counted as unread */
	if (pidfd < 0)
		return -1;
	found = bpf_map_lookup_elem(store_fd, &pidfd, info) == 0;
	close(pidfd);
	return found;
}

static bool thread_of(pid_t pid, __u32 tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%u", pid, tid);
	return access(path, F_OK) == 0;
}

void drain__detached(struct tracer *t, uint64_t detach_ns)
{
	int fd = bpf_map__fd(t->skel->maps.thread_list);
	int store_fd = bpf_map__fd(t->skel->maps.thread_store);
	uint32_t slot = t->skel->bss->active_slot;
	struct kh_slot_stats *out = &t->pending[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];
	struct kh_latency *lat = &t->pending_latency[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];
	struct buffer_clock clock;
	uint64_t late = 0, unread = 0;
	__u32 key, next, *prev = NULL;

	if (slot >= KH_MAX_SLOTS)
		return; /* after an execve: nobody's session */
	tracer__buffer_clock(t, __rdtsc(), tracer__now_ns(), &clock);
	clock.session_start_ns = t->skel->bss->slot_start_ns[slot];
	clock.until_ns = detach_ns;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		unsigned char state[KH_TS_READ_BYTES];
		struct kh_thread_info info;
		struct iovec local = { state, sizeof(state) }, remote;
		int found;

		key = next;
		prev = &key;
		if (!thread_of(t->pid, key))
			continue;
		found = thread_info(t, store_fd, t->pid, key, &info);
		if (found < 0)
			continue;
		if (!found || !(info.flags & KH_THREAD_ABI3)) {
			unread++;
			continue;
		}
		remote = (struct iovec){ (void *)(uintptr_t)info.state_addr, sizeof(state) };
		if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(state)) {
			log__debug("cannot read thread %u's buffer: %s", key, strerror(errno));
			unread++;
			continue;
		}
		late += buffers__account(state, &info, &clock, out, lat);
	}
	out->drops[KH_DROP_EXIT_UNKNOWN] += unread;
	log__debug("after the detach: %" PRIu64 " buffered spans had ended after it", late);
}
