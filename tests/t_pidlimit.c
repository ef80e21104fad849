/* At the kernel's thread limit: create threads (default attributes)
   until pthread_create fails; the error must be EAGAIN, every thread is
   joined, nothing leaks (weft's live count, blocks held by the stack
   cache, mappings, RSS), and the same number can be created again.

   The machine's real pid space (pid_max 32768) is shared with everything
   else, so the test never goes near it.  It makes its own small limit:
     1. a new pid namespace whose pid_max is lowered (Linux 6.14+ keeps
        pid_max per pid namespace; the sysctl file acts on the namespace
        of the process that writes it, whichever /proc it goes through);
     2. the same inside a new user namespace, when not privileged;
     3. RLIMIT_NPROC under an otherwise unused uid (needs root).
   It prints which one it used and fails if none can be set up
   (T_PIDLIMIT_WAY=1, 2 or 3 forces one of them).

   Inside a pid namespace the first round starts at pid 2, later ones at
   300 (the kernel skips the reserved pids after wrapping), so round 0
   only warms up; rounds 1 and 2 must create exactly as many threads. */
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"
#include "child.h"

#define PID_LIMIT 900	 /* pid_max inside the namespace */
#define NPROC_LIMIT 600	 /* RLIMIT_NPROC for the uid fallback */
#define SPARE_UID 54329	 /* uid for the RLIMIT_NPROC fallback */
#define MAX_THREADS 5000 /* more than any of the limits above allows */

static int gate, ready;
static pthread_t th[MAX_THREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
	CHECK_WEFT_THREAD();
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return arg;
}

/* A joined thread's pid is freed by the kernel a moment after the tid
   word is cleared; wait (bounded) until only main is left. */
static void wait_tasks_gone(void)
{
	CHECK_EQ(tasks_settle(1, 10), 1);
}

struct round {
	int made, err, joined;
	long rss, maps;
	unsigned long live, held; /* weft's live threads; blocks kept */
};

static void one_round(struct round *r)
{
	struct weft_stats s;

	r->made = r->err = r->joined = 0;
	gate = ready = 0;
	while (r->made < MAX_THREADS &&
	       (r->err = pthread_create(&th[r->made], NULL, sleeper,
					(void *)(long)r->made)) == 0)
		r->made++;
	double end = now() + 30;
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < r->made && now() < end)
		sched_yield();
	CHECK_EQ(__atomic_load_n(&ready, __ATOMIC_ACQUIRE), r->made);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
	for (int i = 0; i < r->made; i++) {
		void *v;

		if (pthread_join(th[i], &v) == 0 && v == (void *)(long)i)
			r->joined++;
	}
	wait_tasks_gone();
	weft_get_stats(&s);
	r->live = s.threads_live;
	r->held = s.stacks_mapped - s.stacks_unmapped;
	r->rss = rss_kib();
	r->maps = maps_count();
	fprintf(stderr, "  created %d, then %d (%s); joined %d; live %lu, "
			"blocks held %lu, RSS %ld KiB, %ld mappings\n",
		r->made, r->err, strerror(r->err), r->joined, r->live, r->held,
		r->rss, r->maps);
}

/* The scenario, inside the limit set up by the parent. */
static int inner(const char *how)
{
	struct round r[3];
	struct weft_stats s0;
	volatile pthread_t me; /* pthread_self is const: kept by volatile */
	long rss0, maps0;

	fprintf(stderr, "limit used: %s\n", how);
	/* The main thread gets its descriptor from its first call that
	   needs one (the first pthread_create at the latest), and keeps it:
	   the baseline counts it. */
	me = pthread_self();
	(void)me;
	weft_get_stats(&s0);
	rss0 = rss_kib();
	maps0 = maps_count();
	for (int i = 0; i < 3; i++) {
		fprintf(stderr, "round %d:\n", i);
		one_round(&r[i]);
		CHECK_ERR(r[i].err, EAGAIN);
		CHECK_EQ(r[i].joined, r[i].made);
		CHECK_EQ(r[i].live, s0.threads_live);
		CHECK(r[i].held <= 1024, "the stack cache holds %lu blocks, its "
		      "bound is 1024", r[i].held);
	}
	CHECK(r[1].made >= 400, "only %d threads under a limit of about 600",
	      r[1].made);
	/* Nothing leaked: the second full round ends where the first did. */
	CHECK_EQ(r[2].made, r[1].made);
	CHECK_EQ(r[2].held, r[1].held);
	CHECK(r[2].maps <= r[1].maps, "mappings %ld after round 1, %ld after "
	      "round 2", r[1].maps, r[2].maps);
	CHECK(r[2].rss <= r[1].rss + 1024, "RSS %ld KiB after round 1, %ld "
	      "after round 2", r[1].rss, r[2].rss);
	/* A cached block is at most two mappings: by default the first
	   1,024 blocks have a guard mapping of their own (docs/lifecycle.md,
	   "Guards that debuggers can read"). */
	CHECK(r[2].maps <= maps0 + 2 * (long)r[2].held + 8, "mappings %ld at "
	      "start, %ld at the end with %lu blocks cached", maps0, r[2].maps,
	      r[2].held);
	CHECK(r[2].rss <= rss0 + (long)r[2].held * 64 + 4096, "RSS %ld KiB at "
	      "start, %ld at the end with %lu blocks cached", rss0, r[2].rss,
	      r[2].held);
	return harness_failures ? 1 : 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

static long read_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof buf - 1) < 0)
		buf[0] = 0;
	close(fd);
	return strtol(buf, NULL, 10);
}

