/* Read-write locks: glibc's static initializers (and zero-filled
   memory), every error, timeouts on both clocks, exclusion under stress
   with invariants checked inside the critical sections, writer
   preference without writer starvation (worst writer wait reported),
   a storm of timed lock calls that give up (no lost wake-up), a
   process-shared lock across fork, sleeps that ask the kernel for no
   scheduling facts, and locks taken while the process has one thread
   (by the main thread, a signal handler, a fork child) that a second
   thread then contends for. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "trap_syscalls.h"

/* An absolute deadline `ms` from now on `clock`. */
static struct timespec deadline(clockid_t clock, long ms)
{
	return deadline_in(clock, ms * 1000000L);
}

/* --- one thread, then two -------------------------------------------

   The uncontended paths (one compare-and-swap on the lock word) are the
   same whether the process has one thread or many, so a lock taken
   before the first pthread_create must be whole for the thread made
   next.  Run first in main, before any thread exists. */

static pthread_rwlock_t ot;
static pid_t ot_tid[2];
static int ot_order[2], ot_seq; /* who got the lock in which turn */
static int ot_try_rd, ot_try_wr;

struct ot_arg {
	int id;
	int write;
};

/* Tries both ways, then blocks on the lock held by main. */
static void *ot_contender(void *p)
{
	struct ot_arg *a = p;

	CHECK_WEFT_THREAD();
	if (a->id == 0) {
		ot_try_rd = pthread_rwlock_tryrdlock(&ot);
		if (ot_try_rd == 0)
			CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
		ot_try_wr = pthread_rwlock_trywrlock(&ot);
		if (ot_try_wr == 0)
			CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	}
	__atomic_store_n(&ot_tid[a->id], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	CHECK_ERR(a->write ? pthread_rwlock_wrlock(&ot) : pthread_rwlock_rdlock(&ot), 0);
	ot_order[a->id] = __atomic_add_fetch(&ot_seq, 1, __ATOMIC_SEQ_CST);
	CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	return NULL;
}

static pid_t ot_wait_tid(int id)
{
	pid_t t;

	while (!(t = __atomic_load_n(&ot_tid[id], __ATOMIC_ACQUIRE)))
		sched_yield();
	return t;
}

/* Main holds `ot` (twice for reading) while alone; a writer (and with
   writer preference or a write-held lock, a reader after it) then
   contends.  Writer preference: the reader must stay out while the
   writer waits, though the lock is read-held (the inline read path
   sees the registered writer in the word), and the writer gets the
   lock first.  (Reader preference wakes both; either may be first.) */
static void one_thread_then_two(int write_held, int kind)
{
	pthread_rwlockattr_t a;
	struct ot_arg args[2] = {{0, 1}, {1, 0}};
	pthread_t t[2];
	int two = write_held || kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;

	CHECK_ERR(pthread_rwlockattr_init(&a), 0);
	CHECK_ERR(pthread_rwlockattr_setkind_np(&a, kind), 0);
	CHECK_ERR(pthread_rwlock_init(&ot, &a), 0);
	memset(ot_tid, 0, sizeof ot_tid);
	memset(ot_order, 0, sizeof ot_order);
	ot_seq = 0;
	if (write_held) {
		CHECK_ERR(pthread_rwlock_wrlock(&ot), 0);
		CHECK_ERR(pthread_rwlock_rdlock(&ot), EDEADLK);
		CHECK_ERR(pthread_rwlock_wrlock(&ot), EDEADLK);
	} else {
		CHECK_ERR(pthread_rwlock_rdlock(&ot), 0);
		CHECK_ERR(pthread_rwlock_rdlock(&ot), 0);
		CHECK_ERR(pthread_rwlock_trywrlock(&ot), EBUSY);
	}
	CHECK_ERR(pthread_create(&t[0], NULL, ot_contender, &args[0]), 0);
	CHECK(task_asleep(ot_wait_tid(0), 5000000000L),
	      "writer never slept on a lock %s-held before it existed",
	      write_held ? "write" : "read");
	CHECK_ERR(ot_try_rd, write_held ? EBUSY : 0);
	CHECK_ERR(ot_try_wr, EBUSY);
	if (two) {
		CHECK_ERR(pthread_create(&t[1], NULL, ot_contender, &args[1]), 0);
		CHECK(task_asleep(ot_wait_tid(1), 5000000000L),
		      "reader never slept (%s-held, %s)", write_held ? "write" : "read",
		      kind == PTHREAD_RWLOCK_PREFER_READER_NP ? "reader preference"
							     : "writer preference");
		if (!write_held)
			CHECK_ERR(pthread_rwlock_tryrdlock(&ot), EBUSY);
	}
	CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	if (!write_held)
		CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	CHECK_ERR(pthread_join(t[0], NULL), 0);
	if (two)
		CHECK_ERR(pthread_join(t[1], NULL), 0);
	if (kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) {
		CHECK_EQ(ot_order[0], 1); /* the writer first */
		CHECK_EQ(ot_order[1], 2);
	}
	CHECK_ERR(pthread_rwlock_unlock(&ot), EPERM);
	CHECK_ERR(pthread_rwlock_destroy(&ot), 0);
}

/* A signal handler of the only thread uses a lock the thread takes and
   releases both ways in a loop: the handler's try must fail while the
   thread holds the lock the other way, and the lock must be whole after
   every interrupted step (a compare-and-swap the handler made fail is
   retried).  A timer sends the signals; no thread is made. */
static pthread_rwlock_t sg;
static volatile sig_atomic_t sg_main_reads, sg_main_writes;
static volatile sig_atomic_t sg_handled, sg_rd, sg_wr, sg_bad;

static void sg_handler(int sig)
{
	int e = errno;

	(void)sig;
	sg_handled++;
	if (pthread_rwlock_tryrdlock(&sg) == 0) {
		if (sg_main_writes)
			sg_bad++;
		sg_rd++;
		if (pthread_rwlock_unlock(&sg) != 0)
			sg_bad++;
	}
	if (pthread_rwlock_trywrlock(&sg) == 0) {
		if (sg_main_reads || sg_main_writes)
			sg_bad++;
		sg_wr++;
		if (pthread_rwlock_unlock(&sg) != 0)
			sg_bad++;
	}
	errno = e;
}

static void in_signal_handler(void)
{
	struct sigaction sa = {.sa_handler = sg_handler};
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
	struct itimerspec its = {{0, 20000}, {0, 20000}};
	double end = now_s() + 2.0;
	long rounds = 0;
	timer_t tm;

	CHECK_ERR(pthread_rwlock_init(&sg, NULL), 0);
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0, "timer_create");
	REQUIRE(timer_settime(tm, 0, &its, NULL) == 0, "timer_settime");
	while ((sg_handled < 3000 || sg_rd < 100) && now_s() < end) {
		for (int i = 0; i < 1000; i++, rounds++) {
			CHECK_ERR(pthread_rwlock_rdlock(&sg), 0);
			sg_main_reads = 1;
			__asm__ volatile("" ::: "memory");
			sg_main_reads = 0;
			CHECK_ERR(pthread_rwlock_unlock(&sg), 0);
			CHECK_ERR(pthread_rwlock_wrlock(&sg), 0);
			sg_main_writes = 1;
			__asm__ volatile("" ::: "memory");
			sg_main_writes = 0;
			CHECK_ERR(pthread_rwlock_unlock(&sg), 0);
		}
	}
	timer_delete(tm);
	signal(SIGUSR1, SIG_IGN);
	CHECK(sg_handled > 0, "no signal was handled in 2 s (%ld rounds)", rounds);
	CHECK_EQ(sg_bad, 0);
	/* Whole: free, and fit for a second thread. */
	CHECK_ERR(pthread_rwlock_rdlock(&sg), 0);
	CHECK_ERR(pthread_rwlock_unlock(&sg), 0);
	CHECK_ERR(pthread_rwlock_unlock(&sg), EPERM);
	CHECK_ERR(pthread_rwlock_destroy(&sg), 0);
}

