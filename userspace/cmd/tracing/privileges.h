/* SPDX-License-Identifier: MIT */
/*
 * Whom `khprof record` runs COMMAND as, and what khprof itself keeps once
 * its probes are attached (docs/PRIVILEGES.md).
 *
 * COMMAND is a secret scanner reading untrusted input: it must not run
 * with the root or the capabilities khprof needs for BPF.  The child
 * changes user and drops every capability between fork and exec, after
 * khprof has attached to the executable it is about to run.
 */
#ifndef KHPROF_PRIVILEGES_H
#define KHPROF_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct run_as {
	uid_t uid;
	gid_t gid;
	char name[64];     /* for messages; "" when uid has no password entry */
	/*
	 * Supplementary groups, looked up before fork: in the child, NSS
	 * could dlopen a module, which khprof's loader probe would stop.
	 */
	gid_t groups[64];
	int group_count;
	bool change_user;  /* setresuid/setresgid to uid and gid */
	bool keep_privileges; /* uid 0: COMMAND keeps root and its capabilities */
	const char *why;   /* "--user", "SUDO_UID", or "khprof's own user" */
};

/*
 * Whom COMMAND runs as: user (a name or a number, from --user) when given;
 * else, for root under sudo, SUDO_UID and SUDO_GID; else khprof's own real
 * user.  Target uid 0 keeps root; any other drops every capability.  0, or
 * -EINVAL after one error line.
 */
int run_as__resolve(const char *user, struct run_as *out);

/*
 * In the child, between fork and exec: supplementary groups, gid, the
 * bounding and ambient sets, uid, the other capability sets, then
 * no_new_privs.  0, or -errno with *step naming the call that failed.
 */
int run_as__apply(const struct run_as *r, const char **step);

/* "user 'nobody' (uid 65534, gid 65534)" for messages. */
void run_as__describe(const struct run_as *r, char *out, size_t len);

/*
 * After load and attach: khprof keeps only the capabilities it still needs
 * (docs/PRIVILEGES.md), in effective and permitted, and clears the
 * bounding, inheritable and ambient sets; with keep_admin CAP_SYS_ADMIN
 * too, which attaching perf-event uprobes needs (kernels without
 * uprobe-multi links).  Nothing to do without capabilities.  0, or -errno (khprof keeps what it had, with a warning).
 */
int privileges__drop_own(bool keep_admin);

/*
 * Run by root under sudo: the records and directories khprof creates are
 * given to whoever ran sudo (SUDO_UID, SUDO_GID), as if they had run it.
 * Nothing to do otherwise.
 */
void privileges__give_files_to_sudo_user(void);

#endif
