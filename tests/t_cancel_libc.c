/* Cancellation at libc's own cancellation points, the ones nothing can
   interpose: stdio's read (fgets on a pipe: libc's internal __read) and
   wait3 (libc's internal wait4).  weft's pthread_cancel must make them
   act as the running glibc release's own would (docs/cancel.md): in
   2.36 they set the ASYNC bit around their system call and SIGCANCEL
   acts there; from 2.41 they make the system call in libc's hidden
   window (__syscall_cancel_arch), a canceller signals every enabled
   target and the handler acts when the thread stopped inside that
   window.  With the other release's protocol the thread is never
   cancelled (2.36's on 2.41: nobody signals it) and this test times out
   at its deadline.

   For each point, deferred cancellation:
     blocked in  the thread blocks in the call, then is cancelled: it
                 must end as cancelled (PTHREAD_CANCELED) with its
                 cleanup handler run, within TIMEOUT_S;
     pending     the request comes first (the thread waits for it with
                 cancellation disabled), then the thread enables it and
                 calls the point: it must be cancelled before the call
                 does anything (the byte waiting in the pipe stays
                 unread, the child stays unreaped). */
#include "harness.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_S 10

enum point { FGETS, WAIT3 };
static const char *const point_name[] = {"fgets (stdio's read)", "wait3"};

struct job {
	enum point point;
	int pending;	     /* request before the call */
	FILE *in;	     /* FGETS: the pipe's read end */
	volatile pid_t tid;  /* the thread's kernel tid */
	volatile int ready;  /* the thread is about to block / waits */
	volatile int asked;  /* pending: the request was made */
	volatile int cleaned;
	volatile int returned;
};

static void cleanup(void *p)
{
	((struct job *)p)->cleaned = 1;
}

static void *run(void *p)
{
	struct job *j = p;
	char line[64];
	int st;

	CHECK_WEFT_THREAD();
	j->tid = (pid_t)syscall(SYS_gettid);
	pthread_cleanup_push(cleanup, j);
	if (j->pending) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		j->ready = 1;
		while (!__atomic_load_n(&j->asked, __ATOMIC_ACQUIRE))
			sched_yield();
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	} else {
		j->ready = 1;
	}
	if (j->point == FGETS)
		(void)fgets(line, sizeof line, j->in);
	else
		(void)wait3(&st, 0, NULL);
	j->returned = 1;
	pthread_cleanup_pop(0);
	return NULL;
}

/* Waits until `tid`'s thread sleeps in the kernel (state S in its
   /proc stat), so the request finds it blocked in the call. */
static void wait_blocked(pid_t tid)
{
	char path[64], buf[256];

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	for (int i = 0; i < 100000; i++) {
		FILE *f = fopen(path, "r");
		char *rp;

		if (f) {
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[n] = 0;
			rp = strrchr(buf, ')');
			if (rp && rp[1] == ' ' && rp[2] == 'S')
				return;
		}
		usleep(100);
	}
}

static void one(enum point point, int pending)
{
	struct job j;
	int fds[2] = {-1, -1};
	pid_t child = -1;
	pthread_t th;
	struct timespec dl;
	void *res = NULL;
	int r;

	memset(&j, 0, sizeof j);
	j.point = point;
	j.pending = pending;
	if (point == FGETS) {
		REQUIRE(pipe(fds) == 0, "pipe: %s", strerror(errno));
		j.in = fdopen(fds[0], "r");
		REQUIRE(j.in != NULL, "fdopen: %s", strerror(errno));
		setvbuf(j.in, NULL, _IONBF, 0); /* stdio reads the fd itself */
		if (pending) /* what a call that ran would consume */
			REQUIRE(write(fds[1], "x\n", 2) == 2, "write");
	} else {
		/* A child that lives until we let it go: wait3 blocks on it,
		   or (pending) would reap it at once if it ended. */
		int go[2];

		REQUIRE(pipe(go) == 0, "pipe");
		child = fork();
		REQUIRE(child >= 0, "fork: %s", strerror(errno));
		if (child == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) < 0) {
			}
			_exit(0);
		}
		close(go[0]);
		fds[1] = go[1];
	}
	REQUIRE(pthread_create(&th, NULL, run, &j) == 0, "pthread_create");
	while (!j.ready)
		sched_yield();
	if (pending) {
		REQUIRE(pthread_cancel(th) == 0, "pthread_cancel");
		__atomic_store_n(&j.asked, 1, __ATOMIC_RELEASE);
	} else {
		wait_blocked(j.tid);
		REQUIRE(pthread_cancel(th) == 0, "pthread_cancel");
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += TIMEOUT_S;
	r = pthread_timedjoin_np(th, &res, &dl);
	if (r == ETIMEDOUT) {
		FAIL("%s, %s: expected the thread cancelled, got it still in "
		     "the call after %d s", point_name[point],
		     pending ? "request pending before the call" : "blocked in the call",
		     TIMEOUT_S);
		/* Let it finish so the process can end: a line to read, or
		   the child let go (then reaped by the thread's wait3). */
		if (point == FGETS && write(fds[1], "y\n", 2) < 0) {
		}
		if (point == WAIT3) {
			if (write(fds[1], "g", 1) < 0) {
			}
			close(fds[1]);
			fds[1] = -1;
		}
		pthread_join(th, &res);
	} else {
		CHECK_EQ(r, 0);
		CHECK(res == PTHREAD_CANCELED, "%s, %s: expected PTHREAD_CANCELED, got %p",
		      point_name[point], pending ? "pending" : "blocked", res);
		CHECK(j.cleaned, "%s: the cleanup handler did not run", point_name[point]);
		CHECK(!j.returned, "%s: the call returned", point_name[point]);
	}
	if (point == FGETS) {
		if (pending) { /* the byte is still there: the call did nothing */
			char c = 0;

			fcntl(fds[0], F_SETFL, O_NONBLOCK);
			CHECK(read(fds[0], &c, 1) == 1 && c == 'x',
			      "fgets, pending: the call consumed the input");
		}
		fclose(j.in);
		close(fds[1]);
	} else {
		int st;

		if (pending) /* not reaped by the cancelled call */
			CHECK(waitpid(child, &st, WNOHANG) == 0,
			      "wait3, pending: the child was reaped by the cancelled call");
		if (fds[1] >= 0) {
			if (write(fds[1], "g", 1) < 0) {
			}
			close(fds[1]);
		}
		waitpid(child, &st, 0);
	}
}

int main(void)
{
	WEFT_REQUIRE();
	for (int pending = 0; pending < 2; pending++) {
		one(FGETS, pending);
		one(WAIT3, pending);
	}
	return harness_failures ? 1 : 0;
}
