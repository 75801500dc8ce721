/* SPDX-License-Identifier: MIT */
/*
 * The reader thread: walks directories, skips binary and allowlisted
 * files and cuts every text file into chunks that end at a line boundary,
 * so no secret is split and every chunk knows its first line number.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyhog_profile.h"
#include "kh_scan.h"

int allowlist_load(struct allowlist *allowlist, const char *file, char *error, size_t error_size)
{
	FILE *stream = fopen(file, "r");
	char *line = NULL;
	size_t line_capacity = 0;
	ssize_t length;

	allowlist->globs = NULL;
	allowlist->count = 0;
	if (!stream) {
		snprintf(error, error_size, "cannot read allowlist '%s': %s", file, strerror(errno));
		return -1;
	}
	while ((length = getline(&line, &line_capacity, stream)) >= 0) {
		char *start = line;
		char **grown;

		while (length > 0 && strchr(" \t\r\n", line[length - 1]))
			line[--length] = '\0';
		while (*start == ' ' || *start == '\t')
			start++;
		if (*start == '\0' || *start == '#')
			continue;
		grown = realloc(allowlist->globs, (allowlist->count + 1) * sizeof(*grown));
		if (!grown || !(grown[allowlist->count] = strdup(start))) {
			allowlist->globs = grown ? grown : allowlist->globs;
			snprintf(error, error_size, "out of memory reading allowlist '%s'", file);
			free(line);
			fclose(stream);
			allowlist_free(allowlist);
			return -1;
		}
		allowlist->globs = grown;
		allowlist->count++;
	}
	free(line);
	if (ferror(stream)) {
		snprintf(error, error_size, "cannot read allowlist '%s': %s", file, strerror(errno));
		fclose(stream);
		allowlist_free(allowlist);
		return -1;
	}
	fclose(stream);
	return 0;
}

/*
 * A glob matches the whole path ('*' crosses '/') or just the file name,
 * so "*.env" matches by name and a glob with a slash matches by path.
 */
bool allowlist_matches(const struct allowlist *allowlist, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;

	for (size_t i = 0; i < allowlist->count; i++)
		if (fnmatch(allowlist->globs[i], path, 0) == 0 ||
		    fnmatch(allowlist->globs[i], base, 0) == 0)
			return true;
	return false;
}

void allowlist_free(struct allowlist *allowlist)
{
	for (size_t i = 0; i < allowlist->count; i++)
		free(allowlist->globs[i]);
	free(allowlist->globs);
	allowlist->globs = NULL;
	allowlist->count = 0;
}

/*
 * The reader cannot go on without its path table, a directory listing or
 * a chunk, so running out of memory for one fails the whole run, and the
 * session is finished as failed so a tracer sees why it ended.
 */
static _Noreturn void out_of_memory(void)
{
	scan_error("out of memory");
	KH_SESSION_FINISH(KH_STATE_FAILED);
	exit(SCAN_EXIT_ERROR);
}

static void *must_allocate(size_t size)
{
	void *memory = malloc(size);

	if (!memory)
		out_of_memory();
	return memory;
}

static void *must_reallocate(void *memory, size_t size)
{
	memory = realloc(memory, size);
	if (!memory)
		out_of_memory();
	return memory;
}

static char *must_strdup(const char *text)
{
	char *copy = strdup(text);

	if (!copy)
		out_of_memory();
	return copy;
}

static uint32_t file_table_add(struct file_table *files, const char *path)
{
	if (files->count == files->capacity) {
		files->capacity = files->capacity ? files->capacity * 2 : 256;
		files->paths = must_reallocate(files->paths, files->capacity * sizeof(*files->paths));
	}
	files->paths[files->count] = must_strdup(path);
	return (uint32_t)files->count++;
}

void file_table_free(struct file_table *files)
{
	for (size_t i = 0; i < files->count; i++)
		free(files->paths[i]);
	free(files->paths);
	files->paths = NULL;
	files->count = files->capacity = 0;
}

static uint64_t count_newlines(const char *data, size_t length)
{
	const char *end = data + length;
	uint64_t lines = 0;

	while ((data = memchr(data, '\n', (size_t)(end - data))) != NULL) {
		lines++;
		data++;
	}
	return lines;
}