/* A fork child of a process with one thread inherits a lock read-held
   by the parent: it releases the parent's hold, takes the lock to
   write, and a thread it then makes contends. */
static void *fc_reader(void *arg)
{
	CHECK_WEFT_THREAD();
	CHECK_ERR(pthread_rwlock_tryrdlock(&ot), EBUSY);
	__atomic_store_n(&ot_tid[0], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	CHECK_ERR(pthread_rwlock_rdlock(&ot), 0);
	*(int *)arg = 1;
	CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	return NULL;
}

static void in_fork_child(void)
{
	int status;
	pid_t pid;

	CHECK_ERR(pthread_rwlock_init(&ot, NULL), 0);
	CHECK_ERR(pthread_rwlock_rdlock(&ot), 0);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		pthread_t t;
		int got = 0;

		memset(ot_tid, 0, sizeof ot_tid);
		CHECK_ERR(pthread_rwlock_trywrlock(&ot), EBUSY);
		CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
		CHECK_ERR(pthread_rwlock_wrlock(&ot), 0);
		CHECK_ERR(pthread_create(&t, NULL, fc_reader, &got), 0);
		CHECK(task_asleep(ot_wait_tid(0), 5000000000L),
		      "reader in the fork child never slept");
		CHECK_EQ(got, 0);
		CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
		CHECK_ERR(pthread_join(t, NULL), 0);
		CHECK_EQ(got, 1);
		CHECK_ERR(pthread_rwlock_destroy(&ot), 0);
		_exit(harness_failures ? 1 : 0);
	}
	CHECK_ERR(pthread_rwlock_unlock(&ot), 0);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork child: expected exit 0, got status %#x", status);
	CHECK_ERR(pthread_rwlock_destroy(&ot), 0);
}

