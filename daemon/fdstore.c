/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdstore.c - systemd's file descriptor store: the ports' keepers and the state page. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fdstore.h"

#define FDSTORE_MAGIC "PLGDFS01"

static const char *const role_name[FDSTORE_NROLES] = {
	[FDSTORE_RX] = "rx", [FDSTORE_TX] = "tx", [FDSTORE_PTY] = "pty", [FDSTORE_PTS] = "pts",
};

void fdstore_key(char *out, size_t len, const char *port, enum fdstore_role role)
{
	size_t n = (size_t)snprintf(out, len, "%s/%s", port, role_name[role]);

	for (size_t i = 0; i < n && i < len; i++)
		if (out[i] == ':')
			out[i] = '+';
}

/* The page the previous process left: the same layout, or nothing usable. */
static bool page_fits(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
	       && (size_t)st.st_size == sizeof(struct fdstore_page);
}

static int map_page(struct fdstore *fs, int fd)
{
	void *p = mmap(NULL, sizeof(*fs->page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	fs->page = p;
	fs->page_fd = fd;
	return 0;
}

/* A new page, zeroed (every slot free), in a memfd of its own. */
static int new_page(struct fdstore *fs)
{
	int fd = memfd_create(FDSTORE_STATE_NAME, MFD_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(struct fdstore_page)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = map_page(fs, fd);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	memcpy(fs->page->magic, FDSTORE_MAGIC, sizeof(fs->page->magic));
	fs->page->size = sizeof(struct fdstore_page);
	fs->page->nslots = FDSTORE_SLOTS;
	return 0;
}

static bool send_state(const struct fdstore *fs, const char *text, const int *fd)
{
	/* a failed send is the store's loss only: the port stays open in this process */
	return fs != NULL && fs->enabled
	       && sd_pid_notify_with_fds(0, 0, text, fd, fd != NULL ? 1 : 0) > 0;
}

int fdstore_init(struct fdstore *fs, char *err, size_t errlen)
{
	const char *max = getenv("FDSTORE");
	char **names = NULL, text[64];
	int n, rc, kept = -1;

	memset(fs, 0, sizeof(*fs));
	fs->page_fd = -1;
	fs->max = max != NULL ? (unsigned)strtoul(max, NULL, 10) : 0;
	fs->enabled = getenv("NOTIFY_SOCKET") != NULL && fs->max > 0;
	/* 1: unset LISTEN_*, so that no child of ours takes them for its own */
	n = sd_listen_fds_with_names(1, &names);
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names != NULL && names[i] != NULL ? names[i] : "";

		if (strcmp(name, FDSTORE_STATE_NAME) == 0 && kept < 0) {
			kept = fd;
		} else if (fs->ngot < FDSTORE_GOT_MAX) {
			struct fdstore_got *g = &fs->got[fs->ngot++];

			g->fd = fd;
			snprintf(g->name, sizeof(g->name), "%s", name);
		} else {
			close(fd);
			fs->lost++;
		}
	}
	for (int i = 0; names != NULL && names[i] != NULL; i++)
		free(names[i]);
	free(names);
	if (kept >= 0 && page_fits(kept) && map_page(fs, kept) == 0
	    && memcmp(fs->page->magic, FDSTORE_MAGIC, sizeof(fs->page->magic)) == 0
	    && fs->page->size == sizeof(struct fdstore_page) && fs->page->nslots == FDSTORE_SLOTS) {
		fs->page_kept = true;
		return 0;
	}
	if (fs->page != NULL)
		munmap(fs->page, sizeof(*fs->page));
	fs->page = NULL;
	fs->page_fd = -1;
	if (kept >= 0) {
		/* another layout (another version) or broken: a new one replaces it */
		close(kept);
		snprintf(text, sizeof(text), "FDSTOREREMOVE=1\nFDNAME=%s", FDSTORE_STATE_NAME);
		(void)send_state(fs, text, NULL);
	}
	rc = new_page(fs);
	if (rc < 0) {
		snprintf(err, errlen, "cannot make the state page (memfd_create): %s; a port kept "
			 "across a restart cannot say how long it was unread", strerror(-rc));
		return rc;
	}
	snprintf(text, sizeof(text), "FDSTORE=1\nFDNAME=%s", FDSTORE_STATE_NAME);
	(void)send_state(fs, text, &fs->page_fd);
	return 0;
}

void fdstore_fini(struct fdstore *fs)
{
	for (unsigned i = 0; i < fs->ngot; i++)
		if (!fs->got[i].taken)
			close(fs->got[i].fd);
	fs->ngot = 0;
	if (fs->page != NULL)
		munmap(fs->page, sizeof(*fs->page));
	if (fs->page_fd >= 0)
		close(fs->page_fd);
	fs->page = NULL;
	fs->page_fd = -1;
}

int fdstore_take(struct fdstore *fs, const char *port, enum fdstore_role role)
{
	char key[FDSTORE_KEY_MAX];

	fdstore_key(key, sizeof(key), port, role);
	for (unsigned i = 0; i < fs->ngot; i++) {
		struct fdstore_got *g = &fs->got[i];

		if (!g->taken && strcmp(g->name, key) == 0) {
			g->taken = true;
			return g->fd;
		}
	}
	return -1;
}

struct fdstore_slot *fdstore_slot(struct fdstore *fs, const char *port, enum fdstore_role role)
{
	char key[FDSTORE_KEY_MAX];
	int free_slot = -1;

	if (fs->page == NULL)
		return NULL;
	fdstore_key(key, sizeof(key), port, role);
	for (int i = 0; i < FDSTORE_SLOTS; i++) {
		struct fdstore_slot *s = &fs->page->slot[i];

		if (strncmp(s->key, key, sizeof(s->key)) == 0 && !fs->claimed[i]) {
			fs->claimed[i] = true;
			return s;
		}
		if (free_slot < 0 && s->key[0] == '\0' && !fs->claimed[i])
			free_slot = i;
	}
	if (free_slot < 0) {
		/* a slot of the previous run that this one does not claim (fdstore_finish
		 * would free it): taken over */
		for (int i = 0; i < FDSTORE_SLOTS && free_slot < 0; i++)
			if (!fs->claimed[i])
				free_slot = i;
		if (free_slot < 0)
			return NULL;
	}
	fs->claimed[free_slot] = true;
	memset(&fs->page->slot[free_slot], 0, sizeof(fs->page->slot[free_slot]));
	snprintf(fs->page->slot[free_slot].key, sizeof(fs->page->slot[free_slot].key), "%s", key);
	return &fs->page->slot[free_slot];
}

static bool send_named(const struct fdstore *fs, const char *what, const char *port,
		       enum fdstore_role role, const int *fd)
{
	char key[FDSTORE_KEY_MAX], text[FDSTORE_KEY_MAX + 40];

	fdstore_key(key, sizeof(key), port, role);
	snprintf(text, sizeof(text), "%s=1\nFDNAME=%s", what, key);
	return send_state(fs, text, fd);
}

bool fdstore_put(const struct fdstore *fs, const char *port, enum fdstore_role role, int fd)
{
	return send_named(fs, "FDSTORE", port, role, &fd);
}

void fdstore_drop(const struct fdstore *fs, const char *port, enum fdstore_role role)
{
	(void)send_named(fs, "FDSTOREREMOVE", port, role, NULL);
}

static bool name_taken(const struct fdstore *fs, const char *name)
{
	for (unsigned i = 0; i < fs->ngot; i++)
		if (fs->got[i].taken && !fs->got[i].unwanted && strcmp(fs->got[i].name, name) == 0)
			return true;
	return false;
}

void fdstore_finish(struct fdstore *fs,
		    void (*unwanted)(void *ctx, const char *name, int fd,
				     const struct fdstore_slot *slot),
		    void *ctx)
{
	char text[FDSTORE_KEY_MAX + 40];

	for (unsigned i = 0; i < fs->ngot; i++) {
		struct fdstore_got *g = &fs->got[i];
		const struct fdstore_slot *slot = NULL;

		if (g->taken)
			continue;
		g->taken = g->unwanted = true;
		for (int k = 0; fs->page != NULL && k < FDSTORE_SLOTS && slot == NULL; k++)
			if (!fs->claimed[k] && fs->page->slot[k].key[0] != '\0'
			    && strncmp(fs->page->slot[k].key, g->name, sizeof(g->name)) == 0)
				slot = &fs->page->slot[k];
		/* forgotten first: the service manager's duplicate must not keep it open
		 * (unless a port took another descriptor of that name: FDSTOREREMOVE
		 * would forget both, so this one stays stored until it hangs up) */
		if (!name_taken(fs, g->name)) {
			snprintf(text, sizeof(text), "FDSTOREREMOVE=1\nFDNAME=%s", g->name);
			(void)send_state(fs, text, NULL);
		}
		unwanted(ctx, g->name, g->fd, slot);
	}
	for (int k = 0; fs->page != NULL && k < FDSTORE_SLOTS; k++)
		if (!fs->claimed[k])
			memset(&fs->page->slot[k], 0, sizeof(fs->page->slot[k]));
}
