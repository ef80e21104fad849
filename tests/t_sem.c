/* Semaphores: producer/consumer with exact totals (every wait flavour),
   getvalue, trywait EAGAIN, timeouts on both clocks, every error (value
   above SEM_VALUE_MAX, EOVERFLOW, bad nanoseconds, unknown clock),
   glibc's layout; named semaphores: errors of sem_open/sem_unlink, the
   same address for a second open, reference-counted close, a file in
   /dev/shm, and a named semaphore shared with a forked child. */
#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

static struct timespec deadline(clockid_t clock, long ms)
{
	return deadline_in(clock, ms * 1000000L);
}

/* -1 and errno, or 0: as one number for CHECK_ERR. */
#define SEMERR(call) ((call) == 0 ? 0 : errno)

/* --- producer / consumer --------------------------------------------- */

enum { PRODUCERS = 3, CONSUMERS = 3, ITEMS = 100000, SLOTS = 16 };

static sem_t empty_slots, full_slots;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static long queue[SLOTS];
static int qhead, qtail;
static long consumed_sum, consumed_n;

static void *producer(void *arg)
{
	long base = (long)arg * ITEMS;

	CHECK_WEFT_THREAD();
	for (long i = 1; i <= ITEMS; i++) {
		while (sem_wait(&empty_slots) != 0)
			CHECK_ERR(errno, EINTR);
		pthread_mutex_lock(&qlock);
		queue[qtail] = base + i;
		qtail = (qtail + 1) % SLOTS;
		pthread_mutex_unlock(&qlock);
		CHECK_ERR(SEMERR(sem_post(&full_slots)), 0);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long sum = 0, n = 0, mode = (long)arg;

	CHECK_WEFT_THREAD();
	for (;;) {
		int r;

		if (mode == 0) {
			r = sem_wait(&full_slots);
		} else if (mode == 1) {
			struct timespec ts = deadline(CLOCK_REALTIME, 20000);
			r = sem_timedwait(&full_slots, &ts);
		} else {
			struct timespec ts = deadline(CLOCK_MONOTONIC, 20000);
			r = sem_clockwait(&full_slots, CLOCK_MONOTONIC, &ts);
		}
		REQUIRE(r == 0, "consumer wait: errno %d", errno);
		pthread_mutex_lock(&qlock);
		long v = queue[qhead];
		qhead = (qhead + 1) % SLOTS;
		pthread_mutex_unlock(&qlock);
		CHECK_ERR(SEMERR(sem_post(&empty_slots)), 0);
		if (v < 0)
			break; /* poison: end of the run */
		sum += v;
		n++;
	}
	__atomic_fetch_add(&consumed_sum, sum, __ATOMIC_RELAXED);
	__atomic_fetch_add(&consumed_n, n, __ATOMIC_RELAXED);
	return NULL;
}

static void producer_consumer(void)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	long want = 0;
	double t0 = now_s();
	int v;

	CHECK_ERR(SEMERR(sem_init(&empty_slots, 0, SLOTS)), 0);
	CHECK_ERR(SEMERR(sem_init(&full_slots, 0, 0)), 0);
	for (long i = 0; i < CONSUMERS; i++)
		CHECK_ERR(pthread_create(&c[i], NULL, consumer, (void *)i), 0);
	for (long i = 0; i < PRODUCERS; i++)
		CHECK_ERR(pthread_create(&p[i], NULL, producer, (void *)i), 0);
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_ERR(pthread_join(p[i], NULL), 0);
	for (int i = 0; i < CONSUMERS; i++) { /* one poison each */
		while (sem_wait(&empty_slots) != 0)
			;
		pthread_mutex_lock(&qlock);
		queue[qtail] = -1;
		qtail = (qtail + 1) % SLOTS;
		pthread_mutex_unlock(&qlock);
		sem_post(&full_slots);
	}
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_ERR(pthread_join(c[i], NULL), 0);
	for (long k = 0; k < PRODUCERS; k++)
		want += k * ITEMS * ITEMS + (long)ITEMS * (ITEMS + 1) / 2;
	CHECK_EQ(consumed_n, (long)PRODUCERS * ITEMS);
	CHECK_EQ(consumed_sum, want);
	CHECK_ERR(SEMERR(sem_getvalue(&empty_slots, &v)), 0);
	CHECK_EQ(v, SLOTS);
	CHECK_ERR(SEMERR(sem_getvalue(&full_slots, &v)), 0);
	CHECK_EQ(v, 0);
	CHECK_ERR(SEMERR(sem_destroy(&empty_slots)), 0);
	CHECK_ERR(SEMERR(sem_destroy(&full_slots)), 0);
	printf("producer/consumer: %d items in %.2f s\n", PRODUCERS * ITEMS,
	       now_s() - t0);
}

