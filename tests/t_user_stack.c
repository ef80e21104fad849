/* pthread_attr_setstack with memory at any address and of any size, as
   glibc 2.36 accepts it: programs pass malloc(70001).  Threads run on
   such stacks at odd addresses, several at once: each recurses through
   a few dozen KiB of frames, uses TLS, errno and a printf of doubles
   (which saves vector registers with aligned stores), finds its stack
   pointer 16-byte aligned, and pthread_getattr_np reports the memory as
   given.  Bytes just outside the memory stay untouched.  A size that
   wraps around the address space is EINVAL at pthread_create (glibc
   2.36 accepts the attribute and crashes there). */
#include <stdint.h>
#include "harness.h"

#define SIZE 70001
#define PAD 64	      /* canary bytes on each side of a stack */
#define DEPTH 48      /* frames of FRAME bytes: 24 KiB */
#define FRAME 512
#define ROUNDS 4

static __thread long tls_word = 12345;
static __thread char tls_text[100] = "initial";

struct job {
	char *mem;  /* malloc'd: PAD, offset, the stack, PAD */
	char *addr; /* the stack given to setstack */
	size_t size;
	long id;
};

/* FRAME bytes per level, read back after the deeper levels returned:
   a frame overwritten by a deeper one (or by TLS) changes the sum. */
static long recurse(int depth, long seed)
{
	volatile char frame[FRAME];
	long below, sum = 0;

	for (int i = 0; i < FRAME; i++)
		frame[i] = (char)(seed + i);
	if (depth == 0)
		return seed;
	/* Unsigned: the seed wraps around on purpose (signed overflow is
	   undefined). */
	below = recurse(depth - 1, (long)((unsigned long)seed * 31 + 7));
	for (int i = 0; i < FRAME; i += 64)
		sum += frame[i];
	return below + sum;
}

static long expected_recurse(int depth, long seed)
{
	long sum = 0;

	for (; depth > 0; depth--, seed = seed * 31 + 7)
		for (int i = 0; i < FRAME; i += 64)
			sum += (char)(seed + i);
	return sum + seed;
}

static void *on_odd_stack(void *arg)
{
	struct job *j = arg;
	char out[128];
	pthread_attr_t a;
	void *lo;
	size_t size;
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);

	CHECK_WEFT_THREAD();
	CHECK(fp % 16 == 0, "job %ld: frame address %#lx not 16-byte aligned",
	      j->id, (unsigned long)fp);
	CHECK(fp > (uintptr_t)j->addr && fp < (uintptr_t)j->addr + j->size,
	      "job %ld: frame %#lx outside the stack [%p, +%zu)", j->id,
	      (unsigned long)fp, (void *)j->addr, j->size);
	REQUIRE(pthread_getattr_np(pthread_self(), &a) == 0, "getattr_np");
	pthread_attr_getstack(&a, &lo, &size);
	pthread_attr_destroy(&a);
	CHECK(lo == j->addr && size == j->size,
	      "job %ld: getattr_np stack %p +%zu, expected %p +%zu", j->id, lo,
	      size, (void *)j->addr, j->size);
	CHECK(tls_word == 12345 && strcmp(tls_text, "initial") == 0,
	      "job %ld: TLS starts as %ld \"%s\"", j->id, tls_word, tls_text);
	tls_word = j->id;
	snprintf(tls_text, sizeof tls_text, "job %ld", j->id);
	errno = (int)j->id + 1;
	snprintf(out, sizeof out, "%.3f %.1Lf", 1.5 * (double)j->id,
		 (long double)j->id / 4);
	long got = recurse(DEPTH, j->id);
	CHECK(got == expected_recurse(DEPTH, j->id),
	      "job %ld: recursion gave %ld, expected %ld", j->id, got,
	      expected_recurse(DEPTH, j->id));
	char want[128];
	snprintf(want, sizeof want, "%.3f %.1Lf", 1.5 * (double)j->id,
		 (long double)j->id / 4);
	CHECK(strcmp(out, want) == 0, "job %ld: printf gave \"%s\", expected "
	      "\"%s\"", j->id, out, want);
	CHECK(errno == (int)j->id + 1 && tls_word == j->id,
	      "job %ld: errno %d, TLS %ld after the work", j->id, errno,
	      tls_word);
	return (void *)(j->id * 3);
}

