/* Stack and guard sizes whose rounding or sum wraps around size_t:
   pthread_create must refuse them with glibc's EINVAL (weft used to wrap
   around and create a thread with a tiny stack or no guard), sums that
   fit size_t but no address space get EAGAIN, and a refused creation
   leaves nothing behind: no thread, no mapping, no handle.

   The expected answers are glibc 2.36's, seen by running the same calls
   without weft: every setter accepts these sizes (glibc checks only the
   stack minimum at set time), pthread_create decides. */
#include <stdint.h>
#include "harness.h"

static void *run(void *arg)
{
	CHECK_WEFT_THREAD();
	return arg;
}

/* Creates with the attribute; joins if it was created after all. */
static int create_with(const pthread_attr_t *a)
{
	pthread_t t;
	int rc = pthread_create(&t, a, run, NULL);

	if (rc == 0)
		pthread_join(t, NULL);
	return rc;
}

struct sizes {
	const char *what;
	size_t stack; /* 0: the default */
	size_t guard;
	int want; /* glibc 2.36's pthread_create answer */
};

static const struct sizes cases[] = {
	{ "stack SIZE_MAX", SIZE_MAX, 4096, EINVAL },
	{ "guard SIZE_MAX", 0, SIZE_MAX, EINVAL },
	{ "guard SIZE_MAX-4095 (a page multiple)", 0, SIZE_MAX - 4095, EINVAL },
	{ "guard SIZE_MAX-4096, stack 16 KiB", 16384, SIZE_MAX - 4096, EINVAL },
	{ "stack SIZE_MAX-4095", SIZE_MAX - 4095, 4096, EINVAL },
	/* glibc aligns the stack down to 64 bytes before adding the guard:
	   this one fits, and mmap refuses it */
	{ "stack SIZE_MAX-4159", SIZE_MAX - 4096 - 63, 4096, EAGAIN },
	{ "stack SIZE_MAX/2, guard SIZE_MAX/2+1", SIZE_MAX / 2,
	  SIZE_MAX / 2 + 1, EAGAIN },
	{ "guard 2^63", 0, (size_t)1 << 63, EAGAIN },
};

struct footprint {
	struct weft_stats st;
	int maps;
};

static struct footprint footprint(void)
{
	struct footprint f;

	weft_get_stats(&f.st);
	f.maps = maps_count();
	return f;
}

/* Nothing of a refused creation may remain. */
static void check_nothing_left(const struct footprint *before, const char *what)
{
	struct footprint now = footprint();

	CHECK(now.st.threads_created == before->st.threads_created,
	      "%s: threads created %lu -> %lu", what,
	      before->st.threads_created, now.st.threads_created);
	CHECK(now.st.threads_live == before->st.threads_live,
	      "%s: threads live %lu -> %lu", what, before->st.threads_live,
	      now.st.threads_live);
	CHECK(now.st.stacks_mapped == before->st.stacks_mapped,
	      "%s: stacks mapped %lu -> %lu", what, before->st.stacks_mapped,
	      now.st.stacks_mapped);
	CHECK(now.maps == before->maps, "%s: mappings %d -> %d", what,
	      before->maps, now.maps);
}

static void check_sizes(const struct sizes *c)
{
	pthread_attr_t a;
	struct footprint before;
	size_t got;

	pthread_attr_init(&a);
	if (c->stack) {
		CHECK_ERR(pthread_attr_setstacksize(&a, c->stack), 0);
		pthread_attr_getstacksize(&a, &got);
		CHECK(got == c->stack, "%s: getstacksize %#zx", c->what, got);
	}
	CHECK_ERR(pthread_attr_setguardsize(&a, c->guard), 0);
	pthread_attr_getguardsize(&a, &got);
	CHECK(got == c->guard, "%s: getguardsize %#zx", c->what, got);
	before = footprint();
	int rc = create_with(&a);
	if (rc != c->want)
		FAIL("%s: pthread_create expected %d (%s), got %d (%s)", c->what,
		     c->want, strerror(c->want), rc, strerror(rc));
	check_nothing_left(&before, c->what);
	pthread_attr_destroy(&a);
}

/* The same sizes as process defaults: glibc's pthread_setattr_default_np
   takes them, and a creation without attributes is EINVAL. */
static void check_defaults(void)
{
	pthread_attr_t a, keep;
	struct footprint before;

	CHECK_ERR(pthread_getattr_default_np(&keep), 0);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, SIZE_MAX);
	pthread_attr_setguardsize(&a, SIZE_MAX);
	CHECK_ERR(pthread_setattr_default_np(&a), 0);
	before = footprint();
	CHECK_ERR(create_with(NULL), EINVAL);
	check_nothing_left(&before, "default attributes");
	CHECK_ERR(pthread_setattr_default_np(&keep), 0);
	CHECK_ERR(create_with(NULL), 0);
	pthread_attr_destroy(&a);
	pthread_attr_destroy(&keep);
}

int main(void)
{
	pthread_attr_t a;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	/* A sane attribute still creates (the checks are not a refusal of
	   everything). */
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	pthread_attr_setguardsize(&a, 8192);
	CHECK_ERR(create_with(&a), 0);
	pthread_attr_destroy(&a);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		check_sizes(&cases[i]);
	check_defaults();
	TEST_DONE();
}
