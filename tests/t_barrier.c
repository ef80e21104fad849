/* Barriers: exactly one PTHREAD_BARRIER_SERIAL_THREAD per round over
   many rounds with immediate reuse (each round's arrivals are checked
   against a per-round counter), errors (EINVAL, EBUSY while waited on),
   destroy right after the last wait returned, barrier attributes, and a
   process-shared barrier across fork. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

enum { THREADS = 5, MAX_ROUNDS = 20000 };

static pthread_barrier_t b;
static int serial[MAX_ROUNDS], arrived[MAX_ROUNDS];
static int rounds; /* decided by thread 0 before the run */
static int early_leave; /* a thread left a round before all arrived */

static void *rounds_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (int r = 0; r < rounds; r++) {
		int ret;

		__atomic_fetch_add(&arrived[r], 1, __ATOMIC_SEQ_CST);
		ret = pthread_barrier_wait(&b);
		if (ret == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_fetch_add(&serial[r], 1, __ATOMIC_RELAXED);
		else if (ret != 0)
			FAIL("pthread_barrier_wait: %d", ret);
		/* Nobody passes round r before all of round r arrived. */
		if (__atomic_load_n(&arrived[r], __ATOMIC_SEQ_CST) != THREADS)
			__atomic_store_n(&early_leave, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void many_rounds(void)
{
	pthread_t t[THREADS];
	double t0 = now_s();
	int bad = 0;

	rounds = MAX_ROUNDS;
	CHECK_ERR(pthread_barrier_init(&b, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, rounds_worker, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	for (int r = 0; r < rounds; r++)
		if (serial[r] != 1 || arrived[r] != THREADS) {
			if (bad++ < 5)
				FAIL("round %d: %d serial threads, %d arrivals", r,
				     serial[r], arrived[r]);
		}
	CHECK_EQ(early_leave, 0);
	CHECK_ERR(pthread_barrier_destroy(&b), 0);
	printf("%d rounds of %d threads in %.2f s\n", rounds, THREADS,
	       now_s() - t0);
}

/* --- destroy while waited on, and right after the last wait ---------- */

static pthread_barrier_t b2;

static void *wait_once(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	int r = pthread_barrier_wait(&b2);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD, "wait: %d", r);
	return NULL;
}

static void destroy_cases(void)
{
	pthread_barrierattr_t a;
	pthread_t t[3];
	int v;

	CHECK_ERR(pthread_barrier_init(&b2, NULL, 0), EINVAL);
	CHECK_ERR(pthread_barrier_init(&b2, NULL, 0x80000000u), EINVAL);
	CHECK_ERR(pthread_barrierattr_init(&a), 0);
	CHECK_ERR(pthread_barrierattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	CHECK_ERR(pthread_barrierattr_setpshared(&a, 7), EINVAL);
	CHECK_ERR(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	CHECK_ERR(pthread_barrierattr_getpshared(&a, &v), 0);
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_barrierattr_destroy(&a), 0);

	/* count 1: every wait is the serial one. */
	CHECK_ERR(pthread_barrier_init(&b2, NULL, 1), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pthread_barrier_wait(&b2), PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_ERR(pthread_barrier_destroy(&b2), 0);

	/* Two threads blocked in a round of 3: EBUSY until the last
	   arrives.  They block at a moment the test cannot see, so it
	   polls (bounded): weft's destroy changes nothing when it finds
	   the barrier idle, which makes polling it legitimate here. */
	CHECK_ERR(pthread_barrier_init(&b2, NULL, 3), 0);
	CHECK_ERR(pthread_create(&t[0], NULL, wait_once, NULL), 0);
	CHECK_ERR(pthread_create(&t[1], NULL, wait_once, NULL), 0);
	{
		double end = now_s() + 10;
		int busy_seen = 0;

		while (now_s() < end)
			if (pthread_barrier_destroy(&b2) == EBUSY) {
				busy_seen = 1;
				break;
			} else {
				sched_yield();
			}
		CHECK(busy_seen, "destroy never said EBUSY with waiters");
		CHECK_ERR(pthread_barrier_destroy(&b2), EBUSY);
	}
	v = pthread_barrier_wait(&b2);
	CHECK(v == 0 || v == PTHREAD_BARRIER_SERIAL_THREAD, "wait: %d", v);
	/* Destroy at once, while the others may still be leaving; then
	   scribble over the memory: a waiter touching it afterwards would
	   misbehave (hang or fail). */
	CHECK_ERR(pthread_barrier_destroy(&b2), 0);
	memset(&b2, 0xff, sizeof b2);
	CHECK_ERR(pthread_join(t[0], NULL), 0);
	CHECK_ERR(pthread_join(t[1], NULL), 0);
}

/* Destroy-and-free right after the wait, many times: with a heap
   barrier reused by malloc for the next one.  (A destroy that does not
   wait for the leaving helper makes it hang on the scribbled word.) */
struct heap_arg {
	pthread_barrier_t *b;
};

static void *heap_waiter(void *p)
{
	struct heap_arg *a = p;

	int r = pthread_barrier_wait(a->b);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD, "wait: %d", r);
	return NULL;
}

static void destroy_free_loop(void)
{
	double end = now_s() + 2.0;
	int n;

	for (n = 0; n < 2000 && now_s() < end; n++) {
		struct heap_arg a = {malloc(sizeof(pthread_barrier_t))};
		pthread_t t;

		CHECK_ERR(pthread_barrier_init(a.b, NULL, 2), 0);
		CHECK_ERR(pthread_create(&t, NULL, heap_waiter, &a), 0);
		/* Arrive last (after the helper is inside, seen as EBUSY),
		   so the helper is the one still leaving when we destroy. */
		while (pthread_barrier_destroy(a.b) != EBUSY && now_s() < end)
			sched_yield();
		pthread_barrier_wait(a.b);
		CHECK_ERR(pthread_barrier_destroy(a.b), 0);
		memset(a.b, 0xff, sizeof *a.b);
		free(a.b);
		CHECK_ERR(pthread_join(t, NULL), 0);
	}
	printf("%d destroy-right-after rounds\n", n);
}

/* --- process-shared ---------------------------------------------------- */

struct shared_area {
	pthread_barrier_t b;
	int serial;
	int phase[2];
	int bad;
};

static void fork_rounds(struct shared_area *s, int who, int n)
{
	for (int r = 0; r < n; r++) {
		__atomic_store_n(&s->phase[who], r, __ATOMIC_SEQ_CST);
		if (pthread_barrier_wait(&s->b) == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_fetch_add(&s->serial, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&s->phase[!who], __ATOMIC_SEQ_CST) < r)
			__atomic_store_n(&s->bad, 1, __ATOMIC_SEQ_CST);
	}
}

static void pshared_fork(void)
{
	struct shared_area *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_barrierattr_t a;
	int status, n = 3000;
	pid_t pid;

	REQUIRE(s != MAP_FAILED, "mmap");
	pthread_barrierattr_init(&a);
	pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	CHECK_ERR(pthread_barrier_init(&s->b, &a, 2), 0);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		fork_rounds(s, 1, n);
		_exit(0);
	}
	fork_rounds(s, 0, n);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK_EQ(status, 0);
	CHECK_EQ(s->serial, n);
	CHECK_EQ(s->bad, 0);
	CHECK_ERR(pthread_barrier_destroy(&s->b), 0);
	munmap(s, sizeof *s);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_barrier_init);
	REQUIRE_SERVED(pthread_barrier_wait);
	REQUIRE_SERVED(pthread_barrier_destroy);
	REQUIRE_SERVED(pthread_barrierattr_setpshared);

	many_rounds();
	destroy_cases();
	destroy_free_loop();
	pshared_fork();
	TEST_DONE();
}