static pthread_rwlock_t st_default = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t st_writer =
	PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_rwlock_t st_zero; /* zero-filled, never initialised */

static void static_initializers(void)
{
	pthread_rwlock_t *all[] = {&st_default, &st_writer, &st_zero};

	for (int i = 0; i < 3; i++) {
		CHECK_ERR(pthread_rwlock_rdlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_rdlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_trywrlock(all[i]), EBUSY);
		CHECK_ERR(pthread_rwlock_unlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_unlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_wrlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_tryrdlock(all[i]), EBUSY);
		CHECK_ERR(pthread_rwlock_unlock(all[i]), 0);
		CHECK_ERR(pthread_rwlock_destroy(all[i]), 0);
	}
}

struct timed_arg {
	pthread_rwlock_t *l;
	int write;
	clockid_t clock;
	long ms;
	int err;
	double waited;
};

/* In another thread: a timed lock that must time out. */
static void *timed_try(void *p)
{
	struct timed_arg *a = p;
	struct timespec ts = deadline(a->clock, a->ms);
	double t0 = now_s();

	CHECK_WEFT_THREAD();
	if (a->write)
		a->err = a->clock == CLOCK_REALTIME
				 ? pthread_rwlock_timedwrlock(a->l, &ts)
				 : pthread_rwlock_clockwrlock(a->l, a->clock, &ts);
	else
		a->err = a->clock == CLOCK_REALTIME
				 ? pthread_rwlock_timedrdlock(a->l, &ts)
				 : pthread_rwlock_clockrdlock(a->l, a->clock, &ts);
	a->waited = now_s() - t0;
	if (a->err == 0)
		pthread_rwlock_unlock(a->l);
	return NULL;
}

