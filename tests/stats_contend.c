/* Helper of tests/t_stats.sh (built by it, with -rdynamic so that
   dladdr can name contend_worker & co.): makes one contended wait on
   each kind of lock WEFT_STATS reports, deterministically, then
   bounded two-thread contention on the mutex; and one wait each on a
   robust process-shared mutex (LMDB's kind) and a PI mutex, which have
   lock-word protocols of their own.  Prints on stdout what the script
   checks the report against:
     pid=P created=N mutex=ADDR rwlock=ADDR spin=ADDR robust=ADDR pi=ADDR
     counter=C

   Contention without sleeps: the main thread holds the lock, starts a
   worker that asks for it, and lets go only once the worker is seen
   waiting: asleep in the kernel (state S in /proc, for the mutex and
   the rwlock), or burning CPU time (for the spin lock, which never
   sleeps).

   With an argument N, it then also makes N more mutexes each wait once
   (the table must grow past its first blocks and keep them apart):
   the main thread holds them all, a worker locks them in order, and
   each is let go once its lock word shows a sleeper (2, glibc's
   protocol, which weft keeps).

   With CONTEND_CLOSE_STDERR set, an atexit handler closes stderr before
   weft's report, as many programs do.  With CONTEND_MAIN_EXIT set, main
   starts one more thread, which waits until main is gone, and ends with
   pthread_exit: the process ends when that weft thread does. */
#include "harness.h"

#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 20000
#define LOOP_SECONDS 3.0

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;
static pthread_mutex_t robust_mu, pi_mu;
static long counter;
static int waiter_tid; /* atomic: set by a worker just before it waits */

static int announce(void)
{
	int tid = (int)syscall(SYS_gettid);

	__atomic_store_n(&waiter_tid, tid, __ATOMIC_RELEASE);
	return tid;
}

static int wait_announced(void)
{
	int tid;
	double end = now_s() + 10;

	while (!(tid = __atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE)) &&
	       now_s() < end)
		sched_yield();
	__atomic_store_n(&waiter_tid, 0, __ATOMIC_RELAXED);
	return tid;
}

/* Until thread `tid` sleeps in the kernel (bounded: 10 s). */
static int wait_asleep(int tid)
{
	char path[64], buf[512];
	double end = now_s() + 10;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	while (now_s() < end) {
		FILE *f = fopen(path, "r");
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
		}
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return 1;
		sched_yield();
	}
	return 0;
}

/* Until thread `t` has used 5 ms of CPU since it announced itself:
   it is spinning (bounded: 10 s). */
static int wait_spinning(pthread_t t)
{
	clockid_t c;
	struct timespec ts;
	double start, end = now_s() + 10;

	if (pthread_getcpuclockid(t, &c) != 0 || clock_gettime(c, &ts) != 0)
		return 0;
	start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	while (now_s() < end) {
		clock_gettime(c, &ts);
		if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - start > 0.005)
			return 1;
		sched_yield();
	}
	return 0;
}

__attribute__((noinline)) void *contend_worker(void *arg)
{
	double end = now_s() + LOOP_SECONDS;

	CHECK_WEFT_THREAD();
	if (arg)
		announce();
	pthread_mutex_lock(&mu);
	counter++;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < ROUNDS && now_s() < end; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

/* Like coreutils' close_stdout: an atexit handler of the program that
   closes stderr before weft's report runs. */
static void close_stderr(void)
{
	fclose(stderr);
}

/* Ends after the main thread has (it is a zombie then), so that it is
   the process's last thread, and weft ends the process. */
static void *last_thread(void *arg)
{
	char path[64], buf[512];
	double end = now_s() + 10;

	CHECK_WEFT_THREAD();
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)arg);
	while (now_s() < end) {
		FILE *f = fopen(path, "r");
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
		}
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		if (!f || (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')))
			break;
		sched_yield();
	}
	return NULL;
}

static pthread_mutex_t *many;
static long nmany;

__attribute__((noinline)) void *many_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (long i = 0; i < nmany; i++) {
		pthread_mutex_lock(&many[i]);
		pthread_mutex_unlock(&many[i]);
	}
	return NULL;
}

/* Lets go of many[i] once the worker sleeps on it (bounded: 10 s): the
   private lock word's "sleepers" bit (docs/sync.md, value 2 as in
   glibc's 0/1/2 protocol). */
static int release_when_waited(long i)
{
	double end = now_s() + 10;

	while (!(__atomic_load_n(&many[i].__data.__lock, __ATOMIC_ACQUIRE) & 2))
		if (now_s() > end)
			return 0;
		else
			sched_yield();
	pthread_mutex_unlock(&many[i]);
	return 1;
}

