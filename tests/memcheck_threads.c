/* Helper of tests/t_memcheck.sh (built by it; run under valgrind's
   memcheck, on glibc and under weft).  argv[1] says what to do before
   main returns, argv[2] how many threads:

     join     create and join them one at a time (one cached stack reused)
     burst    create them all, then join them all (that many cached)
     detach   create them detached and wait until the kernel has reaped
              every one ("Threads: 1" in /proc/self/status), so each
              has put its stack in the cache, whichever library
     alive    leave them blocked in read() when main returns

   Every thread touches the program's TLS and mallocs, as real threads
   do.  Prints "served=1" when weft is active and made every thread,
   "served=0" otherwise (the glibc run). */
#include "harness.h"

#include <semaphore.h>
#include <unistd.h>

static __thread char tls_buf[64];
static sem_t started;
static int park[2];
static int not_weft;

static void note_thread(void)
{
	if (!weft_self_origin || weft_self_origin() != WEFT_THREAD_CREATED)
		__atomic_add_fetch(&not_weft, 1, __ATOMIC_RELAXED);
	tls_buf[0] = 1;
	free(malloc(100));
}

static void *work(void *arg)
{
	note_thread();
	return arg;
}

static void *work_posting(void *arg)
{
	note_thread();
	sem_post(&started);
	return arg;
}

static void *work_parked(void *arg)
{
	char c;

	note_thread();
	sem_post(&started);
	while (read(park[0], &c, 1) != 0)
		;
	return arg;
}

static void create(void *(*fn)(void *), pthread_t *t, const pthread_attr_t *a)
{
	int err = pthread_create(t, a, fn, NULL);

	REQUIRE(err == 0, "pthread_create: %s", strerror(err));
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "join";
	int n = argc > 2 ? atoi(argv[2]) : 100;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t det;

	REQUIRE(t && sem_init(&started, 0, 0) == 0 && pipe(park) == 0, "set-up");
	if (strcmp(what, "join") == 0) {
		for (int i = 0; i < n; i++) {
			create(work, &t[0], NULL);
			REQUIRE(pthread_join(t[0], NULL) == 0, "join");
		}
	} else if (strcmp(what, "burst") == 0) {
		for (int i = 0; i < n; i++)
			create(work, &t[i], NULL);
		for (int i = 0; i < n; i++)
			REQUIRE(pthread_join(t[i], NULL) == 0, "join");
	} else if (strcmp(what, "detach") == 0) {
		pthread_attr_init(&det);
		pthread_attr_setdetachstate(&det, PTHREAD_CREATE_DETACHED);
		for (int i = 0; i < n; i++)
			create(work_posting, &t[0], &det);
		for (int i = 0; i < n; i++)
			while (sem_wait(&started) != 0)
				;
		/* Polled: the reaping of an exited thread is an event no
		   call waits for.  Bounded at 60 s (valgrind is slow). */
		for (int i = 0; proc_status_kib("Threads") != 1; i++) {
			REQUIRE(i < 60000, "threads still listed after 60 s: %ld",
				proc_status_kib("Threads"));
			usleep(1000);
		}
		pthread_attr_destroy(&det);
	} else if (strcmp(what, "alive") == 0) {
		for (int i = 0; i < n; i++)
			create(work_parked, &t[i], NULL);
		for (int i = 0; i < n; i++)
			while (sem_wait(&started) != 0)
				;
	} else {
		fprintf(stderr, "usage: %s join|burst|detach|alive [N]\n", argv[0]);
		return 2;
	}
	printf("served=%d\n", weft_active && weft_active() &&
				      __atomic_load_n(&not_weft, __ATOMIC_RELAXED) == 0);
	free(t);
	return 0;
}