static struct timed_arg run_timed(pthread_rwlock_t *l, int write,
				  clockid_t clock, long ms)
{
	struct timed_arg a = {l, write, clock, ms, -1, 0};
	pthread_t t;

	CHECK_ERR(pthread_create(&t, NULL, timed_try, &a), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	return a;
}

static void errors_and_timeouts(void)
{
	pthread_rwlock_t l;
	pthread_rwlockattr_t a;
	struct timespec bad = {0, 1000000000L}, neg = {0, -1}, past = {0, 0};
	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	int v;

	CHECK_ERR(pthread_rwlockattr_init(&a), 0);
	CHECK_ERR(pthread_rwlockattr_getkind_np(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_RWLOCK_PREFER_READER_NP);
	CHECK_ERR(pthread_rwlockattr_setkind_np(&a, 42), EINVAL);
	CHECK_ERR(pthread_rwlockattr_setpshared(&a, 42), EINVAL);
	CHECK_ERR(pthread_rwlockattr_setkind_np(
			  &a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
		  0);
	CHECK_ERR(pthread_rwlockattr_getkind_np(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CHECK_ERR(pthread_rwlockattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	CHECK_ERR(pthread_rwlockattr_destroy(&a), 0);

	CHECK_ERR(pthread_rwlock_init(&l, NULL), 0);
	/* Bad deadlines are refused even when the lock is free (glibc). */
	CHECK_ERR(pthread_rwlock_timedrdlock(&l, &bad), EINVAL);
	CHECK_ERR(pthread_rwlock_timedwrlock(&l, &neg), EINVAL);
	CHECK_ERR(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &past),
		  EINVAL);
	CHECK_ERR(pthread_rwlock_clockwrlock(&l, 12345, &past), EINVAL);
	CHECK_ERR(pthread_rwlock_unlock(&l), EPERM); /* not held */
	{
		/* A zero-filled static lock is an unlocked one, not an
		   uninitialised one: EPERM too, and it stays usable (Open
		   POSIX pthread_rwlock_unlock/4-1 expects 0 or EINVAL; see
		   docs/sync-other.md). */
		static pthread_rwlock_t zero;

		CHECK_ERR(pthread_rwlock_unlock(&zero), EPERM);
		CHECK_ERR(pthread_rwlock_wrlock(&zero), 0);
		CHECK_ERR(pthread_rwlock_unlock(&zero), 0);
		CHECK_ERR(pthread_rwlock_destroy(&zero), 0);
	}

	/* Write-held: relocking in any way is a deadlock; others wait. */
	CHECK_ERR(pthread_rwlock_wrlock(&l), 0);
	CHECK_ERR(pthread_rwlock_wrlock(&l), EDEADLK);
	CHECK_ERR(pthread_rwlock_rdlock(&l), EDEADLK);
	CHECK_ERR(pthread_rwlock_timedwrlock(&l, &past), EDEADLK);
	CHECK_ERR(pthread_rwlock_trywrlock(&l), EBUSY);
	CHECK_ERR(pthread_rwlock_tryrdlock(&l), EBUSY);
	CHECK_ERR(pthread_rwlock_destroy(&l), EBUSY);
	for (int c = 0; c < 2; c++)
		for (int w = 0; w < 2; w++) {
			struct timed_arg r = run_timed(&l, w, clocks[c], 60);

			CHECK(r.err == ETIMEDOUT && r.waited >= 0.055,
			      "write-held, %s %s: err %d after %.3f s",
			      w ? "wrlock" : "rdlock",
			      c ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME", r.err,
			      r.waited);
		}
	CHECK_ERR(pthread_rwlock_unlock(&l), 0);

	/* Read-held: readers enter, writers time out. */
	CHECK_ERR(pthread_rwlock_rdlock(&l), 0);
	CHECK_ERR(pthread_rwlock_trywrlock(&l), EBUSY);
	CHECK_ERR(pthread_rwlock_destroy(&l), EBUSY);
	for (int c = 0; c < 2; c++) {
		struct timed_arg r = run_timed(&l, 0, clocks[c], 60);

		CHECK_ERR(r.err, 0);
		r = run_timed(&l, 1, clocks[c], 60);
		CHECK(r.err == ETIMEDOUT && r.waited >= 0.055,
		      "read-held, wrlock: err %d after %.3f s", r.err, r.waited);
		/* A deadline already past: ETIMEDOUT at once. */
		r = run_timed(&l, 1, clocks[c], -1000);
		CHECK_ERR(r.err, ETIMEDOUT);
	}
	CHECK_ERR(pthread_rwlock_unlock(&l), 0);
	CHECK_ERR(pthread_rwlock_unlock(&l), EPERM);
	CHECK_ERR(pthread_rwlock_destroy(&l), 0);
}

/* --- stress ----------------------------------------------------------- */

enum { READERS = 4, WRITERS = 2 };

static pthread_rwlock_t sl;
static int readers_in, writers_in, stop;
static long reads, writes;
static double worst_writer_wait;
static pthread_mutex_t worst_mu = PTHREAD_MUTEX_INITIALIZER;
static double stress_end;
static int reader_rest; /* pause loops a reader spends outside the lock */

static void *reader(void *arg)
{
	long i = 0, mine = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int err;
		if (i % 3 == 0) {
			struct timespec ts = deadline(CLOCK_MONOTONIC, 10000);
			err = pthread_rwlock_clockrdlock(&sl, CLOCK_MONOTONIC, &ts);
		} else {
			err = pthread_rwlock_rdlock(&sl);
		}
		REQUIRE(err == 0, "rdlock: %d", err);
		__atomic_fetch_add(&readers_in, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&writers_in, __ATOMIC_SEQ_CST))
			FAIL("a reader saw a writer inside");
		for (int k = 0; k < 200; k++)
			__asm__ volatile("pause");
		if (__atomic_load_n(&writers_in, __ATOMIC_SEQ_CST))
			FAIL("a reader saw a writer inside");
		__atomic_fetch_sub(&readers_in, 1, __ATOMIC_SEQ_CST);
		CHECK_ERR(pthread_rwlock_unlock(&sl), 0);
		mine++;
		/* Rest outside the lock so that, even when readers are
		   preferred, the lock is sometimes free for a writer. */
		for (int k = 0; k < reader_rest; k++)
			__asm__ volatile("pause");
		if (++i % 64 == 0 && now_s() > stress_end)
			break;
	}
	__atomic_fetch_add(&reads, mine, __ATOMIC_RELAXED);
	return NULL;
}

static void *writer(void *arg)
{
	long i = 0, mine = 0;
	double worst = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && now_s() < stress_end) {
		double t0 = now_s(), w;
		int err;

		if (i++ % 2) {
			struct timespec ts = deadline(CLOCK_REALTIME, 10000);
			err = pthread_rwlock_timedwrlock(&sl, &ts);
		} else {
			err = pthread_rwlock_wrlock(&sl);
		}
		REQUIRE(err == 0, "wrlock: %d", err);
		w = now_s() - t0;
		if (w > worst)
			worst = w;
		if (__atomic_fetch_add(&writers_in, 1, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(&readers_in, __ATOMIC_SEQ_CST))
			FAIL("a writer was not alone");
		for (int k = 0; k < 100; k++)
			__asm__ volatile("pause");
		__atomic_fetch_sub(&writers_in, 1, __ATOMIC_SEQ_CST);
		CHECK_ERR(pthread_rwlock_unlock(&sl), 0);
		mine++;
		if (mine >= 20000)
			break;
	}
	__atomic_fetch_add(&writes, mine, __ATOMIC_RELAXED);
	pthread_mutex_lock(&worst_mu);
	if (worst > worst_writer_wait)
		worst_writer_wait = worst;
	pthread_mutex_unlock(&worst_mu);
	return NULL;
}

static void stress(int kind, int rest, double seconds)
{
	pthread_rwlockattr_t a;
	pthread_t r[READERS], w[WRITERS];

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, kind);
	CHECK_ERR(pthread_rwlock_init(&sl, &a), 0);
	reader_rest = rest;
	reads = writes = 0;
	worst_writer_wait = 0;
	stop = 0;
	stress_end = now_s() + seconds;
	for (int i = 0; i < READERS; i++)
		CHECK_ERR(pthread_create(&r[i], NULL, reader, NULL), 0);
	for (int i = 0; i < WRITERS; i++)
		CHECK_ERR(pthread_create(&w[i], NULL, writer, NULL), 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	CHECK_ERR(pthread_rwlock_destroy(&sl), 0);
	printf("%s, readers rest %d: %ld reads, %ld writes in %.1f s, worst writer wait %.1f ms\n",
	       kind == PTHREAD_RWLOCK_PREFER_READER_NP ? "prefer-reader"
						       : "prefer-writer",
	       rest, reads, writes, seconds, worst_writer_wait * 1e3);
	CHECK(reads > 0 && writes > 0, "%ld reads, %ld writes", reads, writes);
	if (kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) {
		/* Even when readers overlap all the time (rest 0), writers
		   keep getting in.  (With readers preferred they do not:
		   a handful of writes in the whole run.) */
		CHECK(writes >= 100, "writers starved: %ld writes", writes);
		CHECK(worst_writer_wait < 1.0, "worst writer wait %.3f s",
		      worst_writer_wait);
	}
}

/* --- timeout storm ----------------------------------------------------
   Timed lock calls that give up all the time, mixed with untimed ones:
   a waiter giving up must not swallow the wake-up another one needed
   (an untimed waiter would then sleep forever: alarm() fails the test). */

enum { STORM_THREADS = 5 };
static pthread_rwlock_t storm;
static double storm_end;
static long storm_timeouts, storm_locks;

static void *storm_worker(void *arg)
{
	unsigned seed = (unsigned)(long)arg * 7919u + 1;
	long timeouts = 0, locks = 0;

	CHECK_WEFT_THREAD();
	for (int i = 0; i < 200000 && (i % 32 || now_s() < storm_end); i++) {
		int op, err, write;
		seed = seed * 1103515245u + 12345u;
		op = (seed >> 16) % 4;
		write = op & 1;
		if (op < 2) {
			err = write ? pthread_rwlock_wrlock(&storm)
				    : pthread_rwlock_rdlock(&storm);
		} else {
			clockid_t c = (seed >> 20) & 1 ? CLOCK_MONOTONIC
						       : CLOCK_REALTIME;
			struct timespec ts = deadline(c, 0);
			ts.tv_nsec += 20000 + (seed >> 8) % 200000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			err = write ? pthread_rwlock_clockwrlock(&storm, c, &ts)
				    : pthread_rwlock_clockrdlock(&storm, c, &ts);
		}
		if (err == ETIMEDOUT) {
			timeouts++;
			continue;
		}
		REQUIRE(err == 0, "storm lock: %d", err);
		locks++;
		if (write) {
			if (__atomic_fetch_add(&writers_in, 1, __ATOMIC_SEQ_CST) ||
			    __atomic_load_n(&readers_in, __ATOMIC_SEQ_CST))
				FAIL("storm: a writer was not alone");
			for (int k = 0; k < 300; k++)
				__asm__ volatile("pause");
			__atomic_fetch_sub(&writers_in, 1, __ATOMIC_SEQ_CST);
		} else {
			__atomic_fetch_add(&readers_in, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&writers_in, __ATOMIC_SEQ_CST))
				FAIL("storm: a reader saw a writer");
			for (int k = 0; k < 300; k++)
				__asm__ volatile("pause");
			__atomic_fetch_sub(&readers_in, 1, __ATOMIC_SEQ_CST);
		}
		CHECK_ERR(pthread_rwlock_unlock(&storm), 0);
	}
	__atomic_fetch_add(&storm_timeouts, timeouts, __ATOMIC_RELAXED);
	__atomic_fetch_add(&storm_locks, locks, __ATOMIC_RELAXED);
	return NULL;
}

static void timeout_storm(int kind)
{
	pthread_rwlockattr_t a;
	pthread_t t[STORM_THREADS];

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, kind);
	CHECK_ERR(pthread_rwlock_init(&storm, &a), 0);
	storm_timeouts = storm_locks = 0;
	storm_end = now_s() + 1.0;
	alarm(60);
	for (long i = 0; i < STORM_THREADS; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, storm_worker, (void *)i), 0);
	for (int i = 0; i < STORM_THREADS; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	alarm(0);
	CHECK_ERR(pthread_rwlock_destroy(&storm), 0);
	printf("timeout storm (%s): %ld locks, %ld timeouts\n",
	       kind == PTHREAD_RWLOCK_PREFER_READER_NP ? "prefer-reader"
						       : "prefer-writer",
	       storm_locks, storm_timeouts);
	CHECK(storm_timeouts > 0, "no timeout happened: the storm proved nothing");
}

/* --- a waiting writer gives up -----------------------------------------
   Writer-preferring lock, read-held by main.  W waits with a deadline,
   and a reader R arriving meanwhile must wait behind W.  When W gives up,
   R must be let in at once (main still holds its read lock, so nothing
   else would ever wake R). */

static pthread_rwlock_t gu;
static int gu_reader_in;

static void *gu_writer(void *arg)
{
	struct timespec ts = deadline(CLOCK_MONOTONIC, 300);

	(void)arg;
	return (void *)(long)pthread_rwlock_clockwrlock(&gu, CLOCK_MONOTONIC, &ts);
}

static void *gu_reader(void *arg)
{
	(void)arg;
	CHECK_ERR(pthread_rwlock_rdlock(&gu), 0);
	__atomic_store_n(&gu_reader_in, 1, __ATOMIC_SEQ_CST);
	CHECK_ERR(pthread_rwlock_unlock(&gu), 0);
	return NULL;
}

static void writer_gives_up(void)
{
	pthread_rwlockattr_t a;
	pthread_t w, r;
	double end;
	void *res;
	int busy = 0;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CHECK_ERR(pthread_rwlock_init(&gu, &a), 0);
	CHECK_ERR(pthread_rwlock_rdlock(&gu), 0);
	CHECK_ERR(pthread_create(&w, NULL, gu_writer, NULL), 0);
	/* W is registered once new readers are refused. */
	for (end = now_s() + 0.25; !busy && now_s() < end;)
		if (!(busy = pthread_rwlock_tryrdlock(&gu) == EBUSY)) {
			pthread_rwlock_unlock(&gu);
			sched_yield();
		}
	CHECK(busy, "the writer never showed up as waiting");
	CHECK_ERR(pthread_create(&r, NULL, gu_reader, NULL), 0);
	CHECK_ERR(pthread_join(w, &res), 0);
	CHECK_EQ((long)res, ETIMEDOUT);
	for (end = now_s() + 5; !__atomic_load_n(&gu_reader_in, __ATOMIC_SEQ_CST) &&
				now_s() < end;)
		sched_yield();
	CHECK(gu_reader_in, "the reader stayed blocked after the writer gave up");
	CHECK_ERR(pthread_rwlock_unlock(&gu), 0);
	if (!gu_reader_in) { /* rescue it, so the test ends */
		pthread_rwlock_wrlock(&gu);
		pthread_rwlock_unlock(&gu);
	}
	CHECK_ERR(pthread_join(r, NULL), 0);
	CHECK_ERR(pthread_rwlock_destroy(&gu), 0);
}

/* --- process-shared, across fork ------------------------------------- */

struct shared_area {
	pthread_rwlock_t l;
	long counter;
	int bad;
};

static void count_in(struct shared_area *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (i % 4 == 0) {
			pthread_rwlock_rdlock(&s->l);
			long seen = s->counter;
			sched_yield();
			if (s->counter != seen)
				s->bad++; /* a writer ran while we read */
			pthread_rwlock_unlock(&s->l);
		} else {
			pthread_rwlock_wrlock(&s->l);
			long v = s->counter;
			if (i % 16 == 1)
				sched_yield();
			s->counter = v + 1;
			pthread_rwlock_unlock(&s->l);
		}
	}
}

