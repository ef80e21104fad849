/* Helper of tests/t_gcore.sh (built by it, both modes): N threads
   (argv[1]) each parked in gcore_parked(), the main thread in
   gcore_main_waits(), all blocked in read() on a pipe nobody writes.
   Once every thread is inside its function it prints

     ready pid=P threads=N served=S

   (S = 1 when weft is active and made every one of the N threads) and
   waits to be killed.  argv[2], when given, is the stack size of the
   threads in KiB (small stacks keep the core file small; the guard is
   the default one page either way).  It lets any process trace it
   (Yama's ptrace_scope 1 would refuse gcore otherwise). */
#include "harness.h"

#include <semaphore.h>
#include <sys/prctl.h>
#include <unistd.h>

static int park[2];
static sem_t parked;
static int not_weft; /* threads not made by weft */

static void park_forever(void)
{
	char c;

	while (read(park[0], &c, 1) != 0)
		;
}

/* noinline, and work after the read, so that the frame stays on the
   stack and the call is no tail call: a backtrace must show it. */
__attribute__((noinline)) void gcore_parked(long i)
{
	if (!weft_self_origin || weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_add_fetch(&not_weft, 1, __ATOMIC_RELAXED);
	sem_post(&parked);
	park_forever();
	__asm__ volatile("" : : "r"(i) : "memory");
}

static void *worker(void *arg)
{
	gcore_parked((long)arg);
	return NULL;
}

__attribute__((noinline)) void gcore_main_waits(int n)
{
	int served = weft_active && weft_active() &&
		     __atomic_load_n(&not_weft, __ATOMIC_RELAXED) == 0;

	printf("ready pid=%d threads=%d served=%d\n", (int)getpid(), n, served);
	fflush(stdout);
	park_forever();
	__asm__ volatile("" : : "r"(n) : "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	long kib = argc > 2 ? atol(argv[2]) : 0;
	pthread_attr_t a;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	REQUIRE(pipe(park) == 0, "pipe failed");
	REQUIRE(sem_init(&parked, 0, 0) == 0, "sem_init failed");
	pthread_attr_init(&a);
	if (kib > 0)
		REQUIRE(pthread_attr_setstacksize(&a, (size_t)kib << 10) == 0,
			"setstacksize %ld KiB", kib);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int err = pthread_create(&t, &a, worker, (void *)i);

		REQUIRE(err == 0, "pthread_create %ld: %s", i, strerror(err));
	}
	for (int i = 0; i < n; i++)
		while (sem_wait(&parked) != 0)
			;
	gcore_main_waits(n);
	return 0;
}
