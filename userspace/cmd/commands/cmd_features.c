// SPDX-License-Identifier: MIT
/* khprof features: what the running kernel offers khprof, as bpftrace --info does. */
#include <stdio.h>

#include "commands.h"
#include "exit_codes.h"
#include "kfeatures.h"
#include "log.h"

static const char features_usage[] =
	"usage: khprof features\n"
	"\n"
	"Prints what the running kernel offers khprof's BPF programs: each kernel\n"
	"feature khprof uses, whether this kernel has it, the release that brought\n"
	"it, and what khprof does without it (docs/KERNELS.md).  Kfuncs,\n"
	"tracepoints and layouts are read from the kernel's BTF; uprobe-multi\n"
	"links are tried, which needs root (\"unknown\" otherwise).  Records name\n"
	"the features their kernel lacked in their khprof extension.  \"unused\":\n"
	"the kernel has it, but without bpf_loop khprof loads its object of\n"
	"bounded loops, which does without it.\n"
	"\n"
	"Exits 1 on a kernel below khprof's floor (ring buffers, Linux 5.8;\n"
	"khprof needs Linux 5.10 or later), as khprof record does.\n"
	"\n"
	"KHPROF_DISABLE_FEATURES=NAME,... makes khprof behave as on a kernel\n"
	"without them (for tests and benchmarks of the fallbacks).\n"
	"\n"
	"example:\n"
	"   khprof features\n";

int cmd_features(int argc, char **argv)
{
	struct kh_features f;
	char floor[96];

	if (wants_help(argc, argv)) {
		fputs(features_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (argc != 1) {
		log__error("unexpected argument '%s' (see 'khprof features --help')", argv[1]);
		return KHPROF_EXIT_USAGE;
	}
	features__probe(&f, false, 0);
	features__print(&f, stdout);
	if (features__floor_missing(&f, floor, sizeof(floor))) {
		log__error("kernel %s has no %s: khprof needs Linux 5.10 or later", f.release,
			   floor);
		return KHPROF_EXIT_FAILURE;
	}
	return KHPROF_EXIT_OK;
}
