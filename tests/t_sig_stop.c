/* SIGSTOP and SIGCONT stop and continue a whole process of weft threads
   (job control acts on every task of the thread group).  A forked child
   runs 50 weft threads, each incrementing its own counter in memory
   shared with the parent.  The parent:
     1. waits until every counter moved (all threads run);
     2. sends SIGSTOP and polls /proc/<pid>/task/<tid>/stat (deadline)
        until every task is in state 'T';
     3. checks that no counter moves over a window of 200 ms;
     4. sends SIGCONT, polls until no task is in 'T' and every counter
        has advanced;
   twice, then kills and reaps the child. */
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

#define NT 50

struct shared {
	volatile long count[NT];
	int ready;    /* threads started */
	int bad_origin; /* threads that were not weft's */
};

static struct shared *sh;

static void *counter(void *arg)
{
	volatile long *c = arg;

	if (!weft_self_origin || weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_fetch_add(&sh->bad_origin, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		(*c)++;
		if ((*c & 1023) == 0)
			sched_yield(); /* let the other 49 in on 2 CPUs */
	}
	return NULL;
}

static void child(void)
{
	pthread_t t;

	for (int i = 0; i < NT; i++)
		if (pthread_create(&t, NULL, counter, (void *)&sh->count[i]) != 0)
			_exit(3);
	for (;;)
		pause();
}

/* Counts the child's tasks and how many are stopped ('T' or 't'). */
static int task_states(pid_t pid, int *stopped)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	*stopped = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char p2[384], buf[512], *s;
		FILE *f;
		size_t k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p2, sizeof p2, "%s/%s/stat", path, e->d_name);
		f = fopen(p2, "r");
		if (!f)
			continue;
		k = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[k] = 0;
		s = strrchr(buf, ')');
		n++;
		if (s && (s[2] == 'T' || s[2] == 't'))
			(*stopped)++;
	}
	closedir(d);
	return n;
}

/* Polls until every task is stopped (want_stopped) or none is; 5 s. */
static int wait_states(pid_t pid, int want_stopped, int *ntasks)
{
	long end = mono_ns() + 5000000000L;
	int n, st;

	do {
		n = task_states(pid, &st);
		if (n == NT + 1 && (want_stopped ? st == n : st == 0)) {
			*ntasks = n;
			return 1;
		}
		sched_yield();
	} while (mono_ns() < end);
	*ntasks = n;
	FAIL("after 5 s: %d tasks, %d stopped; expected %d tasks, %s stopped", n,
	     st, NT + 1, want_stopped ? "all" : "none");
	return 0;
}

/* Until every counter is beyond snap[i] (5 s). */
static int wait_all_advance(const long *snap)
{
	long end = mono_ns() + 5000000000L;
	int i;

	do {
		for (i = 0; i < NT; i++)
			if (sh->count[i] <= snap[i])
				break;
		if (i == NT)
			return 1;
		sched_yield();
	} while (mono_ns() < end);
	FAIL("counter %d did not advance in 5 s (%ld)", i, sh->count[i]);
	return 0;
}

int main(void)
{
	long zero[NT] = {0}, snap[NT];
	pid_t pid;
	int n, status;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED, "mmap");
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0)
		child();

	if (!wait_all_advance(zero))
		goto out;
	CHECK_EQ(sh->bad_origin, 0);
	for (int round = 0; round < 2; round++) {
		long end;

		CHECK_EQ(kill(pid, SIGSTOP), 0);
		if (!wait_states(pid, 1, &n))
			break;
		for (int i = 0; i < NT; i++)
			snap[i] = sh->count[i];
		/* A measurement window, not a synchronisation: a stopped
		   process must show no progress during it. */
		end = mono_ns() + 200000000L;
		while (mono_ns() < end)
			sched_yield();
		for (int i = 0; i < NT; i++)
			CHECK(sh->count[i] == snap[i],
			      "round %d: thread %d counted while stopped (%ld -> %ld)",
			      round, i, snap[i], sh->count[i]);
		CHECK_EQ(kill(pid, SIGCONT), 0);
		if (!wait_states(pid, 0, &n))
			break;
		if (!wait_all_advance(snap))
			break;
	}
out:
	kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "child status 0x%x", status);
	TEST_DONE();
}
