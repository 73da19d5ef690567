/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fdstore.c - fdstore.c with real descriptors, a real NOTIFY_SOCKET listener, and
 * malformed and hostile LISTEN_* environments, names and state pages. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdstore.h"

#define HIGH 200                /* our descriptors live here, out of LISTEN_FDS's way */
#define TEST_SLOTS 16            /* the state page of a config of 8 ports */
#define PAGE_LEN (sizeof(struct fdstore_page) + TEST_SLOTS * sizeof(struct fdstore_slot))

static struct fdstore fs;

/* A state page of TEST_SLOTS slots in fd, as a daemon of layout magic left it. */
static struct fdstore_page *page_in(int fd, const char *magic)
{
	struct fdstore_page *pg;

	assert_int_equal(ftruncate(fd, PAGE_LEN), 0);
	pg = mmap(NULL, PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(pg != MAP_FAILED);
	memcpy(pg->magic, magic, 8);
	pg->size = sizeof(*pg);
	pg->nslots = TEST_SLOTS;
	return pg;
}
static char sock_path[108];
static int sock = -1;
static char said[8192];         /* every message received, "|"-separated, '\n' as ';' */

/* ---- the service manager's side ---- */

static int high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, HIGH);

	assert_true(h >= HIGH);
	close(fd);
	return h;
}

/* A pty; its slave's descriptor (the port a keeper holds) and path. */
struct pty {
	int master, slave;
	char path[64];
};

