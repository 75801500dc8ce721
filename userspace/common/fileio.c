// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"

/* Attempts at a fresh temporary name before giving up. */
#define TEMP_ATTEMPTS 100

int fd__write_all(int fd, const void *buf, size_t len)
{
	const char *data = buf;

	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Splits path into its directory (for the temporary file) and base name. */
static int path__split(const char *path, char **dir, char **base)
{
	char *dir_copy = strdup(path), *base_copy = strdup(path);

	*dir = *base = NULL;
	if (!dir_copy || !base_copy) {
		free(dir_copy);
		free(base_copy);
		return -ENOMEM;
	}
	*dir = strdup(dirname(dir_copy));
	*base = strdup(basename(base_copy));
	free(dir_copy);
	free(base_copy);
	if (!*dir || !*base) {
		free(*dir);
		free(*base);
		*dir = *base = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* file__give_new_to's owner; -1: files stay khprof's. */
static uid_t new_owner_uid = (uid_t)-1;
static gid_t new_owner_gid = (gid_t)-1;

void file__give_new_to(uid_t uid, gid_t gid)
{
	new_owner_uid = uid;
	new_owner_gid = gid;
}

/* Best effort: a file that cannot be given away is still written. */
static void give_away(int fd)
{
	if (new_owner_uid != (uid_t)-1 && fchown(fd, new_owner_uid, new_owner_gid) != 0)
		log__debug("cannot give a new file to uid %u: %s", (unsigned)new_owner_uid,
			   strerror(errno));
}

int dir__create(const char *path, mode_t mode)
{
	int fd;

	if (mkdir(path, mode) != 0)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		give_away(fd);
		close(fd);
	}
	return 0;
}

/*
 * O_EXCL on a name of our own rather than mkstemp(): mkstemp creates mode
 * 0600, and fixing that needs the umask, which cannot be read safely.
 */
static int temp__create(const char *dir, const char *base, char *name, size_t size)
{
	static unsigned long counter;

	for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
		unsigned long n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
		int fd;

		if ((size_t)snprintf(name, size, "%s/.%s.%ld.%lu.tmp", dir, base, (long)getpid(),
				     n) >= size)
			return -ENAMETOOLONG;
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0)
			give_away(fd);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* Makes the rename itself durable. */
static int dir__sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		err = -errno;
	close(fd);
	return err;
}

static int temp__fill(int fd, const void *data, size_t len)
{
	int err = fd__write_all(fd, data, len);

	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

/* A temporary file beside path: its names, freed by temp_beside__free. */
struct temp_beside {
	char *dir, *base, *name;
};

static void temp_beside__free(struct temp_beside *t)
{
	free(t->name);
	free(t->dir);
	free(t->base);
}

/* Creates it: an open descriptor, or a negative errno with nothing left behind. */
static int temp_beside__create(struct temp_beside *t, const char *path)
{
	size_t size;
	int err;

	memset(t, 0, sizeof(*t));
	err = path__split(path, &t->dir, &t->base);
	if (err)
		return err;
	size = strlen(t->dir) + strlen(t->base) + 64;
	t->name = malloc(size);
	if (!t->name)
		return -ENOMEM;
	return temp__create(t->dir, t->base, t->name, size);
}

int file__write_atomic(const char *path, const void *data, size_t len)
{
	struct temp_beside t;
	int fd, err;

	if (!path || !*path || (!data && len))
		return -EINVAL;
	fd = temp_beside__create(&t, path);
	if (fd < 0) {
		temp_beside__free(&t);
		return fd;
	}
	err = temp__fill(fd, data, len);
	if (!err && rename(t.name, path) < 0)
		err = -errno;
	if (err)
		unlink(t.name);
	else
		err = dir__sync(t.dir);
	temp_beside__free(&t);
	return err;
}

int file__check_writable(const char *path)
{
	struct temp_beside t;
	struct stat st;
	int fd;

	if (!path || !*path)
		return -EINVAL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	/*
	 * What file__write_atomic will do, done now: a real temporary file is
	 * the one test that sees a missing or read-only directory, a read-only
	 * mount and permissions (access(2) answers yes to root everywhere).
	 */
	fd = temp_beside__create(&t, path);
	if (fd >= 0) {
		close(fd);
		unlink(t.name);
	}
	temp_beside__free(&t);
	return fd < 0 ? fd : 0;
}

/*
 * Reads at most max + 1 bytes: one more than allowed proves too big.  A
 * regular file's size (hint) sizes the buffer at once, so that a 500 MB
 * record is not copied through a dozen doublings.
 */
static int read_fd(int fd, char **out, size_t *len, size_t max, size_t hint)
{
	size_t cap = hint && hint < max ? hint + 2 : 4096, used = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (used > max) {
			free(buf);
			return -EFBIG;
		}
		if (used == cap - 1) {
			size_t grown_cap = cap * 2 > max + 2 ? max + 2 : cap * 2;
			char *grown = realloc(buf, grown_cap);

			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap = grown_cap;
		}
		n = read(fd, buf + used, cap - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			free(buf);
			return err;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	*out = buf;
	*len = used;
	return 0;
}

int fd__read_all(int fd, char **out, size_t *len, size_t max)
{
	*out = NULL;
	*len = 0;
	return read_fd(fd, out, len, max, 0);
}

int file__read_all(const char *path, char **out, size_t *len)
{
	return file__read_all_max(path, out, len, FILE_READ_MAX);
}

int file__read_all_max(const char *path, char **out, size_t *len, size_t max)
{
	struct stat st;
	int fd, err;

	*out = NULL;
	*len = 0;
	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	/* A regular file announces its size: refuse a huge one before reading. */
	else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max)
		err = -EFBIG;
	else
		err = read_fd(fd, out, len, max, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0);
	close(fd);
	return err;
}

pid_t process__fork_quiet(void)
{
	int redirected[2];
	pid_t pid;
	char c;

	/*
	 * The parent returns only once the child has let go of its stdio:
	 * otherwise a parent that exits at once (the link releaser) left the
	 * child holding them for a moment, and a reader of the parent's
	 * output missed its EOF (tests/integration/commands/test_record_cli.c).
	 */
	if (pipe2(redirected, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		for (int fd = 0; fd < 3; fd++)
			dup2(null_fd, fd);
		close(redirected[0]);
		close(redirected[1]); /* the parent's read sees EOF */
		return 0;
	}
	close(redirected[1]);
	if (pid > 0)
		while (read(redirected[0], &c, 1) < 0 && errno == EINTR)
			;
	close(redirected[0]);
	return pid;
}
