/* Read-write locks and real-time threads (POSIX, Thread Execution
   Scheduling; Open POSIX Test Suite pthread_rwlock_rdlock/2-1, 2-2 and
   pthread_rwlock_unlock/3-1, which glibc fails):
   - (a) a SCHED_FIFO reader does not take a read-held lock while a
     writer of higher or equal priority is blocked on it (tryrdlock:
     EBUSY; rdlock blocks until the writer is done); a reader of higher
     priority, a SCHED_OTHER reader, and a thread that already holds a
     read lock (it would deadlock otherwise) do take it;
   - (b) when the lock becomes free, blocked SCHED_FIFO threads get it in
     priority order, a writer before a reader of equal priority.
   Needs the right to use SCHED_FIFO (root or CAP_SYS_NICE); without it
   the test fails.  WEFT_TEST_NO_RT=1 leaves it all out (exit 77:
   SKIP). */
#include <sched.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

enum op { OP_READ, OP_WRITE, OP_TRYREAD, OP_READ_TWICE };

struct locker {
	pthread_t th;
	enum op op;
	int prio;         /* SCHED_FIFO priority; 0: SCHED_OTHER */
	pid_t tid;
	int result;       /* of the (last) lock call */
	int order;        /* rank among the threads that got the lock */
	sem_t holding;    /* OP_READ_TWICE: first read lock taken */
	sem_t again;      /* OP_READ_TWICE: main says "ask once more" */
};

static pthread_rwlock_t rw;
static int next_order;

static int set_self(int prio)
{
	struct sched_param sp = {.sched_priority = prio};

	return pthread_setschedparam(pthread_self(),
				     prio ? SCHED_FIFO : SCHED_OTHER, &sp);
}

static void *locker_main(void *p)
{
	struct locker *k = p;

	CHECK_WEFT_THREAD();
	CHECK_ERR(set_self(k->prio), 0);
	__atomic_store_n(&k->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	switch (k->op) {
	case OP_TRYREAD:
		k->result = pthread_rwlock_tryrdlock(&rw);
		break;
	case OP_READ_TWICE:
		CHECK_ERR(pthread_rwlock_rdlock(&rw), 0);
		sem_post(&k->holding);
		sem_wait(&k->again);
		k->result = pthread_rwlock_rdlock(&rw);
		if (k->result == 0)
			CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
		break;
	case OP_READ:
		k->result = pthread_rwlock_rdlock(&rw);
		break;
	case OP_WRITE:
		k->result = pthread_rwlock_wrlock(&rw);
		break;
	}
	if (k->result == 0) {
		k->order = __atomic_add_fetch(&next_order, 1, __ATOMIC_SEQ_CST);
		CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	}
	return NULL;
}

static void start(struct locker *k, enum op op, int prio)
{
	k->op = op;
	k->prio = prio;
	k->tid = 0;
	k->result = -1;
	k->order = 0;
	sem_init(&k->holding, 0, 0);
	sem_init(&k->again, 0, 0);
	REQUIRE(pthread_create(&k->th, NULL, locker_main, k) == 0,
		"pthread_create failed");
}

/* Joins, or ends the test when the thread is stuck (a lost wake-up). */
static void finish(struct locker *k)
{
	struct timespec dl = deadline_in(CLOCK_REALTIME, 10000000000L);

	REQUIRE(pthread_timedjoin_np(k->th, NULL, &dl) == 0,
		"thread (op %d, priority %d) still blocked after 10 s", k->op,
		k->prio);
	sem_destroy(&k->holding);
	sem_destroy(&k->again);
}

/* Waits (at most 5 s) until the thread sleeps in the kernel: blocked on
   the lock (nothing else in locker_main sleeps before the lock call).
   Polled every millisecond: main runs SCHED_FIFO and must leave the CPU
   to the lower-priority threads it waits for. */
static int wait_asleep(struct locker *k)
{
	struct timespec ms = {0, 1000000};
	long end = mono_ns() + 5000000000L;
	pid_t tid;

	while (!(tid = __atomic_load_n(&k->tid, __ATOMIC_ACQUIRE)) &&
	       mono_ns() < end)
		nanosleep(&ms, NULL);
	return tid && task_asleep(tid, end - mono_ns());
}

/* Rule (a), pthread_rwlock_rdlock/2-1 and 2-2. */
static void readers_yield_to_writers(void)
{
	struct locker twice, w, t_low, t_eq, t_high, t_other, b;

	CHECK_ERR(pthread_rwlock_init(&rw, NULL), 0);
	next_order = 0;
	CHECK_ERR(pthread_rwlock_rdlock(&rw), 0); /* main: a reader inside */
	start(&twice, OP_READ_TWICE, 10);
	sem_wait(&twice.holding);
	start(&w, OP_WRITE, 20);
	CHECK(wait_asleep(&w), "writer did not block on a read-held lock");

	start(&t_low, OP_TRYREAD, 10);
	finish(&t_low);
	CHECK_ERR(t_low.result, EBUSY); /* lower than the waiting writer */
	start(&t_eq, OP_TRYREAD, 20);
	finish(&t_eq);
	CHECK_ERR(t_eq.result, EBUSY); /* equal */
	start(&t_high, OP_TRYREAD, 25);
	finish(&t_high);
	CHECK_ERR(t_high.result, 0); /* higher: enters */
	start(&t_other, OP_TRYREAD, 0);
	finish(&t_other);
	CHECK_ERR(t_other.result, 0); /* not real-time: not concerned */
	/* Holds a read lock already: must not deadlock against the writer
	   that waits for it to leave. */
	sem_post(&twice.again);
	finish(&twice);
	CHECK_ERR(twice.result, 0);

	next_order = 0; /* the readers above are done: rank from here */
	start(&b, OP_READ, 10);
	CHECK(wait_asleep(&b), "low-priority reader did not block while a "
			       "higher-priority writer waits");
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0); /* the last reader leaves */
	finish(&w);
	finish(&b);
	CHECK_ERR(w.result, 0);
	CHECK_ERR(b.result, 0);
	CHECK_EQ(w.order, 1); /* the writer first, then the reader */
	CHECK_EQ(b.order, 2);
	CHECK_ERR(pthread_rwlock_destroy(&rw), 0);
}

