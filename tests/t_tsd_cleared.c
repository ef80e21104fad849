/* After its destructor rounds a thread's values are gone, as glibc
   clears them: a destructor that stores its value again every round
   leaves it set after the last round (PTHREAD_DESTRUCTOR_ITERATIONS),
   and code the thread runs after the rounds must read NULL.  The main
   thread, the only one, ends with pthread_exit, so the process ends the
   way returning from main would: its atexit handlers run in it after its
   key destructors, and read the keys.  Checked for a key of the first
   32 (weft's TLS slots, cleared after the rounds; an earlier weft left
   the value readable) and one beyond (its value blocks, freed). */
#include <limits.h>
#include <stdint.h>
#include "harness.h"

#define KEYS 40 /* the last one beyond the first 32 */

static pthread_key_t keys[KEYS];
static int calls[KEYS];

static void store_again(void *value)
{
	int i = (int)(uintptr_t)value - 1;

	calls[i]++;
	CHECK_EQ(pthread_setspecific(keys[i], value), 0);
}

static void after_the_rounds(void)
{
	int probed[] = { 0, KEYS - 1 };

	for (int j = 0; j < 2; j++) {
		int i = probed[j];

		CHECK(calls[i] == PTHREAD_DESTRUCTOR_ITERATIONS,
		      "key %d: expected %d destructor calls, got %d", i,
		      PTHREAD_DESTRUCTOR_ITERATIONS, calls[i]);
		CHECK(pthread_getspecific(keys[i]) == NULL,
		      "key %d after the destructor rounds: expected NULL, got %p",
		      i, pthread_getspecific(keys[i]));
	}
	fflush(stdout);
	_exit(harness_failures ? 1 : 0);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_getspecific);
	REQUIRE_SERVED(pthread_setspecific);
	for (int i = 0; i < KEYS; i++)
		CHECK_EQ(pthread_key_create(&keys[i], NULL), 0);
	/* Only the probed keys get the destructor and a value. */
	CHECK_EQ(pthread_key_delete(keys[0]), 0);
	CHECK_EQ(pthread_key_create(&keys[0], store_again), 0);
	CHECK_EQ(pthread_key_delete(keys[KEYS - 1]), 0);
	CHECK_EQ(pthread_key_create(&keys[KEYS - 1], store_again), 0);
	REQUIRE(keys[KEYS - 1] >= 32, "expected a key beyond the first 32, got %u",
		keys[KEYS - 1]);
	CHECK_EQ(pthread_setspecific(keys[0], (void *)(uintptr_t)1), 0);
	CHECK_EQ(pthread_setspecific(keys[KEYS - 1], (void *)(uintptr_t)KEYS), 0);
	CHECK_EQ(atexit(after_the_rounds), 0);
	pthread_exit(NULL);
}
