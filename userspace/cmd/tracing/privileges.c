// SPDX-License-Identifier: MIT
/* Whom COMMAND runs as, and what khprof keeps (privileges.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "privileges.h"
#include "record.h"

/* name's groups (initgroups' list), or gid alone without a name. */
static int lookup_groups(struct run_as *out)
{
	int n = (int)(sizeof(out->groups) / sizeof(out->groups[0]));

	if (!out->name[0]) {
		out->groups[0] = out->gid;
		out->group_count = 1;
		return 0;
	}
	if (getgrouplist(out->name, out->gid, out->groups, &n) < 0) {
		log__error("cannot run COMMAND as user '%s': in more than %zu groups", out->name,
			   sizeof(out->groups) / sizeof(out->groups[0]));
		return -E2BIG;
	}
	out->group_count = n;
	return 0;
}

static int from_passwd(const struct passwd *pw, struct run_as *out)
{
	out->uid = pw->pw_uid;
	out->gid = pw->pw_gid;
	snprintf(out->name, sizeof(out->name), "%s", pw->pw_name);
	return lookup_groups(out);
}

/* A decimal id as in SUDO_UID: "1000", not "", "-1" or "1000x". */
static int parse_id(const char *text, uint32_t *out)
{
	uint64_t value;

	if (!text || kh_parse_u64(text, &value) || value >= UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)value;
	return 0;
}

static int resolve_user(const char *user, struct run_as *out)
{
	struct passwd *pw = getpwnam(user);
	uint32_t id;

	if (!pw && parse_id(user, &id) == 0)
		pw = getpwuid(id);
	if (!pw) {
		log__error("unknown user '%s' for --user (a name or uid in the password "
			   "database)", user);
		return -EINVAL;
	}
	out->why = "--user";
	return from_passwd(pw, out);
}

/* sudo sets SUDO_UID and SUDO_GID to whoever ran it. */
static int resolve_sudo(struct run_as *out)
{
	const char *uid_text = getenv("SUDO_UID"), *gid_text = getenv("SUDO_GID");
	struct passwd *pw;
	uint32_t uid, gid;

	if (parse_id(uid_text, &uid) || parse_id(gid_text, &gid)) {
		log__error("bad SUDO_UID '%s' or SUDO_GID '%s': expected numbers (unset them, or "
			   "say whom to run COMMAND as with --user)", uid_text ? uid_text : "",
			   gid_text ? gid_text : "");
		return -EINVAL;
	}
	out->uid = uid;
	out->gid = gid;
	pw = getpwuid(uid);
	if (pw)
		snprintf(out->name, sizeof(out->name), "%s", pw->pw_name);
	out->why = "SUDO_UID";
	return lookup_groups(out);
}

int run_as__resolve(const char *user, struct run_as *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (user) {
		err = resolve_user(user, out);
		out->change_user = true;
	} else if (getuid() == 0 && getenv("SUDO_UID")) {
		err = resolve_sudo(out);
		out->change_user = true;
	} else {
		/* Root without sudo has no one else to be: it stays root. */
		out->uid = getuid();
		out->gid = getgid();
		out->why = "khprof's own user";
		err = 0;
	}
	out->keep_privileges = out->uid == 0;
	return err;
}

void run_as__describe(const struct run_as *r, char *out, size_t len)
{
	if (r->name[0])
		snprintf(out, len, "user '%s' (uid %u, gid %u)", r->name, (unsigned)r->uid,
			 (unsigned)r->gid);
	else
		snprintf(out, len, "uid %u, gid %u", (unsigned)r->uid, (unsigned)r->gid);
}

/* Empties the bounding set: no later exec can gain a capability back. */
static int drop_bounding(void)
{
	for (cap_value_t cap = 0; cap < (cap_value_t)cap_max_bits(); cap++)
		if (cap_drop_bound(cap) != 0)
			return -errno;
	return 0;
}

