/* CPU affinity of weft threads: set at creation by the attribute and on
   a running thread by pthread_setaffinity_np, the thread then runs on
   the allowed CPU (sched_getcpu inside it); pthread_getaffinity_np reads
   the kernel's mask, zero-fills a larger buffer and refuses one smaller
   than the kernel's mask; a set without existing CPUs is EINVAL; a
   finished thread is ESRCH; the main thread (served by glibc) works. */
#include "t_sched_worker.h"

static int ncpu;

static void at_creation(void)
{
	for (int cpu = 0; cpu < ncpu; cpu++) {
		pthread_attr_t a;
		struct worker w;
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
		REQUIRE(worker_start(&w, &a) == 0, "worker on cpu %d", cpu);
		pthread_attr_destroy(&a);
		worker_do(&w, W_REPORT);
		CHECK_EQ(w.cpu, cpu);
		worker_do(&w, W_QUIT);
		pthread_join(w.th, NULL);
		worker_close(&w);
	}
}

static void running(void)
{
	struct worker w;
	cpu_set_t set, got, *big;
	size_t bigsize = CPU_ALLOC_SIZE(8192);

	REQUIRE(worker_start(&w, NULL) == 0, "worker");
	for (int round = 0; round < 3; round++)
		for (int cpu = ncpu - 1; cpu >= 0; cpu--) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			CHECK_ERR(pthread_setaffinity_np(w.th, sizeof set, &set), 0);
			/* The kernel moves it before it runs again. */
			worker_do(&w, W_REPORT);
			CHECK_EQ(w.cpu, cpu);
			CPU_ZERO(&got);
			CHECK_ERR(pthread_getaffinity_np(w.th, sizeof got, &got), 0);
			CHECK(CPU_EQUAL(&got, &set), "read back differs (cpu %d)", cpu);
			CHECK_EQ(sched_getaffinity(w.tid, sizeof got, &got), 0);
			CHECK(CPU_EQUAL(&got, &set), "kernel's mask differs (cpu %d)", cpu);
		}
	/* All CPUs again; a larger buffer comes back zero-filled. */
	CPU_ZERO(&set);
	for (int cpu = 0; cpu < ncpu; cpu++)
		CPU_SET(cpu, &set);
	CHECK_ERR(pthread_setaffinity_np(w.th, sizeof set, &set), 0);
	big = CPU_ALLOC(8192);
	memset(big, 0xff, bigsize);
	CHECK_ERR(pthread_getaffinity_np(w.th, bigsize, big), 0);
	CHECK_EQ(CPU_COUNT_S(bigsize, big), ncpu);
	CPU_FREE(big);
	/* Smaller than the kernel's mask (one long): EINVAL. */
	CHECK_ERR(pthread_getaffinity_np(w.th, 4, &got), EINVAL);
	/* Only CPUs that do not exist: EINVAL, mask unchanged. */
	CPU_ZERO(&got);
	CPU_SET(CPU_SETSIZE - 1, &got);
	CHECK_ERR(pthread_setaffinity_np(w.th, sizeof got, &got), EINVAL);
	CHECK_ERR(pthread_getaffinity_np(w.th, sizeof got, &got), 0);
	CHECK_EQ(CPU_COUNT(&got), ncpu);

	worker_finish_unjoined(&w);
	CHECK_ERR(pthread_setaffinity_np(w.th, sizeof set, &set), ESRCH);
	CHECK_ERR(pthread_getaffinity_np(w.th, sizeof got, &got), ESRCH);
	CHECK_ERR(pthread_join(w.th, NULL), 0);
	CHECK_ERR(pthread_setaffinity_np(w.th, sizeof set, &set), ESRCH);
	CHECK_ERR(pthread_getaffinity_np(w.th, sizeof got, &got), ESRCH);
	worker_close(&w);
}

/* The main thread is glibc's: its calls are forwarded, and work. */
static void main_thread(void)
{
	cpu_set_t all, one, got;
	int last = ncpu - 1;

	CHECK_ERR(pthread_getaffinity_np(pthread_self(), sizeof all, &all), 0);
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	CHECK_ERR(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
	CHECK_EQ(sched_getcpu(), last);
	CHECK_ERR(pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
	CHECK(CPU_EQUAL(&got, &one), "main thread's mask differs");
	CHECK_ERR(pthread_setaffinity_np(pthread_self(), sizeof all, &all), 0);
}

int main(void)
{
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_setaffinity_np);
	REQUIRE_SERVED(pthread_getaffinity_np);
	REQUIRE_SERVED(pthread_attr_setaffinity_np);
	REQUIRE_SERVED(pthread_create);
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	REQUIRE(ncpu >= 1, "CPU count");
	if (ncpu == 1)
		fprintf(stderr, "note: one CPU, placement is trivially right\n");
	at_creation();
	running();
	main_thread();
	TEST_DONE();
}
