// SPDX-License-Identifier: MIT
/* The records of a directory (record_dir.h). */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "json.h"
#include "log.h"
#include "record_dir.h"

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int record_dir__list(const char *dir, char ***out, size_t *count)
{
	size_t len = strlen(dir), cap = 0;
	const char *sep = len && dir[len - 1] == '/' ? "" : "/";
	struct dirent *entry;
	char **paths = NULL;
	DIR *d = opendir(dir);
	int err = 0;

	*count = 0;
	if (!d)
		return -errno;
	while (!err && (errno = 0, entry = readdir(d))) {
		size_t n = strlen(entry->d_name);
		struct stat st;
		char *path;

		/* As the shell's "*.json": no hidden files (atomic writes' temporaries). */
		if (entry->d_name[0] == '.' || n < 5 || strcmp(entry->d_name + n - 5, ".json"))
			continue;
		if (asprintf(&path, "%s%s%s", dir, sep, entry->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		if (stat(path, &st) || !S_ISREG(st.st_mode)) {
			free(path);
			continue;
		}
		if (array__reserve((void **)&paths, &cap, *count + 1, sizeof(*paths))) {
			free(path);
			err = -ENOMEM;
			break;
		}
		paths[(*count)++] = path;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		while (*count)
			free(paths[--*count]);
		free(paths);
		return err;
	}
	if (*count)
		qsort(paths, *count, sizeof(*paths), compare_names);
	*out = paths;
	return 0;
}

/* Not a second session's run-001.2.json either. */
unsigned record_dir__run_number(const char *path)
{
	const char *name = strrchr(path, '/');
	unsigned number;
	int end = 0;

	name = name ? name + 1 : path;
	if (sscanf(name, "run-%u.json%n", &number, &end) != 1 || name[end] != '\0')
		return 0;
	return number;
}

/* DIR/run-*.json, sorted by name; 0, or a glob(3) error other than no match. */
static int glob_runs(const char *dir, glob_t *found)
{
	char pattern[PATH_MAX];
	int err;

	snprintf(pattern, sizeof(pattern), "%s/run-*.json", dir);
	err = glob(pattern, 0, NULL, found);
	return err == GLOB_NOMATCH ? 0 : err;
}

int record_dir__count_runs(const char *dir, size_t *files, unsigned *last)
{
	glob_t found = { 0 };

	*files = 0;
	*last = 0;
	if (glob_runs(dir, &found))
		return -EIO;
	for (size_t i = 0; i < found.gl_pathc; i++) {
		unsigned n = record_dir__run_number(found.gl_pathv[i]);

		*last = n > *last ? n : *last;
	}
	*files = found.gl_pathc;
	globfree(&found);
	return 0;
}

struct numbered_run {
	unsigned number;
	const char *path;
};

static int compare_runs(const void *a, const void *b)
{
	const struct numbered_run *x = a, *y = b;

	return x->number < y->number ? -1 : x->number > y->number;
}

int record_dir__read_runs(const char *dir, struct kh_profile **out, size_t *count,
			  size_t *unreadable)
{
	struct numbered_run *order = NULL;
	struct kh_profile *runs = NULL;
	glob_t found = { 0 };
	size_t numbered = 0;
	char problem[256];
	int err = 0;

	*out = NULL;
	*count = *unreadable = 0;
	if (glob_runs(dir, &found))
		return -EIO;
	if (found.gl_pathc) {
		order = calloc(found.gl_pathc, sizeof(*order));
		runs = calloc(found.gl_pathc, sizeof(*runs));
		if (!order || !runs) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < found.gl_pathc; i++) {
		unsigned n = record_dir__run_number(found.gl_pathv[i]);

		if (n)
			order[numbered++] = (struct numbered_run){ n, found.gl_pathv[i] };
	}
	if (numbered == 0) {
		err = -ENOENT;
		goto out;
	}
	/* By number: run-1000.json sorts before run-101.json by name. */
	qsort(order, numbered, sizeof(*order), compare_runs);
	for (size_t i = 0; i < numbered; i++) {
		if (profile__read_file(order[i].path, &runs[*count], problem,
				       sizeof(problem)) == 0) {
			(*count)++;
			continue;
		}
		log__warn("cannot read run '%s': %s", order[i].path, problem);
		(*unreadable)++;
	}
out:
	globfree(&found);
	free(order);
	if (err) {
		free(runs);
		return err;
	}
	*out = runs;
	return 0;
}
