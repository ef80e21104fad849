/* A program with a large static TLS block (1 MiB of __thread data here;
   a -fsanitize=thread program carries about 768 KiB in libtsan alone).

   glibc places a thread's static TLS on its stack.  weft's start-up probe
   (a glibc thread on a stack weft supplies) used a fixed 256 KiB stack,
   so glibc refused to create it and weft forwarded every call to glibc:
   such programs were never served.  Now the probe's stack follows the TLS
   size.  This test needs weft active (WEFT_REQUIRE fails on the old
   library), then checks that each weft thread gets its own zero-filled
   copy of the big block and that writes stay in their thread. */
#include "harness.h"

#define BIG (1 << 20)
#define NT 4

static __thread unsigned char big[BIG];
static __thread int marker = 42; /* initialised TLS next to the big block */

static void *worker(void *arg)
{
	long id = (long)arg;
	size_t nonzero = 0;

	CHECK_WEFT_THREAD();
	for (size_t i = 0; i < BIG; i += 4096)
		nonzero += big[i] != 0;
	CHECK(nonzero == 0, "thread %ld: expected a zero-filled TLS block, "
	      "got %zu non-zero pages", id, nonzero);
	CHECK_EQ(marker, 42);
	for (size_t i = 0; i < BIG; i += 4096)
		big[i] = (unsigned char)(id + 1);
	marker = (int)id;
	for (size_t i = 0; i < BIG; i += 4096)
		if (big[i] != (unsigned char)(id + 1)) {
			FAIL("thread %ld: page %zu holds %u, expected %ld", id,
			     i / 4096, big[i], id + 1);
			break;
		}
	return NULL;
}

int main(void)
{
	pthread_t t[NT];

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	big[0] = 0xee;
	for (long i = 0; i < NT; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)i) == 0,
			"pthread_create failed");
	for (int i = 0; i < NT; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0, "pthread_join failed");
	CHECK_EQ(big[0], 0xee);
	CHECK_EQ(marker, 42);
	TEST_DONE();
}
