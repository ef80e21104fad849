/* A thread pool whose requests live on the submitter's stack, the way
   programs write "submit and wait": each request carries its own mutex
   and condvar; a worker computes the answer, then `lock; done = 1;
   signal; unlock`.  The submitter, woken, destroys the request's mutex
   and condvar and returns: the next request (or other data) takes the
   same stack bytes at once.  A library that touches the request's
   mutex after the unlock that let the submitter go writes into the
   submitter's live stack.  Checked: every answer; after each request
   the submitter fills the request's bytes with a pattern, does a little
   other work, and checks that the bytes still hold the pattern.  4
   workers, 4 submitters, 300,000 requests (WEFT_POOL_REQUESTS). */
#include "harness.h"

enum { WORKERS = 4, SUBMITTERS = 4 };

struct request {
	pthread_mutex_t m;
	pthread_cond_t c;
	int done;
	long in, out;
	struct request *next;
};

/* The pool's queue. */
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qc = PTHREAD_COND_INITIALIZER;
static struct request *qhead, **qtail = &qhead;
static int quit;
static long per_submitter;
static int corrupted;

static long answer(long in)
{
	return in * 7 + 3;
}

static void *worker(void *p)
{
	(void)p;
	CHECK_WEFT_THREAD();
	for (;;) {
		struct request *r;

		pthread_mutex_lock(&qm);
		while (!qhead && !quit)
			pthread_cond_wait(&qc, &qm);
		if (!qhead) {
			pthread_mutex_unlock(&qm);
			return NULL;
		}
		r = qhead;
		qhead = r->next;
		if (!qhead)
			qtail = &qhead;
		pthread_mutex_unlock(&qm);

		long out = answer(r->in);
		pthread_mutex_lock(&r->m);
		r->out = out;
		r->done = 1;
		pthread_cond_signal(&r->c);
		pthread_mutex_unlock(&r->m);
	}
}

static void submit(struct request *r)
{
	pthread_mutex_lock(&qm);
	r->next = NULL;
	*qtail = r;
	qtail = &r->next;
	pthread_cond_signal(&qc);
	pthread_mutex_unlock(&qm);
}

/* The request's bytes, as the program's next use of them. */
static unsigned long pattern(size_t i, long n)
{
	return 0x9e3779b97f4a7c15ul * (i + 1) ^ (unsigned long)n;
}

static int check_pattern(const unsigned long *w, long n, long id)
{
	for (size_t i = 0; i < sizeof(struct request) / sizeof *w; i++)
		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) != pattern(i, n)) {
			FAIL("submitter %ld, after request %ld: the request's "
			     "stack bytes changed after it completed: word %zu "
			     "expected 0x%016lx, got 0x%016lx",
			     id, n, i, pattern(i, n),
			     __atomic_load_n(&w[i], __ATOMIC_RELAXED));
			return 1;
		}
	return 0;
}

/* One request in a frame of its own, reused by the next call. */
static __attribute__((noinline)) long one_request(long in)
{
	union {
		struct request r;
		unsigned long w[sizeof(struct request) / sizeof(unsigned long)];
	} u;
	long out;

	pthread_mutex_init(&u.r.m, NULL);
	pthread_cond_init(&u.r.c, NULL);
	u.r.done = 0;
	u.r.in = in;
	submit(&u.r);
	pthread_mutex_lock(&u.r.m);
	while (!u.r.done)
		pthread_cond_wait(&u.r.c, &u.r.m);
	out = u.r.out;
	pthread_mutex_unlock(&u.r.m);
	pthread_mutex_destroy(&u.r.m);
	pthread_cond_destroy(&u.r.c);
	/* The program's next use of these bytes (the same offsets as the
	   request, in this frame) ... */
	for (size_t i = 0; i < sizeof u.w / sizeof u.w[0]; i++)
		__atomic_store_n(&u.w[i], pattern(i, in), __ATOMIC_RELAXED);
	/* ... a short piece of other work, during which a late touch by the
	   worker would land ... */
	for (int i = 0; i < 64; i++)
		__builtin_ia32_pause();
	/* ... and the check that they still hold what it wrote. */
	if (check_pattern(u.w, in, 0))
		__atomic_fetch_add(&corrupted, 1, __ATOMIC_RELAXED);
	return out;
}

static void *submitter(void *p)
{
	long id = (long)p, wrong = 0;

	CHECK_WEFT_THREAD();
	for (long n = 0; n < per_submitter; n++) {
		long in = id * per_submitter + n;
		if (one_request(in) != answer(in) && wrong++ == 0)
			FAIL("submitter %ld: request %ld: wrong answer", id, n);
	}
	return (void *)wrong;
}

int main(void)
{
	const char *s = getenv("WEFT_POOL_REQUESTS");
	long requests = s && *s ? strtol(s, NULL, 10) : 300000;
	pthread_t w[WORKERS], sub[SUBMITTERS];
	double t0 = now_s();
	void *rv;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_unlock);
	per_submitter = requests / SUBMITTERS;
	for (int i = 0; i < WORKERS; i++)
		REQUIRE(pthread_create(&w[i], NULL, worker, NULL) == 0,
			"pthread_create failed");
	for (long i = 0; i < SUBMITTERS; i++)
		REQUIRE(pthread_create(&sub[i], NULL, submitter, (void *)i) == 0,
			"pthread_create failed");
	for (int i = 0; i < SUBMITTERS; i++) {
		pthread_join(sub[i], &rv);
		CHECK_EQ((long)rv, 0);
	}
	pthread_mutex_lock(&qm);
	quit = 1;
	pthread_cond_broadcast(&qc);
	pthread_mutex_unlock(&qm);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	CHECK(corrupted == 0, "expected no request's bytes changed after "
	      "completion, got %d of %ld requests", corrupted,
	      per_submitter * SUBMITTERS);
	printf("%ld requests, %d workers, %d submitters: %d corrupted, "
	       "%.1f s\n", per_submitter * SUBMITTERS, WORKERS, SUBMITTERS,
	       corrupted, now_s() - t0);
	TEST_DONE();
}
