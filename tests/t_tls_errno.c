/* Static TLS of the executable in weft threads: initial values (.tdata),
   zero-initialised (.tbss), alignment, privacy per thread; errno per
   thread. */
#include "harness.h"

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define NT 8

__thread int x = 42;
__thread long tdata_arr[4] = {1, 2, 3, 4};
__thread char tbss_buf[256];		   /* must start as zeros */
__thread _Alignas(64) char aligned64[64]; /* alignment must hold */

static pthread_barrier_t bar;

struct slot {
	int idx;
	int *x_addr;
	int x_initial;
	int x_after;
	int errno_before_barrier;
	int errno_after;
	int *errno_addr;
};
static struct slot slots[NT];

static void *tls_worker(void *arg)
{
	struct slot *s = arg;

	CHECK_WEFT_THREAD();
	s->x_initial = x;
	s->x_addr = &x;
	CHECK_EQ(tdata_arr[0], 1);
	CHECK_EQ(tdata_arr[3], 4);
	for (size_t i = 0; i < sizeof tbss_buf; i++)
		if (tbss_buf[i] != 0) {
			FAIL("tbss_buf[%zu] in a new thread: expected 0, got %d",
			     i, tbss_buf[i]);
			break;
		}
	CHECK_EQ((uintptr_t)aligned64 % 64, 0);

	/* Each thread writes its own values, then all meet, then each
	   checks that nobody else's write showed through. */
	x = 1000 + s->idx;
	tdata_arr[1] = s->idx;
	memset(tbss_buf, 'a' + s->idx, sizeof tbss_buf);
	pthread_barrier_wait(&bar);
	s->x_after = x;
	CHECK_EQ(tdata_arr[1], s->idx);
	CHECK_EQ(tbss_buf[0], 'a' + s->idx);
	CHECK_EQ(tbss_buf[255], 'a' + s->idx);
	return NULL;
}

/* errno: half the threads fail with EBADF, the other half with ENOENT,
   all at the same time; each must see its own. */
static void *errno_worker(void *arg)
{
	struct slot *s = arg;
	int want = (s->idx & 1) ? ENOENT : EBADF;

	CHECK_WEFT_THREAD();
	CHECK_EQ(errno, 0); /* a new thread starts with errno 0 */
	s->errno_addr = &errno;
	pthread_barrier_wait(&bar);
	if (s->idx & 1)
		CHECK_EQ(open("/nonexistent-weft-test/x", O_RDONLY), -1);
	else
		CHECK_EQ(close(-1), -1);
	s->errno_before_barrier = errno;
	pthread_barrier_wait(&bar); /* every thread has failed by now */
	s->errno_after = errno;
	CHECK_ERR(s->errno_before_barrier, want);
	CHECK_ERR(s->errno_after, want);
	return NULL;
}

int main(void)
{
	pthread_t t[NT];

	WEFT_REQUIRE();

	CHECK_EQ(x, 42);
	x = 7; /* main's own copy; threads must still start from 42 */
	tdata_arr[0] = 99;
	memset(tbss_buf, 'M', sizeof tbss_buf);

	CHECK_ERR(pthread_barrier_init(&bar, NULL, NT), 0);
	for (int i = 0; i < NT; i++) {
		slots[i].idx = i;
		CHECK_ERR(pthread_create(&t[i], NULL, tls_worker, &slots[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < NT; i++) {
		CHECK_EQ(slots[i].x_initial, 42);
		CHECK_EQ(slots[i].x_after, 1000 + i);
		CHECK(slots[i].x_addr != &x, "thread %d's &x equals main's", i);
		for (int j = 0; j < i; j++)
			CHECK(slots[i].x_addr != slots[j].x_addr,
			      "threads %d and %d share &x", i, j);
	}
	CHECK_EQ(x, 7);
	CHECK_EQ(tdata_arr[0], 99);
	CHECK_EQ(tbss_buf[17], 'M');

	/* errno */
	errno = EINTR; /* main's value must survive the threads' failures */
	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, errno_worker, &slots[i]), 0);
	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	CHECK_ERR(errno, EINTR);
	for (int i = 0; i < NT; i++) {
		CHECK(slots[i].errno_addr != &errno,
		      "thread %d's &errno equals main's", i);
		for (int j = 0; j < i; j++)
			CHECK(slots[i].errno_addr != slots[j].errno_addr,
			      "threads %d and %d share &errno (%p)", i, j,
			      (void *)slots[i].errno_addr);
	}
	pthread_barrier_destroy(&bar);
	TEST_DONE();
}
