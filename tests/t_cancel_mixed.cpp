// Cleanup order across mixed frames, for pthread_cancel and pthread_exit.
// One thread's stack, outermost first:
//   C++ (this file)        pthread_cleanup_push (C++ class form), a
//                          local object with a destructor
//   plain C                pthread_cleanup_push (setjmp form)
//   (parts/cm_plain.c)
//   C with -fexceptions    pthread_cleanup_push (cleanup-attribute form),
//   (parts/cm_exc.c)       an __attribute__((cleanup)) variable
//   plain C                a legacy _pthread_cleanup_push buffer
//   (parts/cm_plain.c)
//   innermost              blocked in sem_wait or read (weft's points), in
//                          fgets (libc's internal point; also with the
//                          request pending before: glibc's own unwinder),
//                          or calling pthread_exit
// Every handler runs once, innermost first.  Then:
//   - catch (...) that rethrows: handlers outside it still run, and the
//     join gives PTHREAD_CANCELED;
//   - catch (...) that swallows: the process aborts with weft's message
//     (in a forked child).
#include <pthread.h>
#include <semaphore.h>
#include <string>
#include <unistd.h>
#include "harness.h"
#include "child.h"

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static std::string trail;

extern "C" void rec(const char *what)
{
	pthread_mutex_lock(&rec_lock);
	if (!trail.empty())
		trail += ",";
	trail += what;
	pthread_mutex_unlock(&rec_lock);
}

extern "C" void cm_plain_layer(void (*inner)(void));

static sem_t never, ready;
static int pipefd[2];

static void inner_sem(void)
{
	sem_post(&ready);
	sem_wait(&never);
	rec("sem_wait returned");
}

static void inner_read(void)
{
	char c;

	sem_post(&ready);
	if (read(pipefd[0], &c, 1) >= 0)
		rec("read returned");
}

/* stdio reads through libc's internal __read, glibc's own cancellation
   point: blocked in it, weft's SIGCANCEL handler acts (libc set the
   asynchronous type); with the request pending before, glibc's own
   __do_cancel and unwinder act, on the chains weft shares. */
static FILE *pipe_in;

static void inner_fgets(void)
{
	char line[8];

	sem_post(&ready);
	if (fgets(line, sizeof line, pipe_in))
		rec("fgets returned");
}

static void inner_fgets_pending(void)
{
	char line[8];

	pthread_cancel(pthread_self());
	sem_post(&ready);
	if (fgets(line, sizeof line, pipe_in))
		rec("fgets returned");
}

static void inner_exit(void)
{
	sem_post(&ready);
	pthread_exit((void *)7);
}

static void handler(void *what)
{
	rec((const char *)what);
}

struct Dtor {
	const char *what;
	~Dtor() { rec(what); }
};

static void *mixed(void *arg)
{
	void (*inner)(void) = (void (*)(void))arg;

	CHECK_WEFT_THREAD();
	pthread_cleanup_push(handler, (void *)"cxx-push");
	{
		Dtor d{"cxx-dtor"};
		cm_plain_layer(inner);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static const char *expected =
	"legacy,exc-attr,exc-push,plain-push,cxx-dtor,cxx-push";

static void run_mixed(const char *name, void (*inner)(void), int cancel,
		      void *want)
{
	pthread_t th;
	void *res = NULL;

	trail.clear();
	CHECK_EQ(pthread_create(&th, NULL, mixed, (void *)inner), 0);
	sem_wait(&ready);
	if (cancel)
		CHECK_EQ(pthread_cancel(th), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == want, "%s: join gave %p, want %p", name, res, want);
	CHECK(trail == expected, "%s: order %s, want %s", name, trail.c_str(),
	      expected);
}

static void *rethrower(void *)
{
	pthread_cleanup_push(handler, (void *)"outer");
	try {
		inner_sem();
	} catch (...) {
		rec("caught");
		throw;
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void *swallower(void *)
{
	try {
		inner_sem();
	} catch (...) {
		rec("swallowed");
	}
	return NULL;
}

static int swallow_child(int wfd, void *)
{
	pthread_t th;

	dup2(wfd, 2);
	if (pthread_create(&th, NULL, swallower, NULL) != 0)
		return 3;
	sem_wait(&ready);
	pthread_cancel(th);
	pthread_join(th, NULL);
	return 0; // not reached: the process aborts
}

int main()
{
	pthread_t th;
	void *res = NULL;
	struct child_result cr;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_cancel);
	REQUIRE_SERVED(pthread_exit);
	REQUIRE_SERVED(__pthread_register_cancel);
	REQUIRE_SERVED(__pthread_unregister_cancel);
	REQUIRE_SERVED(__pthread_unwind_next);
	REQUIRE_SERVED(_pthread_cleanup_push);
	REQUIRE_SERVED(_pthread_cleanup_pop);
	REQUIRE_SERVED(sem_wait);

	sem_init(&never, 0, 0);
	sem_init(&ready, 0, 0);
	REQUIRE(pipe(pipefd) == 0, "pipe");

	run_mixed("cancel in sem_wait", inner_sem, 1, PTHREAD_CANCELED);
	run_mixed("cancel in read", inner_read, 1, PTHREAD_CANCELED);
	run_mixed("pthread_exit", inner_exit, 0, (void *)7);
	REQUIRE((pipe_in = fdopen(pipefd[0], "r")) != NULL, "fdopen");
	run_mixed("cancel in fgets", inner_fgets, 1, PTHREAD_CANCELED);
	run_mixed("pending before fgets", inner_fgets_pending, 0,
		  PTHREAD_CANCELED);

	trail.clear();
	CHECK_EQ(pthread_create(&th, NULL, rethrower, NULL), 0);
	sem_wait(&ready);
	CHECK_EQ(pthread_cancel(th), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "rethrow: join gave %p", res);
	CHECK(trail == "caught,outer", "rethrow: order %s", trail.c_str());

	REQUIRE(run_child(swallow_child, NULL, 10000, &cr) == 0, "fork");
	CHECK(!cr.timed_out, "swallowing child did not end");
	CHECK(WIFSIGNALED(cr.status) && WTERMSIG(cr.status) == SIGABRT,
	      "swallowing child: status %#x, want SIGABRT", cr.status);
	CHECK(strstr(cr.out, "weft: cancellation/pthread_exit unwinding was "
			     "caught and not rethrown") != NULL,
	      "swallowing child said: %s", cr.out);
	TEST_DONE();
}
