/* Issue 16: weft's locks are correct the moment a second thread appears,
   also one made by a raw clone outside any library, before any
   pthread_create: glibc stays in its single-threaded mode then (the
   clone changes none of its flags).  weft's condvars and once take no
   single-threaded shortcut that such a thread could break; its mutex
   takes plain stores while the process has one thread, and weft's
   clone() (src/abi/clone.c) switches that off before the thread exists.

   The clone thread shares memory, files and signal handlers with main
   and has its own stack, but no TLS of its own (no CLONE_SETTLS): to
   glibc and to weft it is the main thread by its thread pointer
   (docs/glibc-host.md, "Threads weft never saw").  So it uses only what
   rests on atomic words, not on who the caller is: a normal mutex, a
   condvar, a once; no malloc, stdio or errno (glibc's single-threaded
   paths, the shared TLS).  main starts weft first (a lock), so that the
   clone thread's calls do not run start-up.

   Checks: 2 x 200000 increments under the mutex give 400000; 2000
   ping-pong rounds through a condvar, each side waiting for its turn,
   end in order; pthread_once run by both at once runs its routine once
   and neither returns before it finished.  Last, weft's clone() with
   fewer optional arguments: a vfork-like child with CLONE_PARENT_SETTID
   gets parent_tid (the one argument its flags name) and its exit status
   back.  Bounded by counts and a 60 s
   alarm (glibc's own single-threaded mutex path hangs here: a plain
   store unlocks without a wake); main waits for the clone's end on its
   CLONE_CHILD_CLEARTID word. */
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define INCS 200000
#define ROUNDS 2000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static long counter;
static int turn; /* ping-pong: 0 main's, 1 the clone's */
static int out_of_turn;
static int once_runs, once_seen_done[2];
static volatile int once_done, go;

static void once_init(void)
{
	__atomic_fetch_add(&once_runs, 1, __ATOMIC_RELAXED);
	/* Let the other side arrive while this runs. */
	for (volatile int i = 0; i < 200000; i++)
		;
	once_done = 1;
}

static void work(int me)
{
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	pthread_once(&once, once_init);
	once_seen_done[me] = once_done;
	for (int i = 0; i < INCS; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
	}
	for (int r = 0; r < ROUNDS; r++) {
		pthread_mutex_lock(&m);
		while (turn != me)
			pthread_cond_wait(&c, &m);
		if (turn != me)
			out_of_turn++;
		turn = !me;
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
	}
}

/* The bound: glibc's own single-threaded mutex (a plain store to lock
   and unlock, no wake) loses a wake-up here and hangs. */
static void on_alarm(int sig)
{
	static const char msg[] =
		"t_raw_clone: FAIL: expected both threads done within 60 s, "
		"got a hang (a lost wake-up?)\n";

	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(2);
	_exit(1);
}

static int clone_main(void *arg)
{
	(void)arg;
	work(1);
	return 0;
}

static int vfork_child(void *arg)
{
	(void)arg;
	syscall(SYS_exit, 7);
	return 0;
}

/* clone() given only parent_tid, the one optional argument these flags
   use (src/abi/clone.c reads no more than the flags name). */
static void clone_parent_settid(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	pid_t ptid = -1, pid;
	int status = 0;

	pid = clone(vfork_child, stack + sizeof stack,
		    CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD,
		    NULL, &ptid);
	REQUIRE(pid > 0, "clone(CLONE_PARENT_SETTID): %s", strerror(errno));
	CHECK_EQ(ptid, pid);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7,
	      "vfork-like child: expected exit status 7, got status %#x",
	      status);
}

int main(void)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	static volatile pid_t ctid;
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
		    CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_SETTID |
		    CLONE_CHILD_CLEARTID;
	pid_t tid, v;

	/* weft starts here, with one thread; then proves it serves. */
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	signal(SIGALRM, on_alarm);
	alarm(60);
	ctid = -1;
	tid = clone(clone_main, stack + sizeof stack, flags, NULL, NULL, NULL,
		    &ctid);
	REQUIRE(tid > 0, "clone: %s", strerror(errno));
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	work(0);
	while ((v = ctid) != 0)
		syscall(SYS_futex, &ctid, FUTEX_WAIT, v, NULL, NULL, 0);
	CHECK_EQ(counter, 2L * INCS);
	CHECK_EQ(out_of_turn, 0);
	CHECK_EQ(turn, 0);
	CHECK_EQ(once_runs, 1);
	CHECK_EQ(once_seen_done[0], 1);
	CHECK_EQ(once_seen_done[1], 1);
	clone_parent_settid();
	TEST_DONE();
}
