/* SPDX-License-Identifier: MIT */
/*
 * khtest.h - helpers every khprof test binary may use: running a program
 * and reading back all it printed, temporary files and folders, locating
 * the built tools, and loading a record or failing the test saying why.
 *
 * Everything is static inline so that a test includes only what it uses
 * without -Wunused-function tripping over the rest.  Test binaries link
 * khprof's module objects, so fileio and json are available.
 */
#ifndef KHPROF_TEST_KHTEST_H
#define KHPROF_TEST_KHTEST_H

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "json.h"

/*
 * Exit codes of a child that never became the program: distinct from every
 * code the programs under test use (0-3, 127 for "command not found"), so a
 * broken test setup cannot pass for the program's own answer.
 */
#define RUN_SETUP_FAILED 122
#define RUN_EXEC_FAILED 121

/*
 * The repository root, taken from the path the compiler gave this header:
 * absolute, relative to the directory make ran in, or "." when the header
 * was named as tests/common/khtest.h itself.
 */
static inline const char *test_repo_root(void)
{
	static char *root;
	const char *suffix = "tests/common/khtest.h";
	size_t len = strlen(__FILE__), suffix_len = strlen(suffix);

	if (root)
		return root;
	if (len > suffix_len && !strcmp(__FILE__ + len - suffix_len, suffix) &&
	    __FILE__[len - suffix_len - 1] == '/')
		root = strndup(__FILE__, len - suffix_len - 1);
	else
		root = strdup(".");
	if (!root)
		abort();
	return root;
}

static inline bool running_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

/*
 * Path of a built tool: $env_name when set and not empty, else relative
 * (e.g. "build/khprof") under the repository root.  malloc'd.
 */
static inline char *tool_path(const char *env_name, const char *relative)
{
	const char *env = getenv(env_name);
	char *path;

	if (env && *env)
		path = strdup(env);
	else if (asprintf(&path, "%s/%s", test_repo_root(), relative) < 0)
		path = NULL;
	if (!path)
		abort();
	return path;
}

/* The seed's conformance reader (KH_SEED_RENDER, else build/seed-render); NULL when not built. */
static inline const char *seed_render_path(void)
{
	static char *path;

	if (!path)
		path = tool_path("KH_SEED_RENDER", "build/seed-render");
	return access(path, X_OK) == 0 ? path : NULL;
}

