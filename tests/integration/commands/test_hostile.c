// SPDX-License-Identifier: MIT
/*
 * Hostile files (issue #38): `khprof record` and `khprof probes` on copies
 * of build/workloads/target changed as an attacker would
 * (tests/common/elfcraft.h).  Tracing never changes what the program
 * computes, khprof never hangs (every run is bounded by the harness), a
 * site khprof refuses is named on stderr and in the record, a malformed
 * file is one line and exit 2, and no string of the file can write a line
 * of khprof's output.  Needs root; never skips when CI=true.
 */
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "elfcraft.h"
#include "khtest.h"
#include "record.h"

/* Far above any run here (well under a second): the bound only tells a hang. */
#define HANG_BOUND_S 120
#define UNCHANGED "value=0x41 rodata=0x41\n"

static char *khprof;
static char *tmpdir;

/* A copy of the target, changed by change, saved as an executable file: its path. */
static char *crafted_target(void (*change)(struct crafted *c))
{
	struct crafted c;
	char *path;

	craft_load(&c, CRAFT_TARGET);
	change(&c);
	path = craft_save(&c);
	craft_free(&c);
	return path;
}

/* The program untraced: it runs, and computes what the unchanged target does. */
static void assert_runs_unchanged(char *program)
{
	char *argv[] = { program, NULL };
	struct run_result r = run_bounded(argv, HANG_BOUND_S);

	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, UNCHANGED);
	run_result_free(&r);
}

/* khprof record -o OUT (under tmpdir, named name) -- program, bounded. */
static struct run_result record_bounded(char *program, const char *name, char *out, size_t len)
{
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", program, NULL };

	path_in(out, len, tmpdir, "%s.json", name);
	return run_bounded(argv, HANG_BOUND_S);
}

/* The record's refused site of keyhog:name, or the test fails. */
static const struct kh_refused_site *refused_site(const struct kh_profile *p, const char *name)
{
	for (size_t i = 0; i < p->ext.refused_site_count; i++)
		if (!strcmp(p->ext.refused_sites[i].provider, "keyhog") &&
		    !strcmp(p->ext.refused_sites[i].name, name))
			return &p->ext.refused_sites[i];
	fail_msg("the record names no refused site keyhog:%s", name);
	return NULL;
}

static void onto_the_immediate(struct crafted *c)
{
	craft_set_note_address(c, "session_start", craft_symbol(c, "target_value") + 1);
}

/*
 * A site moved onto the immediate of "movl $0x41, %eax": khprof before
 * attached it, the kernel wrote its breakpoint into the instruction, and
 * the program printed value=0xcc under record.  Now the site is refused,
 * named on stderr and in the record, and the rest is traced.
 */
static void test_site_inside_an_instruction(void **state)
{
	char *program = crafted_target(onto_the_immediate), out[PATH_MAX];
	struct run_result r;
	struct kh_profile p;

	(void)state;
	assert_runs_unchanged(program);
	r = record_bounded(program, "immediate", out, sizeof(out));
	if (r.exit_code != 0)
		fail_msg("record exited %d: %s", r.exit_code, r.err);
	assert_string_equal(r.out, UNCHANGED);
	assert_non_null(strstr(r.err, "refused probe site 'keyhog:session_start'"));
	assert_non_null(strstr(r.err, "the instruction there is not a no-op"));
	load_record(out, &p);
	assert_string_equal(refused_site(&p, "session_start")->refusal, "not_a_nop");
	assert_string_equal(refused_site(&p, "session_start")->file, program);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 3);
	assert_seed_conformance_of(khprof, out);
	profile__free(&p);
	run_result_free(&r);
	unlink(program);
	free(program);
}

static void over_rodata(struct crafted *c)
{
	craft_grow_code_over_rodata(c, "session_start");
}

/*
 * The file of the issue: the code segment grown over .rodata, a site at
 * target_rodata's bytes.  The kernel runs it; khprof before wrote 0xcc
 * into the constant.  Its headers do not hold together: record says so
 * in one line and exits 2 without running it, and ends (the child it
 * forked held the pipe it waited on, and record hung when attaching
 * failed); probes says the same.
 */
