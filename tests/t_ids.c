/* Process and thread ids: getpid() is the same in every thread, gettid()
   differs per thread, matches the raw system call, /proc/thread-self,
   and the set of tasks listed in /proc/self/task. */
#include "harness.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NT 8

static pthread_barrier_t bar;

struct ids {
	pid_t pid, tid, raw_tid, proc_tid, proc_pid;
};
static struct ids ids[NT + 1];

static void fill(struct ids *r)
{
	char link[64];
	ssize_t n;

	r->pid = getpid();
	r->tid = gettid();
	r->raw_tid = (pid_t)syscall(SYS_gettid);
	r->proc_pid = r->proc_tid = -1;
	/* /proc/thread-self -> "<pid>/task/<tid>" */
	n = readlink("/proc/thread-self", link, sizeof link - 1);
	if (n > 0) {
		int p, t;
		link[n] = 0;
		if (sscanf(link, "%d/task/%d", &p, &t) == 2) {
			r->proc_pid = p;
			r->proc_tid = t;
		}
	}
}

static void *worker(void *arg)
{
	struct ids *r = arg;

	CHECK_WEFT_THREAD();
	fill(r);
	pthread_barrier_wait(&bar); /* all alive: main lists the tasks */
	pthread_barrier_wait(&bar); /* main is done listing */
	CHECK_EQ(gettid(), r->tid); /* stable */
	return NULL;
}

int main(void)
{
	pthread_t t[NT];

	WEFT_REQUIRE();
	CHECK_ERR(pthread_barrier_init(&bar, NULL, NT + 1), 0);
	fill(&ids[NT]);
	CHECK_EQ(ids[NT].tid, ids[NT].pid); /* main's tid is the pid */
	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, worker, &ids[i]), 0);
	pthread_barrier_wait(&bar);

	/* List /proc/self/task while every thread is alive. */
	pid_t listed[256];
	int nlisted = 0;
	DIR *d = opendir("/proc/self/task");
	REQUIRE(d, "opendir(/proc/self/task): %s", strerror(errno));
	struct dirent *de;
	while ((de = readdir(d)) && nlisted < 256)
		if (de->d_name[0] != '.')
			listed[nlisted++] = atoi(de->d_name);
	closedir(d);
	pthread_barrier_wait(&bar);

	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);

	CHECK_EQ(nlisted, NT + 1);
	for (int i = 0; i <= NT; i++) {
		struct ids *r = &ids[i];
		CHECK_EQ(r->pid, ids[NT].pid);
		CHECK_EQ(r->tid, r->raw_tid);
		CHECK_EQ(r->proc_pid, ids[NT].pid);
		CHECK_EQ(r->proc_tid, r->tid);
		int found = 0;
		for (int k = 0; k < nlisted; k++)
			found += listed[k] == r->tid;
		CHECK(found == 1, "thread %d: tid %d found %d times in "
		      "/proc/self/task", i, r->tid, found);
		for (int j = 0; j < i; j++)
			CHECK(r->tid != ids[j].tid, "threads %d and %d share tid %d",
			      i, j, r->tid);
	}
	pthread_barrier_destroy(&bar);
	TEST_DONE();
}
