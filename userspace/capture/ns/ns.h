/* SPDX-License-Identifier: MIT */
/*
 * ns.h - a traced process among namespaces and cgroups: the one place
 * khprof looks at /proc/PID/root, /proc/PID/ns, NSpid and cgroups.
 *
 * A process in a container names its files by its own root: the paths
 * /proc/PID/maps shows, PT_INTERP, what an operator knows from inside the
 * container.  khprof opens them through /proc/PID/root, never through its
 * own root, where the same path may be another file or none.
 */
#ifndef KHPROF_NS_H
#define KHPROF_NS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * How khprof reaches a process's files.  The kernel shows a path
 * (/proc/PID/maps, readlink of /proc/PID/root) relative to khprof's own
 * root where the file is reachable from it, else relative to the root of
 * the process's mount namespace; root is the process's root shown the
 * same way, so a shown path under it is root + the path the process uses.
 */
struct ns_view {
	pid_t pid;
	bool own_root;        /* khprof's mount namespace and root: shown paths are khprof's */
	bool same_mount_ns;   /* khprof's mount namespace (a chroot at most) */
	char root[PATH_MAX];  /* readlink /proc/PID/root */
};

/* pid's view; 0, or -errno when /proc/PID/root cannot be read (-ESRCH: gone). */
int ns__view(pid_t pid, struct ns_view *v);

/*
 * Where khprof opens a file the kernel shows for v's process (a path of
 * /proc/PID/maps): the path itself when the process shares khprof's root,
 * else /proc/PID/root and the path inside its root.  0, or -ENOENT for a
 * file outside its root in another mount namespace (nothing names it).
 */
int ns__shown_path(const struct ns_view *v, const char *shown, char *out, size_t len);

/*
 * The path v's process itself uses for a shown path (its $ORIGIN, say):
 * the shown path inside its root.  0, or -ENOENT outside its root.
 */
int ns__inner_of(const struct ns_view *v, const char *shown, char *out, size_t len);

/*
 * Where khprof opens a path as v's process itself names it (PT_INTERP,
 * a path inside a container): inner resolved against the process's root.
 * 0, or -ENAMETOOLONG.
 */
int ns__inner_path(const struct ns_view *v, const char *inner, char *out, size_t len);

/* How long a container id is: 64 hex digits (Docker, containerd, CRI-O, Podman). */
#define NS_CONTAINER_ID_LEN 64
#define NS_CGROUP_MAX 512

/* Who a process is, as itself and its container see it. */
struct ns_identity {
	pid_t ns_pid;          /* its pid in its own PID namespace (getpid()); 0 unknown */
	uint64_t cgroup_id;    /* cgroup v2 id (its directory's inode number); 0 unknown */
	char cgroup[NS_CGROUP_MAX];  /* cgroup v2 path, else the v1 one; "" unknown */
	char container_id[NS_CONTAINER_ID_LEN + 1]; /* from the cgroup path; "" none */
};

/*
 * pid's identity from /proc/PID/status and /proc/PID/cgroup, the cgroup
 * id from the cgroup2 file system where khprof has one mounted.  Fields
 * that cannot be read are left unknown; 0, or -errno when neither file
 * could be read.
 */
int ns__identity(pid_t pid, struct ns_identity *id);

/* The last NSpid of a status file (the pid in the process's own namespace); 0 without. */
pid_t ns__parse_nspid(const char *status);
/*
 * The cgroup path of a /proc/PID/cgroup text: the v2 line's ("0::PATH"),
 * else the first v1 line's; -ENOENT when there is none.
 */
int ns__parse_cgroup(const char *text, char *path, size_t len);
/*
 * The container id a cgroup path names: the last run of exactly 64 hex
 * digits in it (docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
 * libpod-ID.scope, /docker/ID, a pod's /ID), into out (65 bytes); false
 * when it names none.
 */
bool ns__container_id(const char *cgroup, char *out);

/*
 * What an operator names a container by: a host PID of one of its
 * processes (its init's), its id (64 hex digits, or the first 12 or more,
 * as `docker ps` shows it: found in the cgroup2 tree's names), or its
 * cgroup path as /proc/PID/cgroup shows it or under the cgroup2 mount
 * (/sys/fs/cgroup/...).  The pid of a process in it (0 for an empty
 * cgroup), and its cgroup path (NS_CGROUP_MAX bytes); -ENOENT (no such
 * process, container or cgroup) or -EINVAL (none of these forms).
 */
int ns__container_process(const char *which, pid_t *pid, char *cgroup);

/*
 * Where khprof's mount namespace has the cgroup2 file system, the whole
 * hierarchy: /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a
 * hybrid one; "" when none.
 */
const char *ns__cgroup2_mount(void);

/*
 * The cgroup2 directory of a cgroup path, opened (O_DIRECTORY), for the BPF
 * side's cgroup checks; -EOPNOTSUPP where khprof has no cgroup2 mounted.
 */
int ns__cgroup_open(const char *cgroup);

/*
 * Calls fn with every process in the cgroup and those below it, until fn
 * returns non-zero: which processes a container or a pod has, whatever
 * cgroup namespace khprof sees their paths from.  0, fn's value,
 * -EOPNOTSUPP without cgroup2, or -ENOENT.
 */
int ns__for_each_member(const char *cgroup, int (*fn)(pid_t pid, void *ctx), void *ctx);

/* khprof's own PID namespace, by its inode number; 0 where there is no /proc/self/ns. */
uint32_t ns__own_pid_ns_inum(void);
/* Whether khprof runs in the initial PID namespace (where the kernel's pids are its). */
bool ns__in_initial_pid_ns(void);

#endif /* KHPROF_NS_H */
