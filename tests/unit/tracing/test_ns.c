// SPDX-License-Identifier: MIT
/*
 * capture/ns: how a process's files are reached from khprof's root, its
 * pid as it sees itself, its cgroup and the container id the cgroup names,
 * from the texts /proc shows, and the same read from this process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ns.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_nspid(void **state)
{
	(void)state;
	assert_int_equal(ns__parse_nspid("Name:\tx\nNSpid:\t4242\nNSpgid:\t1\n"), 4242);
	/* From khprof's namespace down: the last is the process's own. */
	assert_int_equal(ns__parse_nspid("Name:\tx\nNSpid:\t27094\t300\t1\nNSpgid:\t1\n"), 1);
	assert_int_equal(ns__parse_nspid("NSpid:\t7\t2"), 2);
	assert_int_equal(ns__parse_nspid("Name:\tx\nPid:\t5\n"), 0);
	assert_int_equal(ns__parse_nspid("Name:\tx\nNSpid:\tbad\n"), 0);
	assert_int_equal(ns__parse_nspid("Name:\tx\nNSpid:\n"), 0);
}

static void test_cgroup_lines(void **state)
{
	char path[NS_CGROUP_MAX];

	(void)state;
	assert_int_equal(ns__parse_cgroup("0::/system.slice/docker-" ID64 ".scope\n", path,
					  sizeof(path)), 0);
	assert_string_equal(path, "/system.slice/docker-" ID64 ".scope");
	/* Hybrid: the v2 line wins over the v1 hierarchies before it. */
	assert_int_equal(ns__parse_cgroup("9:name=systemd:/kt3\n4:memory:/x/kt3\n0::/kt3\n", path,
					  sizeof(path)), 0);
	assert_string_equal(path, "/kt3");
	/* v1 only: the first hierarchy's path. */
	assert_int_equal(ns__parse_cgroup("12:pids:/docker/" ID64 "\n11:cpu:/docker/" ID64 "\n",
					  path, sizeof(path)), 0);
	assert_string_equal(path, "/docker/" ID64);
	assert_int_equal(ns__parse_cgroup("", path, sizeof(path)), -ENOENT);
	assert_int_equal(ns__parse_cgroup("garbage\n", path, sizeof(path)), -ENOENT);
}

static void expect_id(const char *cgroup, const char *id)
{
	char out[NS_CONTAINER_ID_LEN + 1];

	assert_int_equal(ns__container_id(cgroup, out), id[0] != '\0');
	assert_string_equal(out, id);
}

static void test_container_ids(void **state)
{
	(void)state;
	expect_id("/system.slice/docker-" ID64 ".scope", ID64);
	expect_id("/system.slice/cri-containerd-" ID64 ".scope", ID64);
	expect_id("/machine.slice/libpod-" ID64 ".scope/container", ID64);
	expect_id("/docker/" ID64, ID64);
	expect_id("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6a1d2b3c_"
		  "4e5f_6789_abcd_ef0123456789.slice/crio-" ID64 ".scope", ID64);
	/* The innermost of two (a container inside a container's cgroup). */
	expect_id("/docker/" ID64 "/docker/fedcba9876543210fedcba9876543210fedcba9876543210"
		  "fedcba9876543210", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876"
		  "543210");
	/* Not 64 digits: a pod's uuid, a runc name, a service. */
	expect_id("/kubepods/besteffort/pod6a1d2b3c-4e5f-6789-abcd-ef0123456789", "");
	expect_id("/kt3", "");
	expect_id("/user.slice/user-0.slice/session-1.scope", "");
	expect_id("/docker/" ID64 "0", "");
	expect_id("/docker/" ID64 "x", ID64);
}

static void view(struct ns_view *v, pid_t pid, const char *root, bool same_mount_ns)
{
	memset(v, 0, sizeof(*v));
	v->pid = pid;
	snprintf(v->root, sizeof(v->root), "%s", root);
	v->same_mount_ns = same_mount_ns;
	v->own_root = same_mount_ns && !strcmp(root, "/");
}