/* --- errors and timeouts --------------------------------------------- */

struct timed {
	sem_t *s;
	clockid_t clock;
	int err;
	double waited;
};

static void *timed_wait(void *p)
{
	struct timed *a = p;
	struct timespec ts = deadline(a->clock, 60);
	double t0 = now_s();
	int r = a->clock == CLOCK_REALTIME ? sem_timedwait(a->s, &ts)
					   : sem_clockwait(a->s, a->clock, &ts);

	a->err = r == 0 ? 0 : errno;
	a->waited = now_s() - t0;
	return NULL;
}

static void errors_and_timeouts(void)
{
	sem_t s;
	struct timespec bad = {0, 1000000000L}, past = {0, 0};
	int v;

	CHECK(sizeof(sem_t) == 32, "sem_t is %zu bytes", sizeof(sem_t));
	CHECK_ERR(SEMERR(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1)), EINVAL);
	CHECK_ERR(SEMERR(sem_init(&s, 0, SEM_VALUE_MAX)), 0);
	CHECK_ERR(SEMERR(sem_post(&s)), EOVERFLOW);
	CHECK_ERR(SEMERR(sem_getvalue(&s, &v)), 0);
	CHECK_EQ(v, SEM_VALUE_MAX);
	CHECK_ERR(SEMERR(sem_trywait(&s)), 0);
	CHECK_ERR(SEMERR(sem_post(&s)), 0);

	CHECK_ERR(SEMERR(sem_init(&s, 0, 2)), 0);
	/* glibc's layout: the value is the low 32 bits of the first word. */
	CHECK_EQ(*(unsigned *)&s, 2);
	CHECK_ERR(SEMERR(sem_trywait(&s)), 0);
	CHECK_ERR(SEMERR(sem_wait(&s)), 0);
	CHECK_ERR(SEMERR(sem_trywait(&s)), EAGAIN);
	CHECK_ERR(SEMERR(sem_timedwait(&s, &bad)), EINVAL);
	CHECK_ERR(SEMERR(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &past)),
		  EINVAL);
	CHECK_ERR(SEMERR(sem_timedwait(&s, &past)), ETIMEDOUT);
	CHECK_ERR(SEMERR(sem_clockwait(&s, CLOCK_MONOTONIC, &past)), ETIMEDOUT);
	/* The deadline is checked first even when a unit is available. */
	sem_post(&s);
	CHECK_ERR(SEMERR(sem_timedwait(&s, &bad)), EINVAL);
	CHECK_ERR(SEMERR(sem_timedwait(&s, &past)), 0);

	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	for (int c = 0; c < 2; c++) {
		struct timed a = {&s, clocks[c], -1, 0};
		pthread_t t;

		CHECK_ERR(pthread_create(&t, NULL, timed_wait, &a), 0);
		CHECK_ERR(pthread_join(t, NULL), 0);
		CHECK(a.err == ETIMEDOUT && a.waited >= 0.055,
		      "clock %d: err %d after %.3f s", c, a.err, a.waited);
	}
	/* A timed-out waiter left no trace: destroy succeeds. */
	CHECK_ERR(SEMERR(sem_destroy(&s)), 0);

	/* pshared semaphore: glibc's "shared" marker (128). */
	CHECK_ERR(SEMERR(sem_init(&s, 1, 0)), 0);
	CHECK_EQ(((int *)&s)[2], 128);
	CHECK_ERR(SEMERR(sem_init(&s, 0, 0)), 0);
	CHECK_EQ(((int *)&s)[2], 0);
}

