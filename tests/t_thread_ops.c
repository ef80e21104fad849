/* Operations on a running weft thread through its handle: names (seen in
   /proc/self/task/TID/comm, ERANGE past 15 characters), the per-thread
   CPU clock (advances only while the thread runs), scheduling
   parameters, CPU affinity; and ESRCH for each once the thread was
   joined. */
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase; /* 0 park, 1 spin, 2 park, 3 report cpu, 4 exit */
static pid_t tid;
static volatile int spin_done;
static int cpu_seen = -1;

static void wait_phase(int p)
{
	pthread_mutex_lock(&mu);
	while (phase < p)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void set_phase(int p)
{
	pthread_mutex_lock(&mu);
	phase = p;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	struct timespec a, b;

	(void)arg;
	CHECK_WEFT_THREAD();
	__atomic_store_n(&tid, gettid(), __ATOMIC_RELEASE);
	wait_phase(1);
	/* burn ~50 ms of CPU time */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
	       50000000L);
	__atomic_store_n(&spin_done, 1, __ATOMIC_RELEASE);
	wait_phase(3);
	cpu_seen = sched_getcpu();
	set_phase(4);
	return NULL;
}

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	pthread_t t;
	char name[32], path[64], comm[32] = "";
	clockid_t clk;
	long long c0, c1, c2;
	struct sched_param sp;
	int policy;
	cpu_set_t set;
	int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	FILE *f;

	WEFT_REQUIRE();
	CHECK_ERR(pthread_create(&t, NULL, worker, NULL), 0);
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		sched_yield();

	/* names */
	CHECK_ERR(pthread_setname_np(t, "weft-worker"), 0);
	CHECK_ERR(pthread_getname_np(t, name, sizeof name), 0);
	CHECK(strcmp(name, "weft-worker") == 0, "getname: expected weft-worker, got %s", name);
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
	f = fopen(path, "r");
	REQUIRE(f != NULL, "open %s", path);
	if (!fgets(comm, sizeof comm, f))
		comm[0] = 0;
	fclose(f);
	CHECK(strcmp(comm, "weft-worker\n") == 0, "comm: expected weft-worker, got %s", comm);
	CHECK_ERR(pthread_setname_np(t, "a-name-of-16-chr"), ERANGE);
	CHECK_ERR(pthread_getname_np(t, name, 4), ERANGE);

	/* CPU clock: flat while parked, advancing while it spins */
	CHECK_ERR(pthread_getcpuclockid(t, &clk), 0);
	c0 = clock_ns(clk);
	set_phase(1);
	while (!__atomic_load_n(&spin_done, __ATOMIC_ACQUIRE))
		sched_yield();
	c1 = clock_ns(clk);
	set_phase(2);
	CHECK(c1 - c0 >= 50000000LL, "CPU clock advanced %lld ns while the "
				     "thread spun 50 ms", c1 - c0);
	c2 = clock_ns(clk);
	/* parked in a condvar wait: a few microseconds at most to get there */
	{
		long long c3;
		do {
			c3 = c2;
			sched_yield();
			c2 = clock_ns(clk);
		} while (c2 != c3);
		CHECK(c2 - c1 < 10000000LL, "CPU clock ran %lld ns while parked",
		      c2 - c1);
	}

	/* scheduling parameters */
	sp.sched_priority = 0;
	CHECK_ERR(pthread_setschedparam(t, SCHED_BATCH, &sp), 0);
	CHECK_ERR(pthread_getschedparam(t, &policy, &sp), 0);
	CHECK_EQ(policy, SCHED_BATCH);
	CHECK_EQ(sched_getscheduler(tid), SCHED_BATCH);
	CHECK_ERR(pthread_setschedparam(t, SCHED_OTHER, &sp), 0);
	CHECK_ERR(pthread_setschedprio(t, 0), 0);

	/* affinity of a running thread */
	CPU_ZERO(&set);
	CPU_SET(last, &set);
	CHECK_ERR(pthread_setaffinity_np(t, sizeof set, &set), 0);
	CPU_ZERO(&set);
	CHECK_ERR(pthread_getaffinity_np(t, sizeof set, &set), 0);
	CHECK_EQ(CPU_COUNT(&set), 1);
	CHECK(CPU_ISSET(last, &set), "affinity read back lacks CPU %d", last);
	set_phase(3);
	wait_phase(4);
	CHECK_EQ(cpu_seen, last);

	CHECK_ERR(pthread_join(t, NULL), 0);
	/* a joined thread's handle is stale for every call */
	CHECK_ERR(pthread_setname_np(t, "x"), ESRCH);
	CHECK_ERR(pthread_getname_np(t, name, sizeof name), ESRCH);
	CHECK_ERR(pthread_getcpuclockid(t, &clk), ESRCH);
	CHECK_ERR(pthread_setschedparam(t, SCHED_OTHER, &sp), ESRCH);
	CHECK_ERR(pthread_getschedparam(t, &policy, &sp), ESRCH);
	CHECK_ERR(pthread_setaffinity_np(t, sizeof set, &set), ESRCH);
	CHECK_ERR(pthread_getaffinity_np(t, sizeof set, &set), ESRCH);
	TEST_DONE();
}
