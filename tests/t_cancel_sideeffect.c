/* Cancellation never loses a side effect (issue 5; glibc bug 12683).
   A weft thread sleeps in read() on an empty pipe (deferred type; seen
   asleep in the kernel through /proc before going on); main writes one
   byte and at once cancels it (every other round: cancels, then
   writes).  Each round must end one of two ways:
     - read returned the byte (the thread records it) and the thread is
       cancelled at its next cancellation point (a read on a second,
       empty pipe: only the cancellation ends it, so a thread that
       outran the request still waits for it there);
     - the thread was cancelled inside read, and the byte is still in
       the pipe.
   A round where the thread was cancelled, never saw the byte, and the
   pipe is empty LOST the byte.  Rounds: 2000 or 5 s, whichever first.

   glibc 2.36's cancellation engine, which weft delegates to until its
   own engine lands, loses bytes here (the cancellation signal can land
   after the system call returned and before the wrapper turns
   asynchronous cancellation off).  So the losses count as a failure
   only once weft serves pthread_testcancel itself (its own engine) or
   with WEFT_CANCEL_STRICT=1; otherwise they are reported as KNOWN-FAIL
   and the test passes.  Every other outcome (not cancelled, handler not
   run, the byte both read and left) always fails. */
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "harness.h"

struct round {
	int fd, hold; /* the pipe written to; one never written to */
	FILE *f;      /* stdio round: unbuffered stream on fd, else NULL */
	pid_t tid;
	int ready, got, cleaned;
	long n;		/* what read returned */
	int err;	/* its errno */
};

static void cleanup(void *arg)
{
	struct round *r = arg;
	r->cleaned = 1;
}

static void *reader(void *arg)
{
	struct round *const r = arg;
	char c;

	CHECK_WEFT_THREAD();
	r->tid = (pid_t)syscall(SYS_gettid);
	pthread_cleanup_push(cleanup, r);
	__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
	if (r->f) {
		int ch = fgetc(r->f); /* libc's own point: stdio's read */
		r->n = ch == EOF ? -1 : 1;
	} else {
		r->n = read(r->fd, &c, 1);
	}
	r->err = errno;
	if (r->n == 1)
		r->got = 1;
	/* The next cancellation point; nothing but a cancellation (or the
	   release after a failure) ends it. */
	(void)!read(r->hold, &c, 1);
	pthread_cleanup_pop(0);
	return (void *)1;
}

/* Until the thread sleeps in read (SYS_read in .../syscall); 5 s. */
static int asleep_in_read(pid_t tid)
{
	char path[64], buf[128];
	long end = mono_ns() + 5000000000L;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	do {
		FILE *f = fopen(path, "r");
		size_t n;

		if (!f)
			return 0;
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		if (buf[0] == '0' && buf[1] == ' ')
			return 1;
		sched_yield();
	} while (mono_ns() < end);
	return 0;
}

/* Is pthread_testcancel weft's (its own cancellation engine)? */
static int weft_engine(void)
{
	void *p = dlsym(RTLD_DEFAULT, "pthread_testcancel");
	Dl_info di;

	return p && dladdr(p, &di) && di.dli_fname &&
	       strstr(di.dli_fname, "libweft");
}

/* Losses allowed in the fgetc series (see main). */
#define STDIO_LOSS_MAX 10

/* One series of rounds; `stdio`: the reader calls fgetc on an unbuffered
   stream instead of read.  Returns the number of bytes lost. */