/* Destroy while a thread sleeps in sem_wait: EBUSY (glibc says 0). */
static sem_t busy;
static void *busy_waiter(void *arg)
{
	(void)arg;
	while (sem_wait(&busy) != 0)
		;
	return NULL;
}

static void destroy_busy(void)
{
	pthread_t t;
	double end = now_s() + 10;
	int seen = 0;

	sem_init(&busy, 0, 0);
	CHECK_ERR(pthread_create(&t, NULL, busy_waiter, NULL), 0);
	while (!seen && now_s() < end) {
		seen = sem_destroy(&busy) != 0 && errno == EBUSY;
		if (!seen)
			sched_yield();
	}
	CHECK(seen, "sem_destroy never reported EBUSY with a sleeper");
	sem_post(&busy);
	CHECK_ERR(pthread_join(t, NULL), 0);
	CHECK_ERR(SEMERR(sem_destroy(&busy)), 0);
}

/* A signal handler interrupting sem_wait: -1 with EINTR (as glibc, since
   the handler is installed without SA_RESTART). */
static sem_t intr;
static volatile sig_atomic_t handled;
static void on_usr1(int sig)
{
	(void)sig;
	handled = 1;
}

static void *intr_waiter(void *arg)
{
	(void)arg;
	return (void *)(long)(sem_wait(&intr) == 0 ? 0 : errno);
}

static void interrupted(void)
{
	struct sigaction sa;
	pthread_t t;
	double end = now_s() + 10;
	void *res;
	int seen = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sem_init(&intr, 0, 0);
	CHECK_ERR(pthread_create(&t, NULL, intr_waiter, NULL), 0);
	/* Registered as a sleeper once destroy says EBUSY. */
	while (!seen && now_s() < end)
		if (!(seen = sem_destroy(&intr) != 0 && errno == EBUSY))
			sched_yield();
	CHECK(seen, "the waiter never slept");
	pthread_kill(t, SIGUSR1);
	CHECK_ERR(pthread_join(t, &res), 0);
	CHECK_EQ((long)res, EINTR);
	CHECK_EQ(handled, 1);
	CHECK_ERR(SEMERR(sem_destroy(&intr)), 0); /* it left the count */
}

/* --- named ------------------------------------------------------------ */