static void check_canaries(const struct job *j)
{
	for (int i = 0; i < PAD; i++) {
		CHECK(j->addr[i - PAD] == (char)0xa5,
		      "job %ld: byte %d below the stack changed", j->id, PAD - i);
		CHECK(j->addr[j->size + i] == (char)0xa5,
		      "job %ld: byte %d above the stack changed", j->id, i);
	}
}

/* Offsets into malloc's memory and sizes: odd addresses, odd sizes. */
static const struct {
	size_t offset, size;
} shapes[] = {
	{ 1, SIZE - 1 }, { 3, SIZE - 4 }, { 0, SIZE }, { 7, 65537 },
	{ 13, 40001 }, { 5, SIZE - 13 },
};
#define NSHAPES (sizeof shapes / sizeof *shapes)

static void run_round(long round)
{
	struct job jobs[NSHAPES];
	pthread_t t[NSHAPES];
	pthread_attr_t a;

	for (size_t i = 0; i < NSHAPES; i++) {
		struct job *j = &jobs[i];

		j->id = round * 100 + (long)i + 1;
		j->size = shapes[i].size;
		j->mem = malloc(PAD + shapes[i].offset + j->size + PAD);
		REQUIRE(j->mem, "malloc");
		j->addr = j->mem + PAD + shapes[i].offset;
		memset(j->mem, 0xa5, PAD + shapes[i].offset);
		memset(j->addr + j->size, 0xa5, PAD);
		pthread_attr_init(&a);
		CHECK_ERR(pthread_attr_setstack(&a, j->addr, j->size), 0);
		CHECK_ERR(pthread_create(&t[i], &a, on_odd_stack, j), 0);
		pthread_attr_destroy(&a);
	}
	for (size_t i = 0; i < NSHAPES; i++) {
		void *res = NULL;

		CHECK_ERR(pthread_join(t[i], &res), 0);
		CHECK(res == (void *)(jobs[i].id * 3), "job %ld returned %p",
		      jobs[i].id, res);
		check_canaries(&jobs[i]);
		free(jobs[i].mem);
	}
}

static void *nothing(void *arg)
{
	return arg;
}

/* glibc 2.36's answers at the edges of setstack. */
static void check_edges(void)
{
	static char mem[65536];
	pthread_attr_t a;
	pthread_t t;
	struct weft_stats before, after;

	pthread_attr_init(&a);
	CHECK_ERR(pthread_attr_setstack(&a, mem + 1, PTHREAD_STACK_MIN - 1),
		  EINVAL);
	CHECK_ERR(pthread_attr_setstack(&a, mem + 1, PTHREAD_STACK_MIN), 0);
	CHECK_ERR(pthread_create(&t, &a, nothing, NULL), 0);
	CHECK_ERR(pthread_join(t, NULL), 0);
	/* The end wraps around: glibc 2.36 takes the attribute and crashes
	   in pthread_create; weft refuses and creates nothing. */
	CHECK_ERR(pthread_attr_setstack(&a, mem, SIZE_MAX), 0);
	weft_get_stats(&before);
	CHECK_ERR(pthread_create(&t, &a, nothing, NULL), EINVAL);
	weft_get_stats(&after);
	CHECK(after.threads_created == before.threads_created &&
	      after.threads_live == before.threads_live,
	      "a refused creation left threads: created %lu -> %lu, live %lu "
	      "-> %lu", before.threads_created, after.threads_created,
	      before.threads_live, after.threads_live);
	pthread_attr_destroy(&a);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_attr_setstack);
	REQUIRE_SERVED(pthread_create);
	for (long r = 0; r < ROUNDS; r++)
		run_round(r);
	check_edges();
	TEST_DONE();
}
