// SPDX-License-Identifier: MIT
/*
 * A forked child's probe sites put back as they are in the file
 * (userspace/capture/stops/sites.h), without BPF: this test maps a file of
 * its own, changes two of its sites in its own memory the way a uprobe
 * does (an int3 over a 1-byte nop, a call over a 5-byte nop), forks a
 * child that waits stopped, and checks what restoring does to the child,
 * and that the parent's memory, a copy-on-write twin, keeps its changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "khtest.h"
#include "sites.h"

#define PAGE 4096
#define SITE_CALL 0x100  /* a 5-byte nop, made a call */
#define SITE_INT3 0x200  /* a 1-byte nop, made an int3 */
#define SITE_SAME 0x300  /* a 5-byte nop, left alone */
#define SITE_OTHER 0x400 /* a 5-byte nop, changed to what no uprobe writes */

static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const uint8_t call[5] = { 0xe8, 0x12, 0x34, 0x56, 0x78 };
static const uint8_t other[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x01 };

/* A file of two pages of int3s with the four sites, as a program's text. */
static char *make_text_file(void)
{
	uint8_t text[2 * PAGE];
	char *path;
	int fd = temp_file(&path);

	assert_true(fd >= 0);
	memset(text, 0xcc, sizeof(text));
	memcpy(text + SITE_CALL, nop5, 5);
	text[SITE_INT3] = 0x90;
	memcpy(text + SITE_SAME, nop5, 5);
	memcpy(text + SITE_OTHER, nop5, 5);
	assert_int_equal(write(fd, text, sizeof(text)), (ssize_t)sizeof(text));
	close(fd);
	return path;
}

/* Writes into this process's own private mapping, as the kernel's uprobe does. */
static void poke_self(uint8_t *at, const void *bytes, size_t len)
{
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, len, (off_t)(uintptr_t)at), (ssize_t)len);
	close(fd);
}

static void peek(pid_t pid, const uint8_t *at, void *out, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)at, len };

	assert_int_equal(process_vm_readv(pid, &local, 1, &remote, 1, 0), (ssize_t)len);
}

/* A forked child that stops at once and exits 0 when continued. */
static pid_t stopped_child(void)
{
	siginfo_t info;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WSTOPPED | WNOWAIT), 0);
	return pid;
}

static void test_restore_child(void **state)
{
	const __u64 offsets[] = { SITE_CALL, SITE_INT3, SITE_SAME, SITE_OTHER };
	struct site_table *table;
	uint8_t got[5], *text;
	char *path = make_text_file();
	int fd, table_fd;
	pid_t child;

	(void)state;
	assert_int_equal(sites__create(&table, &table_fd), 0);
	assert_int_equal(sites__publish(table, path, offsets, 4), 0);
	/* A file already kept is kept once. */
	assert_int_equal(sites__publish(table, path, offsets, 4), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	text = mmap(NULL, 2 * PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(text != MAP_FAILED);
	close(fd);
	poke_self(text + SITE_CALL, call, 5);
	poke_self(text + SITE_INT3, "\xcc", 1);
	poke_self(text + SITE_OTHER, other, 5);

	child = stopped_child();
	assert_int_equal(sites__restore(table, child), 2);
	peek(child, text + SITE_CALL, got, 5);
	assert_memory_equal(got, nop5, 5);
	peek(child, text + SITE_INT3, got, 1);
	assert_int_equal(got[0], 0x90);
	peek(child, text + SITE_SAME, got, 5);
	assert_memory_equal(got, nop5, 5);
	peek(child, text + SITE_OTHER, got, 5);
	assert_memory_equal(got, other, 5); /* not a uprobe's: kept */
	/* The parent's copy keeps what was written into it. */
	assert_memory_equal(text + SITE_CALL, call, 5);
	assert_int_equal(text[SITE_INT3], 0xcc);
	/* Restored already: nothing left to do. */
	assert_int_equal(sites__restore(table, child), 0);

	assert_int_equal(kill(child, SIGCONT), 0);
	assert_int_equal(wait_exit(child), 0);
	assert_int_equal(sites__restore(table, child), -ESRCH);
	munmap(text, 2 * PAGE);
	sites__unmap(table);
	close(table_fd);
	unlink(path);
	free(path);
}

/* The keeper's view: the same table mapped from its memfd sees what khprof kept. */
static void test_table_shared(void **state)
{
	const __u64 offsets[] = { SITE_INT3 };
	struct site_table *mine, *theirs;
	char *path = make_text_file();
	uint8_t *text;
	int fd, table_fd;
	pid_t child;

	(void)state;
	assert_int_equal(sites__create(&mine, &table_fd), 0);
	assert_int_equal(sites__map(&theirs, table_fd), 0);
	assert_int_equal(sites__publish(mine, path, offsets, 1), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	text = mmap(NULL, 2 * PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(text != MAP_FAILED);
	close(fd);
	poke_self(text + SITE_INT3, "\xcc", 1);
	child = stopped_child();
	assert_int_equal(sites__restore(theirs, child), 1);
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	munmap(text, 2 * PAGE);
	sites__unmap(theirs);
	sites__unmap(mine);
	close(table_fd);
	unlink(path);
	free(path);
	/* A descriptor that is not a table is refused. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(sites__map(&theirs, fd), -EINVAL);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_child),
		cmocka_unit_test(test_table_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
