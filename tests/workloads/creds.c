// SPDX-License-Identifier: MIT
/*
 * creds OUT: writes who it runs as, read by itself from /proc/self/status
 * (Uid, Gid, Groups, the five capability sets, NoNewPrivs), and the
 * capability sets of its parent (khprof under `khprof record`) as
 * "Parent<Field>:" lines, to OUT; then runs one short keyhog session so
 * that khprof has something to record.  The privilege tests read OUT.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keyhog_profile.h"

static const char *const fields[] = {
	"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
	"NoNewPrivs:",
};

/* The wanted lines of a status file to out, each name after prefix. */
static int copy_status(const char *path, const char *prefix, FILE *out)
{
	char line[512];
	FILE *in = fopen(path, "r");

	if (!in) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), in))
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (strncmp(line, fields[i], strlen(fields[i])) == 0)
				fprintf(out, "%s%s", prefix, line);
	fclose(in);
	return 0;
}

int main(int argc, char **argv)
{
	char parent[64];
	FILE *out;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: creds OUT\n");
		return 2;
	}
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 1;
	}
	snprintf(parent, sizeof(parent), "/proc/%d/status", (int)getppid());
	err = copy_status("/proc/self/status", "", out) | copy_status(parent, "Parent", out);
	if (fclose(out) != 0 || err)
		return 1;
	KH_SESSION_START();
	KH_IDENTITY("binary_version", "creds");
	KH_TRANSITION(KH_STATE_SCANNING);
	{
		KH_SPAN_SCOPE(KH_STAGE_PREPROCESS);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}
