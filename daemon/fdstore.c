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

#define FDSTORE_MAGIC "PLGDFS02"     /* 02: as many slots as the config's readers */

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

static size_t page_len(uint32_t nslots)
{
	return sizeof(struct fdstore_page) + (size_t)nslots * sizeof(struct fdstore_slot);
}

/* The slots of the page the previous process left: this layout, any number of
 * slots; 0 when it is not usable. */
static uint32_t page_slots(int fd)
{
	struct fdstore_page head;
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
	    || pread(fd, &head, sizeof(head), 0) != (ssize_t)sizeof(head)
	    || memcmp(head.magic, FDSTORE_MAGIC, sizeof(head.magic)) != 0
	    || head.size != sizeof(head) || head.nslots == 0
	    || (size_t)st.st_size != page_len(head.nslots))
		return 0;
	return head.nslots;
}

static struct fdstore_page *map_page(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A new page of nslots, zeroed (every slot free), in a memfd of its own. */
static int new_page(struct fdstore *fs, uint32_t nslots)
{
	int fd = memfd_create(FDSTORE_STATE_NAME, MFD_CLOEXEC), rc;
	size_t len = page_len(nslots);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 || (fs->page = map_page(fd, len)) == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	fs->page_fd = fd;
	fs->page_len = len;
	memcpy(fs->page->magic, FDSTORE_MAGIC, sizeof(fs->page->magic));
	fs->page->size = sizeof(struct fdstore_page);
	fs->page->nslots = nslots;
	return 0;
}

static bool send_state(const struct fdstore *fs, const char *text, const int *fd)
{
	/* a failed send is the store's loss only: the port stays open in this process */
	return fs != NULL && fs->enabled
	       && sd_pid_notify_with_fds(0, 0, text, fd, fd != NULL ? 1 : 0) > 0;
}

/* Puts the previous process's page in place: kept as it is when it has `slots`
 * slots, else its readers' slots copied into a new page of that size (a config
 * with more or fewer ports). False when it is not usable. */
static bool take_page(struct fdstore *fs, int kept, uint32_t slots)
{
	uint32_t old = page_slots(kept), n = 0;
	struct fdstore_page *p;

	if (old == 0 || (p = map_page(kept, page_len(old))) == NULL)
		return false;
	if (old == slots) {
		fs->page = p;
		fs->page_fd = kept;
		fs->page_len = page_len(old);
		return true;
	}
	if (new_page(fs, slots) < 0) {
		munmap(p, page_len(old));
		return false;
	}
	for (uint32_t i = 0; i < old && n < slots; i++)
		if (p->slot[i].key[0] != '\0')
			fs->page->slot[n++] = p->slot[i];
	munmap(p, page_len(old));
	return true;
}

int fdstore_init(struct fdstore *fs, unsigned slots, char *err, size_t errlen)
{
	const char *max = getenv("FDSTORE");
	char **names = NULL, text[64];
	int n, rc, kept = -1;

	memset(fs, 0, sizeof(*fs));
	fs->page_fd = -1;
	slots = slots > 0 ? slots : 1;
	fs->max = max != NULL ? (unsigned)strtoul(max, NULL, 10) : 0;
	fs->enabled = getenv("NOTIFY_SOCKET") != NULL && fs->max > 0;
	fs->claimed = calloc(slots, sizeof(*fs->claimed));
	/* 1: unset LISTEN_*, so that no child of ours takes them for its own */
	n = sd_listen_fds_with_names(1, &names);
	fs->got = calloc(n > 0 ? (size_t)n : 1, sizeof(*fs->got));
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names != NULL && names[i] != NULL ? names[i] : "";

		if (strcmp(name, FDSTORE_STATE_NAME) == 0 && kept < 0) {
			kept = fd;
		} else if (fs->got != NULL && fs->claimed != NULL) {
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
	if (fs->claimed == NULL) {
		if (kept >= 0)
			close(kept);
		snprintf(err, errlen, "out of memory for the store's %u slots", slots);
		return -ENOMEM;
	}
	if (kept >= 0 && take_page(fs, kept, slots)) {
		fs->page_kept = true;
		if (fs->page_fd == kept)
			return 0;
	} else if (kept >= 0) {
		/* another layout (another version) or broken: a new one replaces it */
		fs->page = NULL;
	}
	if (kept >= 0) {
		close(kept);
		snprintf(text, sizeof(text), "FDSTOREREMOVE=1\nFDNAME=%s", FDSTORE_STATE_NAME);
		(void)send_state(fs, text, NULL);
	}
	if (fs->page == NULL && (rc = new_page(fs, slots)) < 0) {
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
		munmap(fs->page, fs->page_len);
	if (fs->page_fd >= 0)
		close(fs->page_fd);
	free(fs->got);
	free(fs->claimed);
	fs->got = NULL;
	fs->claimed = NULL;
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
	int64_t free_slot = -1;

	if (fs->page == NULL)
		return NULL;
	fdstore_key(key, sizeof(key), port, role);
	for (uint32_t i = 0; i < fs->page->nslots; i++) {
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
		for (uint32_t i = 0; i < fs->page->nslots && free_slot < 0; i++)
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
		for (uint32_t k = 0; fs->page != NULL && k < fs->page->nslots && slot == NULL; k++)
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
	for (uint32_t k = 0; fs->page != NULL && k < fs->page->nslots; k++)
		if (!fs->claimed[k])
			memset(&fs->page->slot[k], 0, sizeof(fs->page->slot[k]));
}