/* State of one file being cut into chunks. */
struct file_cursor {
	int fd;
	char *buffer;
	size_t length;   /* bytes held in buffer */
	size_t capacity;
	uint64_t next_line;
	bool sniffed;
	bool at_eof;
};

enum read_status {
	READ_MORE,    /* a chunk was produced and more of the file remains */
	READ_DONE,    /* the file is finished (a last chunk may have been produced) */
	READ_BINARY,  /* the file is binary: nothing was produced */
	READ_FAILED,  /* errno describes the failure */
};

static enum read_status fill_buffer(struct file_cursor *cursor)
{
	while (cursor->length < cursor->capacity && !cursor->at_eof) {
		ssize_t got = read(cursor->fd, cursor->buffer + cursor->length,
				   cursor->capacity - cursor->length);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return READ_FAILED;
		}
		if (got == 0)
			cursor->at_eof = true;
		cursor->length += (size_t)got;
	}
	return READ_MORE;
}

/*
 * Produces the next chunk: everything read so far up to the last newline,
 * or the rest of the file at EOF.  A line longer than the buffer grows the
 * buffer rather than being split, because a split could cut a secret.
 */
static enum read_status read_next_chunk(struct file_cursor *cursor, uint32_t file_id,
					struct chunk **out)
{
	size_t cut;

	*out = NULL;
	for (;;) {
		if (fill_buffer(cursor) == READ_FAILED)
			return READ_FAILED;
		if (!cursor->sniffed) {
			size_t sniff = cursor->length < BINARY_SNIFF_BYTES ? cursor->length
									: BINARY_SNIFF_BYTES;

			cursor->sniffed = true;
			if (memchr(cursor->buffer, '\0', sniff))
				return READ_BINARY;
		}
		if (cursor->at_eof) {
			cut = cursor->length;
			break;
		}
		const char *last_newline = memrchr(cursor->buffer, '\n', cursor->length);

		if (last_newline) {
			cut = (size_t)(last_newline - cursor->buffer) + 1;
			break;
		}
		char *grown = realloc(cursor->buffer, cursor->capacity * 2);

		if (!grown) {
			errno = ENOMEM;
			return READ_FAILED;
		}
		cursor->buffer = grown;
		cursor->capacity *= 2;
	}
	if (cut == 0)
		return READ_DONE;

	struct chunk *chunk = must_allocate(sizeof(*chunk));
	size_t rest = cursor->length - cut;

	chunk->file_id = file_id;
	chunk->first_line = cursor->next_line;
	chunk->data = cursor->buffer;
	chunk->length = cut;
	*out = chunk;
	if (cursor->at_eof && rest == 0) {
		cursor->buffer = NULL;
		cursor->length = cursor->capacity = 0;
		return READ_DONE;
	}
	/* The partial last line moves to a fresh buffer; the chunk keeps the old one. */
	cursor->next_line += count_newlines(chunk->data, cut);
	cursor->capacity = rest + CHUNK_TARGET_BYTES;
	cursor->buffer = must_allocate(cursor->capacity);
	memcpy(cursor->buffer, chunk->data + cut, rest);
	cursor->length = rest;
	return READ_MORE;
}

static void read_file(struct reader *reader, const char *path)
{
	struct file_cursor cursor = { .fd = -1, .next_line = 1 };
	enum read_status status;
	struct stat info;
	uint32_t file_id;

	if (reader->allowlist->count > 0) {
		bool allowed;

		{
			KH_SPAN_SCOPE(KH_STAGE_SUPPRESSION);
			allowed = allowlist_matches(reader->allowlist, path);
		}
		if (allowed)
			return;
	}
	file_id = file_table_add(&reader->files, path);

	KH_SPAN_ENTER(KH_STAGE_SOURCE_READ);
	cursor.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (cursor.fd < 0 || fstat(cursor.fd, &info) != 0) {
		KH_SPAN_EXIT(KH_STAGE_SOURCE_READ);
		scan_error("cannot read '%s': %s", path, strerror(errno));
		reader->errors++;
		if (cursor.fd >= 0)
			close(cursor.fd);
		return;
	}
	/* Small files get an exact buffer; EOF then shows on the next read. */
	cursor.capacity = (size_t)info.st_size < CHUNK_TARGET_BYTES ? (size_t)info.st_size + 1
								 : CHUNK_TARGET_BYTES;
	cursor.buffer = must_allocate(cursor.capacity);
	for (;;) {
		struct chunk *chunk;

		status = read_next_chunk(&cursor, file_id, &chunk);
		KH_SPAN_EXIT(KH_STAGE_SOURCE_READ);
		if (chunk) {
			KH_INPUT_BYTES(chunk->length);
			chunk_queue_push(reader->queue, chunk);
		}
		if (status != READ_MORE)
			break;
		KH_SPAN_ENTER(KH_STAGE_SOURCE_READ);
	}
	if (status == READ_FAILED) {
		scan_error("cannot read '%s': %s", path, strerror(errno));
		reader->errors++;
	} else if (status == READ_DONE) {
		KH_INPUT_UNITS(1);
	}
	free(cursor.buffer);
	close(cursor.fd);
}

