/* A parked weft thread for the tests that act on a running thread
   (t_sched_ops, t_affinity, t_names, t_cpuclock, t_sched_signals): it
   waits on a pipe for a command, runs it and answers on another pipe,
   so the test always knows what the thread is doing without sleeping. */
#ifndef T_SCHED_WORKER_H
#define T_SCHED_WORKER_H

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

struct worker {
	pthread_t th;
	pid_t tid;
	int cmd[2], ack[2];
	/* filled by the "report" command */
	int policy, prio, cpu;
	void (*hook)(struct worker *); /* run by the "hook" command */
};

enum { W_QUIT = 'q', W_REPORT = 'r', W_HOOK = 'h' };

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct sched_param sp;
	char c;

	CHECK_WEFT_THREAD();
	w->tid = (pid_t)syscall(SYS_gettid);
	c = 'u';
	if (write(w->ack[1], &c, 1) != 1)
		abort();
	while (read(w->cmd[0], &c, 1) == 1 && c != W_QUIT) {
		if (c == W_REPORT) {
			w->policy = sched_getscheduler(0);
			sched_getparam(0, &sp);
			w->prio = sp.sched_priority;
			w->cpu = sched_getcpu();
		} else if (c == W_HOOK) {
			w->hook(w);
		}
		if (write(w->ack[1], &c, 1) != 1)
			abort();
	}
	return NULL;
}

/* Sends one command and waits until the worker has done it. */
static inline void worker_do(struct worker *w, char c)
{
	REQUIRE(write(w->cmd[1], &c, 1) == 1, "worker command");
	if (c != W_QUIT)
		REQUIRE(read(w->ack[0], &c, 1) == 1, "worker answer");
}

/* Starts a worker (attr may be NULL); returns pthread_create's result. */
static inline int worker_start(struct worker *w, const pthread_attr_t *attr)
{
	char c;
	int err;

	memset(w, 0, sizeof *w);
	REQUIRE(pipe(w->cmd) == 0 && pipe(w->ack) == 0, "pipe");
	err = pthread_create(&w->th, attr, worker_main, w);
	if (err == 0)
		REQUIRE(read(w->ack[0], &c, 1) == 1, "worker start");
	return err;
}

static inline void worker_close(struct worker *w)
{
	close(w->cmd[0]);
	close(w->cmd[1]);
	close(w->ack[0]);
	close(w->ack[1]);
}

/* Ends the worker and waits until the kernel has reaped its task, but
   does not join it: its handle then names a finished, unjoined thread. */
static inline void worker_finish_unjoined(struct worker *w)
{
	worker_do(w, W_QUIT);
	for (long i = 0; syscall(SYS_tgkill, getpid(), w->tid, 0) == 0; i++) {
		REQUIRE(i < 10000000, "worker %d did not exit", (int)w->tid);
		sched_yield();
	}
}

#endif
