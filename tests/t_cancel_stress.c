/* Cancellation at arbitrary moments (bounded: count and time):
   - deferred: a thread loops over cancellation points that complete
     (pipe write and read of one byte, an expired timed condvar wait,
     sem_post/sem_wait); cancelled at a random moment, it always ends
     cancelled, its handler runs exactly once, and the pipe holds what
     its completed writes minus its completed reads say (nothing lost,
     nothing counted twice), and the mutex is free;
   - asynchronous: a thread loops through calls (a function of its own,
     strlen, memcpy) and is cancelled anywhere, unwinding through the
     signal frame from any instruction. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

static int pfd[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;

struct tally {
	long written, read;
	int handlers;
	volatile int started;
};

static void on_cancel(void *arg)
{
	((struct tally *)arg)->handlers++;
}

static void unlock_m(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&m);
}

static void *deferred_loop(void *arg)
{
	struct tally *t = arg;
	char c = 'x';

	pthread_cleanup_push(on_cancel, t);
	t->started = 1;
	for (volatile unsigned i = 0;; i++) {
		if (write(pfd[1], &c, 1) == 1)
			t->written++;
		if (read(pfd[0], &c, 1) == 1)
			t->read++;
		if (i % 4 == 0) {
			struct timespec d = deadline_in(CLOCK_REALTIME, 1000);

			pthread_mutex_lock(&m);
			pthread_cleanup_push(unlock_m, NULL);
			pthread_cond_timedwait(&cv, &m, &d);
			pthread_cleanup_pop(1);
		}
		if (i % 4 == 2) {
			sem_post(&sem);
			sem_wait(&sem);
		}
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static volatile size_t sink;

__attribute__((noinline)) static size_t work(const char *s, char *buf)
{
	memcpy(buf, s, 64);
	return strlen(buf) + (size_t)buf[3];
}

static void *async_loop(void *arg)
{
	struct tally *t = arg;
	char src[64], buf[64];

	memset(src, 'a', sizeof src - 1);
	src[63] = 0;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	pthread_cleanup_push(on_cancel, t);
	t->started = 1;
	for (;;)
		sink += work(src, buf);
	pthread_cleanup_pop(0);
	return NULL;
}

static void spin_ns(long ns)
{
	long end = mono_ns() + ns;

	while (mono_ns() < end)
		;
}

static int pipe_bytes(void)
{
	int n = 0;
	char c;

	while (poll(&(struct pollfd){pfd[0], POLLIN, 0}, 1, 0) == 1 &&
	       read(pfd[0], &c, 1) == 1)
		n++;
	return n;
}

int main(void)
{
	double end;
	int rounds;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cancel);
	REQUIRE_SERVED(read);
	REQUIRE_SERVED(write);
	REQUIRE_SERVED(sem_wait);
	REQUIRE_SERVED(pthread_cond_timedwait);
	REQUIRE(pipe(pfd) == 0, "pipe");
	sem_init(&sem, 0, 0);
	srand(12345);

	end = now_s() + 4;
	for (rounds = 0; rounds < 400 && now_s() < end; rounds++) {
		struct tally t = {0};
		pthread_t th;
		void *res;
		int left;

		CHECK_EQ(pthread_create(&th, NULL, deferred_loop, &t), 0);
		while (!t.started)
			sched_yield();
		spin_ns(rand() % 200000);
		CHECK_EQ(pthread_cancel(th), 0);
		CHECK_EQ(pthread_join(th, &res), 0);
		left = pipe_bytes();
		CHECK(res == PTHREAD_CANCELED && t.handlers == 1,
		      "deferred round %d: join %p, %d handler runs", rounds, res,
		      t.handlers);
		CHECK(t.written - t.read == left,
		      "deferred round %d: %ld written, %ld read, %d in the pipe",
		      rounds, t.written, t.read, left);
		CHECK_EQ(pthread_mutex_trylock(&m), 0);
		pthread_mutex_unlock(&m);
		while (sem_trywait(&sem) == 0)
			; /* a post whose wait was cancelled */
	}
	printf("deferred: %d rounds\n", rounds);

	end = now_s() + 4;
	for (rounds = 0; rounds < 400 && now_s() < end; rounds++) {
		struct tally t = {0};
		pthread_t th;
		void *res;

		CHECK_EQ(pthread_create(&th, NULL, async_loop, &t), 0);
		while (!t.started)
			sched_yield();
		spin_ns(rand() % 200000);
		CHECK_EQ(pthread_cancel(th), 0);
		CHECK_EQ(pthread_join(th, &res), 0);
		CHECK(res == PTHREAD_CANCELED && t.handlers == 1,
		      "async round %d: join %p, %d handler runs", rounds, res,
		      t.handlers);
	}
	printf("async: %d rounds\n", rounds);
	TEST_DONE();
}
