/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys_apparmor.c - the apparmor row: does the package's AppArmor profile confine this
 * process, and in which mode. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "checksys_internal.h"

#define AA_PROFILE "/usr/sbin/portlogd"
#define AA_FILE "/etc/apparmor.d/usr.sbin.portlogd"

/* "NAME (MODE)" -> MODE in out; "unconfined" (no mode) -> "unconfined". */
static void label_mode(const char *label, char *out, size_t len)
{
	const char *open = strrchr(label, '(');
	size_t n;

	if (open == NULL || label[strlen(label) - 1] != ')') {
		snprintf(out, len, "unconfined");
		return;
	}
	n = strlen(open + 1) - 1;
	snprintf(out, len, "%.*s", (int)n, open + 1);
}

/* The profile's line in ROOT/sys/kernel/security/apparmor/profiles ("NAME (MODE)"):
 * its mode in out, 1; 0 when not loaded; -errno when the list is not readable (only
 * root may read it). */
static int loaded_mode(const struct checksys *cs, char *out, size_t len)
{
	char list[16384], *line, *save = NULL;
	int n = read_at(cs, list, sizeof(list), "/sys/kernel/security/apparmor/profiles");

	if (n < 0)
		return n;
	for (line = strtok_r(list, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, AA_PROFILE " (", strlen(AA_PROFILE) + 2) == 0) {
			label_mode(line, out, len);
			return 1;
		}
	return 0;
}

void checksys_apparmor(const struct checksys *cs, struct checksys_result *r)
{
	char enabled[8], label[256], mode[32], loaded[32], file[PATH_MAX];
	int rc;

	if (read_at(cs, enabled, sizeof(enabled), "/sys/module/apparmor/parameters/enabled") < 0
	    || enabled[0] != 'Y') {
		set(r, CHECKSYS_OK, "apparmor", "not loaded: AppArmor is off in this kernel; the "
		    "unit's sandbox alone confines the service");
		return;
	}
	/* the LSM's own file since Linux 5.8; attr/current, shared by every LSM, before */
	if (read_at(cs, label, sizeof(label), "/proc/self/attr/apparmor/current") <= 0
	    && read_at(cs, label, sizeof(label), "/proc/self/attr/current") <= 0)
		snprintf(label, sizeof(label), "unconfined");
	label_mode(label, mode, sizeof(mode));
	if (strcmp(mode, "enforce") == 0) {
		set(r, CHECKSYS_OK, "apparmor", "enforce: this process runs confined by the profile "
		    "%s; a denial is a kernel log line (journalctl -k | grep DENIED)", label);
		return;
	}
	if (strcmp(mode, "unconfined") != 0) {
		set(r, CHECKSYS_WARN, "apparmor", "%s: this process runs as %s, which logs what the "
		    "profile forbids and refuses nothing; fix: aa-enforce %s, then restart the "
		    "service", mode, label, AA_FILE);
		return;
	}
	rc = loaded_mode(cs, loaded, sizeof(loaded));
	path_at(cs, file, sizeof(file), AA_FILE);
	if (rc > 0)
		set(r, CHECKSYS_WARN, "apparmor", "unconfined: the profile %s is loaded (%s) but "
		    "this process is not in it (started before the profile was loaded, or not as "
		    "%s); fix: systemctl restart portlogd", AA_PROFILE, loaded, AA_PROFILE);
	else if (rc == 0 && access(file, F_OK) == 0)
		set(r, CHECKSYS_WARN, "apparmor", "not loaded: %s is installed but not in the "
		    "kernel; fix: apparmor_parser -r %s (the package's postinst does it), then "
		    "systemctl restart portlogd", AA_FILE, AA_FILE);
	else if (rc == 0)
		set(r, CHECKSYS_OK, "apparmor", "unconfined: no profile %s (the Debian package "
		    "installs one); the unit's sandbox alone confines the service", AA_FILE);
	else
		set(r, CHECKSYS_OK, "apparmor", "unconfined: whether the profile is loaded only "
		    "root may read (/sys/kernel/security/apparmor/profiles: %s)",
		    strerrorname_np(-rc));
}
