/* Spin locks: glibc's word encoding, mutual exclusion of a non-atomic
   counter under contention (exact total), trylock's EBUSY, pshared
   accepted, and a spin lock in MAP_SHARED memory used across fork. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

enum { THREADS = 4, ITERS = 200000 };

static pthread_spinlock_t lock;
static volatile long counter;
static int inside;

static void *worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (int i = 0; i < ITERS; i++) {
		if (i % 8 == 0) {
			while (pthread_spin_trylock(&lock) == EBUSY)
				;
		} else {
			CHECK_ERR(pthread_spin_lock(&lock), 0);
		}
		if (__atomic_fetch_add(&inside, 1, __ATOMIC_RELAXED))
			FAIL("two threads inside the spin lock");
		counter = counter + 1;
		__atomic_fetch_sub(&inside, 1, __ATOMIC_RELAXED);
		CHECK_ERR(pthread_spin_unlock(&lock), 0);
	}
	return NULL;
}

static void pshared_fork(void)
{
	struct area {
		pthread_spinlock_t l;
		long n;
	} *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status, n = 100000;
	pid_t pid;

	REQUIRE(s != MAP_FAILED, "mmap");
	CHECK_ERR(pthread_spin_init(&s->l, PTHREAD_PROCESS_SHARED), 0);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	for (int i = 0; i < n; i++) {
		pthread_spin_lock(&s->l);
		s->n = s->n + 1;
		pthread_spin_unlock(&s->l);
	}
	if (pid == 0)
		_exit(0);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK_EQ(status, 0);
	CHECK_EQ(s->n, 2L * n);
	CHECK_ERR(pthread_spin_destroy(&s->l), 0);
	munmap(s, sizeof *s);
}

int main(void)
{
	pthread_t t[THREADS];

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_spin_init);
	REQUIRE_SERVED(pthread_spin_lock);
	REQUIRE_SERVED(pthread_spin_trylock);
	REQUIRE_SERVED(pthread_spin_unlock);

	CHECK_ERR(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
	/* glibc's x86-64 encoding: 1 free, <= 0 held (see t_sem_interop
	   for a spin lock shared with a glibc process). */
	CHECK_EQ(lock, 1);
	CHECK_ERR(pthread_spin_trylock(&lock), 0);
	CHECK(lock <= 0, "held lock word is %d", lock);
	CHECK_ERR(pthread_spin_trylock(&lock), EBUSY);
	CHECK_ERR(pthread_spin_unlock(&lock), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, worker, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	CHECK_EQ(counter, (long)THREADS * ITERS);
	CHECK_ERR(pthread_spin_destroy(&lock), 0);
	pshared_fork();
	TEST_DONE();
}
