/* SPDX-License-Identifier: MIT */
/*
 * kh-corpus [--seed S] [--size MIB] [--decoys-only] DIR
 *
 * Writes DIR/tree/ (the files to scan) and DIR/truth.jsonl (what kh-scan
 * must report, paths relative to DIR).  The truth file sits outside the
 * tree so scanning DIR/tree never sees it.  Same seed and size, same bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "corpus.h"

static const char usage_text[] =
	"Usage: kh-corpus [--seed S] [--size MIB] [--decoys-only] DIR\n"
	"Write a deterministic corpus for kh-scan: text files under DIR/tree/ and\n"
	"the planted findings, one JSON object per line, in DIR/truth.jsonl.\n"
	"\n"
	"  --seed S        PRNG seed (default 1); same seed and size, same bytes\n"
	"  --size MIB      approximate total size in MiB (default 32)\n"
	"  --decoys-only   plant only decoys and suppressed lines (empty truth)\n"
	"  -h, --help      show this help\n"
	"\n"
	"DIR must not exist or be empty.  Exit status: 0 written, 2 error.\n";

/* Files per kind, relative: code and configs dominate, logs and bundles are few but large. */
static const unsigned kind_weights[KIND_COUNT] = {
	[KIND_C] = 12, [KIND_PYTHON] = 12, [KIND_GO] = 12,         [KIND_JSON] = 10,
	[KIND_YAML] = 10, [KIND_ENV] = 8,  [KIND_MINIFIED_JS] = 4, [KIND_LOG] = 6,
};

/* Size range of each kind in KiB. */
static const unsigned kind_size_kib[KIND_COUNT][2] = {
	[KIND_C] = { 4, 64 },     [KIND_PYTHON] = { 4, 64 },        [KIND_GO] = { 4, 64 },
	[KIND_JSON] = { 4, 128 }, [KIND_YAML] = { 1, 16 },           [KIND_ENV] = { 1, 4 },
	[KIND_MINIFIED_JS] = { 64, 384 }, [KIND_LOG] = { 32, 768 },
};

static const char *const project_words[] = {
	"atlas", "beacon", "comet", "delta", "ember", "falcon", "glacier", "harbor",
	"iris",  "juniper", "kestrel", "lumen", "meridian", "nebula", "orchid", "prism",
};

static const char *const file_words[] = {
	"cache", "router", "worker", "ledger", "mapper", "loader", "billing", "search",
	"session", "upload", "metrics", "gateway", "profile", "catalog", "invoice", "notify",
};

/*
 * mkdir -p from the leaf up: the corpus writes many files into few
 * directories, so the leaf usually exists and one mkdir settles it; the
 * parents are only visited when the leaf's parent is missing.
 */
static int make_directories(const char *path)
{
	char parent[4096];
	size_t length = strlen(path);
	char *slash;

	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT || length >= sizeof(parent))
		return -1;
	memcpy(parent, path, length + 1);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -1;
	*slash = '\0';
	if (make_directories(parent) != 0)
		return -1;
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static int directory_is_empty_or_absent(const char *path)
{
	DIR *directory = opendir(path);
	struct dirent *entry;

	if (!directory)
		return errno == ENOENT ? 1 : -1;
	while ((entry = readdir(directory)) != NULL) {
		if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
			closedir(directory);
			return 0;
		}
	}
	closedir(directory);
	return 1;
}

static uint32_t add_path(struct corpus *corpus, const char *relative)
{
	if (corpus->path_count == corpus->path_capacity) {
		corpus->path_capacity = corpus->path_capacity ? corpus->path_capacity * 2 : 256;
		corpus->paths = must_reallocate(corpus->paths,
						corpus->path_capacity * sizeof(*corpus->paths));
	}
	corpus->paths[corpus->path_count] = must_strdup(relative);
	return (uint32_t)corpus->path_count++;
}

static int write_whole_file(const char *path, const char *data, size_t length)
{
	FILE *stream = fopen(path, "wb");

	if (!stream)
		return -1;
	if (fwrite(data, 1, length, stream) != length) {
		fclose(stream);
		return -1;
	}
	return fclose(stream);
}

