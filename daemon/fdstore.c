/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdstore.c - systemd's file descriptor store: the ports' keepers and the state page. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fdstore.h"

#define FDSTORE_MAGIC "PLGDFS02"     /* 02: as many slots as the config's readers */
#define TRIGGER_MAX 4096                /* a FIFO level beyond any UART's: not ours */
#define LISTEN_MAX (1 << 16)            /* LISTEN_FDS beyond this is not a count */

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

/*
 * A name the daemon may send back in FDNAME= (systemd's fdname_is_valid: printable
 * ASCII, no ':') and holds whole: anything else (a control character would put
 * another assignment into the message) is never named again, only closed.
 */
static bool name_usable(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= FDSTORE_KEY_MAX)
		return false;
	for (const char *c = name; *c != '\0'; c++)
		if (*c < 0x20 || *c > 0x7e || *c == ':')
			return false;
	return true;
}

/* The role its name gives a descriptor: "NAME/rx" ... ; FDSTORE_NROLES for none. */
static enum fdstore_role role_of(const struct fdstore_got *g)
{
	const char *slash = g->named ? strrchr(g->name, '/') : NULL;

	for (int r = 0; slash != NULL && r < FDSTORE_NROLES; r++)
		if (strcmp(slash + 1, role_name[r]) == 0)
			return (enum fdstore_role)r;
	return FDSTORE_NROLES;
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

/* A kept page's slots hold what this process reads as it is: what no run of ours could
 * have written there (an unterminated key, a time to come, a level no FIFO has) is
 * cleared. */
static void page_check(struct fdstore_page *pg)
{
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	for (uint32_t i = 0; i < pg->nslots; i++) {
		struct fdstore_slot *s = &pg->slot[i];
		int64_t t = atomic_load_explicit(&s->empty_mono, memory_order_relaxed);

		if (memchr(s->key, '\0', sizeof(s->key)) == NULL) {
			memset(s, 0, sizeof(*s));
			continue;
		}
		if (t < 0 || t > now)
			atomic_store_explicit(&s->empty_mono, 0, memory_order_relaxed);
		if (s->trigger_found > TRIGGER_MAX)
			s->trigger_found = 0;
	}
}

/* A message to the service manager: FDSTORE=1 (with fd) only where it keeps a store,
 * FDSTOREREMOVE=1 wherever there is one to tell (descriptors are handed over without
 * $FDSTORE too). */
static bool send_state(const struct fdstore *fs, const char *text, const int *fd)
{
	/* a failed send is the store's loss only: the port stays open in this process */
	return fs != NULL && (fd != NULL ? fs->enabled : fs->notify)
	       && sd_pid_notify_with_fds(0, 0, text, fd, fd != NULL ? 1 : 0) > 0;
}

static void count_out(struct fdstore *fs)
{
	unsigned n = atomic_load_explicit(&fs->nstored, memory_order_relaxed);

	/* never below 0: a drop of what another process stored counts nothing here */
	while (n > 0 && !atomic_compare_exchange_weak_explicit(&fs->nstored, &n, n - 1,
							       memory_order_relaxed,
							       memory_order_relaxed))
		;
}

/* Gives the service manager fd under name; false when refused here (no store, or it
 * is full: $FDSTORE, which systemd would close it beyond) or not sent. */
static bool put_named(struct fdstore *fs, const char *name, int fd)
{
	char text[FDSTORE_KEY_MAX + 40];
	unsigned n;

	if (fs == NULL || !fs->enabled)
		return false;
	n = atomic_load_explicit(&fs->nstored, memory_order_relaxed);
	do {
		if (n >= fs->max) {
			atomic_fetch_add_explicit(&fs->refused, 1, memory_order_relaxed);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&fs->nstored, &n, n + 1,
							memory_order_relaxed, memory_order_relaxed));
	snprintf(text, sizeof(text), "FDSTORE=1\nFDNAME=%s", name);
	if (send_state(fs, text, &fd))
		return true;
	count_out(fs);
	return false;
}

static void drop_named(struct fdstore *fs, const char *name)
{
	char text[FDSTORE_KEY_MAX + 40];

	snprintf(text, sizeof(text), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	if (send_state(fs, text, NULL))
		count_out(fs);
}

/* "LISTEN_FDS=N" of this process, read by hand where sd_listen_fds refused it; -1: none. */
static int listen_count(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long n;

	if (pid == NULL || fds == NULL || strtol(pid, &end, 10) != (long)getpid() || *end != '\0')
		return -1;
	errno = 0;
	n = strtol(fds, &end, 10);
	if (errno != 0 || end == fds || *end != '\0' || n <= 0 || n > LISTEN_MAX)
		return -1;
	return (int)n;
}

/*
 * What was handed over: n descriptors from SD_LISTEN_FDS_START, with their names, or
 * names NULL (none that can be used). sd_listen_fds_with_names refuses a
 * LISTEN_FDNAMES that does not name every descriptor, and sd_listen_fds a
 * LISTEN_FDS beyond the descriptors that are open; both leave the descriptors open
 * and ours, so that the ports they keep would stay busy: they are taken here,
 * without names (a port's keeper is found by its device).
 */
static int listened(struct fdstore *fs, char ***names)
{
	int n = sd_listen_fds(0), m, k;

	*names = NULL;
	if (n <= 0) {
		k = listen_count();
		if (k < 0) {
			if (n < 0)
				snprintf(fs->warning, sizeof(fs->warning), "LISTEN_FDS=%.20s: %s; no "
					 "descriptor taken", getenv("LISTEN_FDS") ?: "", strerror(-n));
			(void)sd_listen_fds(1);         /* unsets LISTEN_* for our children */
			unsetenv("LISTEN_FDNAMES");
			return 0;
		}
		/* the open ones of the range, nameless */
		m = 0;
		for (int i = 0; i < k; i++)
			if (fcntl(SD_LISTEN_FDS_START + i, F_SETFD, FD_CLOEXEC) == 0)
				m = i + 1;
		snprintf(fs->warning, sizeof(fs->warning), "LISTEN_FDS=%d, but only descriptors "
			 "up to %d are open: taken without their names", k, SD_LISTEN_FDS_START + m - 1);
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
		return m;
	}
	/* 1: unset LISTEN_*, so that no child of ours takes them for its own */
	m = sd_listen_fds_with_names(1, names);
	if (m == n)
		return n;
	snprintf(fs->warning, sizeof(fs->warning), "LISTEN_FDNAMES does not name each of the %d "
		 "descriptors (LISTEN_FDS): taken without their names", n);
	unsetenv("LISTEN_FDNAMES");
	*names = NULL;
	return n;
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
	char **names, *end;
	unsigned long v;
	int n, rc, kept = -1;

	memset(fs, 0, sizeof(*fs));
	fs->page_fd = -1;
	slots = slots > 0 ? slots : 1;
	fs->nslots = slots;
	fs->claimed = calloc(slots, sizeof(*fs->claimed));
	fs->want = calloc(slots, sizeof(*fs->want));
	errno = 0;
	v = max != NULL ? strtoul(max, &end, 10) : 0;
	fs->max = max != NULL && errno == 0 && *end == '\0' && v <= LISTEN_MAX ? (unsigned)v : 0;
	fs->notify = getenv("NOTIFY_SOCKET") != NULL;
	fs->enabled = fs->notify && fs->max > 0;
	n = listened(fs, &names);
	fs->got = calloc(n > 0 ? (size_t)n : 1, sizeof(*fs->got));
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names != NULL && names[i] != NULL ? names[i] : "";

		if (strcmp(name, FDSTORE_STATE_NAME) == 0 && kept < 0) {
			kept = fd;
		} else if (fs->got != NULL && fs->claimed != NULL && fs->want != NULL) {
			struct fdstore_got *g = &fs->got[fs->ngot++];

			g->fd = fd;
			g->want = -1;
			g->named = name_usable(name);
			snprintf(g->name, sizeof(g->name), "%s", g->named ? name : "");
		} else {
			close(fd);
			fs->lost++;
		}
	}
	atomic_init(&fs->nstored, (unsigned)(n > 0 ? n : 0));
	atomic_init(&fs->refused, 0);
	for (int i = 0; names != NULL && names[i] != NULL; i++)
		free(names[i]);
	free(names);
	if (fs->got == NULL || fs->claimed == NULL || fs->want == NULL) {
		if (kept >= 0)
			close(kept);
		snprintf(err, errlen, "out of memory for the store's %u slots", slots);
		return -ENOMEM;
	}
	if (kept >= 0 && take_page(fs, kept, slots)) {
		fs->page_kept = true;
		page_check(fs->page);
		if (fs->page_fd == kept)
			return 0;
	} else if (kept >= 0) {
		/* another layout (another version) or broken: a new one replaces it */
		fs->page = NULL;
	}
	if (kept >= 0) {
		close(kept);
		drop_named(fs, FDSTORE_STATE_NAME);
	}
	if (fs->page == NULL && (rc = new_page(fs, slots)) < 0) {
		snprintf(err, errlen, "cannot make the state page (memfd_create): %s; a port kept "
			 "across a restart cannot say how long it was unread", strerror(-rc));
		return rc;
	}
	fs->page_stored = put_named(fs, FDSTORE_STATE_NAME, fs->page_fd);
	return 0;
}

void fdstore_fini(struct fdstore *fs)
{
	/* closed here only: what the service manager keeps stays kept */
	for (unsigned i = 0; i < fs->ngot; i++)
		if (!fs->got[i].taken && !fs->got[i].released)
			close(fs->got[i].fd);
	fs->ngot = 0;
	if (fs->page != NULL)
		munmap(fs->page, fs->page_len);
	if (fs->page_fd >= 0)
		close(fs->page_fd);
	free(fs->got);
	free(fs->claimed);
	free(fs->want);
	fs->got = NULL;
	fs->claimed = NULL;
	fs->want = NULL;
	fs->page = NULL;
	fs->page_fd = -1;
}

static struct fdstore_want *want_of(struct fdstore *fs, const char *key)
{
	for (unsigned i = 0; i < fs->nwant; i++)
		if (strcmp(fs->want[i].key, key) == 0)
			return &fs->want[i];
	return NULL;
}

void fdstore_want(struct fdstore *fs, const char *port, enum fdstore_role role, const char *device)
{
	struct fdstore_want *w;
	struct stat dev, st;

	if (fs->want == NULL || fs->nwant == fs->nslots || (role != FDSTORE_RX && role != FDSTORE_TX))
		return;
	w = &fs->want[fs->nwant++];
	fdstore_key(w->key, sizeof(w->key), port, role);
	w->got = -1;
	w->gone = DRV_KEPT_NONE;
	if (stat(device, &dev) < 0 || !S_ISCHR(dev.st_mode))
		return;
	/* the port's device, kept under whatever name (another port's before a rename or
	 * a swap; none that could be read); not a pass pty's ends, which go by name */
	for (unsigned i = 0; i < fs->ngot; i++) {
		struct fdstore_got *g = &fs->got[i];
		enum fdstore_role r = role_of(g);

		if (g->want >= 0 || g->taken || (g->named && r != FDSTORE_RX && r != FDSTORE_TX))
			continue;
		if (fstat(g->fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == dev.st_rdev) {
			g->want = (int)(w - fs->want);
			w->got = (int)i;
			return;
		}
	}
}

/* The name of what a reader's state was kept under: its descriptor's, if that was kept
 * under another (a rename), else its own; NULL when the state under its own name is
 * another device's (kept, and not its device: fdstore_release puts its level back). */
static const char *state_name(struct fdstore *fs, const char *key)
{
	const struct fdstore_want *w = want_of(fs, key);

	if (w == NULL)
		return key;
	if (w->got >= 0)
		return fs->got[w->got].named ? fs->got[w->got].name : "";
	for (unsigned i = 0; i < fs->ngot; i++)
		if (fs->got[i].named && fs->got[i].want < 0 && strcmp(fs->got[i].name, key) == 0)
			return NULL;
	return key;
}

struct fdstore_slot *fdstore_slot(struct fdstore *fs, const char *port, enum fdstore_role role)
{
	char key[FDSTORE_KEY_MAX];
	const char *was;
	int64_t free_slot = -1;

	if (fs->page == NULL)
		return NULL;
	fdstore_key(key, sizeof(key), port, role);
	was = state_name(fs, key);
	for (uint32_t i = 0; i < fs->page->nslots; i++) {
		struct fdstore_slot *s = &fs->page->slot[i];

		if (was != NULL && was[0] != '\0' && strncmp(s->key, was, sizeof(s->key)) == 0
		    && !fs->claimed[i]) {
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

void fdstore_slot_name(struct fdstore_slot *s, const char *port, enum fdstore_role role)
{
	if (s != NULL)
		fdstore_key(s->key, sizeof(s->key), port, role);
}

int fdstore_take(struct fdstore *fs, const char *port, enum fdstore_role role,
		 enum drv_kept *gone, bool *renamed)
{
	char key[FDSTORE_KEY_MAX];
	const struct fdstore_want *w;

	fdstore_key(key, sizeof(key), port, role);
	*gone = DRV_KEPT_NONE;
	*renamed = false;
	if (role == FDSTORE_RX || role == FDSTORE_TX) {
		w = want_of(fs, key);
		if (w == NULL)
			return -1;
		*gone = w->gone;
		if (w->got < 0 || fs->got[w->got].taken)
			return -1;
		fs->got[w->got].taken = true;
		*renamed = strcmp(fs->got[w->got].name, key) != 0;
		return fs->got[w->got].fd;
	}
	for (unsigned i = 0; i < fs->ngot; i++) {
		struct fdstore_got *g = &fs->got[i];

		if (!g->taken && !g->released && g->want < 0 && g->named && strcmp(g->name, key) == 0) {
			g->taken = true;
			return g->fd;
		}
	}
	return -1;
}

/* Is name the name a descriptor stays kept under (taken, or planned for a port, under
 * the name it has)? FDSTOREREMOVE would forget that one too. */
static bool name_kept(const struct fdstore *fs, const char *name)
{
	for (unsigned i = 0; i < fs->ngot; i++) {
		const struct fdstore_got *g = &fs->got[i];

		if (!g->released && g->named && strcmp(g->name, name) == 0
		    && (g->want >= 0 ? strcmp(fs->want[g->want].key, name) == 0 : g->taken))
			return true;
	}
	return false;
}

/* Forgets name in the store, unless something that stays kept has it; the state page's
 * name is given back to this run's page. */
static void forget(struct fdstore *fs, const char *name)
{
	if (name_kept(fs, name))
		return;
	drop_named(fs, name);
	if (strcmp(name, FDSTORE_STATE_NAME) == 0 && fs->page_fd >= 0)
		fs->page_stored = put_named(fs, FDSTORE_STATE_NAME, fs->page_fd);
}

void fdstore_release(struct fdstore *fs,
		     void (*unwanted)(void *ctx, const char *name, int fd, unsigned trigger_found),
		     void *ctx)
{
	for (unsigned i = 0; i < fs->ngot; i++) {
		struct fdstore_got *g = &fs->got[i];
		struct fdstore_want *w;
		struct fdstore_slot *slot = NULL;
		struct pollfd pfd = { .fd = g->fd, .events = POLLIN };
		unsigned trigger = 0;

		if (g->want >= 0) {
			/* kept for a port under another name: forgotten under that one now, the
			 * port stores it under its own when it opens (after every forgetting,
			 * so that a swap's names never forget the other's) */
			if (g->named && strcmp(g->name, fs->want[g->want].key) != 0)
				forget(fs, g->name);
			continue;
		}
		if (g->taken || g->released)
			continue;
		g->released = true;
		/* the port of that name: its EV open says what became of the one kept for it */
		w = g->named ? want_of(fs, g->name) : NULL;
		if (w != NULL && w->got < 0)
			w->gone = poll(&pfd, 1, 0) >= 0 && (pfd.revents & (POLLHUP | POLLERR)) != 0
				  ? DRV_KEPT_HUNG_UP : DRV_KEPT_OTHER;
		for (uint32_t k = 0; g->named && fs->page != NULL && k < fs->page->nslots && slot == NULL; k++)
			if (!fs->claimed[k] && strncmp(fs->page->slot[k].key, g->name,
						       sizeof(fs->page->slot[k].key)) == 0)
				slot = &fs->page->slot[k];
		if (slot != NULL) {
			trigger = slot->trigger_found;
			memset(slot, 0, sizeof(*slot));
		}
		/* forgotten first: the service manager's duplicate must not keep it open */
		if (g->named)
			forget(fs, g->name);    /* (not nameable: kept there until the service stops) */
		unwanted(ctx, g->named ? g->name : "", g->fd, trigger);
	}
}

bool fdstore_put(struct fdstore *fs, const char *port, enum fdstore_role role, int fd)
{
	char key[FDSTORE_KEY_MAX];

	fdstore_key(key, sizeof(key), port, role);
	return put_named(fs, key, fd);
}

void fdstore_drop(struct fdstore *fs, const char *port, enum fdstore_role role)
{
	char key[FDSTORE_KEY_MAX];

	if (fs == NULL)
		return;
	fdstore_key(key, sizeof(key), port, role);
	drop_named(fs, key);
}

void fdstore_finish(struct fdstore *fs)
{
	for (uint32_t k = 0; fs->page != NULL && k < fs->page->nslots; k++)
		if (!fs->claimed[k])
			memset(&fs->page->slot[k], 0, sizeof(fs->page->slot[k]));
}