static void test_malformed_executable(void **state)
{
	char *program = crafted_target(over_rodata), out[PATH_MAX], line[PATH_MAX + 128];
	char *probes[] = { khprof, "probes", program, NULL };
	struct run_result r;

	(void)state;
	assert_runs_unchanged(program);
	snprintf(line, sizeof(line), "khprof: cannot trace '%s': malformed ELF file: two loadable "
		 "segments overlap at 0x2000\n", program);
	r = record_bounded(program, "over-rodata", out, sizeof(out));
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, line);
	assert_string_equal(r.out, "");
	assert_int_equal(access(out, F_OK), -1);
	run_result_free(&r);
	r = run_bounded(probes, HANG_BOUND_S);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "malformed ELF file: two loadable segments overlap"));
	run_result_free(&r);
	unlink(program);
	free(program);
}

static void misaligned_semaphore(struct crafted *c)
{
	craft_set_note_semaphore(c, "batch", craft_get64(c, craft_note(c, "batch") + 16) + 1);
}

static void two_semaphores_at_one_address(struct crafted *c)
{
	craft_set_note_address(c, "batch_register", craft_get64(c, craft_note(c, "batch")));
}

/*
 * Sites the kernel would refuse, and with them the file's whole link:
 * record hung on each before.  Now those sites are refused and named, and
 * the others trace the program (in span mode: without its batch site the
 * program has nothing to batch into).
 */
static void test_semaphores_the_kernel_refuses(void **state)
{
	static const struct {
		const char *name;
		void (*change)(struct crafted *c);
		const char *refusal;
		size_t refused;
	} cases[] = {
		{ "misaligned", misaligned_semaphore, "semaphore_misaligned", 1 },
		{ "conflicting", two_semaphores_at_one_address, "semaphore_conflict", 2 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *program = crafted_target(cases[i].change), out[PATH_MAX];
		struct run_result r = record_bounded(program, cases[i].name, out, sizeof(out));
		struct kh_profile p;

		if (r.exit_code != 0)
			fail_msg("%s: record exited %d: %s", cases[i].name, r.exit_code, r.err);
		assert_string_equal(r.out, UNCHANGED);
		assert_non_null(strstr(r.err, "refused probe site 'keyhog:batch'"));
		load_record(out, &p);
		assert_int_equal(p.ext.refused_site_count, cases[i].refused);
		assert_string_equal(refused_site(&p, "batch")->refusal, cases[i].refusal);
		assert_string_equal(p.ext.mode, "span");
		assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 3);
		profile__free(&p);
		run_result_free(&r);
		unlink(program);
		free(program);
	}
}

static void discarded_and_misaligned(struct crafted *c)
{
	misaligned_semaphore(c);
	/* Pair mode's, out of code: a site the linker discarded, as rustc leaves them. */
	craft_set_note_address(c, "span_enter", craft_symbol(c, "target_rodata"));
}

static size_t occurrences(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	return n;
}

/* The records dir/NAME.*.json that --follow-forks wrote: their count, each checked. */
static size_t check_child_records(const char *name, const char *program)
{
	char pattern[PATH_MAX];
	glob_t g;

	path_in(pattern, sizeof(pattern), tmpdir, "%s.*.json", name);
	assert_int_equal(glob(pattern, 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct kh_profile p;

		load_record(g.gl_pathv[i], &p);
		/* Every record names both, by the file, not by the process's /proc/PID/exe. */
		assert_int_equal(p.ext.refused_site_count, 2);
		assert_string_equal(refused_site(&p, "batch")->file, program);
		assert_string_equal(refused_site(&p, "span_enter")->refusal, "outside_code");
		profile__free(&p);
		unlink(g.gl_pathv[i]);
	}
	globfree(&g);
	return g.gl_pathc;
}

/*
 * One file, two processes (a wrapper runs it twice; --follow-forks, the
 * default for sh, gives each a tracer of its own): its refused sites are
 * named once in the run, by the file's path, and the line counting a
 * record's refused sites once; each record still names them all.  -q
 * leaves out the note on the site the linker discarded and keeps the
 * warnings: they say the file has sites khprof would not attach.
 */
static void test_refused_sites_said_once(void **state)
{
	char *program = crafted_target(discarded_and_misaligned), script[2 * PATH_MAX + 8];
	char out[PATH_MAX], warning[PATH_MAX + 64];
	char *argv[2][10] = {
		{ khprof, "record", "-o", out, "--", "/bin/sh", "-c", script, NULL },
		{ khprof, "record", "-q", "-o", out, "--", "/bin/sh", "-c", script, NULL },
	};

	(void)state;
	snprintf(script, sizeof(script), "%s; %s", program, program);
	/* Its address left out: it moves with the probe header's code. */
	snprintf(warning, sizeof(warning), " of '%s': its semaphore", program);
	for (size_t q = 0; q < 2; q++) {
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "twice%zu.json", q);
		r = run_bounded(argv[q], HANG_BOUND_S);
		if (r.exit_code != 0)
			fail_msg("record exited %d: %s", r.exit_code, r.err);
		assert_string_equal(r.out, UNCHANGED UNCHANGED);
		if (occurrences(r.err, "khprof: warning: refused probe site 'keyhog:batch' at 0x") != 1 ||
		    !strstr(r.err, warning))
			fail_msg("the refused site not named once, by its file:\n%s", r.err);
		assert_int_equal(occurrences(r.err, "probe site 'keyhog:span_enter' at "),
				 q ? 0 : 1);
		assert_int_equal(occurrences(r.err, "2 probe sites of the traced files refused"),
				 1);
		assert_int_equal(check_child_records(q ? "twice1" : "twice0", program), 2);
		run_result_free(&r);
	}
	unlink(program);
	free(program);
}

