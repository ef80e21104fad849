/* Thread-specific data: values per thread, destructors at thread exit
   (return and pthread_exit), destructor rounds, deleted and reused keys,
   more keys than PTHREAD_KEYS_MAX, C11 tss_*. */
#include <threads.h>
#include "harness.h"

static pthread_key_t k1, k2, kre;
static int destroyed_sum, rounds_seen;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void destroy_int(void *p)
{
	pthread_mutex_lock(&mu);
	destroyed_sum += *(int *)p;
	pthread_mutex_unlock(&mu);
	free(p);
}

/* Sets its own value again twice: POSIX calls it again in later rounds. */
static void destroy_again(void *p)
{
	long n = (long)p;

	pthread_mutex_lock(&mu);
	rounds_seen++;
	pthread_mutex_unlock(&mu);
	if (n < 3)
		pthread_setspecific(kre, (void *)(n + 1));
}

static int *boxed(int v)
{
	int *p = malloc(sizeof *p);
	*p = v;
	return p;
}

static void *worker(void *arg)
{
	long i = (long)arg;

	CHECK_WEFT_THREAD();
	CHECK(pthread_getspecific(k1) == NULL, "fresh thread sees a value");
	CHECK_ERR(pthread_setspecific(k1, boxed((int)i)), 0);
	CHECK_ERR(pthread_setspecific(k2, boxed(1000)), 0);
	CHECK_EQ(*(int *)pthread_getspecific(k1), i);
	if (i % 2)
		pthread_exit(NULL); /* destructors run on pthread_exit too */
	return NULL;
}

static void *rounds(void *arg)
{
	(void)arg;
	pthread_setspecific(kre, (void *)1L);
	return NULL;
}

static pthread_key_t many[2000];
static void *use_many(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		if (pthread_setspecific(many[i], (void *)(long)(i + 1)) != 0)
			return (void *)1;
	for (int i = 0; i < 2000; i++)
		if (pthread_getspecific(many[i]) != (void *)(long)(i + 1))
			return (void *)2;
	return NULL;
}

static int tss_destroyed;
static void tss_dtor(void *p)
{
	(void)p;
	__atomic_add_fetch(&tss_destroyed, 1, __ATOMIC_RELAXED);
}
static tss_t tk;
static void *tss_thread(void *arg)
{
	(void)arg;
	CHECK_EQ(tss_set(tk, (void *)7L), thrd_success);
	CHECK(tss_get(tk) == (void *)7L, "tss_get lost the value");
	return NULL;
}

int main(void)
{
	pthread_t t[8];
	void *r;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_key_create);
	REQUIRE_SERVED(pthread_getspecific);
	REQUIRE_SERVED(pthread_setspecific);
	REQUIRE_SERVED(pthread_key_delete);
	REQUIRE_SERVED(tss_create);
	CHECK_ERR(pthread_key_create(&k1, destroy_int), 0);
	CHECK_ERR(pthread_key_create(&k2, destroy_int), 0);
	CHECK(k1 != k2, "two keys share an index");

	/* Each thread's value is its own; destructors run for all 16. */
	for (long i = 0; i < 8; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < 8; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	CHECK_EQ(destroyed_sum, 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 * 1000);

	/* The main thread's value is separate from the workers'. */
	CHECK(pthread_getspecific(k1) == NULL, "main sees a worker's value");

	/* Destructor rounds: value re-set twice -> called 3 times. */
	CHECK_ERR(pthread_key_create(&kre, destroy_again), 0);
	CHECK_ERR(pthread_create(&t[0], NULL, rounds, NULL), 0);
	CHECK_ERR(pthread_join(t[0], NULL), 0);
	CHECK_EQ(rounds_seen, 3);

	/* A deleted key: invalid for set; its index, reused, reads NULL. */
	{
		pthread_key_t d, again;
		CHECK_ERR(pthread_key_create(&d, NULL), 0);
		CHECK_ERR(pthread_setspecific(d, (void *)5L), 0);
		CHECK_ERR(pthread_key_delete(d), 0);
		CHECK_ERR(pthread_key_delete(d), EINVAL);
		CHECK_ERR(pthread_setspecific(d, (void *)6L), EINVAL);
		CHECK(pthread_getspecific(d) == NULL, "deleted key still reads a value");
		CHECK_ERR(pthread_key_create(&again, NULL), 0);
		CHECK_EQ(again, d); /* the index is reused ... */
		CHECK(pthread_getspecific(again) == NULL,
		      "a reused key index shows the old key's value");
	}
	CHECK_ERR(pthread_setspecific(123456, (void *)1L), EINVAL);
	CHECK(pthread_getspecific(123456) == NULL, "invalid key reads a value");

	/* More keys than PTHREAD_KEYS_MAX (1024): weft sets no such cap. */
	for (int i = 0; i < 2000; i++)
		REQUIRE(pthread_key_create(&many[i], NULL) == 0,
			"key %d of 2000: expected 0, got an error", i);
	CHECK_ERR(pthread_create(&t[0], NULL, use_many, NULL), 0);
	CHECK_ERR(pthread_join(t[0], &r), 0);
	CHECK(r == NULL, "2000 keys in one thread: step %ld failed", (long)r);

	/* The twins reach the same keys as the plain names. */
	REQUIRE_SERVED(__pthread_key_create);
	REQUIRE_SERVED(__pthread_getspecific);
	REQUIRE_SERVED(__pthread_setspecific);
	{
		/* Compat symbols for old binaries: found by name at run time. */
		int (*tw_create)(pthread_key_t *, void (*)(void *)) =
			dlsym(RTLD_DEFAULT, "__pthread_key_create");
		void *(*tw_get)(pthread_key_t) =
			dlsym(RTLD_DEFAULT, "__pthread_getspecific");
		int (*tw_set)(pthread_key_t, const void *) =
			dlsym(RTLD_DEFAULT, "__pthread_setspecific");
		pthread_key_t tw;

		CHECK_ERR(tw_create(&tw, NULL), 0);
		CHECK_ERR(pthread_setspecific(tw, (void *)7L), 0);
		CHECK(tw_get(tw) == (void *)7L,
		      "__pthread_getspecific: expected 0x7, got %p",
		      tw_get(tw));
		CHECK_ERR(tw_set(tw, (void *)8L), 0);
		CHECK(pthread_getspecific(tw) == (void *)8L,
		      "pthread_getspecific after __pthread_setspecific: "
		      "expected 0x8, got %p", pthread_getspecific(tw));
	}

	/* C11 tss_* on weft threads. */
	CHECK_EQ(tss_create(&tk, tss_dtor), thrd_success);
	CHECK_ERR(pthread_create(&t[0], NULL, tss_thread, NULL), 0);
	CHECK_ERR(pthread_join(t[0], NULL), 0);
	CHECK_EQ(__atomic_load_n(&tss_destroyed, __ATOMIC_RELAXED), 1);
	TEST_DONE();
}