static char **self_argv;

static void exec_inner(const char *how)
{
	setenv("T_PIDLIMIT_INNER", how, 1);
	execv("/proc/self/exe", self_argv);
	fprintf(stderr, "execv: %s\n", strerror(errno));
	_exit(3);
}

/* In the forked child: enter a new pid namespace (with a user namespace
   if `user`), fork its first process, lower pid_max from inside, check
   it by reading it back, and run the scenario there.  Exit 2 means "this
   kind of sandbox is not available here". */
static int sandbox_pidns(int wfd, void *user)
{
	char text[32], how[128];
	int st;
	pid_t p;

	dup2(wfd, 1);
	dup2(wfd, 2);
	if (user) {
		uid_t uid = getuid();
		gid_t gid = getgid();
		char map[64];

		if (unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0)
			return 2;
		snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
		write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
		write_file("/proc/self/gid_map", map);
		snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
		if (write_file("/proc/self/uid_map", map) != 0)
			return 2;
	} else if (unshare(CLONE_NEWPID) != 0) {
		return 2;
	}
	if ((p = fork()) < 0)
		return 2;
	if (p == 0) {
		snprintf(text, sizeof text, "%d", PID_LIMIT);
		if (write_file("/proc/sys/kernel/pid_max", text) != 0 ||
		    read_long("/proc/sys/kernel/pid_max") != PID_LIMIT)
			_exit(2);
		snprintf(how, sizeof how, "%spid namespace with pid_max %ld "
			 "(read back inside the namespace)",
			 user ? "user + " : "",
			 read_long("/proc/sys/kernel/pid_max"));
		exec_inner(how);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int sandbox_nproc(int wfd, void *unused)
{
	struct rlimit rl = {NPROC_LIMIT, NPROC_LIMIT};
	char how[96];

	(void)unused;
	dup2(wfd, 1);
	dup2(wfd, 2);
	if (setrlimit(RLIMIT_NPROC, &rl) != 0 || setgid(SPARE_UID) != 0 ||
	    setuid(SPARE_UID) != 0)
		return 2;
	snprintf(how, sizeof how, "RLIMIT_NPROC %d as uid %d", NPROC_LIMIT,
		 SPARE_UID);
	exec_inner(how);
	return 2;
}

int main(int argc, char **argv)
{
	static struct child_result r;
	const char *inner_how = getenv("T_PIDLIMIT_INNER");
	long outside = read_long("/proc/sys/kernel/pid_max");
	int used = 0;

	(void)argc;
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_join);
	if (inner_how)
		return inner(inner_how);
	self_argv = argv;
	struct {
		int (*fn)(int, void *);
		void *arg;
	} ways[] = {{sandbox_pidns, NULL},
		    {sandbox_pidns, (void *)1},
		    {sandbox_nproc, NULL}};
	/* T_PIDLIMIT_WAY=1..3 forces one kind (to check each one works). */
	const char *force = getenv("T_PIDLIMIT_WAY");
	size_t first = force ? (size_t)atoi(force) - 1 : 0;
	size_t last = force ? first + 1 : sizeof ways / sizeof ways[0];

	REQUIRE(first < sizeof ways / sizeof ways[0], "bad T_PIDLIMIT_WAY");
	for (size_t i = first; i < last && !used; i++) {
		REQUIRE(run_child(ways[i].fn, ways[i].arg, 120000, &r) == 0,
			"fork failed");
		if (!r.timed_out && WIFEXITED(r.status) &&
		    WEXITSTATUS(r.status) == 2 && !strstr(r.out, "limit used"))
			continue; /* not available here: try the next kind */
		used = 1;
		fputs(r.out, stderr);
		CHECK(!r.timed_out && WIFEXITED(r.status) &&
		      WEXITSTATUS(r.status) == 0,
		      "scenario: expected exit 0, got %s", status_str(&r));
	}
	CHECK(used, "no thread limit could be set up (pid namespace, user "
	      "namespace, RLIMIT_NPROC)");
	CHECK_EQ(read_long("/proc/sys/kernel/pid_max"), outside);
	TEST_DONE();
}
