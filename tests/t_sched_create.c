/* Scheduling and CPU affinity requested in the attributes are in force
   when the thread's start routine runs; when the kernel refuses them,
   pthread_create fails with its error and no thread is left behind. */
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

struct seen {
	int policy, prio, cpu, ncpus_allowed;
};

static void *report(void *arg)
{
	struct seen *s = arg;
	struct sched_param p;
	cpu_set_t set;

	CHECK_WEFT_THREAD();
	s->policy = sched_getscheduler(0);
	sched_getparam(0, &p);
	s->prio = p.sched_priority;
	s->cpu = sched_getcpu();
	sched_getaffinity(0, sizeof set, &set);
	s->ncpus_allowed = CPU_COUNT(&set);
	return NULL;
}

static int with_policy(int policy, int prio, struct seen *s)
{
	pthread_attr_t a;
	struct sched_param p = {.sched_priority = prio};
	pthread_t t;
	int err;

	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	CHECK_ERR(pthread_attr_setschedpolicy(&a, policy), 0);
	CHECK_ERR(pthread_attr_setschedparam(&a, &p), 0);
	err = pthread_create(&t, &a, report, s);
	if (err == 0)
		pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	return err;
}

int main(void)
{
	struct seen s;
	pthread_attr_t a;
	pthread_t t;
	cpu_set_t one;
	int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;

	WEFT_REQUIRE();

	/* Affinity: only the last CPU. */
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	pthread_attr_init(&a);
	CHECK_ERR(pthread_attr_setaffinity_np(&a, sizeof one, &one), 0);
	memset(&s, -1, sizeof s);
	CHECK_ERR(pthread_create(&t, &a, report, &s), 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	CHECK_EQ(s.cpu, last);
	CHECK_EQ(s.ncpus_allowed, 1);

	/* Inherited by default: the creator's (SCHED_OTHER). */
	memset(&s, -1, sizeof s);
	CHECK_ERR(pthread_create(&t, NULL, report, &s), 0);
	pthread_join(t, NULL);
	CHECK_EQ(s.policy, SCHED_OTHER);

	/* Explicit policies, including the two glibc's attributes refuse. */
	memset(&s, -1, sizeof s);
	CHECK_ERR(with_policy(SCHED_BATCH, 0, &s), 0);
	CHECK_EQ(s.policy, SCHED_BATCH);
	memset(&s, -1, sizeof s);
	CHECK_ERR(with_policy(SCHED_IDLE, 0, &s), 0);
	CHECK_EQ(s.policy, SCHED_IDLE);
	if (geteuid() == 0) {
		memset(&s, -1, sizeof s);
		CHECK_ERR(with_policy(SCHED_FIFO, 7, &s), 0);
		CHECK_EQ(s.policy, SCHED_FIFO);
		CHECK_EQ(s.prio, 7);
		memset(&s, -1, sizeof s);
		CHECK_ERR(with_policy(SCHED_RR, 3, &s), 0);
		CHECK_EQ(s.policy, SCHED_RR);
		CHECK_EQ(s.prio, 3);
	}

	/* The default attributes take the same policies as any attribute. */
	{
		pthread_attr_t d;
		pthread_attr_init(&d);
		CHECK_ERR(pthread_attr_setschedpolicy(&d, SCHED_BATCH), 0);
		CHECK_ERR(pthread_setattr_default_np(&d), 0);
		CHECK_ERR(pthread_attr_setschedpolicy(&d, 12345), EINVAL);
		pthread_attr_destroy(&d);
		pthread_attr_init(&d);
		CHECK_ERR(pthread_setattr_default_np(&d), 0);
		pthread_attr_destroy(&d);
	}

	/* Refused: an affinity of a CPU that does not exist -> EINVAL. */
	{
		cpu_set_t none;
		/* Every earlier thread is joined, but its task may still be
		   listed (harness.h, tasks_settle): count once only main is. */
		int before = tasks_settle(1, 5);
		struct weft_stats st0, st1;

		CPU_ZERO(&none);
		CPU_SET(CPU_SETSIZE - 1, &none);
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof none, &none);
		weft_get_stats(&st0);
		CHECK_ERR(pthread_create(&t, &a, report, &s), EINVAL);
		weft_get_stats(&st1);
		pthread_attr_destroy(&a);
		CHECK_EQ(before, 1);
		CHECK_EQ(tasks_settle(before, 5), before);
		CHECK_EQ(st1.threads_live, st0.threads_live);
		CHECK_EQ(st1.threads_created, st0.threads_created);
	}

	/* Refused: real-time policy without the right -> EPERM, no thread.
	   As root: drop to uid 65534 with RLIMIT_RTPRIO 0 in a child. */
	{
		pid_t p = fork();
		int st;

		REQUIRE(p >= 0, "fork");
		if (p == 0) {
			struct rlimit rl = {0, 0};
			int before, err;

			setrlimit(RLIMIT_RTPRIO, &rl);
			if (geteuid() == 0 &&
			    (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
				_exit(3);
			before = tasks_listed();
			err = with_policy(SCHED_FIFO, 10, &s);
			if (err != EPERM) {
				fprintf(stderr, "expected EPERM (%d), got %d\n", EPERM, err);
				_exit(1);
			}
			if ((err = tasks_settle(before, 5)) != before) {
				fprintf(stderr, "a thread was left behind: %d tasks "
						"after 5 s, expected %d\n", err, before);
				_exit(2);
			}
			_exit(0);
		}
		REQUIRE(waitpid(p, &st, 0) == p, "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "EPERM child: expected exit 0, got status 0x%x", st);
	}
	TEST_DONE();
}
