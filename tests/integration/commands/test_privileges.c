// SPDX-License-Identifier: MIT
/*
 * Whom `khprof record` runs COMMAND as, and what khprof keeps
 * (docs/PRIVILEGES.md).  The traced program itself (tests/workloads/creds)
 * reads its uid, gid, groups, capability sets and NoNewPrivs from
 * /proc/self/status, and khprof's from /proc/PPID/status, and writes them
 * to a file; these tests read that file.  They need root and never skip
 * when CI=true.
 */
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "khtest.h"

#define CREDS "build/workloads/creds"
#define WORKLOAD "build/workloads/workload"

/* Capability numbers (linux/capability.h), for the sets' bit masks. */
#define BIT(cap) (1ull << (cap))
#define CAP_DAC_OVERRIDE_BIT BIT(1)
#define CAP_KILL_BIT BIT(5)
#define CAP_SETUID_BIT BIT(7)
#define CAP_SYS_PTRACE_NR 19
#define CAP_SYS_ADMIN_BIT BIT(21)
#define CAP_PERFMON_BIT BIT(38)
#define CAP_BPF_BIT BIT(39)

static char *khprof;
static char *tmpdir; /* mode 0777: the traced program may run as nobody */

/* The value of "Field:" in the creds file (malloc'd), or fails. */
static char *field(const char *creds, const char *name)
{
	size_t len = strlen(name);

	for (const char *line = creds; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (strncmp(line, name, len) == 0 && line[len] == ':') {
			const char *value = line + len + 1;

			value += strspn(value, "\t ");
			return strndup(value, strcspn(value, "\n"));
		}
	}
	fail_msg("no '%s:' in the creds file:\n%s", name, creds);
	return NULL;
}

static uint64_t hex_field(const char *creds, const char *name)
{
	char *text = field(creds, name);
	uint64_t value = strtoull(text, NULL, 16);

	free(text);
	return value;
}

static void assert_field(const char *creds, const char *name, const char *expected)
{
	char *value = field(creds, name);

	if (strcmp(value, expected) != 0)
		fail_msg("%s: '%s', expected '%s'", name, value, expected);
	free(value);
}

/* What /proc/PID/status says for Uid: or Gid: when all four ids are id. */
static void ids(unsigned id, char *out, size_t len)
{
	snprintf(out, len, "%u\t%u\t%u\t%u", id, id, id, id);
}

static int compare_gids(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;

	return x < y ? -1 : x > y;
}

/* The Groups: line of user as the kernel prints it: sorted, each with a space. */
static void groups_of(const char *user, gid_t gid, char *out, size_t len)
{
	gid_t groups[64];
	int n = 64;
	size_t used = 0;

	assert_true(getgrouplist(user, gid, groups, &n) >= 0);
	qsort(groups, (size_t)n, sizeof(groups[0]), compare_gids);
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, len - used, "%u ", (unsigned)groups[i]);
}

/* COMMAND ran as user: uid and gid (real, effective, saved, fs) and user's groups. */
static void assert_runs_as(const char *creds, const char *user, uid_t uid, gid_t gid)
{
	char want[64], groups[512];

	ids(uid, want, sizeof(want));
	assert_field(creds, "Uid", want);
	ids(gid, want, sizeof(want));
	assert_field(creds, "Gid", want);
	groups_of(user, gid, groups, sizeof(groups));
	assert_field(creds, "Groups", groups);
}

/*
 * Runs `khprof record [extra] -o REC -- creds OUT` and returns what creds
 * wrote (malloc'd); khprof must exit 0 and write the record.
 */
static char *record_creds(const char *name, const char *extra[])
{
	char out[512], rec[512];
	char *argv[16], *text = NULL;
	size_t argc = 0, len;
	struct run_result r;

	snprintf(out, sizeof(out), "%s/%s.creds", tmpdir, name);
	snprintf(rec, sizeof(rec), "%s/%s.json", tmpdir, name);
	argv[argc++] = khprof;
	argv[argc++] = "record";
	argv[argc++] = "-q";
	for (size_t i = 0; extra && extra[i]; i++)
		argv[argc++] = (char *)extra[i];
	argv[argc++] = "-o";
	argv[argc++] = rec;
	argv[argc++] = "--";
	argv[argc++] = CREDS;
	argv[argc++] = out;
	argv[argc] = NULL;
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record (%s) exited %d: %s", name, r.exit_code, r.err);
	run_result_free(&r);
	assert_int_equal(access(rec, F_OK), 0);
	if (file__read_all(out, &text, &len) != 0)
		fail_msg("creds wrote nothing to %s", out);
	return text;
}

/* tmpdir/name belongs to uid:gid. */
static void assert_owned_by(const char *name, uid_t uid, gid_t gid)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, uid);
	assert_int_equal(st.st_gid, gid);
}

