/* SPDX-License-Identifier: MIT */
/*
 * golden.h - helpers shared by the record unit tests: locating the golden
 * records, reading them, and running the seed's conformance reader.  The
 * general ones (running programs, temporary files) are in khtest.h.
 *
 * Goldens live in tests/golden/ (override with KH_TEST_DATA).  The seed
 * reader is build/seed-render (override with KH_SEED_RENDER); when it is
 * missing the conformance tests skip, except under CI=true, where a
 * missing reader is a failure.
 */
#ifndef KHPROF_TEST_GOLDEN_H
#define KHPROF_TEST_GOLDEN_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "json.h"
#include "khtest.h"

/* Inputs are NAME.json; NAME.seed.json and NAME.khprof.json are outputs. */
#define GOLDEN_MAX 64

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

/* Reads and parses tests/golden/NAME<suffix> into *p, or fails the test saying why. */
static inline void golden_load(const char *name, const char *suffix, struct kh_profile *p)
{
	char *file, *path;

	if (asprintf(&file, "%s%s", name, suffix) < 0)
		abort();
	path = golden_path(file);
	load_record(path, p);
	free(path);
	free(file);
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

/*
 * The seed's reading of text: its pretty JSON (json true) or report.
 * NULL when the seed rejects the record; *status says how it exited.
 */
static inline char *seed_render(const char *render, const char *text, bool json, int *status)
{
	char *path = write_temp(text);
	char *argv[4] = { (char *)render, NULL, NULL, NULL };
	struct run_result r;

	*status = -1;
	if (!path)
		return NULL;
	argv[1] = json ? "--json" : path;
	argv[2] = json ? path : NULL;
	r = run_cmd(NULL, -1, argv);
	unlink(path);
	free(path);
	*status = r.exit_code;
	free(r.err);
	if (r.exit_code != 0) {
		free(r.out);
		return NULL;
	}
	return r.out;
}

/*
 * The seed reader for a conformance test; skips the test when it is not
 * built, or fails it under CI.
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
