/* SPDX-License-Identifier: MIT */
/*
 * fileio.h - whole-file reads, crash-safe whole-file writes, and quiet
 * background helpers.
 */
#ifndef KHPROF_FILEIO_H
#define KHPROF_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Largest file file__read_all() accepts: config files, /proc. */
#define FILE_READ_MAX (64u << 20)
/*
 * Largest record the reader accepts (docs/SCHEMA.md): the seed reads a
 * 505 MB record, and a record's memory is about 1.3 times its size here.
 */
#define FILE_RECORD_MAX ((size_t)4 << 30)

/*
 * Replaces path with data so that readers see the old or the new content,
 * never a part: a temporary file in the same directory is written, synced
 * and renamed over path, then the directory is synced.  The new file gets
 * 0666 less the umask, like fopen().  0 or -errno; on failure no
 * temporary file is left behind.
 */
int file__write_atomic(const char *path, const void *data, size_t len);
/*
 * Whether file__write_atomic(path) could write now: a temporary file is
 * created in path's directory and removed.  0, -EISDIR when path is a
 * directory, or the -errno of the create (-ENOENT: the directory is
 * missing, -ENOTDIR, -EACCES, -EROFS).
 */
int file__check_writable(const char *path);
/* write(2) until all of len is written, through EINTR; 0 or -errno. */
int fd__write_all(int fd, const void *data, size_t len);

/*
 * Reads all of path into a malloc'd, NUL-terminated buffer (*len excludes
 * the NUL).  Works for files whose size is not known up front (/proc,
 * pipes).  0, -errno, or -EFBIG past FILE_READ_MAX.
 */
int file__read_all(const char *path, char **out, size_t *len);
/*
 * What fd gives until its end (a pipe, an iterator), at most max bytes:
 * malloc'd and NUL-terminated into *out.  0, -EFBIG beyond max, -errno.
 */
int fd__read_all(int fd, char **out, size_t *len, size_t max);
/* The same with a limit of max bytes instead of FILE_READ_MAX. */
int file__read_all_max(const char *path, char **out, size_t *len, size_t max);

/*
 * fork() for a background helper that outlives its work: in the child,
 * standard input, output and error are /dev/null (already when the parent
 * returns), so whoever reads the parent's output never waits for the
 * helper to exit.  -1 with errno set if it cannot.
 */
pid_t process__fork_quiet(void);

/*
 * Files and directories khprof creates from here on (file__write_atomic,
 * dir__create) are given to uid:gid: under sudo, the records belong to
 * whoever ran sudo, as if they had run khprof.  Giving one away needs
 * CAP_CHOWN; without it, it stays khprof's.
 */
void file__give_new_to(uid_t uid, gid_t gid);
/* mkdir(2), the new directory given away as above; 0 or -errno. */
int dir__create(const char *path, mode_t mode);

#endif /* KHPROF_FILEIO_H */