static int series(int stdio, int strict)
{
	long end = mono_ns() + 4000000000L;
	int rounds = 0, read_then_cancelled = 0, cancelled_kept = 0, lost = 0;
	int p[2], hold[2];

	REQUIRE(pipe(p) == 0 && pipe(hold) == 0, "pipe");
	while (rounds < 2000 && mono_ns() < end) {
		struct round r = {.fd = p[0], .hold = hold[0]};
		pthread_t t;
		void *res = NULL;
		int left = -1;
		struct timespec dl;
		char c;

		if (stdio) {
			r.f = fdopen(dup(p[0]), "r");
			REQUIRE(r.f != NULL, "fdopen");
			setvbuf(r.f, NULL, _IONBF, 0);
		}
		REQUIRE(pthread_create(&t, NULL, reader, &r) == 0, "create");
		while (!__atomic_load_n(&r.ready, __ATOMIC_ACQUIRE))
			sched_yield();
		if (!asleep_in_read(r.tid)) {
			FAIL("round %d: reader never seen asleep in read", rounds);
			pthread_cancel(t);
			pthread_join(t, NULL);
			break;
		}
		/* Both orders: the byte first, or the request first. */
		if (rounds & 1) {
			CHECK_ERR(pthread_cancel(t), 0);
			REQUIRE(write(p[1], "x", 1) == 1, "write");
		} else {
			REQUIRE(write(p[1], "x", 1) == 1, "write");
			CHECK_ERR(pthread_cancel(t), 0);
		}
		dl = deadline_in(CLOCK_REALTIME, 5000000000L);
		if (pthread_timedjoin_np(t, &res, &dl) != 0) {
			FAIL("round %d: the cancellation was lost (read gave %ld)",
			     rounds + 1, r.n);
			REQUIRE(write(hold[1], "h", 1) == 1, "release");
			pthread_join(t, &res);
			break;
		}
		if (r.f)
			fclose(r.f);
		ioctl(p[0], FIONREAD, &left);
		rounds++;
		if (res != PTHREAD_CANCELED || !r.cleaned) {
			FAIL("round %d: expected a cancelled thread with its "
			     "handler run, got %p, handler %d (read gave %ld, "
			     "%s; %d byte(s) left)", rounds, res, r.cleaned, r.n,
			     strerror(r.err), left);
			break;
		}
		if (r.got && left == 0)
			read_then_cancelled++;
		else if (!r.got && left == 1)
			cancelled_kept++;
		else if (!r.got && left == 0)
			lost++;
		else
			FAIL("round %d: byte read and still in the pipe (%d)",
			     rounds, left);
		if (left > 0)
			REQUIRE(read(p[0], &c, 1) == 1, "drain");
	}
	printf("%s: %d rounds: %d read then cancelled, %d cancelled with the "
	       "byte kept, %d LOST (engine: %s)\n", stdio ? "fgetc" : "read",
	       rounds, read_then_cancelled, cancelled_kept, lost,
	       strict ? "weft" : "glibc");
	close(p[0]); close(p[1]); close(hold[0]); close(hold[1]);
	return lost;
}

int main(void)
{
	int strict, lost_read, lost_stdio;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_cancel);
	strict = weft_engine() ||
		 (getenv("WEFT_CANCEL_STRICT") && atoi(getenv("WEFT_CANCEL_STRICT")));
	lost_read = series(0, strict);
	lost_stdio = series(1, strict);
	if (strict && lost_read)
		FAIL("read: %d round(s) lost the byte read", lost_read);
	/* fgetc goes through stdio's internal read, a cancellation point
	   of glibc's own design that weft does not interpose: it runs with
	   the asynchronous type around its system call.  weft's handler
	   keeps a completed call when the signal finds the thread right
	   after the syscall instruction (the usual case: it was asleep in
	   the kernel), but a thread that has already run past it when the
	   signal comes is still unwound (docs/cancel.md): a rare loss, about
	   1 in 2,000 rounds seen under load, against 1,960 without weft's
	   check.  So this series allows a few. */
	if (strict && lost_stdio > STDIO_LOSS_MAX)
		FAIL("fgetc: %d round(s) lost the byte read (at most %d "
		     "expected)", lost_stdio, STDIO_LOSS_MAX);
	if (!strict && (lost_read || lost_stdio))
		printf("KNOWN-FAIL: %d + %d byte(s) lost under glibc's engine "
		       "(bug 12683)\n", lost_read, lost_stdio);
	TEST_DONE();
}
