/* C11 mtx_*, cnd_* and call_once with their return codes: thrd_success,
   thrd_busy, thrd_timedout, thrd_error; recursive and plain mutexes;
   signal/broadcast wake-ups with exact counts; timeouts. */
#include <threads.h>
#include <time.h>
#include "harness.h"

static struct timespec in_ms(long ms)
{
	return deadline_in(CLOCK_REALTIME, ms * 1000000L);
}

static mtx_t m;
static cnd_t c;
static int ready, woken, go_round;

static int holder_try(void *arg)
{
	mtx_t *mx = arg;
	struct timespec ts = in_ms(50);

	CHECK_WEFT_THREAD();
	CHECK_EQ(mtx_trylock(mx), thrd_busy);
	CHECK_EQ(mtx_timedlock(mx, &ts), thrd_timedout);
	return 0;
}

static int sleeper(void *arg)
{
	int round = 0;

	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK_EQ(mtx_lock(&m), thrd_success);
	ready++;
	cnd_broadcast(&c); /* tell main one more is ready */
	while (go_round == round)
		CHECK_EQ(cnd_wait(&c, &m), thrd_success);
	woken++;
	CHECK_EQ(mtx_unlock(&m), thrd_success);
	return 0;
}

static once_flag flag = ONCE_FLAG_INIT;
static int once_runs;
static void once_fn(void)
{
	once_runs++;
}

int main(void)
{
	mtx_t r, t;
	thrd_t th[4];
	struct timespec bad = {0, 2000000000L};

	WEFT_REQUIRE();
	REQUIRE_SERVED(mtx_init);
	REQUIRE_SERVED(mtx_lock);
	REQUIRE_SERVED(mtx_timedlock);
	REQUIRE_SERVED(cnd_wait);
	REQUIRE_SERVED(cnd_timedwait);
	REQUIRE_SERVED(call_once);

	/* Plain: trylock of a held mutex is busy (also from another
	   thread, and timedlock times out there). */
	CHECK_EQ(mtx_init(&m, mtx_plain), thrd_success);
	CHECK_EQ(mtx_lock(&m), thrd_success);
	CHECK_EQ(mtx_trylock(&m), thrd_busy);
	CHECK_EQ(thrd_create(&th[0], holder_try, &m), thrd_success);
	CHECK_EQ(thrd_join(th[0], NULL), thrd_success);
	CHECK_EQ(mtx_unlock(&m), thrd_success);

	/* Recursive: relock and trylock succeed; others see it busy. */
	CHECK_EQ(mtx_init(&r, mtx_plain | mtx_recursive), thrd_success);
	CHECK_EQ(mtx_lock(&r), thrd_success);
	CHECK_EQ(mtx_lock(&r), thrd_success);
	CHECK_EQ(mtx_trylock(&r), thrd_success);
	CHECK_EQ(thrd_create(&th[0], holder_try, &r), thrd_success);
	CHECK_EQ(thrd_join(th[0], NULL), thrd_success);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mtx_unlock(&r), thrd_success);
	mtx_destroy(&r);

	/* Timed: a bad deadline is an error, a free mutex is taken. */
	CHECK_EQ(mtx_init(&t, mtx_timed), thrd_success);
	CHECK_EQ(mtx_lock(&t), thrd_success);
	CHECK_EQ(mtx_timedlock(&t, &bad), thrd_error);
	CHECK_EQ(mtx_unlock(&t), thrd_success);
	struct timespec ts = in_ms(1000);
	CHECK_EQ(mtx_timedlock(&t, &ts), thrd_success);
	CHECK_EQ(mtx_unlock(&t), thrd_success);
	mtx_destroy(&t);

	/* Condition variable: timeout, then signal one and broadcast. */
	CHECK_EQ(cnd_init(&c), thrd_success);
	CHECK_EQ(mtx_lock(&m), thrd_success);
	ts = in_ms(50);
	CHECK_EQ(cnd_timedwait(&c, &m, &ts), thrd_timedout);
	CHECK_EQ(mtx_unlock(&m), thrd_success);

	for (int i = 0; i < 4; i++)
		CHECK_EQ(thrd_create(&th[i], sleeper, NULL), thrd_success);
	mtx_lock(&m);
	while (ready < 4) {
		ts = in_ms(10000);
		REQUIRE(cnd_timedwait(&c, &m, &ts) == thrd_success,
			"sleepers never got ready");
	}
	go_round = 1;
	CHECK_EQ(cnd_signal(&c), thrd_success);
	CHECK_EQ(cnd_broadcast(&c), thrd_success);
	mtx_unlock(&m);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(thrd_join(th[i], NULL), thrd_success);
	CHECK_EQ(woken, 4);
	cnd_destroy(&c);
	mtx_destroy(&m);

	call_once(&flag, once_fn);
	call_once(&flag, once_fn);
	CHECK_EQ(once_runs, 1);
	TEST_DONE();
}
