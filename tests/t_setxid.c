/* set*id in a multithreaded process: the kernel keeps credentials per
   thread, so glibc (and weft with it) must apply setresgid/setresuid to
   every thread.  In a forked child running as root: a created thread
   calls setresgid, another created thread calls setresuid; every thread
   (main, created ones blocked meanwhile, and a new one) must then see
   the new ids in the raw getresuid/getresgid system calls, and main
   reads every task's Uid and Gid lines in /proc/self/task/TID/status
   (all four ids: real, effective, saved, filesystem).  Before that, 300
   setresgid calls race with a thread creating and joining threads (a
   set*id call waits for every listed thread: creation must not block
   it).  Skipped (exit 0 with a
   note) when not running as root. */
#include "harness.h"
#include "child.h"

#include <dirent.h>
#include <grp.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NT 4
#define NOBODY 65534

static pthread_barrier_t bar;

struct ids {
	long r, e, s;
};

static void raw_ids(struct ids *u, struct ids *g)
{
	uid_t ur, ue, us;
	gid_t gr, ge, gs;

	/* The raw system calls report the calling thread's own creds. */
	syscall(SYS_getresuid, &ur, &ue, &us);
	syscall(SYS_getresgid, &gr, &ge, &gs);
	u->r = ur, u->e = ue, u->s = us;
	g->r = gr, g->e = ge, g->s = gs;
}

static int check_ids(const char *who, long want_uid, long want_gid)
{
	struct ids u, g;
	int bad = 0;

	raw_ids(&u, &g);
	if (u.r != want_uid || u.e != want_uid || u.s != want_uid) {
		FAIL("%s: uids %ld/%ld/%ld, expected %ld", who, u.r, u.e, u.s,
		     want_uid);
		bad = 1;
	}
	if (g.r != want_gid || g.e != want_gid || g.s != want_gid) {
		FAIL("%s: gids %ld/%ld/%ld, expected %ld", who, g.r, g.e, g.s,
		     want_gid);
		bad = 1;
	}
	return bad;
}

static void *worker(void *arg)
{
	intptr_t i = (intptr_t)arg;
	char who[32];

	snprintf(who, sizeof who, "thread %d", (int)i);
	if (weft_self_origin() != WEFT_THREAD_CREATED)
		FAIL("%s: not a weft-created thread", who);
	if (i == 0 && setresgid(NOBODY, NOBODY, NOBODY) != 0)
		FAIL("setresgid from a thread: %s", strerror(errno));
	pthread_barrier_wait(&bar); /* 1: gid changed */
	check_ids(who, 0, NOBODY);
	pthread_barrier_wait(&bar); /* 2: thread 1 changes the uid */
	if (i == 1 && setresuid(NOBODY, NOBODY, NOBODY) != 0)
		FAIL("setresuid from a thread: %s", strerror(errno));
	pthread_barrier_wait(&bar); /* 3: uid changed */
	check_ids(who, NOBODY, NOBODY);
	pthread_barrier_wait(&bar); /* 4: main read /proc */
	return NULL;
}

/* Creates and joins threads until told to stop (bounded). */
static int churn_stop;
static void *nop(void *arg)
{
	return arg;
}
static void *churn(void *arg)
{
	long n = 0;
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE) && n < 1000000) {
		pthread_t t;
		if (pthread_create(&t, NULL, nop, NULL) != 0) {
			FAIL("churn: pthread_create failed");
			break;
		}
		pthread_join(t, NULL);
		n++;
	}
	return (void *)n;
}

/* The four ids of a "Uid:" or "Gid:" line all equal `want`. */
static int line_ok(const char *line, long want)
{
	const char *p = strchr(line, ':');
	int n = 0;

	while (p && n < 4) {
		char *end;
		long v = strtol(p + 1, &end, 10);

		if (end == p + 1 || v != want)
			return 0;
		n++;
		p = end;
	}
	return n == 4;
}

/* Every task of the process, as the kernel reports it in /proc.
   Returns the number of tasks seen. */
static int proc_check_all(long want_uid, long want_gid)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int tasks = 0;

	if (!d) {
		FAIL("opendir /proc/self/task: %s", strerror(errno));
		return 0;
	}
	while ((e = readdir(d))) {
		char path[300], line[256];
		int seen = 0;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		tasks++;
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "Uid:", 4) == 0) {
				seen++;
				if (!line_ok(line, want_uid))
					FAIL("task %s: %s", e->d_name, line);
			} else if (strncmp(line, "Gid:", 4) == 0) {
				seen++;
				if (!line_ok(line, want_gid))
					FAIL("task %s: %s", e->d_name, line);
			}
		}
		fclose(f);
		if (seen != 2)
			FAIL("task %s: Uid/Gid lines missing", e->d_name);
	}
	closedir(d);
	return tasks;
}

static void *late(void *arg)
{
	(void)arg;
	check_ids("thread created after the change", NOBODY, NOBODY);
	return NULL;
}

static int scenario(int wfd, void *arg)
{
	pthread_t t[NT + 1];
	(void)wfd;
	(void)arg;

	harness_failures = 0;
	if (setgroups(0, NULL) != 0)
		FAIL("setgroups: %s", strerror(errno));

	/* set*id calls racing with thread creation (ids unchanged: root
	   stays root here). */
	pthread_t ch;
	if (pthread_create(&ch, NULL, churn, NULL) != 0)
		return 5;
	for (int i = 0; i < 300; i++)
		if (setresgid(0, 0, 0) != 0) {
			FAIL("setresgid(0, 0, 0): %s", strerror(errno));
			break;
		}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(ch, NULL);

	pthread_barrier_init(&bar, NULL, NT + 1);
	tasks_settle(1, 5); /* the churned threads leave /proc (harness.h) */
	CHECK_EQ(proc_check_all(0, 0), 1);
	for (intptr_t i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 3;
	pthread_barrier_wait(&bar); /* 1 */
	check_ids("main after setresgid in a thread", 0, NOBODY);
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3 */
	check_ids("main after setresuid in a thread", NOBODY, NOBODY);
	CHECK_EQ(proc_check_all(NOBODY, NOBODY), NT + 1);
	pthread_barrier_wait(&bar); /* 4 */
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	if (pthread_create(&t[NT], NULL, late, NULL) != 0)
		return 4;
	pthread_join(t[NT], NULL);
	fflush(stderr);
	return harness_failures ? 1 : 0;
}

int main(void)
{
	struct child_result r;

	WEFT_REQUIRE();
	if (getuid() != 0) {
		printf("SKIP: not running as root\n");
		TEST_DONE();
	}
	for (int round = 0; round < 20; round++) {
		REQUIRE(run_child(scenario, NULL, 10000, &r) == 0, "fork");
		if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
			FAIL("round %d: expected the child to exit 0, got %s", round,
			     status_str(&r));
			break;
		}
	}
	TEST_DONE();
}
