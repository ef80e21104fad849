/* Threads glibc makes itself are adopted by weft: the SIGEV_THREAD
   notification threads of timer_create and of POSIX AIO.  Inside them
   weft_self_origin() is WEFT_THREAD_ADOPTED, pthread_self() is stable,
   pthread mutexes work; the main thread reports WEFT_THREAD_MAIN. */
#include "harness.h"

#include <aio.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CALLBACKS 3

static sem_t sem, sem_aio; /* separate: a late timer callback may still post */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t main_tid;

struct seen {
	int n;
	int origin[16];
	int self_stable[16];
	int is_weft[16];
	int tid_differs[16];
	pthread_t self[16];
};
static struct seen timer_seen, aio_seen;

static void record(struct seen *s)
{
	pthread_t a = pthread_self();
	int origin = weft_self_origin();
	pthread_t b = pthread_self();

	pthread_mutex_lock(&mu);
	if (s->n < 16) {
		s->origin[s->n] = origin;
		s->self_stable[s->n] = pthread_equal(a, b);
		s->is_weft[s->n] = weft_self_is_weft();
		s->tid_differs[s->n] = syscall(SYS_gettid) != main_tid;
		s->self[s->n] = a;
		s->n++;
	}
	pthread_mutex_unlock(&mu);
}

static void timer_cb(union sigval v)
{
	(void)v;
	record(&timer_seen);
	sem_post(&sem);
}

static void aio_cb(union sigval v)
{
	(void)v;
	record(&aio_seen);
	sem_post(&sem_aio);
}

/* Waits for one sem_post, at most 10 s. */
static int wait_post(sem_t *sem)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (sem_timedwait(sem, &ts) != 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static void check_seen(const char *what, struct seen *s, int want_n)
{
	pthread_mutex_lock(&mu);
	CHECK(s->n >= want_n, "%s: %d callbacks ran, expected %d", what, s->n,
	      want_n);
	for (int i = 0; i < s->n && i < 16; i++) {
		if (s->origin[i] != WEFT_THREAD_ADOPTED)
			FAIL("%s callback %d: weft_self_origin(): expected %d "
			     "(adopted), got %d", what, i, WEFT_THREAD_ADOPTED,
			     s->origin[i]);
		CHECK(s->self_stable[i], "%s callback %d: pthread_self() differs "
		      "between two calls", what, i);
		CHECK(s->is_weft[i], "%s callback %d: weft_self_is_weft() is 0",
		      what, i);
		CHECK(s->tid_differs[i], "%s callback %d ran on the main thread",
		      what, i);
		CHECK(!pthread_equal(s->self[i], pthread_self()),
		      "%s callback %d: pthread_self equals main's", what, i);
	}
	pthread_mutex_unlock(&mu);
}

/* A created thread, for CHECK_WEFT_THREAD and to compare with. */
static void *created(void *arg)
{
	CHECK_WEFT_THREAD();
	return arg;
}

int main(void)
{
	struct weft_stats st;

	WEFT_REQUIRE();
	main_tid = (pid_t)syscall(SYS_gettid);
	CHECK_EQ(weft_self_origin(), WEFT_THREAD_MAIN);
	CHECK(weft_self_is_weft(), "main: weft_self_is_weft() is 0");
	CHECK_ERR(sem_init(&sem, 0, 0), 0);
	CHECK_ERR(sem_init(&sem_aio, 0, 0), 0);

	pthread_t t;
	CHECK_ERR(pthread_create(&t, NULL, created, (void *)3), 0);
	void *r = NULL;
	CHECK_ERR(pthread_join(t, &r), 0);
	CHECK_EQ((intptr_t)r, 3);

	/* timer_create with SIGEV_THREAD: a 2 ms periodic timer. */
	timer_t tm;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = timer_cb;
	CHECK_EQ(timer_create(CLOCK_MONOTONIC, &sev, &tm), 0);
	struct itimerspec its = {.it_value = {0, 2000000}, .it_interval = {0, 2000000}};
	CHECK_EQ(timer_settime(tm, 0, &its, NULL), 0);
	for (int i = 0; i < CALLBACKS; i++)
		if (wait_post(&sem) != 0) {
			FAIL("timer callback %d did not run within 10 s", i);
			break;
		}
	CHECK_EQ(timer_delete(tm), 0);
	check_seen("timer", &timer_seen, CALLBACKS);

	/* POSIX AIO with SIGEV_THREAD notification. */
	char path[] = "/tmp/weft-adopt-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	static char data[4096];
	memset(data, 'w', sizeof data);
	struct aiocb cb;
	memset(&cb, 0, sizeof cb);
	cb.aio_fildes = fd;
	cb.aio_buf = data;
	cb.aio_nbytes = sizeof data;
	cb.aio_offset = 0;
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = aio_cb;
	CHECK_EQ(aio_write(&cb), 0);
	if (wait_post(&sem_aio) != 0)
		FAIL("aio notification did not run within 10 s");
	CHECK_EQ(aio_error(&cb), 0);
	CHECK_EQ(aio_return(&cb), (ssize_t)sizeof data);
	check_seen("aio", &aio_seen, 1);
	char back[16];
	CHECK_EQ(pread(fd, back, sizeof back, 100), (ssize_t)sizeof back);
	CHECK_EQ(back[15], 'w');
	close(fd);

	CHECK_EQ(weft_get_stats(&st), 0);
	/* main + at least one timer thread + at least one aio thread */
	CHECK(st.threads_adopted >= 3, "threads_adopted = %lu, expected >= 3",
	      st.threads_adopted);
	CHECK_EQ(st.threads_created, 1);
	printf("timer callbacks: %d, aio callbacks: %d, threads_adopted=%lu\n",
	       timer_seen.n, aio_seen.n, st.threads_adopted);
	TEST_DONE();
}