static void named(void)
{
	char name[64], path[96];
	sem_t *a, *b, *c;
	struct stat st;
	int status, v;
	pid_t pid;

	snprintf(name, sizeof name, "/weft-t_sem-%d", (int)getpid());
	snprintf(path, sizeof path, "/dev/shm/sem.%s", name + 1);
	sem_unlink(name);

	errno = 0;
	CHECK(sem_open(name, 0) == SEM_FAILED && errno == ENOENT,
	      "open missing: errno %d", errno);
	errno = 0;
	CHECK(sem_open("/a/b", O_CREAT, 0600, 0) == SEM_FAILED && errno == EINVAL,
	      "slash inside: errno %d", errno);
	errno = 0;
	CHECK(sem_open("/", O_CREAT, 0600, 0) == SEM_FAILED && errno == EINVAL,
	      "empty name: errno %d", errno);
	errno = 0;
	CHECK(sem_open(name, O_CREAT, 0600, (unsigned)SEM_VALUE_MAX + 1) ==
			      SEM_FAILED &&
		      errno == EINVAL,
	      "value too big: errno %d", errno);
	CHECK_ERR(SEMERR(sem_unlink("/a/b")), ENOENT);
	CHECK_ERR(SEMERR(sem_unlink(name)), ENOENT);

	a = sem_open(name, O_CREAT | O_EXCL, 0600, 3);
	REQUIRE(a != SEM_FAILED, "sem_open create: errno %d", errno);
	CHECK(stat(path, &st) == 0 && st.st_size == sizeof(sem_t) &&
		      (st.st_mode & 0777) == 0600,
	      "%s: size %ld mode %o", path, (long)st.st_size, st.st_mode & 0777);
	errno = 0;
	CHECK(sem_open(name, O_CREAT | O_EXCL, 0600, 3) == SEM_FAILED &&
		      errno == EEXIST,
	      "O_EXCL on an existing name: errno %d", errno);
	b = sem_open(name, 0);
	c = sem_open(name + 1, O_CREAT, 0600, 9); /* same file, other spelling */
	CHECK(b == a, "second open: %p, first %p", (void *)b, (void *)a);
	CHECK(c != SEM_FAILED, "open without the slash: errno %d", errno);
	CHECK_ERR(SEMERR(sem_getvalue(c, &v)), 0);
	CHECK_EQ(v, 3); /* existing: the value argument is ignored */
	CHECK_ERR(SEMERR(sem_close(c)), 0);
	CHECK_ERR(SEMERR(sem_close(b)), 0);
	CHECK_ERR(SEMERR(sem_getvalue(a, &v)), 0); /* still mapped */
	CHECK_EQ(v, 3);

	/* Across fork: the child takes all three and posts 5; the parent
	   waits for them. */
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		sem_t *s = sem_open(name, 0);
		int ok = s == a; /* inherited mapping, same address */
		for (int i = 0; i < 3; i++)
			ok &= sem_wait(s) == 0;
		for (int i = 0; i < 5; i++)
			sem_post(s);
		_exit(ok ? 0 : 1);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK_EQ(status, 0);
	for (int i = 0; i < 5; i++)
		CHECK_ERR(SEMERR(sem_wait(a)), 0);
	CHECK_ERR(SEMERR(sem_trywait(a)), EAGAIN);

	/* EACCES: another user may neither open our 0600 semaphore nor
	   (sticky /dev/shm) unlink it.  As root, a child drops to nobody;
	   otherwise a 0000 semaphore of our own is refused to us. */
	if (getuid() == 0) {
		pid = fork();
		REQUIRE(pid >= 0, "fork");
		if (pid == 0) {
			int ok = setgid(65534) == 0 && setuid(65534) == 0;
			errno = 0;
			ok = ok && sem_open(name, 0) == SEM_FAILED && errno == EACCES;
			errno = 0;
			ok = ok && sem_unlink(name) == -1 && errno == EACCES;
			_exit(ok ? 0 : 1);
		}
		REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(status == 0, "as nobody: open/unlink not refused with EACCES");
	} else {
		char locked[80];
		snprintf(locked, sizeof locked, "%s-locked", name);
		sem_unlink(locked);
		sem_t *l = sem_open(locked, O_CREAT | O_EXCL, 0, 0);
		CHECK(l != SEM_FAILED, "create 0000: errno %d", errno);
		errno = 0;
		CHECK(sem_open(locked, 0) == SEM_FAILED && errno == EACCES,
		      "open of a 0000 semaphore: errno %d", errno);
		sem_close(l);
		sem_unlink(locked);
	}

	CHECK_ERR(SEMERR(sem_unlink(name)), 0);
	CHECK(stat(path, &st) != 0, "%s still exists", path);
	CHECK_ERR(SEMERR(sem_post(a)), 0); /* unlinked, still usable */
	CHECK_ERR(SEMERR(sem_close(a)), 0);
	CHECK_ERR(SEMERR(sem_close(a)), EINVAL); /* no longer open */
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(sem_init);
	REQUIRE_SERVED(sem_wait);
	REQUIRE_SERVED(sem_timedwait);
	REQUIRE_SERVED(sem_clockwait);
	REQUIRE_SERVED(sem_post);
	REQUIRE_SERVED(sem_getvalue);
	REQUIRE_SERVED(sem_open);
	REQUIRE_SERVED(sem_close);
	REQUIRE_SERVED(sem_unlink);

	producer_consumer();
	errors_and_timeouts();
	destroy_busy();
	interrupted();
	named();
	TEST_DONE();
}