/* Rule (b), pthread_rwlock_unlock/3-1: writer 20, reader 20, writer 10
   blocked on a write-held lock get it in that order. */
static void priority_order(void)
{
	struct locker w1, r, w2;

	CHECK_ERR(pthread_rwlock_init(&rw, NULL), 0);
	next_order = 0;
	CHECK_ERR(pthread_rwlock_wrlock(&rw), 0);
	start(&w1, OP_WRITE, 20);
	CHECK(wait_asleep(&w1), "writer 1 did not block");
	start(&r, OP_READ, 20);
	CHECK(wait_asleep(&r), "reader did not block");
	start(&w2, OP_WRITE, 10);
	CHECK(wait_asleep(&w2), "writer 2 did not block");
	CHECK_ERR(pthread_rwlock_unlock(&rw), 0);
	finish(&w1);
	finish(&r);
	finish(&w2);
	CHECK_EQ(w1.order, 1);
	CHECK_EQ(r.order, 2);
	CHECK_EQ(w2.order, 3);
	CHECK_ERR(pthread_rwlock_destroy(&rw), 0);
}

int main(void)
{
	int err;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_rwlock_rdlock);
	REQUIRE_SERVED(pthread_rwlock_tryrdlock);
	REQUIRE_SERVED(pthread_rwlock_wrlock);
	REQUIRE_SERVED(pthread_rwlock_unlock);

	if (!harness_rt_wanted())
		TEST_DONE(); /* nothing else to check */
	err = set_self(30);
	if (err != 0) {
		RT_REFUSED(err);
		TEST_DONE();
	}
	/* Rounds: the hand-offs race with the woken threads' re-checks. */
	for (int i = 0; i < 5; i++) {
		readers_yield_to_writers();
		priority_order();
	}
	CHECK_ERR(set_self(0), 0);
	TEST_DONE();
}
