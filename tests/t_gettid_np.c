/* pthread_gettid_np (glibc 2.42): the kernel tid of the thread a handle
   names, -1 once it has ended.  A weft thread's handle is not the
   address of its TCB, so glibc's own version, which reads the tid
   through the handle, dies with SIGSEGV on one: weft serves it.  Called
   through dlsym, so the test also builds against a glibc without it
   (weft exports it whatever the release). */
#include "harness.h"

#include <sys/syscall.h>
#include <unistd.h>

typedef pid_t (*gettid_np_fn)(pthread_t);

static pthread_barrier_t bar;
static volatile pid_t seen_tid;

static void *worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	seen_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&bar); /* the main thread asks now */
	pthread_barrier_wait(&bar);
	return NULL;
}

int main(void)
{
	gettid_np_fn fn;
	pthread_t th;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_gettid_np);
	fn = (gettid_np_fn)dlsym(RTLD_DEFAULT, "pthread_gettid_np");
	REQUIRE(fn != NULL, "pthread_gettid_np not found");
	CHECK_EQ(fn(pthread_self()), getpid());

	pthread_barrier_init(&bar, NULL, 2);
	REQUIRE(pthread_create(&th, NULL, worker, NULL) == 0, "pthread_create");
	pthread_barrier_wait(&bar);
	CHECK_EQ(fn(th), seen_tid);
	pthread_barrier_wait(&bar);
	REQUIRE(pthread_join(th, NULL) == 0, "pthread_join");
	/* A joined thread's handle is stale: -1, as for an ended thread. */
	CHECK_EQ(fn(th), -1);
	return harness_failures ? 1 : 0;
}