static void expect_shown(const struct ns_view *v, const char *shown, const char *want)
{
	char out[PATH_MAX];
	int err = ns__shown_path(v, shown, out, sizeof(out));

	if (!want) {
		assert_int_equal(err, -ENOENT);
		return;
	}
	assert_int_equal(err, 0);
	assert_string_equal(out, want);
}

static void test_shown_paths(void **state)
{
	struct ns_view v;
	char out[PATH_MAX];

	(void)state;
	/* khprof's own root: the path as it is. */
	view(&v, 42, "/", true);
	expect_shown(&v, "/usr/bin/kh-scan", "/usr/bin/kh-scan");
	/* A container's pivoted root (runc): maps shows its own paths. */
	view(&v, 42, "/", false);
	expect_shown(&v, "/usr/bin/kh-scan", "/proc/42/root/usr/bin/kh-scan");
	/* chroot in khprof's namespace: the shown path runs through the root. */
	view(&v, 42, "/srv/root", true);
	expect_shown(&v, "/srv/root/bin/kh-scan", "/proc/42/root/bin/kh-scan");
	expect_shown(&v, "/srv/rootless/x", "/srv/rootless/x"); /* outside it: khprof's own */
	/* unshare -m and chroot: the namespace's path of both, out of khprof's reach. */
	view(&v, 42, "/srv/root", false);
	expect_shown(&v, "/srv/root/bin/kh-scan", "/proc/42/root/bin/kh-scan");
	expect_shown(&v, "/srv/root", "/proc/42/root/");
	expect_shown(&v, "/srv/rootless/x", NULL);
	assert_int_equal(ns__shown_path(&v, "/srv/root/bin/kh-scan", out, 8), -ENAMETOOLONG);
}

static void test_inner_paths(void **state)
{
	struct ns_view v;
	char out[PATH_MAX];

	(void)state;
	view(&v, 42, "/", true);
	assert_int_equal(ns__inner_path(&v, "/lib64/ld-linux-x86-64.so.2", out, sizeof(out)), 0);
	assert_string_equal(out, "/lib64/ld-linux-x86-64.so.2");
	view(&v, 42, "/srv/root", true);
	assert_int_equal(ns__inner_path(&v, "/lib64/ld-linux-x86-64.so.2", out, sizeof(out)), 0);
	assert_string_equal(out, "/proc/42/root/lib64/ld-linux-x86-64.so.2");
	view(&v, 42, "/", false);
	assert_int_equal(ns__inner_path(&v, "bin/x", out, sizeof(out)), 0);
	assert_string_equal(out, "/proc/42/root/bin/x");
}

/* This process, as khprof would see it: its own root, its own pid. */
static void test_self(void **state)
{
	struct ns_identity id;
	struct ns_view v;
	char cgroup[NS_CGROUP_MAX], which[32];
	pid_t pid;

	(void)state;
	assert_int_equal(ns__view(getpid(), &v), 0);
	assert_true(v.same_mount_ns);
	assert_int_equal(ns__identity(getpid(), &id), 0);
	/* The tests run in khprof's namespace: the pid it sees is ours. */
	assert_int_equal(id.ns_pid, getpid());
	assert_true(id.cgroup[0] == '/');
	snprintf(which, sizeof(which), "%d", getpid());
	assert_int_equal(ns__container_process(which, &pid, cgroup), 0);
	assert_int_equal(pid, getpid());
	assert_string_equal(cgroup, id.cgroup);
	assert_int_equal(ns__view(-1, &v), -ESRCH);
	assert_int_equal(ns__container_process("0", &pid, cgroup), -ENOENT);
	assert_int_equal(ns__container_process("kt3", &pid, cgroup), -EINVAL);
	assert_int_equal(ns__container_process("/no-such-cgroup-of-khprof", &pid, cgroup), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nspid),
		cmocka_unit_test(test_cgroup_lines),
		cmocka_unit_test(test_container_ids),
		cmocka_unit_test(test_shown_paths),
		cmocka_unit_test(test_inner_paths),
		cmocka_unit_test(test_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