/* COMMAND runs without a capability, unable to gain one by exec. */
static void assert_unprivileged(const char *creds)
{
	assert_int_equal(hex_field(creds, "CapInh"), 0);
	assert_int_equal(hex_field(creds, "CapPrm"), 0);
	assert_int_equal(hex_field(creds, "CapEff"), 0);
	assert_int_equal(hex_field(creds, "CapBnd"), 0);
	assert_int_equal(hex_field(creds, "CapAmb"), 0);
	assert_field(creds, "NoNewPrivs", "1");
}

/* khprof, once attached, keeps what it needs and nothing like root. */
static void assert_khprof_kept_little(const char *creds)
{
	uint64_t eff = hex_field(creds, "ParentCapEff");
	uint64_t prm = hex_field(creds, "ParentCapPrm");

	assert_int_equal(eff, prm);
	assert_true(eff & CAP_BPF_BIT);
	assert_true(eff & CAP_PERFMON_BIT);
	assert_true(eff & CAP_KILL_BIT);
	assert_true(eff & CAP_DAC_OVERRIDE_BIT);
	assert_false(eff & CAP_SYS_ADMIN_BIT);
	assert_false(eff & CAP_SETUID_BIT);
	assert_int_equal(hex_field(creds, "ParentCapBnd"), 0);
	assert_int_equal(hex_field(creds, "ParentCapInh"), 0);
	assert_int_equal(hex_field(creds, "ParentCapAmb"), 0);
}

static void clear_sudo(void)
{
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	unsetenv("SUDO_USER");
}

/* Root without sudo or --user stays root (docs/PRIVILEGES.md says why). */
static void test_root_without_sudo_stays_root(void **state)
{
	char *creds, root_ids[64];
	uint64_t own_bounding;
	char *own = NULL;
	size_t len;

	(void)state;
	clear_sudo();
	creds = record_creds("default", NULL);
	assert_owned_by("default.json", 0, 0);
	ids(0, root_ids, sizeof(root_ids));
	assert_field(creds, "Uid", root_ids);
	assert_field(creds, "Gid", root_ids);
	assert_field(creds, "NoNewPrivs", "0");
	/* Every capability root has here: the bounding set, as for any root exec. */
	assert_int_equal(file__read_all("/proc/self/status", &own, &len), 0);
	own_bounding = hex_field(own, "CapBnd");
	assert_int_equal(hex_field(creds, "CapEff"), own_bounding);
	assert_int_equal(hex_field(creds, "CapPrm"), own_bounding);
	assert_khprof_kept_little(creds);
	free(own);
	free(creds);
}

/* Under sudo, COMMAND runs as whoever ran sudo, with their groups. */
static void test_sudo_runs_as_the_invoking_user(void **state)
{
	struct passwd *pw = getpwnam("daemon");
	char *creds, uid_text[16], gid_text[16];

	(void)state;
	assert_non_null(pw); /* Debian's base-passwd always has it */
	snprintf(uid_text, sizeof(uid_text), "%u", (unsigned)pw->pw_uid);
	snprintf(gid_text, sizeof(gid_text), "%u", (unsigned)pw->pw_gid);
	setenv("SUDO_UID", uid_text, 1);
	setenv("SUDO_GID", gid_text, 1);
	setenv("SUDO_USER", "daemon", 1);
	creds = record_creds("sudo", NULL);
	clear_sudo();
	assert_runs_as(creds, "daemon", pw->pw_uid, pw->pw_gid);
	/* The record is the invoking user's, as if they had run khprof. */
	assert_owned_by("sudo.json", pw->pw_uid, pw->pw_gid);
	assert_unprivileged(creds);
	assert_khprof_kept_little(creds);
	free(creds);
}

static void test_user_nobody(void **state)
{
	const char *extra[] = { "--user", "nobody", NULL };
	struct passwd *pw = getpwnam("nobody");
	char *creds;

	(void)state;
	assert_non_null(pw);
	clear_sudo();
	setenv("SUDO_UID", "0", 1); /* --user wins over sudo */
	setenv("SUDO_GID", "0", 1);
	creds = record_creds("nobody", extra);
	clear_sudo();
	assert_runs_as(creds, "nobody", pw->pw_uid, pw->pw_gid);
	assert_unprivileged(creds);
	free(creds);
}

/* --user root keeps root even under sudo: the documented way to want it. */
static void test_user_root_keeps_root(void **state)
{
	const char *extra[] = { "--user", "root", NULL };
	char *creds;

	(void)state;
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	creds = record_creds("root", extra);
	clear_sudo();
	assert_runs_as(creds, "root", 0, 0);
	assert_true(hex_field(creds, "CapEff") & CAP_SYS_ADMIN_BIT);
	assert_field(creds, "NoNewPrivs", "0");
	free(creds);
}

/*
 * khprof run by a plain user holding CAP_BPF and CAP_PERFMON as ambient
 * capabilities (the case): COMMAND runs as that user without them.
 */