static void pshared_fork(void)
{
	struct shared_area *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_rwlockattr_t a;
	int status, n = 4000;
	pid_t pid;

	REQUIRE(s != MAP_FAILED, "mmap");
	pthread_rwlockattr_init(&a);
	CHECK_ERR(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	CHECK_ERR(pthread_rwlock_init(&s->l, &a), 0);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		count_in(s, n);
		_exit(0);
	}
	count_in(s, n);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK_EQ(status, 0);
	CHECK_EQ(s->counter, 2L * (n - n / 4));
	CHECK_EQ(s->bad, 0);
	CHECK_ERR(pthread_rwlock_destroy(&s->l), 0);
	munmap(s, sizeof *s);
}

/* ------------------------------------------------ no question per sleep

   A sleeping reader or writer needs its real-time priority (the
   priority rules of t_rwlock_rt); core/rt_hint.h answers from memory in
   a program that never used a real-time policy, and from a per-thread
   cache otherwise.  In a child, once one contended round has settled
   the hint, a seccomp filter traps every sched_getscheduler,
   sched_getparam and sched_getattr (trap_syscalls.h: counted, answered
   ENOSYS); further contended rounds, each with a reader and a writer
   asleep on the lock, must make none.  (The rwlock used to ask with two
   of these calls before every sleep.) */
