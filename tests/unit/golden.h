/* SPDX-License-Identifier: MIT */
/*
 * golden.h - helpers shared by the record unit tests: locating the golden
 * records, reading them, and running the seed's conformance reader.
 *
 * Goldens live in tests/golden/ (override with KH_TEST_DATA).  The seed
 * reader is build/seed-render (override with KH_SEED_RENDER); when it is
 * missing the conformance tests skip, except under CI=true, where a
 * missing reader is a failure.
 */
#ifndef KHPROF_TEST_GOLDEN_H
#define KHPROF_TEST_GOLDEN_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"

/* Inputs are NAME.json; NAME.seed.json and NAME.khprof.json are outputs. */
#define GOLDEN_MAX 64

static inline const char *test_repo_root(void)
{
	static char *root;
	const char *suffix = "/tests/unit/golden.h";
	size_t len = strlen(__FILE__), suffix_len = strlen(suffix);

	if (root)
		return root;
	if (len > suffix_len && !strcmp(__FILE__ + len - suffix_len, suffix))
		root = strndup(__FILE__, len - suffix_len);
	else
		root = strdup(".");
	return root;
}

static inline const char *golden_dir(void)
{
	static char *dir;
	const char *env = getenv("KH_TEST_DATA");

	if (env && *env)
		return env;
	if (!dir && asprintf(&dir, "%s/tests/golden", test_repo_root()) < 0)
		abort();
	return dir;
}

/* Path of tests/golden/NAME; malloc'd. */
static inline char *golden_path(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", golden_dir(), name) < 0)
		abort();
	return path;
}

/* Contents of tests/golden/NAME, or NULL when it does not exist. */
static inline char *golden_read(const char *name)
{
	char *path = golden_path(name);
	char *text;
	size_t len;
	int err = file__read_all(path, &text, &len);

	free(path);
	return err ? NULL : text;
}

static inline bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static inline int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Base names of the golden input records, sorted; returns the count. */
static inline size_t golden_inputs(char *names[GOLDEN_MAX])
{
	DIR *dir = opendir(golden_dir());
	struct dirent *entry;
	size_t count = 0;

	if (!dir)
		return 0;
	while ((entry = readdir(dir)) && count < GOLDEN_MAX) {
		const char *n = entry->d_name;

		if (!has_suffix(n, ".json") || has_suffix(n, ".seed.json") ||
		    has_suffix(n, ".khprof.json"))
			continue;
		names[count++] = strndup(n, strlen(n) - strlen(".json"));
	}
	closedir(dir);
	qsort(names, count, sizeof(names[0]), compare_names);
	return count;
}

static inline void golden_free(char *names[], size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(names[i]);
}

static inline char *golden_read_suffix(const char *name, const char *suffix)
{
	char *file, *text;

	if (asprintf(&file, "%s%s", name, suffix) < 0)
		abort();
	text = golden_read(file);
	free(file);
	return text;
}

/* JSON text without the trailing "khprof" member that seed readers drop. */
static inline char *strip_khprof(const char *json)
{
	const char *member = strstr(json, ",\n  \"khprof\": {");
	char *out;

	if (!member)
		return strdup(json);
	out = malloc((size_t)(member - json) + 4);
	if (!out)
		return NULL;
	memcpy(out, json, (size_t)(member - json));
	strcpy(out + (member - json), "\n}\n");
	return out;
}

static inline const char *seed_render_path(void)
{
	static char *path;
	const char *env = getenv("KH_SEED_RENDER");

	if (!path && env && *env)
		path = strdup(env);
	else if (!path && asprintf(&path, "%s/build/seed-render", test_repo_root()) < 0)
		abort();
	return path && access(path, X_OK) == 0 ? path : NULL;
}

static inline bool running_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

/*
 * Runs argv and returns its stdout (malloc'd); *status gets the exit
 * status, or -1 when it did not exit normally.
 */
static inline char *run_capture(char *const argv[], int *status)
{
	int pipefd[2], wstatus;
	char *out = NULL;
	size_t len = 0, cap = 0;
	pid_t pid;

	*status = -1;
	if (pipe(pipefd))
		return NULL;
	pid = fork();
	if (pid < 0)
		return NULL;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(pipefd[1], STDOUT_FILENO);
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);
		close(pipefd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			out = realloc(out, cap);
			if (!out)
				abort();
		}
		n = read(pipefd[0], out + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(wstatus))
		*status = WEXITSTATUS(wstatus);
	return out;
}

/* Writes text to a fresh temporary file and returns its path (malloc'd). */
static inline char *write_temp(const char *text)
{
	const char *tmpdir = getenv("TMPDIR");
	char *path;
	int fd;

	if (asprintf(&path, "%s/khprof-test-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") < 0)
		return NULL;
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(path);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

/*
 * The seed's reading of text: its pretty JSON (json true) or report.
 * NULL when the seed rejects the record; *status says how it exited.
 */
static inline char *seed_render(const char *render, const char *text, bool json, int *status)
{
	char *path = write_temp(text);
	char *argv[4] = { (char *)render, NULL, NULL, NULL };
	char *out;

	if (!path)
		return NULL;
	argv[1] = json ? "--json" : path;
	argv[2] = json ? path : NULL;
	out = run_capture(argv, status);
	unlink(path);
	free(path);
	if (*status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * The seed reader for a conformance test; skips the test when it is not
 * built, or fails it under CI.  Include <cmocka.h> before this header.
 */
static inline const char *conformance_reader(void)
{
	const char *render = seed_render_path();

	if (render)
		return render;
	if (running_in_ci())
		fail_msg("build/seed-render is missing and CI=true: run `make seed-render`");
	print_message("seed-render not built (make seed-render): skipping seed conformance\n");
	skip();
	return NULL;
}

/*
 * Fails unless the seed, run now, still renders every golden input as the
 * committed NAME<suffix> says (.txt for its text, .seed.json for its JSON).
 */
static inline void assert_goldens_current(const char *suffix, bool json)
{
	const char *render = conformance_reader();
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	for (size_t i = 0; i < count; i++) {
		char *input = golden_read_suffix(names[i], ".json");
		char *expected = golden_read_suffix(names[i], suffix);
		int status;
		char *rendered = seed_render(render, input, json, &status);

		if (!rendered || strcmp(rendered, expected))
			fail_msg("%s%s is stale: run tests/golden/regen.sh", names[i], suffix);
		free(rendered);
		free(expected);
		free(input);
	}
	golden_free(names, count);
}

#endif /* KHPROF_TEST_GOLDEN_H */