__attribute__((noinline)) void *kinds_worker(void *arg)
{
	pthread_mutex_t *m = arg;

	CHECK_WEFT_THREAD();
	announce();
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	return NULL;
}

/* The main thread holds `m`; a worker waits for it, asleep. */
static void kind_contention(pthread_mutex_t *m, pthread_t *t)
{
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_create(t, NULL, kinds_worker, m), 0);
	REQUIRE(wait_asleep(wait_announced()), "mutex waiter never slept");
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(pthread_join(*t, NULL), 0);
}

static void init_kind(pthread_mutex_t *m, int robust, int pi)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	if (robust) {
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	}
	if (pi)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	CHECK_EQ(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

__attribute__((noinline)) void *reader_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	announce();
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	return NULL;
}

__attribute__((noinline)) void *spin_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	announce();
	pthread_spin_lock(&sp);
	pthread_spin_unlock(&sp);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[7];
	int created = 0;

	WEFT_REQUIRE();
	if (getenv("CONTEND_CLOSE_STDERR"))
		atexit(close_stderr);
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_rwlock_rdlock);
	REQUIRE_SERVED(pthread_spin_lock);
	CHECK_EQ(pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE), 0);

	/* The mutex: one sure contention, then two threads hammering. */
	pthread_mutex_lock(&mu);
	CHECK_EQ(pthread_create(&t[0], NULL, contend_worker, &mu), 0);
	created++;
	REQUIRE(wait_asleep(wait_announced()), "mutex waiter never slept");
	pthread_mutex_unlock(&mu);
	CHECK_EQ(pthread_create(&t[1], NULL, contend_worker, NULL), 0);
	created++;
	CHECK_EQ(pthread_join(t[0], NULL), 0);
	CHECK_EQ(pthread_join(t[1], NULL), 0);

	/* The rwlock: a reader waits for the writer. */
	pthread_rwlock_wrlock(&rw);
	CHECK_EQ(pthread_create(&t[2], NULL, reader_worker, NULL), 0);
	created++;
	REQUIRE(wait_asleep(wait_announced()), "rwlock reader never slept");
	pthread_rwlock_unlock(&rw);
	CHECK_EQ(pthread_join(t[2], NULL), 0);

	/* The spin lock: a spinner waits for the holder. */
	pthread_spin_lock(&sp);
	CHECK_EQ(pthread_create(&t[3], NULL, spin_worker, NULL), 0);
	created++;
	REQUIRE(wait_announced(), "spinner never started");
	REQUIRE(wait_spinning(t[3]), "spinner never spun");
	pthread_spin_unlock(&sp);
	CHECK_EQ(pthread_join(t[3], NULL), 0);

	/* A robust process-shared mutex and a PI one. */
	init_kind(&robust_mu, 1, 0);
	init_kind(&pi_mu, 0, 1);
	kind_contention(&robust_mu, &t[5]);
	created++;
	kind_contention(&pi_mu, &t[6]);
	created++;

	/* N more mutexes, one contention each. */
	nmany = argc > 1 ? atol(argv[1]) : 0;
	if (nmany > 0) {
		many = calloc((size_t)nmany, sizeof *many);
		REQUIRE(many, "calloc");
		for (long i = 0; i < nmany; i++) {
			pthread_mutex_init(&many[i], NULL);
			pthread_mutex_lock(&many[i]);
		}
		CHECK_EQ(pthread_create(&t[4], NULL, many_worker, NULL), 0);
		created++;
		for (long i = 0; i < nmany; i++)
			REQUIRE(release_when_waited(i), "mutex %ld: no sleeper seen", i);
		CHECK_EQ(pthread_join(t[4], NULL), 0);
	}

	printf("pid=%d created=%d mutex=%p rwlock=%p spin=%p robust=%p pi=%p "
	       "counter=%ld many=%p nmany=%ld\n",
	       (int)getpid(), created, (void *)&mu, (void *)&rw, (void *)&sp,
	       (void *)&robust_mu, (void *)&pi_mu, counter, (void *)many, nmany);
	fflush(stdout);
	/* The report must also come when the last thread ends the process
	   (weft's thread_finish calls exit(0)). */
	if (getenv("CONTEND_MAIN_EXIT") && !harness_failures) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		REQUIRE(pthread_create(&t[0], &a, last_thread,
				       (void *)(long)getpid()) == 0, "create");
		pthread_exit(NULL);
	}
	TEST_DONE();
}
