/* Thread names: pthread_setname_np on another thread and on itself,
   visible in /proc/self/task/TID/comm and through pthread_getname_np;
   15 characters fit, 16 are ERANGE; a buffer under 16 bytes is ERANGE;
   a finished thread is ESRCH; the main thread (glibc's) works. */
#include <dirent.h>
#include <fcntl.h>
#include "t_sched_worker.h"

static void comm_of(pid_t tid, char *buf, size_t n)
{
	char path[64];
	int fd;
	ssize_t r;

	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
	fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0, "open %s", path);
	r = read(fd, buf, n - 1);
	close(fd);
	REQUIRE(r > 0, "read %s", path);
	buf[r] = '\0';
	if (buf[r - 1] == '\n')
		buf[r - 1] = '\0';
}

static void self_name(struct worker *w)
{
	char buf[16];

	CHECK_ERR(pthread_setname_np(pthread_self(), "self-named"), 0);
	CHECK_ERR(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
	CHECK(strcmp(buf, "self-named") == 0, "own name read back: %s", buf);
	CHECK_ERR(pthread_setname_np(pthread_self(), "0123456789abcdef"), ERANGE);
	CHECK_ERR(pthread_getname_np(pthread_self(), buf, 15), ERANGE);
	(void)w;
}

#define NW 8

int main(void)
{
	struct worker w[NW];
	char buf[64], want[16];
	int seen = 0;
	DIR *d;
	struct dirent *e;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_setname_np);
	REQUIRE_SERVED(pthread_getname_np);
	REQUIRE_SERVED(pthread_create);

	/* Named from the main thread, each differently. */
	for (int i = 0; i < NW; i++) {
		REQUIRE(worker_start(&w[i], NULL) == 0, "worker %d", i);
		snprintf(want, sizeof want, "weft-w%d", i);
		CHECK_ERR(pthread_setname_np(w[i].th, want), 0);
	}
	for (int i = 0; i < NW; i++) {
		snprintf(want, sizeof want, "weft-w%d", i);
		comm_of(w[i].tid, buf, sizeof buf);
		CHECK(strcmp(buf, want) == 0, "comm of %d: %s, expected %s",
		      (int)w[i].tid, buf, want);
		CHECK_ERR(pthread_getname_np(w[i].th, buf, 16), 0);
		CHECK(strcmp(buf, want) == 0, "getname: %s, expected %s", buf, want);
	}
	/* Every one appears in the task directory. */
	d = opendir("/proc/self/task");
	REQUIRE(d != NULL, "opendir");
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		comm_of(atoi(e->d_name), buf, sizeof buf);
		seen += strncmp(buf, "weft-w", 6) == 0;
	}
	closedir(d);
	CHECK_EQ(seen, NW);

	/* Limits: 15 characters fit, 16 do not (name unchanged). */
	CHECK_ERR(pthread_setname_np(w[0].th, "fifteen-chars-x"), 0);
	comm_of(w[0].tid, buf, sizeof buf);
	CHECK(strcmp(buf, "fifteen-chars-x") == 0, "15-char name: %s", buf);
	CHECK_ERR(pthread_setname_np(w[0].th, "sixteen-chars-xx"), ERANGE);
	comm_of(w[0].tid, buf, sizeof buf);
	CHECK(strcmp(buf, "fifteen-chars-x") == 0, "after ERANGE: %s", buf);
	CHECK_ERR(pthread_getname_np(w[0].th, buf, 15), ERANGE);
	CHECK_ERR(pthread_getname_np(w[0].th, buf, 16), 0);
	CHECK_ERR(pthread_setname_np(w[0].th, ""), 0);
	CHECK_ERR(pthread_getname_np(w[0].th, buf, sizeof buf), 0);
	CHECK(buf[0] == '\0', "empty name read back as %s", buf);

	/* A thread names itself (prctl path); others see it. */
	w[1].hook = self_name;
	worker_do(&w[1], W_HOOK);
	comm_of(w[1].tid, buf, sizeof buf);
	CHECK(strcmp(buf, "self-named") == 0, "self-set name in comm: %s", buf);
	CHECK_ERR(pthread_getname_np(w[1].th, buf, 16), 0);
	CHECK(strcmp(buf, "self-named") == 0, "self-set name via getname: %s", buf);

	/* Finished, then joined: ESRCH. */
	worker_finish_unjoined(&w[2]);
	CHECK_ERR(pthread_setname_np(w[2].th, "late"), ESRCH);
	CHECK_ERR(pthread_getname_np(w[2].th, buf, 16), ESRCH);
	for (int i = 0; i < NW; i++) {
		if (i != 2)
			worker_do(&w[i], W_QUIT);
		pthread_join(w[i].th, NULL);
		worker_close(&w[i]);
	}
	CHECK_ERR(pthread_setname_np(w[0].th, "late"), ESRCH);
	CHECK_ERR(pthread_getname_np(w[0].th, buf, 16), ESRCH);

	/* The main thread. */
	CHECK_ERR(pthread_setname_np(pthread_self(), "weft-main"), 0);
	comm_of(getpid(), buf, sizeof buf);
	CHECK(strcmp(buf, "weft-main") == 0, "main comm: %s", buf);
	CHECK_ERR(pthread_getname_np(pthread_self(), buf, 16), 0);
	CHECK(strcmp(buf, "weft-main") == 0, "main getname: %s", buf);
	TEST_DONE();
}