/* Writes the writer's buffer to DIR/relative, creating parent directories. */
static int save_file(const char *root, const char *relative, const struct file_writer *writer)
{
	/* Consecutive files often share a directory; it exists once made. */
	static char last_directory[4096];
	char path[4096];
	char *slash;

	if (snprintf(path, sizeof(path), "%s/%s", root, relative) >= (int)sizeof(path))
		return -1;
	slash = strrchr(path, '/');
	*slash = '\0';
	if (strcmp(path, last_directory) != 0) {
		if (make_directories(path) != 0)
			return -1;
		memcpy(last_directory, path, (size_t)(slash - path) + 1);
	}
	*slash = '/';
	if (write_whole_file(path, writer->data, writer->length) != 0) {
		fprintf(stderr, "kh-corpus: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static enum file_kind pick_kind(struct rng *rng)
{
	unsigned total = 0, roll;

	for (int kind = 0; kind < KIND_COUNT; kind++)
		total += kind_weights[kind];
	roll = rng_below(rng, total);
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		if (roll < kind_weights[kind])
			return (enum file_kind)kind;
		roll -= kind_weights[kind];
	}
	return KIND_LOG;
}

static const char *kind_directory(enum file_kind kind)
{
	switch (kind) {
	case KIND_JSON:
	case KIND_YAML:
	case KIND_ENV:
		return "config";
	case KIND_MINIFIED_JS:
		return "web/dist";
	case KIND_LOG:
		return "logs";
	default:
		return "src";
	}
}

static const struct corpus *sort_corpus;

static int compare_location(const struct truth_entry *left, const struct truth_entry *right)
{
	int order = strcmp(sort_corpus->paths[left->path_index], sort_corpus->paths[right->path_index]);

	if (order != 0)
		return order;
	if (left->line != right->line)
		return left->line < right->line ? -1 : 1;
	return strcmp(rule_name(left->rule), rule_name(right->rule));
}

/* One secret planted twice on a line (raw and encoded, say) is one finding: earliest wins. */
static int compare_for_dedup(const void *a, const void *b)
{
	const struct truth_entry *left = a, *right = b;
	int order = compare_location(left, right);

	if (order != 0)
		return order;
	if (left->match_fingerprint != right->match_fingerprint)
		return left->match_fingerprint < right->match_fingerprint ? -1 : 1;
	if (left->column != right->column)
		return left->column < right->column ? -1 : 1;
	return (int)left->decoded - (int)right->decoded;
}

static int compare_truth(const void *a, const void *b)
{
	const struct truth_entry *left = a, *right = b;
	int order = compare_location(left, right);

	if (order != 0)
		return order;
	if (left->column != right->column)
		return left->column < right->column ? -1 : 1;
	return (int)left->decoded - (int)right->decoded;
}

/* Sorted as kh-scan sorts its output, so the two can be compared line by line. */
static int write_truth(const char *root, struct corpus *corpus)
{
	char path[4096];
	FILE *stream;

	snprintf(path, sizeof(path), "%s/truth.jsonl", root);
	stream = fopen(path, "w");
	if (!stream) {
		fprintf(stderr, "kh-corpus: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	sort_corpus = corpus;
	/* With --decoys-only the truth is empty and may be NULL, which qsort does not allow. */
	if (corpus->truth_count > 0)
		qsort(corpus->truth, corpus->truth_count, sizeof(*corpus->truth), compare_for_dedup);
	size_t kept = 0;

	for (size_t i = 0; i < corpus->truth_count; i++) {
		const struct truth_entry *entry = &corpus->truth[i];

		if (kept > 0 && compare_location(&corpus->truth[kept - 1], entry) == 0 &&
		    corpus->truth[kept - 1].match_fingerprint == entry->match_fingerprint)
			continue;
		corpus->truth[kept++] = *entry;
	}
	corpus->truth_count = kept;
	if (corpus->truth_count > 0)
		qsort(corpus->truth, corpus->truth_count, sizeof(*corpus->truth), compare_truth);
	for (size_t i = 0; i < corpus->truth_count; i++) {
		const struct truth_entry *entry = &corpus->truth[i];

		fprintf(stream, "{\"path\":\"%s\",\"line\":%llu,\"column\":%u,\"rule\":\"%s\","
				"\"decoded\":%s}\n",
			corpus->paths[entry->path_index], (unsigned long long)entry->line,
			entry->column, rule_name(entry->rule),
			entry->decoded ? "true" : "false");
	}
	if (fclose(stream) != 0) {
		fprintf(stderr, "kh-corpus: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int generate(const char *root, struct corpus *corpus, uint64_t target_bytes)
{
	char relative[512];
	char project[64] = "";
	unsigned project_index = 0, files_left_in_project = 0, file_index = 0;
	bool env_named = false;

	while (corpus->bytes_written < target_bytes) {
		struct file_writer writer = { .corpus = corpus, .line = 1 };
		uint64_t remaining = target_bytes - corpus->bytes_written;
		enum file_kind kind;
		size_t size;

		if (files_left_in_project == 0) {
			snprintf(project, sizeof(project), "%s-%02u",
				 RNG_PICK(&corpus->rng, project_words), project_index++);
			files_left_in_project = rng_range(&corpus->rng, 8, 24);
			env_named = false;

			/* One binary per project: real-looking secrets the scanner must skip. */
			snprintf(relative, sizeof(relative), "tree/%s/assets/%s-%u.bin", project,
				 RNG_PICK(&corpus->rng, file_words), file_index++);
			writer.path_index = add_path(corpus, relative);
			generate_binary_file(&writer, rng_range(&corpus->rng, 2048, 16384));
			if (save_file(root, relative, &writer) != 0)
				return -1;
			corpus->bytes_written += writer.length;
			corpus->files_written++;
			free(writer.data);
			writer = (struct file_writer){ .corpus = corpus, .line = 1 };
		}
		files_left_in_project--;

		/*
		 * The first file is a log just over one scanner chunk, so every
		 * corpus of 2 MiB or more checks line numbers across chunks.
		 */
		if (corpus->files_written == 1 && target_bytes >= (2u << 20)) {
			kind = KIND_LOG;
			size = (5u << 20) / 4;
		} else {
			kind = pick_kind(&corpus->rng);
			size = 1024u * rng_range(&corpus->rng, kind_size_kib[kind][0],
						 kind_size_kib[kind][1]);
		}
		if (size > remaining)
			size = remaining > 512 ? remaining : 512;

		if (kind == KIND_ENV && !env_named) {
			snprintf(relative, sizeof(relative), "tree/%s/.env", project);
			env_named = true;
		} else {
			snprintf(relative, sizeof(relative), "tree/%s/%s/%s_%u.%s", project,
				 kind_directory(kind), RNG_PICK(&corpus->rng, file_words), file_index++,
				 file_kind_extension(kind));
		}
		writer.path_index = add_path(corpus, relative);
		generate_text_file(&writer, kind, size);
		if (save_file(root, relative, &writer) != 0)
			return -1;
		corpus->bytes_written += writer.length;
		corpus->files_written++;
		free(writer.data);
	}
	return write_truth(root, corpus);
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'm' },
		{ "decoys-only", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct corpus corpus = { .rng = { 1 } };
	unsigned long long size_mib = 32;
	int option, status, empty;
	char *end;

	opterr = 0;
	while ((option = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		switch (option) {
		case 's':
			errno = 0;
			corpus.rng.state = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg) {
				fprintf(stderr, "kh-corpus: invalid --seed '%s'\n", optarg);
				return 2;
			}
			break;
		case 'm':
			errno = 0;
			size_mib = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || size_mib < 1 || size_mib > 65536) {
				fprintf(stderr, "kh-corpus: invalid --size '%s' (expected 1-65536 MiB)\n",
					optarg);
				return 2;
			}
			break;
		case 'd':
			corpus.decoys_only = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fprintf(stderr, "kh-corpus: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "kh-corpus: expected exactly one DIR (see --help)\n");
		return 2;
	}
	check_decoy_tables();
	empty = directory_is_empty_or_absent(argv[optind]);
	if (empty != 1) {
		fprintf(stderr, "kh-corpus: '%s' %s\n", argv[optind],
			empty == 0 ? "is not empty" : "cannot be opened");
		return 2;
	}
	if (make_directories(argv[optind]) != 0) {
		fprintf(stderr, "kh-corpus: cannot create '%s': %s\n", argv[optind], strerror(errno));
		return 2;
	}
	status = generate(argv[optind], &corpus, size_mib << 20);
	if (status == 0)
		printf("kh-corpus: %zu files, %llu bytes, %zu planted findings in %s\n",
		       corpus.files_written, (unsigned long long)corpus.bytes_written,
		       corpus.truth_count, argv[optind]);
	for (size_t i = 0; i < corpus.path_count; i++)
		free(corpus.paths[i]);
	free(corpus.paths);
	free(corpus.truth);
	return status == 0 ? 0 : 2;
}