#define FORGED "\nkhprof: error: forged line\x1b[2K"

static void forged_strings(struct crafted *c)
{
	/* An argument spec the parser refuses (it is printed in the reason) ... */
	craft_set_note_string(c, "batch", 2, FORGED);
	/* ... and a name it lists. */
	craft_set_note_string(c, "batch_register", 1, "\nkhprof: x\x1b");
}

/* No line that khprof did not write, and no byte a terminal acts on. */
static void assert_no_forged_line(const char *text)
{
	for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
		if (!strncmp(line, "khprof: error: forged", 21) || !strncmp(line, "khprof: x", 9))
			fail_msg("a note wrote a line of khprof's output: %s", text);
		if (!strchr(line, '\n'))
			break;
	}
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\n')
			fail_msg("control byte 0x%02x in khprof's output: %s", *c, text);
}

/*
 * A note's strings are the file's: listed and named escaped, so that a
 * crafted one cannot write a line of khprof's output ("khprof: error:
 * forged line" was printed before) nor drive a terminal; the record keeps
 * them, escaped by JSON.
 */
static void test_forged_strings(void **state)
{
	char *program = crafted_target(forged_strings), out[PATH_MAX];
	char *probes[] = { khprof, "probes", program, NULL };
	struct run_result r;
	struct kh_profile p;

	(void)state;
	r = run_bounded(probes, HANG_BOUND_S);
	assert_int_equal(r.exit_code, 0);
	assert_no_forged_line(r.out);
	assert_no_forged_line(r.err);
	assert_non_null(strstr(r.out, "\\nkhprof: x\\x1b"));
	assert_non_null(strstr(r.err, "arguments '\\nkhprof: error: forged line\\x1b[2K"));
	run_result_free(&r);
	r = record_bounded(program, "forged", out, sizeof(out));
	if (r.exit_code != 0)
		fail_msg("record exited %d: %s", r.exit_code, r.err);
	assert_no_forged_line(r.err);
	load_record(out, &p);
	assert_non_null(strstr(refused_site(&p, "batch")->reason, "\\nkhprof: error: forged"));
	profile__free(&p);
	run_result_free(&r);
	unlink(program);
	free(program);
}

/*
 * khprof as argv says (bounded as run_bounded), with its test hook
 * KHPROF_TEST_STOP_BEFORE_LINK=stop_at: it stops (SIGSTOP) once it has
 * checked the file it opened as stop_at, before it links its sites; then
 * swap(ctx) runs and khprof is resumed.  Its stops are seen through
 * SIGCHLD on a signalfd, so the wait is bounded and nothing sleeps.
 */
