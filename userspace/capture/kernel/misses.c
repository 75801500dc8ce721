// SPDX-License-Identifier: MIT
/* How often the kernel did not run one of khprof's programs (misses.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "log.h"
#include "misses.h"
#include "tracer_impl.h"

static uint64_t test_misses(const char *name)
{
	const char *hook = getenv("KHPROF_TEST_PROGRAM_MISSES");

	return hook && strcmp(name, "kh_rss_stat") == 0 ? strtoull(hook, NULL, 10) : 0;
}

uint64_t program__misses(const struct bpf_program *prog)
{
	struct bpf_prog_info info;
	__u32 info_len = sizeof(info);
	int fd = bpf_program__fd(prog);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &info_len) != 0)
		return 0;
	return info.recursion_misses + test_misses(bpf_program__name(prog));
}

uint64_t programs__misses(const struct bpf_object *obj, char *by_name, size_t len)
{
	struct bpf_program *prog;
	uint64_t total = 0;
	size_t used = 0;

	if (len)
		by_name[0] = '\0';
	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		bool taken_by_next = !strcmp(name, "kh_thread_exit") ||
				     !strcmp(name, "kh_thread_exit_again");
		uint64_t misses = taken_by_next ? 0 : program__misses(prog);

		if (!misses)
			continue;
		total += misses;
		if (used < len)
			used += (size_t)snprintf(by_name + used, len - used, "%s%s %" PRIu64,
						 used ? ", " : "", name, misses);
	}
	return total;
}

/*
 * Before a trace's records are finished: misses since the tracer loaded
 * become one line of the records' kernel.degraded, and a warning.  The
 * counters are the programs', for every process's events, so the line says
 * "at most": most of them filter by PID after running.
 */
void tracer__note_misses(struct tracer *t)
{
	char names[160];
	uint64_t misses = t->skel ? programs__misses(t->skel->obj, names, sizeof(names)) : 0;

	if (misses <= t->misses_said)
		return;
	t->misses_said = misses;
	if (!t->misses_line) {
		if (t->degraded_count >= sizeof(t->degraded) / sizeof(t->degraded[0]))
			return;
		t->misses_line = t->degraded[t->degraded_count];
		t->degraded_list[t->degraded_count++] = t->misses_line;
		t->sessions.cfg.kernel_degraded_count = t->degraded_count;
	}
	snprintf(t->misses_line, sizeof(t->degraded[0]),
		 "programs skipped by the kernel (another run of the program held its CPU): %" PRIu64
		 " times (%s); what at most that many events of this or other processes would "
		 "have recorded is missing", misses, names);
	log__warn("kernel %s: the kernel skipped khprof's programs %" PRIu64 " times (%s): "
		  "a program preempted inside it held the CPU; what those events would have "
		  "recorded is missing", t->features.release, misses, names);
}