struct directory_entry {
	char *name;
	unsigned char type; /* DT_* */
};

static int compare_entries(const void *left, const void *right)
{
	return strcmp(((const struct directory_entry *)left)->name,
		      ((const struct directory_entry *)right)->name);
}

/*
 * Lists a directory sorted by name so the walk, and so file ids, do not
 * depend on the file system's readdir order.
 */
static int list_directory(const char *path, struct directory_entry **entries, size_t *count)
{
	DIR *directory = opendir(path);
	struct directory_entry *list = NULL;
	size_t used = 0, capacity = 0;
	struct dirent *entry;

	if (!directory)
		return -1;
	errno = 0;
	while ((entry = readdir(directory)) != NULL) {
		unsigned char type = entry->d_type;

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		if (type == DT_UNKNOWN) {
			struct stat info;

			if (fstatat(dirfd(directory), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			type = S_ISDIR(info.st_mode) ? DT_DIR : S_ISREG(info.st_mode) ? DT_REG
										     : DT_UNKNOWN;
		}
		if (type != DT_DIR && type != DT_REG)
			continue;
		if (used == capacity) {
			capacity = capacity ? capacity * 2 : 32;
			list = must_reallocate(list, capacity * sizeof(*list));
		}
		list[used].name = must_strdup(entry->d_name);
		list[used].type = type;
		used++;
		errno = 0;
	}
	int read_errno = errno;

	closedir(directory);
	if (read_errno != 0) {
		for (size_t i = 0; i < used; i++)
			free(list[i].name);
		free(list);
		errno = read_errno;
		return -1;
	}
	qsort(list, used, sizeof(*list), compare_entries);
	*entries = list;
	*count = used;
	return 0;
}

static char *join_path(const char *directory, const char *name)
{
	size_t directory_length = strlen(directory);
	size_t name_length = strlen(name);
	char *path;

	while (directory_length > 1 && directory[directory_length - 1] == '/')
		directory_length--;
	path = must_allocate(directory_length + 1 + name_length + 1);
	memcpy(path, directory, directory_length);
	if (!(directory_length == 1 && directory[0] == '/'))
		path[directory_length++] = '/';
	memcpy(path + directory_length, name, name_length + 1);
	return path;
}

/*
 * Symbolic links met during the walk are not followed (only the paths
 * given on the command line are resolved), so a link cycle cannot make the
 * walk loop and nothing outside the named trees is read.
 */
static void walk_directory(struct reader *reader, const char *path)
{
	struct directory_entry *entries = NULL;
	size_t count = 0;
	int listed;

	KH_SPAN_ENTER(KH_STAGE_SOURCE_WALK);
	listed = list_directory(path, &entries, &count);
	KH_SPAN_EXIT(KH_STAGE_SOURCE_WALK);
	if (listed != 0) {
		scan_error("cannot read directory '%s': %s", path, strerror(errno));
		reader->errors++;
		return;
	}
	for (size_t i = 0; i < count; i++) {
		char *child = join_path(path, entries[i].name);

		if (entries[i].type == DT_DIR)
			walk_directory(reader, child);
		else
			read_file(reader, child);
		free(child);
		free(entries[i].name);
	}
	free(entries);
}

void *reader_main(void *argument)
{
	struct reader *reader = argument;

	for (size_t i = 0; i < reader->root_count; i++) {
		if (reader->roots[i].is_directory)
			walk_directory(reader, reader->roots[i].path);
		else
			read_file(reader, reader->roots[i].path);
	}
	chunk_queue_close(reader->queue);
	return NULL;
}