static struct run_result run_swapping(char *const argv[], const char *stop_at,
				      void (*swap)(void *ctx), void *ctx)
{
	struct run_result r = { .exit_code = -1 };
	char *out_path, *err_path;
	int out_fd = temp_file(&out_path), err_fd = temp_file(&err_path), status, sfd;
	bool swapped = false;
	sigset_t chld, old;
	pid_t pid;

	assert_true(out_fd >= 0 && err_fd >= 0);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_BLOCK, &chld, &old), 0);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	assert_true(sfd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		setpgid(0, 0);
		setenv("KHPROF_TEST_STOP_BEFORE_LINK", stop_at, 1);
		if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
			_exit(RUN_SETUP_FAILED);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	setpgid(pid, pid);
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo info;
		pid_t got;

		if (poll(&p, 1, HANG_BOUND_S * 1000) == 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("%s %s did not end within %d s: it hangs", argv[0], argv[1],
				 HANG_BOUND_S);
		}
		assert_int_equal(read(sfd, &info, sizeof(info)), (ssize_t)sizeof(info));
		/* One SIGCHLD may stand for several changes: take them all. */
		while ((got = waitpid(pid, &status, WNOHANG | WUNTRACED)) == pid &&
		       WIFSTOPPED(status)) {
			if (!swapped)
				swap(ctx);
			swapped = true;
			kill(pid, SIGCONT);
		}
		if (got == pid)
			break; /* exited */
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (!swapped)
		fail_msg("khprof never stopped before linking '%s' (its test hook)", stop_at);
	r.exit_code = exit_code_of_status(status);
	r.out = run_take_output(out_fd, out_path);
	r.err = run_take_output(err_fd, err_path);
	return r;
}

/*
 * The file khprof checks: target_value's "movl $0x41, %eax" made five
 * one-byte nops, and session_start's site put on the second, so that
 * every site passes every check.  In the unchanged target the same file
 * offset is the instruction's immediate, 0x41.
 */
static void nops_at_the_immediate(struct crafted *c)
{
	size_t at = craft_offset_of(c, craft_symbol(c, "target_value"));

	assert_int_equal(c->bytes[at], 0xb8); /* movl $imm32, %eax */
	memset(c->bytes + at, 0x90, 5);
	craft_set_note_address(c, "session_start", craft_symbol(c, "target_value") + 1);
}

static void unchanged(struct crafted *c)
{
	(void)c;
}

struct swap {
	const char *decoy, *path;
};

static void swap_files(void *ctx)
{
	const struct swap *s = ctx;

	assert_int_equal(rename(s->decoy, s->path), 0);
}

/*
 * The file renamed over between khprof's checks and its links, as the
 * owner of a container can do to any file khprof opens through
 * /proc/PID/root: khprof hands the kernel the file it checked
 * (/proc/self/fd/N), so the checked offsets never reach the file now at
 * the path.  khprof before attached by path: the kernel put the site
 * checked on a nop into the immediate of the new file's instruction, and
 * the program printed value=0xcc.  Now the breakpoints are in the file
 * khprof checked, which the path no longer names, and the program
 * computes what it computes untraced.
 */
static void test_file_swapped_before_attach(void **state)
{
	char *checked = crafted_target(nops_at_the_immediate);
	char *decoy = crafted_target(unchanged), out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", checked, NULL };
	struct swap s = { decoy, checked };
	struct run_result r;
	struct kh_profile p;

	(void)state;
	assert_runs_unchanged(decoy);
	path_in(out, sizeof(out), tmpdir, "swapped.json");
	r = run_swapping(argv, checked, swap_files, &s);
	if (r.exit_code != 0)
		fail_msg("record exited %d: %s", r.exit_code, r.err);
	assert_string_equal(r.out, UNCHANGED);
	/*
	 * The file that ran is attached too, as every file the process maps,
	 * by its own checks, when the loader reports it: its spans counted.
	 */
	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 3);
	profile__free(&p);
	run_result_free(&r);
	unlink(checked);
	free(checked);
	free(decoy);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_hostile",
		.need = "BPF integration tests need root",
		.tmp_prefix = "khprof-hostile",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_site_inside_an_instruction),
		cmocka_unit_test(test_malformed_executable),
		cmocka_unit_test(test_semaphores_the_kernel_refuses),
		cmocka_unit_test(test_forged_strings),
		cmocka_unit_test(test_file_swapped_before_attach),
		cmocka_unit_test(test_refused_sites_said_once),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
