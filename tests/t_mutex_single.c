/* A default mutex in a process that has one thread.  There weft takes
   and frees a private default mutex with plain stores, as glibc 2.35
   on does (src/sync/mutex.h, mutex_lock_fast); this test checks that
   the shortcut keeps the mutex's meaning:
     - one thread (__libc_single_threaded true): a lock leaves the word
       held and the owner set, trylock answers EBUSY, an unlock clears
       both; the error-checking and recursive types keep EDEADLK, EPERM
       and their depth; a signal handler that interrupts main's critical
       section finds that mutex busy and locks another; a fork child
       locks and unlocks;
     - the first pthread_create while main holds the mutex: the new weft
       thread blocks on it (its trylock says EBUSY first), and main's
       unlock, now with two threads, wakes it;
     - after it, threads contend with a count of entries and overlaps.
   A process-shared mutex never takes the shortcut (another process may
   race for it): t_mutex_pshared's two single-threaded processes
   contending for one fail without that exclusion. */
#include <signal.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define LW_SLEEPERS 2 /* the private lock word's "someone may sleep" bit */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;

static int self_tid(void)
{
	return (int)syscall(SYS_gettid);
}

static int lock_word(pthread_mutex_t *mx)
{
	return __atomic_load_n(&mx->__data.__lock, __ATOMIC_ACQUIRE);
}

/* --- one thread ------------------------------------------------------ */

static int handler_busy, handler_other;

static void on_usr1(int sig)
{
	(void)sig;
	handler_busy = pthread_mutex_trylock(&m);
	handler_other = pthread_mutex_lock(&other);
	if (handler_other == 0)
		handler_other = pthread_mutex_unlock(&other);
}

static void test_one_thread(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t ec, rec;
	int st;
	pid_t pid;

	CHECK_ERR(pthread_mutex_lock(&m), 0);
	CHECK_EQ(lock_word(&m), 1);
	CHECK_EQ(m.__data.__owner, self_tid());
	CHECK_ERR(pthread_mutex_trylock(&m), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(lock_word(&m), 0);
	CHECK_EQ(m.__data.__owner, 0);

	long entered = 0;
	for (long i = 0; i < 100000; i++) {
		pthread_mutex_lock(&m);
		entered++;
		pthread_mutex_unlock(&m);
	}
	CHECK_EQ(entered, 100000);
	CHECK_EQ(lock_word(&m), 0);

	/* A handler interrupting the critical section. */
	signal(SIGUSR1, on_usr1);
	CHECK_ERR(pthread_mutex_lock(&m), 0);
	raise(SIGUSR1);
	CHECK_ERR(handler_busy, EBUSY);
	CHECK_ERR(handler_other, 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(lock_word(&other), 0);

	/* The owner-checked types keep their rules. */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_ERR(pthread_mutex_init(&ec, &a), 0);
	CHECK_ERR(pthread_mutex_unlock(&ec), EPERM);
	CHECK_ERR(pthread_mutex_lock(&ec), 0);
	CHECK_ERR(pthread_mutex_lock(&ec), EDEADLK);
	CHECK_ERR(pthread_mutex_unlock(&ec), 0);
	CHECK_ERR(pthread_mutex_unlock(&ec), EPERM);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	CHECK_ERR(pthread_mutex_init(&rec, &a), 0);
	CHECK_ERR(pthread_mutex_lock(&rec), 0);
	CHECK_ERR(pthread_mutex_lock(&rec), 0);
	CHECK_EQ(rec.__data.__count, 2);
	CHECK_ERR(pthread_mutex_unlock(&rec), 0);
	CHECK_ERR(pthread_mutex_unlock(&rec), 0);
	CHECK_ERR(pthread_mutex_unlock(&rec), EPERM);
	CHECK_ERR(pthread_mutex_destroy(&ec), 0);
	CHECK_ERR(pthread_mutex_destroy(&rec), 0);
	pthread_mutexattr_destroy(&a);

	/* A fork child, single-threaded too. */
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int bad = pthread_mutex_lock(&m) != 0 || lock_word(&m) != 1 ||
			  pthread_mutex_trylock(&m) != EBUSY ||
			  pthread_mutex_unlock(&m) != 0 || lock_word(&m) != 0;
		_exit(bad ? 3 : 0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "fork child: expected exit 0, got status %#x", st);
}

/* --- the first thread, while main holds the mutex --------------------- */

static int first_trylock = -1, first_got;

static void *first_thread(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	first_trylock = pthread_mutex_trylock(&m);
	if (pthread_mutex_lock(&m) == 0) {
		__atomic_store_n(&first_got, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void test_first_thread(void)
{
	pthread_t t;
	long end;

	CHECK_ERR(pthread_mutex_lock(&m), 0); /* one thread: plain store */
	REQUIRE(pthread_create(&t, NULL, first_thread, NULL) == 0,
		"pthread_create failed");
	CHECK_EQ(__libc_single_threaded, 0);
	/* Wait (bounded) until the thread sleeps on the word. */
	end = mono_ns() + 10000000000L;
	while (!(lock_word(&m) & LW_SLEEPERS) && mono_ns() < end)
		sched_yield();
	CHECK(lock_word(&m) & LW_SLEEPERS,
	      "expected the new thread asleep on the mutex, word %#x",
	      lock_word(&m));
	CHECK_EQ(__atomic_load_n(&first_got, __ATOMIC_ACQUIRE), 0);
	CHECK_ERR(pthread_mutex_unlock(&m), 0);
	pthread_join(t, NULL);
	CHECK_ERR(first_trylock, EBUSY);
	CHECK_EQ(first_got, 1);
	CHECK_EQ(lock_word(&m), 0);
	CHECK_EQ(m.__data.__owner, 0);
}

/* --- then contention -------------------------------------------------- */

#define NT 4
#define PER 20000
static long inside, overlaps, total;

static void *contender(void *made)
{
	if (made)
		CHECK_WEFT_THREAD();
	for (int i = 0; i < PER; i++) {
		pthread_mutex_lock(&m);
		if (++inside != 1)
			overlaps++;
		total++;
		inside--;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void test_contention(void)
{
	pthread_t t[NT];

	for (int i = 0; i < NT; i++)
		REQUIRE(pthread_create(&t[i], NULL, contender, t) == 0,
			"pthread_create failed");
	contender(NULL);
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(total, (long)(NT + 1) * PER);
	CHECK_EQ(overlaps, 0);
	CHECK_EQ(lock_word(&m), 0);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	REQUIRE_SERVED(pthread_mutex_unlock);
	/* weft's clone() tells the mutex of a thread glibc does not count
	   (t_raw_clone), under both of glibc's names. */
	REQUIRE_SERVED(clone);
	REQUIRE_SERVED(__clone);
	REQUIRE(__libc_single_threaded,
		"expected a process with one thread at start, got "
		"__libc_single_threaded 0");
	test_one_thread();
	REQUIRE(__libc_single_threaded,
		"expected one thread after the single-threaded part, got "
		"__libc_single_threaded 0");
	test_first_thread();
	test_contention();
	printf("one thread, then the first thread on a held mutex, then "
	       "%d x %d contended entries: %ld counted, %ld overlaps\n",
	       NT + 1, PER, total, overlaps);
	TEST_DONE();
}