static pthread_rwlock_t ql;
/* One locker thread for all rounds, made before the filter: a thread's
   creation may ask about scheduling itself (AddressSanitizer's thread
   start calls pthread_getattr_np, which asks the kernel as glibc's
   does), and that is not the rwlock's question.  Round n: main sets
   q_mode (0 read, 1 write, -1 end) and q_seq = n; the locker takes the
   lock that way, releases it and sets q_ack = n. */
static int q_seq, q_ack, q_mode;
static pid_t q_tid;

static void *q_locker(void *arg)
{
	int seen = 0;

	(void)arg;
	__atomic_store_n(&q_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (;;) {
		int mode;

		while (__atomic_load_n(&q_seq, __ATOMIC_ACQUIRE) == seen)
			sched_yield();
		seen = __atomic_load_n(&q_seq, __ATOMIC_ACQUIRE);
		mode = __atomic_load_n(&q_mode, __ATOMIC_RELAXED);
		if (mode < 0)
			return NULL;
		CHECK_ERR(mode ? pthread_rwlock_wrlock(&ql) : pthread_rwlock_rdlock(&ql), 0);
		CHECK_ERR(pthread_rwlock_unlock(&ql), 0);
		__atomic_store_n(&q_ack, seen, __ATOMIC_RELEASE);
	}
}

/* The main thread holds the lock the other way; the locker sleeps on
   it until released. */
static void q_round(int write)
{
	int n = __atomic_load_n(&q_seq, __ATOMIC_RELAXED) + 1;

	CHECK_ERR(write ? pthread_rwlock_rdlock(&ql) : pthread_rwlock_wrlock(&ql), 0);
	__atomic_store_n(&q_mode, write, __ATOMIC_RELAXED);
	__atomic_store_n(&q_seq, n, __ATOMIC_RELEASE);
	CHECK(task_asleep(q_tid, 5000000000L), "%s never slept on the lock",
	      write ? "writer" : "reader");
	CHECK_ERR(pthread_rwlock_unlock(&ql), 0);
	while (__atomic_load_n(&q_ack, __ATOMIC_ACQUIRE) != n)
		sched_yield();
}

static void no_sched_queries_child(void)
{
	static const int nrs[] = {SYS_sched_getscheduler, SYS_sched_getparam,
				  SYS_sched_getattr};
	pthread_t t;

	CHECK_ERR(pthread_rwlock_init(&ql, NULL), 0);
	REQUIRE(pthread_create(&t, NULL, q_locker, NULL) == 0, "create");
	while (!__atomic_load_n(&q_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	q_round(0); /* settles the hint */
	q_round(1);
	trap_result = -ENOSYS;
	REQUIRE(trap_syscalls(nrs, 3) == 0, "seccomp filter: %s",
		strerror(errno));
	for (int i = 0; i < 20; i++) {
		q_round(0);
		q_round(1);
	}
	CHECK(trap_count == 0, "20 reader and 20 writer sleeps on a rwlock: "
	      "expected no question to the kernel about scheduling, got %d",
	      trap_count);
	__atomic_store_n(&q_mode, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&q_seq, q_seq + 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_rwlock_rdlock);
	REQUIRE_SERVED(pthread_rwlock_wrlock);
	REQUIRE_SERVED(pthread_rwlock_unlock);
	REQUIRE_SERVED(pthread_rwlock_timedrdlock);
	REQUIRE_SERVED(pthread_rwlock_clockwrlock);
	REQUIRE_SERVED(pthread_rwlockattr_setkind_np);
	REQUIRE_SERVED(__pthread_rwlock_rdlock);

	/* Before any thread exists. */
	in_signal_handler();
	in_fork_child();
	one_thread_then_two(0, PTHREAD_RWLOCK_PREFER_READER_NP);
	one_thread_then_two(1, PTHREAD_RWLOCK_PREFER_READER_NP);
	one_thread_then_two(0, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	one_thread_then_two(1, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	static_initializers();
	errors_and_timeouts();
	stress(PTHREAD_RWLOCK_PREFER_READER_NP, 400, 1.5);
	stress(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, 400, 1.5);
	stress(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, 0, 1.5);
	writer_gives_up();
	timeout_storm(PTHREAD_RWLOCK_PREFER_READER_NP);
	timeout_storm(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pshared_fork();
	trap_in_child(no_sched_queries_child, 20, "no-question child");
	TEST_DONE();
}