static void test_ambient_capabilities_are_not_inherited(void **state)
{
	const cap_value_t bpf_caps[] = { CAP_BPF, CAP_PERFMON };
	char out[512], rec[512], errpath[512], want[64];
	char *argv[] = { khprof, "record", "-q", "-o", rec, "--", CREDS, out, NULL };
	char *creds = NULL, *err = NULL;
	size_t len;
	int code, fd;
	pid_t pid;

	(void)state;
	clear_sudo();
	snprintf(out, sizeof(out), "%s/ambient.creds", tmpdir);
	snprintf(rec, sizeof(rec), "%s/ambient.json", tmpdir);
	snprintf(errpath, sizeof(errpath), "%s/ambient.err", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		cap_t caps = cap_init();

		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || !caps ||
		    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setgroups(0, NULL) != 0 ||
		    setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			_exit(RUN_SETUP_FAILED);
		cap_set_flag(caps, CAP_PERMITTED, 2, bpf_caps, CAP_SET);
		cap_set_flag(caps, CAP_EFFECTIVE, 2, bpf_caps, CAP_SET);
		cap_set_flag(caps, CAP_INHERITABLE, 2, bpf_caps, CAP_SET);
		if (cap_set_proc(caps) != 0 || cap_set_ambient(CAP_BPF, CAP_SET) != 0 ||
		    cap_set_ambient(CAP_PERFMON, CAP_SET) != 0)
			_exit(RUN_SETUP_FAILED);
		execv(khprof, argv);
		_exit(RUN_EXEC_FAILED);
	}
	code = wait_exit(pid);
	assert_int_equal(file__read_all(errpath, &err, &len), 0);
	if (code != 0)
		fail_msg("khprof as uid 65534 with ambient CAP_BPF, CAP_PERFMON: exit %d: %s",
			 code, err);
	assert_int_equal(file__read_all(out, &creds, &len), 0);
	ids(65534, want, sizeof(want));
	assert_field(creds, "Uid", want);
	/* khprof kept what it was given and cleared its own ambient set. */
	assert_int_equal(hex_field(creds, "ParentCapEff"), BIT(CAP_BPF) | BIT(CAP_PERFMON));
	assert_int_equal(hex_field(creds, "ParentCapAmb"), 0);
	assert_int_equal(hex_field(creds, "CapInh"), 0);
	assert_int_equal(hex_field(creds, "CapPrm"), 0);
	assert_int_equal(hex_field(creds, "CapEff"), 0);
	assert_int_equal(hex_field(creds, "CapAmb"), 0);
	assert_field(creds, "NoNewPrivs", "1");
	assert_int_equal(access(rec, F_OK), 0);
	free(creds);
	free(err);
}

static void test_unknown_user_is_refused(void **state)
{
	char *argv[] = { khprof, "record", "--user", "no-such-user-kh", "--", "/bin/true", NULL };
	struct run_result r;

	(void)state;
	r = run_cmd(NULL, -1, argv);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: unknown user 'no-such-user-kh' for --user (a name "
				   "or uid in the password database)\n");
	run_result_free(&r);
}

/*
 * `attach -p PID` where /proc/PID/exe cannot be read (as PID 1 in some
 * containers, even for root): khprof lacking CAP_SYS_PTRACE, the target
 * holding capabilities khprof lacks.  It must say so, not exit silently.
 */
static void test_attach_unreadable_process_says_why(void **state)
{
	char out[PATH_MAX];
	char pid_text[16], *argv[] = { khprof, "attach", "-p", pid_text, "--duration", "1", "-o",
				       out, NULL };
	struct run_result r;
	pid_t target, tracer;
	char *err = NULL;
	size_t len;
	char errpath[512];
	int fd;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "unreadable.json");
	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		pause();
		_exit(0);
	}
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target);
	snprintf(errpath, sizeof(errpath), "%s/attach.err", tmpdir);
	tracer = fork();
	assert_true(tracer >= 0);
	if (tracer == 0) {
		/* As root, exec grants the bounding set: khprof runs without ptrace. */
		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 ||
		    prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE_NR, 0, 0, 0) != 0)
			_exit(RUN_SETUP_FAILED);
		execv(khprof, argv);
		_exit(RUN_EXEC_FAILED);
	}
	r.exit_code = wait_exit(tracer);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	assert_int_equal(file__read_all(errpath, &err, &len), 0);
	assert_int_equal(r.exit_code, 1);
	assert_int_equal(count_lines(err), 1);
	assert_non_null(strstr(err, "khprof: cannot attach to PID "));
	assert_non_null(strstr(err, "/exe': Permission denied"));
	free(err);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_privileges",
		.need = "these tests need root",
		.tmp_prefix = "khprof-priv",
		.tmpdir = &tmpdir,
		.tmp_mode = 0777,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_without_sudo_stays_root),
		cmocka_unit_test(test_sudo_runs_as_the_invoking_user),
		cmocka_unit_test(test_user_nobody),
		cmocka_unit_test(test_user_root_keeps_root),
		cmocka_unit_test(test_ambient_capabilities_are_not_inherited),
		cmocka_unit_test(test_unknown_user_is_refused),
		cmocka_unit_test(test_attach_unreadable_process_says_why),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