static void pty_new(struct pty *p)
{
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(p->master >= 0);
	assert_int_equal(grantpt(p->master), 0);
	assert_int_equal(unlockpt(p->master), 0);
	assert_int_equal(ptsname_r(p->master, p->path, sizeof(p->path)), 0);
	p->slave = open(p->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(p->slave >= 0);
	p->master = high(p->master);
	p->slave = high(p->slave);
}

static void pty_free(struct pty *p)
{
	close(p->master);
	if (p->slave >= 0)
		close(p->slave);
}

/* Hands fds over as systemd does: at 3, 4, ... (duplicates; ours stay), LISTEN_PID,
 * LISTEN_FDS = count (or as given), LISTEN_FDNAMES as given (NULL: unset). */
static void hand_over(const int *fds, int n, const char *count, const char *names)
{
	char num[24];

	for (int i = 0; i < n; i++)
		assert_int_equal(dup2(fds[i], 3 + i), 3 + i);
	snprintf(num, sizeof(num), "%ld", (long)getpid());
	setenv("LISTEN_PID", num, 1);
	snprintf(num, sizeof(num), "%d", n);
	setenv("LISTEN_FDS", count != NULL ? count : num, 1);
	if (names != NULL)
		setenv("LISTEN_FDNAMES", names, 1);
	else
		unsetenv("LISTEN_FDNAMES");
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Everything the daemon said since the last look, into said[]; the descriptors it sent
 * are closed. Returns how many messages. */
static int listen_all(void)
{
	int n = 0;

	said[0] = '\0';
	for (;;) {
		char buf[1024], ctl[CMSG_SPACE(sizeof(int) * 4)];
		struct iovec iov = { buf, sizeof(buf) - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
				     .msg_controllen = sizeof(ctl) };
		ssize_t k = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (k < 0)
			return n;
		buf[k] = '\0';
		for (char *c = buf; *c != '\0'; c++)
			if (*c == '\n')
				*c = ';';
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
					close(((int *)CMSG_DATA(c))[i]);
		snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s|", buf);
		n++;
	}
}

static int setup(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)state;
	/* nothing sits where LISTEN_FDS puts what is handed over (a runner may leave some) */
	for (int fd = 3; fd < 40; fd++)
		close(fd);
	snprintf(sock_path, sizeof(sock_path), "/tmp/test_fdstore.%ld.sock", (long)getpid());
	unlink(sock_path);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(sock >= 0);
	assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	sock = high(sock);
	setenv("NOTIFY_SOCKET", sock_path, 1);
	setenv("FDSTORE", "16", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fdstore_fini(&fs);
	for (int fd = 3; fd < 40; fd++)
		close(fd);
	close(sock);
	unlink(sock_path);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return 0;
}

static void init(void)
{
	char err[256] = "";

	assert_int_equal(fdstore_init(&fs, TEST_SLOTS, err, sizeof(err)), 0);
	/* LISTEN_* are gone for our children either way */
	assert_null(getenv("LISTEN_FDS"));
	assert_null(getenv("LISTEN_FDNAMES"));
}

/* ---- what unwanted was handed ---- */

static struct {
	char name[FDSTORE_KEY_MAX];
	unsigned trigger;
} released[16];
static unsigned nreleased;

static void unwanted(void *ctx, const char *name, int fd, unsigned trigger_found)
{
	(void)ctx;
	assert_true(nreleased < 16);
	snprintf(released[nreleased].name, sizeof(released[0].name), "%s", name);
	released[nreleased++].trigger = trigger_found;
	close(fd);
}

static void release(void)
{
	nreleased = 0;
	fdstore_release(&fs, unwanted, NULL);
}

/* ---- the tests ---- */

/*
 * LISTEN_FDNAMES names one of three descriptors: sd_listen_fds_with_names refuses it.
 * Every descriptor is still taken (nameless): the port's keeper by its device, the rest
 * closed before any port opens, none left open and busy.
 */
static void names_miscounted(void **state)
{
	struct pty a;
	int pipefd[2], fds[3], kept;
	enum drv_kept gone;
	bool renamed;
	struct stat st, want;

	(void)state;
	pty_new(&a);
	assert_int_equal(pipe(pipefd), 0);
	fds[0] = a.slave;
	fds[1] = memfd_create("x", MFD_CLOEXEC);
	fds[2] = pipefd[0];
	hand_over(fds, 3, NULL, "a/rx");
	init();
	printf("# what LISTEN_* had wrong: %s\n", fs.warning);
	assert_int_equal(fs.ngot, 3);
	assert_non_null(strstr(fs.warning, "LISTEN_FDNAMES"));
	for (unsigned i = 0; i < fs.ngot; i++)
		assert_false(fs.got[i].named);
	fdstore_want(&fs, "a", FDSTORE_RX, a.path);
	assert_non_null(fdstore_slot(&fs, "a", FDSTORE_RX));
	release();
	assert_int_equal(nreleased, 2);
	assert_string_equal(released[0].name, "");
	assert_false(is_open(4));
	assert_false(is_open(5));
	kept = fdstore_take(&fs, "a", FDSTORE_RX, &gone, &renamed);
	assert_int_equal(kept, 3);
	assert_true(renamed);           /* stored under its name again when it opens */
	assert_int_equal(fstat(kept, &st), 0);
	assert_int_equal(stat(a.path, &want), 0);
	assert_int_equal(st.st_rdev, want.st_rdev);
	close(kept);
	close(fds[1]);
	close(pipefd[0]);
	close(pipefd[1]);
	pty_free(&a);
}

/* LISTEN_FDS larger than what is open: what is open in the range is taken, nameless. */
static void count_beyond_open(void **state)
{
	struct pty a;

	(void)state;
	pty_new(&a);
	hand_over(&a.slave, 1, "30", "a/rx");
	init();
	printf("# what LISTEN_* had wrong: %s\n", fs.warning);
	assert_int_equal(fs.ngot, 1);
	assert_false(fs.got[0].named);
	assert_non_null(strstr(fs.warning, "LISTEN_FDS=30"));
	fdstore_want(&fs, "a", FDSTORE_RX, a.path);
	release();
	assert_int_equal(nreleased, 0);
	pty_free(&a);
}

/* Not a count, or another process's: nothing is taken, nothing closed. */
static void count_garbage_or_not_ours(void **state)
{
	static const char *const counts[] = { "abc", "-1", "0x3", "99999999999999999999", "" };
	struct pty a;
	char pid[24];

	(void)state;
	pty_new(&a);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		hand_over(&a.slave, 1, counts[i], "a/rx");
		init();
		printf("# LISTEN_FDS=\"%s\": %u taken; %s\n", counts[i], fs.ngot, fs.warning);
		assert_int_equal(fs.ngot, 0);
		assert_true(is_open(3));        /* not ours to close */
		fdstore_fini(&fs);
	}
	hand_over(&a.slave, 1, NULL, "a/rx");
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("LISTEN_PID", pid, 1);
	init();
	assert_int_equal(fs.ngot, 0);
	assert_true(is_open(3));
	pty_free(&a);
}

/*
 * Names that are not FDNAMEs (a newline that would add an assignment to the message the
 * daemon sends back, a ':'-free but overlong name, an empty one) are never sent back:
 * those descriptors are closed, and only a valid name is forgotten by name.
 */
static void garbage_names(void **state)
{
	char names[512], longname[200];
	int fds[4];

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	snprintf(names, sizeof(names), "gone/rx:bad\nREADY=1\nMAINPID=1:%s:", longname);
	for (int i = 0; i < 4; i++)
		fds[i] = high(memfd_create("g", MFD_CLOEXEC));
	hand_over(fds, 4, NULL, names);
	init();
	listen_all();
	assert_true(fs.got[0].named);
	assert_false(fs.got[1].named);
	assert_false(fs.got[2].named);
	assert_false(fs.got[3].named);
	release();
	assert_int_equal(nreleased, 4);
	listen_all();
	printf("# said: %s\n", said);
	assert_string_equal(said, "FDSTOREREMOVE=1;FDNAME=gone/rx|");
	for (int i = 0; i < 4; i++) {
		assert_false(is_open(3 + i));
		close(fds[i]);
	}
}

/* A state page of another layout (or not a page at all) is replaced: forgotten, and a
 * new one stored. */
static void page_of_another_layout(void **state)
{
	int fd = high(memfd_create("p", MFD_CLOEXEC));
	struct fdstore_page *pg;

	(void)state;
	pg = page_in(fd, "PLGDFS00");       /* an older layout */
	hand_over(&fd, 1, NULL, FDSTORE_STATE_NAME);
	init();
	assert_false(fs.page_kept);
	assert_non_null(fs.page);
	listen_all();
	printf("# said: %s\n", said);
	assert_string_equal(said, "FDSTOREREMOVE=1;FDNAME=portlogd-state|FDSTORE=1;FDNAME=portlogd-state|");
	{
		struct stat old, now;

		assert_int_equal(fstat(fd, &old), 0);
		assert_int_equal(fstat(fs.page_fd, &now), 0);
		assert_true(old.st_ino != now.st_ino);  /* a page of its own, the old one closed */
	}
	munmap(pg, PAGE_LEN);
	close(fd);
	fdstore_fini(&fs);
	/* a pipe named so */
	{
		int p[2];

		assert_int_equal(pipe(p), 0);
		hand_over(&p[0], 1, NULL, FDSTORE_STATE_NAME);
		init();
		assert_false(fs.page_kept);
		close(p[0]);
		close(p[1]);
	}
}

/* A page of this layout whose slots hold what no run of ours writes (an unterminated
 * key, a time to come, a level no FIFO has) is kept, those slots cleared. */
static void page_with_garbage(void **state)
{
	int fd = high(memfd_create("p", MFD_CLOEXEC));
	struct fdstore_page *pg;
	struct fdstore_slot *s;

	(void)state;
	pg = page_in(fd, "PLGDFS02");
	memset(pg->slot[0].key, 'k', sizeof(pg->slot[0].key));
	snprintf(pg->slot[1].key, sizeof(pg->slot[1].key), "a/rx");
	atomic_store(&pg->slot[1].empty_mono, INT64_MAX);
	pg->slot[1].trigger_found = 99999;
	hand_over(&fd, 1, NULL, FDSTORE_STATE_NAME);
	init();
	assert_true(fs.page_kept);
	assert_int_equal(pg->slot[0].key[0], '\0');
	s = fdstore_slot(&fs, "a", FDSTORE_RX);
	assert_true(s == &fs.page->slot[1]);
	assert_int_equal(atomic_load(&s->empty_mono), 0);
	assert_int_equal(s->trigger_found, 0);
	munmap(pg, PAGE_LEN);
	close(fd);
}

/* $FDSTORE is the store's size: a descriptor beyond it is refused here (systemd would
 * close it), so the port is not said kept. */
static void refused_when_full(void **state)
{
	struct pty a, b;

	(void)state;
	pty_new(&a);
	pty_new(&b);
	setenv("FDSTORE", "2", 1);
	hand_over(NULL, 0, "0", NULL);
	init();
	listen_all();
	assert_true(fdstore_put(&fs, "a", FDSTORE_RX, a.slave));        /* the page, a */
	assert_false(fdstore_put(&fs, "b", FDSTORE_RX, b.slave));
	assert_int_equal(atomic_load(&fs.refused), 1);
	fdstore_drop(&fs, "a", FDSTORE_RX);
	assert_true(fdstore_put(&fs, "b", FDSTORE_RX, b.slave));
	listen_all();
	printf("# said: %s\n", said);
	assert_string_equal(said, "FDSTORE=1;FDNAME=a/rx|FDSTOREREMOVE=1;FDNAME=a/rx|"
			    "FDSTORE=1;FDNAME=b/rx|");
	/* garbage in $FDSTORE: no store */
	fdstore_fini(&fs);
	setenv("FDSTORE", "12abc", 1);
	init();
	assert_false(fs.enabled);
	assert_false(fdstore_put(&fs, "a", FDSTORE_RX, a.slave));
	setenv("FDSTORE", "16", 1);
	pty_free(&a);
	pty_free(&b);
}

/* Without $FDSTORE nothing is stored, but what was handed over and is not wanted is still
 * forgotten there (FDSTOREREMOVE=1). */
static void removed_without_fdstore(void **state)
{
	struct pty a;

	(void)state;
	pty_new(&a);
	unsetenv("FDSTORE");
	hand_over(&a.slave, 1, NULL, "gone/rx");
	init();
	assert_false(fs.enabled);
	release();
	listen_all();
	assert_string_equal(said, "FDSTOREREMOVE=1;FDNAME=gone/rx|");
	assert_false(fdstore_put(&fs, "a", FDSTORE_RX, a.slave));
	setenv("FDSTORE", "16", 1);
	pty_free(&a);
}

/*
 * Two ports swapped devices: each takes its device's keeper and the state kept with it
 * (its FIFO level to put back), whatever its name; both old names are forgotten before
 * either port stores its own (a name forgotten after would take the other's along).
 */
static void swapped(void **state)
{
	struct pty a, b;
	int fds[3], pfd = high(memfd_create("p", MFD_CLOEXEC)), ka, kb;
	struct fdstore_page *pg;
	struct fdstore_slot *sa, *sb;
	enum drv_kept gone;
	bool renamed;
	struct stat st, want;

	(void)state;
	pty_new(&a);
	pty_new(&b);
	pg = page_in(pfd, "PLGDFS02");
	snprintf(pg->slot[0].key, sizeof(pg->slot[0].key), "a/rx");
	pg->slot[0].trigger_found = 8;
	snprintf(pg->slot[1].key, sizeof(pg->slot[1].key), "b/rx");
	pg->slot[1].trigger_found = 14;
	fds[0] = a.slave;
	fds[1] = b.slave;
	fds[2] = pfd;
	hand_over(fds, 3, NULL, "a/rx:b/rx:portlogd-state");
	init();
	listen_all();
	/* a now has b's device, b a's */
	fdstore_want(&fs, "a", FDSTORE_RX, b.path);
	sa = fdstore_slot(&fs, "a", FDSTORE_RX);
	fdstore_want(&fs, "b", FDSTORE_RX, a.path);
	sb = fdstore_slot(&fs, "b", FDSTORE_RX);
	assert_int_equal(sa->trigger_found, 14);
	assert_int_equal(sb->trigger_found, 8);
	release();
	assert_int_equal(nreleased, 0);
	listen_all();
	printf("# said: %s\n", said);
	assert_string_equal(said, "FDSTOREREMOVE=1;FDNAME=a/rx|FDSTOREREMOVE=1;FDNAME=b/rx|");
	ka = fdstore_take(&fs, "a", FDSTORE_RX, &gone, &renamed);
	assert_true(renamed);
	assert_int_equal(fstat(ka, &st), 0);
	assert_int_equal(stat(b.path, &want), 0);
	assert_int_equal(st.st_rdev, want.st_rdev);
	kb = fdstore_take(&fs, "b", FDSTORE_RX, &gone, &renamed);
	assert_true(renamed);
	assert_int_equal(fstat(kb, &st), 0);
	assert_int_equal(stat(a.path, &want), 0);
	assert_int_equal(st.st_rdev, want.st_rdev);
	fdstore_slot_name(sa, "a", FDSTORE_RX);
	assert_string_equal(sa->key, "a/rx");
	close(ka);
	close(kb);
	munmap(pg, PAGE_LEN);
	close(pfd);
	pty_free(&a);
	pty_free(&b);
}

/*
 * The device under a port's name is another one now (a by-id link that names another
 * adapter): the kept one is released before any port opens, with the FIFO level its
 * state says to put back, and the port hears it was another device.
 */
static void other_device(void **state)
{
	struct pty a, b;
	int fds[2], pfd = high(memfd_create("p", MFD_CLOEXEC));
	struct fdstore_page *pg;
	enum drv_kept gone;
	bool renamed;

	(void)state;
	pty_new(&a);
	pty_new(&b);
	pg = page_in(pfd, "PLGDFS02");
	snprintf(pg->slot[3].key, sizeof(pg->slot[3].key), "a/rx");
	pg->slot[3].trigger_found = 8;
	fds[0] = a.slave;
	fds[1] = pfd;
	hand_over(fds, 2, NULL, "a/rx:portlogd-state");
	init();
	listen_all();
	fdstore_want(&fs, "a", FDSTORE_RX, b.path);
	assert_non_null(fdstore_slot(&fs, "a", FDSTORE_RX));
	release();
	assert_int_equal(nreleased, 1);
	assert_string_equal(released[0].name, "a/rx");
	assert_int_equal(released[0].trigger, 8);
	listen_all();
	assert_string_equal(said, "FDSTOREREMOVE=1;FDNAME=a/rx|");
	assert_int_equal(fdstore_take(&fs, "a", FDSTORE_RX, &gone, &renamed), -1);
	assert_int_equal(gone, DRV_KEPT_OTHER);
	/* the same with the device hung up meanwhile */
	fdstore_fini(&fs);
	munmap(pg, PAGE_LEN);
	close(pfd);
	close(a.master);
	a.master = -1;
	hand_over(&a.slave, 1, NULL, "a/rx");
	init();
	fdstore_want(&fs, "a", FDSTORE_RX, b.path);
	release();
	assert_int_equal(fdstore_take(&fs, "a", FDSTORE_RX, &gone, &renamed), -1);
	assert_int_equal(gone, DRV_KEPT_HUNG_UP);
	close(a.slave);
	a.slave = -1;
	pty_free(&b);
}

/* A name a descriptor stays kept under is never forgotten for a duplicate of that name
 * (FDSTOREREMOVE forgets every descriptor of a name); a duplicate state page's name is
 * given back to this run's page. */
static void duplicate_names(void **state)
{
	struct pty a;
	int fds[3], dup_page = high(memfd_create("p", MFD_CLOEXEC));
	enum drv_kept gone;
	bool renamed;

	(void)state;
	pty_new(&a);
	fds[0] = a.slave;
	fds[1] = high(fcntl(a.slave, F_DUPFD_CLOEXEC, 0));
	fds[2] = dup_page;
	hand_over(fds, 3, NULL, "a/rx:a/rx:portlogd-state");
	init();         /* the page is too small: a new one */
	listen_all();
	fdstore_want(&fs, "a", FDSTORE_RX, a.path);
	release();
	listen_all();
	printf("# said: %s\n", said);
	assert_int_equal(nreleased, 1);
	assert_null(strstr(said, "FDNAME=a/rx"));
	assert_int_equal(fdstore_take(&fs, "a", FDSTORE_RX, &gone, &renamed), 3);
	assert_false(renamed);
	close(3);
	close(fds[1]);
	close(dup_page);
	pty_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(names_miscounted, setup, teardown),
		cmocka_unit_test_setup_teardown(count_beyond_open, setup, teardown),
		cmocka_unit_test_setup_teardown(count_garbage_or_not_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage_names, setup, teardown),
		cmocka_unit_test_setup_teardown(page_of_another_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(page_with_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_when_full, setup, teardown),
		cmocka_unit_test_setup_teardown(removed_without_fdstore, setup, teardown),
		cmocka_unit_test_setup_teardown(swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(other_device, setup, teardown),
		cmocka_unit_test_setup_teardown(duplicate_names, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