static int clear_capabilities(void)
{
	cap_t none = cap_init(); /* every flag of every capability clear */
	int err = 0;

	if (!none)
		return -errno;
	if (cap_set_proc(none) != 0)
		err = -errno;
	cap_free(none);
	return err;
}

static bool has_capability(cap_value_t cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (caps) {
		cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
		cap_free(caps);
	}
	return v == CAP_SET;
}

int run_as__apply(const struct run_as *r, const char **step)
{
	if (r->change_user) {
		/* Groups and gid first: changing uid takes the right to. */
		*step = "setgroups";
		if (setgroups((size_t)r->group_count, r->groups) != 0)
			return -errno;
		*step = "setresgid";
		if (setresgid(r->gid, r->gid, r->gid) != 0)
			return -errno;
	}
	if (r->keep_privileges)
		return 0;
	/*
	 * Without CAP_SETPCAP (khprof given only CAP_BPF and CAP_PERFMON) the
	 * bounding set stays; no_new_privs below still stops an exec gaining
	 * capabilities from file capabilities or a set-user-ID bit.
	 */
	*step = "dropping the bounding set";
	if (has_capability(CAP_SETPCAP) && drop_bounding() != 0)
		return -errno;
	*step = "clearing the ambient set";
	if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() != 0)
		return -errno;
	if (r->change_user) {
		*step = "setresuid";
		if (setresuid(r->uid, r->uid, r->uid) != 0)
			return -errno;
	}
	*step = "clearing the capability sets";
	if (clear_capabilities() != 0)
		return -errno;
	*step = "prctl(PR_SET_NO_NEW_PRIVS)";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	return 0;
}

/*
 * What khprof still does after attaching (docs/PRIVILEGES.md): attach
 * libraries the program dlopens later (BPF links: CAP_BPF, CAP_PERFMON),
 * read the /proc files of a process that runs as another user
 * (CAP_SYS_PTRACE), read those libraries and write records wherever the
 * user who ran it may (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), give them to
 * the user who ran sudo (CAP_CHOWN), and pass signals on to the command
 * (CAP_KILL).
 */
static const cap_value_t kept[] = {
	CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_KILL,
	CAP_CHOWN,
};

int privileges__drop_own(bool keep_admin)
{
	cap_t now = cap_get_proc(), keep = cap_init();
	cap_flag_value_t v;
	int err = 0;

	if (!now || !keep) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		if (!CAP_IS_SUPPORTED(kept[i]) ||
		    cap_get_flag(now, kept[i], CAP_PERMITTED, &v) || v != CAP_SET)
			continue;
		cap_set_flag(keep, CAP_PERMITTED, 1, &kept[i], CAP_SET);
		cap_set_flag(keep, CAP_EFFECTIVE, 1, &kept[i], CAP_SET);
	}
	if (keep_admin && cap_get_flag(now, CAP_SYS_ADMIN, CAP_PERMITTED, &v) == 0 &&
	    v == CAP_SET) {
		cap_value_t admin = CAP_SYS_ADMIN;

		cap_set_flag(keep, CAP_PERMITTED, 1, &admin, CAP_SET);
		cap_set_flag(keep, CAP_EFFECTIVE, 1, &admin, CAP_SET);
	}
	/* The bounding set needs CAP_SETPCAP, which goes with the rest. */
	if (has_capability(CAP_SETPCAP))
		err = drop_bounding();
	if (!err && CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() != 0)
		err = -errno;
	if (!err && cap_set_proc(keep) != 0)
		err = -errno;
out:
	if (err)
		log__warn("cannot drop khprof's own capabilities: %s; it keeps them until it "
			  "exits", strerror(-err));
	cap_free(now);
	cap_free(keep);
	return err;
}

void privileges__give_files_to_sudo_user(void)
{
	uint32_t uid, gid;

	if (getuid() != 0 || parse_id(getenv("SUDO_UID"), &uid) || parse_id(getenv("SUDO_GID"), &gid))
		return;
	file__give_new_to((uid_t)uid, (gid_t)gid);
}