static inline const char *temp_root(void)
{
	const char *tmpdir = getenv("TMPDIR");

	return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

/*
 * A fresh, empty, close-on-exec temporary file; *path gets its name
 * (malloc'd).  Returns the descriptor, or -1 with *path NULL.
 */
static inline int temp_file(char **path)
{
	int fd;

	*path = NULL;
	if (asprintf(path, "%s/khprof-test-XXXXXX", temp_root()) < 0) {
		*path = NULL;
		return -1;
	}
	fd = mkostemp(*path, O_CLOEXEC);
	if (fd < 0) {
		free(*path);
		*path = NULL;
	}
	return fd;
}

/* Writes text to a fresh temporary file and returns its path (malloc'd), or NULL. */
static inline char *write_temp(const char *text)
{
	char *path;
	int fd = temp_file(&path);
	size_t len = strlen(text), done = 0;

	if (fd < 0)
		return NULL;
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	if (done < len) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

/* A fresh temporary folder $TMPDIR/PREFIX-XXXXXX (malloc'd), or NULL. */
static inline char *make_temp_dir(const char *prefix)
{
	char *dir;

	if (asprintf(&dir, "%s/%s-XXXXXX", temp_root(), prefix) < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static inline int remove_tree_entry(const char *path, const struct stat *st, int flag,
				    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * Removes dir and everything under it, not following symbolic links
 * (tests plant link loops).  0, or -1 when something stayed behind.
 */
static inline int remove_tree(const char *dir)
{
	return nftw(dir, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

static inline bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static inline size_t count_lines(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* A wait status as the tests compare it: the exit status, or 128 + the signal. */
static inline int exit_code_of_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Waits for pid; exit_code_of_status() of it. */
static inline int wait_exit(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return exit_code_of_status(status);
}

/*
 * buf = dir/NAME, NAME formatted like printf; fails the test rather than
 * cut it short.
 */
__attribute__((format(printf, 4, 5)))
static inline void path_in(char *buf, size_t len, const char *dir, const char *name, ...)
{
	int used = snprintf(buf, len, "%s/", dir);
	va_list ap;

	assert_true(used > 0 && (size_t)used < len);
	va_start(ap, name);
	used += vsnprintf(buf + used, len - (size_t)used, name, ap);
	va_end(ap);
	assert_true((size_t)used < len);
}

struct run_result {
	int exit_code; /* the exit status, or 128 + the signal that killed it */
	char *out;     /* all of stdout, malloc'd */
	char *err;     /* all of stderr, malloc'd */
};

/*
 * Reads back and removes one of run_cmd's capture files.  A failure here
 * would otherwise pass for an empty output, so it fails the test.
 */
static inline char *run_take_output(int fd, char *path)
{
	char *text = NULL;
	size_t len;
	int err = file__read_all(path, &text, &len);

	if (err)
		fail_msg("cannot read back %s: %s", path, strerror(-err));
	close(fd);
	unlink(path);
	free(path);
	return text;
}

/*
 * Runs argv[0] (a path; no PATH search) to completion in cwd (NULL: this
 * one), as uid when uid >= 0.  stdout and stderr go to temporary files,
 * not pipes, so neither can fill up while the other is read, and both are
 * read back whole.  bound_s > 0: the run must end within that many
 * seconds (run_bounded).  Free the result with run_result_free().
 */
static inline struct run_result run_cmd_within(const char *cwd, int uid, char *const argv[],
					       int bound_s)
{
	struct run_result r = { .exit_code = -1 };
	char *out_path, *err_path;
	int out_fd = temp_file(&out_path), err_fd = temp_file(&err_path);
	int status, pid_fd = -1;
	pid_t pid;

	if (out_fd < 0 || err_fd < 0)
		fail_msg("cannot create a capture file in %s: %s", temp_root(), strerror(errno));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A group of its own, so that a hung run is killed with what it started. */
		if (bound_s > 0)
			setpgid(0, 0);
		/* dup2 clears close-on-exec on the copies, so the program keeps them. */
		if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
			_exit(RUN_SETUP_FAILED);
		if (cwd && chdir(cwd) != 0) {
			fprintf(stderr, "run_cmd: cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(RUN_SETUP_FAILED);
		}
		if (uid >= 0 && setuid((uid_t)uid) != 0) {
			fprintf(stderr, "run_cmd: cannot become uid %d: %s\n", uid, strerror(errno));
			_exit(RUN_SETUP_FAILED);
		}
		execv(argv[0], argv);
		fprintf(stderr, "run_cmd: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(RUN_EXEC_FAILED);
	}
	if (bound_s > 0) {
		struct pollfd pfd = { .events = POLLIN };
		int ready;

		setpgid(pid, pid); /* as the child does: whichever runs first */
		pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
		assert_true(pid_fd >= 0);
		pfd.fd = pid_fd;
		while ((ready = poll(&pfd, 1, bound_s * 1000)) < 0 && errno == EINTR)
			;
		if (ready == 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("%s %s did not end within %d s: it hangs", argv[0],
				 argv[1] ? argv[1] : "", bound_s);
		}
		close(pid_fd);
	}
	while (waitpid(pid, &status, 0) < 0)
		assert_int_equal(errno, EINTR);
	r.exit_code = exit_code_of_status(status);
	r.out = run_take_output(out_fd, out_path);
	r.err = run_take_output(err_fd, err_path);
	return r;
}

static inline struct run_result run_cmd(const char *cwd, int uid, char *const argv[])
{
	return run_cmd_within(cwd, uid, argv, 0);
}

/*
 * run_cmd() here, as this user, for a command that could hang (a tracer
 * waiting on a pipe nobody will close): the harness kills it, and what
 * it started, when it has not ended within bound_s seconds, and fails the
 * test saying it hung.  The bound tells a hang from a slow machine and
 * measures nothing, so it is far above any run's length.
 */
static inline struct run_result run_bounded(char *const argv[], int bound_s)
{
	return run_cmd_within(NULL, -1, argv, bound_s);
}

/* run_cmd() here, as this user. */
static inline struct run_result run_here(char *const argv[])
{
	return run_cmd(NULL, -1, argv);
}

static inline void run_result_free(struct run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* What `khprof features` says of feature on this kernel: its row's "yes". */
static inline bool khprof_has_feature(char *khprof, const char *feature)
{
	char *argv[] = { khprof, "features", NULL };
	struct run_result r = run_here(argv);
	char found[8] = "", name[64];
	const char *row = r.out;
	bool has;

	snprintf(name, sizeof(name), "\n%s ", feature);
	row = row ? strstr(row, name) : NULL;
	if (!row || sscanf(row, " %*s %7s", found) != 1)
		fail_msg("khprof features has no %s row: %s", feature, r.out ? r.out : "");
	has = !strcmp(found, "yes");
	run_result_free(&r);
	return has;
}

/*
 * run_here(argv) that must end with exit_code and, when err is not NULL,
 * say err on stderr.
 */
static inline void assert_run_exits(char *const argv[], int exit_code, const char *err)
{
	struct run_result r = run_here(argv);

	if (r.exit_code != exit_code || (err && !strstr(r.err, err)))
		fail_msg("%s %s: exit %d, wanted %d%s%s; stderr: %s", argv[0], argv[1] ? argv[1] : "",
			 r.exit_code, exit_code, err ? " saying " : "", err ? err : "", r.err);
	run_result_free(&r);
}

/* Reads and parses the record at path into *p, or fails the test saying why. */
static inline void load_record(const char *path, struct kh_profile *p)
{
	char problem[256];

	if (profile__read_file(path, p, problem, sizeof(problem)) != 0)
		fail_msg("cannot read record '%s': %s", path, problem);
}

/*
 * khprof record --mode MODE -o OUT -- WORKLOAD..., WORKLOAD NULL-terminated,
 * with the khprof binary at khprof; fails unless it exits 0.  Returns the
 * run (free it with run_result_free()), its record left at OUT.
 */
static inline struct run_result record_workload(const char *khprof, const char *mode,
						const char *out, char *const workload[])
{
	char *argv[24] = { (char *)khprof, "record", "--mode", (char *)mode, "-o", (char *)out,
			   "--" };
	size_t argc = 7;
	struct run_result r;

	for (size_t i = 0; workload[i]; i++) {
		argv[argc++] = workload[i];
		assert_true(argc < sizeof(argv) / sizeof(argv[0]));
	}
	argv[argc] = NULL;
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --mode %s -o %s %s exited %d: %s", mode, out, workload[0],
			 r.exit_code, r.err);
	return r;
}

/* Calls and summed time of one stage in a record; 0 when it has none. */
/*
 * khprof record [--mode MODE] -o OUT TAIL..., where the NULL-terminated
 * tail is any further khprof options, then "--", the workload and its
 * arguments (mode NULL: khprof's default), with the khprof binary at
 * khprof.  Fails unless khprof exits 0, then loads OUT into *p.  Returns
 * the run, so callers can check what khprof and the workload printed;
 * free it with run_result_free().
 */
static inline struct run_result record_run(const char *khprof, const char *mode,
					   const char *out, struct kh_profile *p, ...)
{
	char *argv[24];
	size_t argc = 0;
	struct run_result r;
	va_list ap;

	argv[argc++] = (char *)khprof;
	argv[argc++] = "record";
	if (mode) {
		argv[argc++] = "--mode";
		argv[argc++] = (char *)mode;
	}
	argv[argc++] = "-o";
	argv[argc++] = (char *)out;
	va_start(ap, p);
	while ((argv[argc] = va_arg(ap, char *)))
		assert_true(++argc < sizeof(argv) / sizeof(argv[0]));
	va_end(ap);
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("khprof record -o %s exited %d: %s", out, r.exit_code, r.err);
	load_record(out, p);
	return r;
}

static inline uint64_t calls_of(const struct kh_profile *p, uint32_t stage)
{
	const struct kh_stage_measurement *m = profile__find_stage(p, stage);

	return m ? m->calls : 0;
}

static inline uint64_t elapsed_of(const struct kh_profile *p, uint32_t stage)
{
	const struct kh_stage_measurement *m = profile__find_stage(p, stage);

	return m ? m->elapsed_ns : 0;
}

/*
 * Each span khprof measured (its raw length, before the calibrated bias
 * per span is taken off) lies between the workload's own clock reads
 * inside the probes and those outside them, on the same clock: exactly,
 * however loaded the machine, in every mode (batch converts TSC ticks).
 * How close the corrected total comes to the inner one is accuracy, which
 * load moves: make bench row 5 measures it (docs/PERFORMANCE.md).  out:
 * `workload timed` or `workload-rs timed`'s stdout.
 */
static inline void assert_between_own_clocks(const char *what, const struct kh_profile *p,
					     const char *out, uint64_t spans)
{
	unsigned long long inner = 0, outer = 0;
	uint64_t traced = elapsed_of(p, KH_STAGE_CONFIRMED_PATTERNS), raw;

	assert_int_equal(sscanf(out, "own_total_ns=%llu outer_total_ns=%llu", &inner, &outer), 2);
	assert_int_equal(calls_of(p, KH_STAGE_CONFIRMED_PATTERNS), spans);
	assert_true(traced > 0); /* the bias was not clamped: raw is known */
	raw = traced + spans * p->ext.span_bias_ns;
	if (raw < inner || raw > outer)
		fail_msg("%s: khprof's raw total %" PRIu64 " ns is outside the workload's own "
			 "%llu (inside the probes) to %llu ns (outside them)", what, raw, inner,
			 outer);
}

/*
 * The seed's own types read the record and print exactly what `khprof
 * report --format seed` (the khprof binary at khprof) prints, and the
 * default text begins with it (khprof's own tables follow); skipped
 * without the seed's reader, except in CI.
 */
static inline void assert_seed_conformance_of(const char *khprof, const char *record)
{
	const char *render = seed_render_path();
	char *seed_argv[] = { (char *)render, (char *)record, NULL };
	char *report_argv[] = { (char *)khprof, "report", "--format", "seed", (char *)record, NULL };
	char *full_argv[] = { (char *)khprof, "report", (char *)record, NULL };
	struct run_result seed, ours, full;

	if (!render) {
		if (running_in_ci())
			fail_msg("build/seed-render is missing in CI (make seed-render)");
		return;
	}
	seed = run_cmd(NULL, -1, seed_argv);
	ours = run_cmd(NULL, -1, report_argv);
	if (seed.exit_code != 0)
		fail_msg("seed-render rejects '%s': %s", record, seed.err);
	assert_int_equal(ours.exit_code, 0);
	assert_string_equal(ours.out, seed.out);
	full = run_cmd(NULL, -1, full_argv);
	assert_int_equal(full.exit_code, 0);
	assert_int_equal(strncmp(full.out, seed.out, strlen(seed.out)), 0);
	run_result_free(&seed);
	run_result_free(&ours);
	run_result_free(&full);
}

/* What the main() of a test that needs root runs its tests with. */
struct root_tests {
	const char *name;       /* the test binary's, for messages: "test_trace" */
	const char *need;       /* why: "BPF integration tests need root" */
	const char *tmp_prefix; /* a fresh $TMPDIR/PREFIX-XXXXXX for the tests ... */
	char **tmpdir;          /* ... here, removed with all in it after them */
	mode_t tmp_mode;        /* chmod'ed to this when not 0 */
	bool seed_checked;      /* say so when build/seed-render is missing */
};

/*
 * As root: the tests, in a fresh temporary folder; the number that failed.
 * Otherwise they are skipped with a line saying why (tests/run-all.sh
 * counts it), except when CI=true, which forbids skipping.
 */
static inline int run_root_test_group(const struct root_tests *rt,
				      const struct CMUnitTest *tests, size_t count)
{
	int failed;

	if (geteuid() != 0) {
		if (running_in_ci()) {
			fprintf(stderr, "%s: %s and CI=true forbids skipping them\n", rt->name,
				rt->need);
			return 1;
		}
		printf("%s: skipped: %s\n", rt->name, rt->need);
		return 0;
	}
	if (rt->seed_checked && !seed_render_path() && !running_in_ci())
		printf("%s: note: build/seed-render missing, seed conformance not checked "
		       "(make seed-render)\n", rt->name);
	*rt->tmpdir = make_temp_dir(rt->tmp_prefix);
	if (!*rt->tmpdir || (rt->tmp_mode && chmod(*rt->tmpdir, rt->tmp_mode) != 0)) {
		fprintf(stderr, "%s: cannot make a temporary folder in %s: %s\n", rt->name,
			temp_root(), strerror(errno));
		return 1;
	}
	failed = _cmocka_run_group_tests("tests", tests, count, NULL, NULL);
	if (remove_tree(*rt->tmpdir) != 0) {
		fprintf(stderr, "%s: cannot remove %s\n", rt->name, *rt->tmpdir);
		failed = failed ? failed : 1;
	}
	free(*rt->tmpdir);
	*rt->tmpdir = NULL;
	return failed;
}

#define run_root_tests(rt, tests) run_root_test_group(rt, tests, sizeof(tests) / sizeof((tests)[0]))

/*
 * KH_TEST_FILTER=PATTERN runs only the tests whose names match PATTERN
 * (cmocka's pattern: '*' and '?'), the rest are not run and not counted:
 * the kernel matrix runs its subset this way (tests/kernels/run.sh
 * --test test_trace:test_nested_all_modes).  Unset or empty, every test
 * runs, as make test runs them.  A constructor, so that no test's main()
 * has to remember to call it.
 */
__attribute__((constructor)) static void khtest_filter_from_env(void)
{
	const char *pattern = getenv("KH_TEST_FILTER");

	if (pattern && *pattern)
		cmocka_set_test_filter(pattern);
}

#endif /* KHPROF_TEST_KHTEST_H */
