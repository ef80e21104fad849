/* bench/sync_switch.c - forced alternation of two threads (seed 001 §3.3,
 * "context switch").
 *
 * Two threads pass a turn back and forth; neither may continue until the
 * other has handed the turn over, so on one CPU every hand-off is a
 * context switch (the driver runs it pinned with taskset -c 0, and also
 * unpinned, where hand-offs may cross CPUs).
 *
 *   A: wait for turn==A ... give turn to B ... wait for turn==A ...
 *   B:          wait for turn==B ... give turn to A ...
 *
 * Modes (-m):
 *   cond   (default) a turn variable under one mutex, one condition
 *          variable per thread: the waiter does
 *          lock; while (turn != me) cond_wait; turn = other;
 *          cond_signal(other's cond); unlock
 *   sem    one semaphore per thread: sem_wait(mine); sem_post(other's)
 *   futex  the floor: one futex word per thread, 0 = wait, 1 = go,
 *          2 = waiting in the kernel; the giver exchanges the other's word
 *          to 1 and calls FUTEX_WAKE only if it was 2 (the least a
 *          blocking hand-off can cost: no thread library on the path).
 * (A mutex alone cannot force alternation under POSIX: unlocking a mutex
 * another thread locked is undefined, so the "two mutexes" of the seed
 * are expressed with a condition variable or semaphores here.)
 *
 * switches_per_s counts hand-offs: n round trips = 2n switches.
 *
 * Usage: sync_switch [-m cond|sem|futex] [-n round trips]
 */
#include "sync_common.h"

#include <semaphore.h>

static long rounds = 200000;
static const char *mode = "cond";

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static int turn;              /* cond mode, under lock */
static sem_t sem[2];          /* sem mode */
static atomic_int go[2];     /* futex mode: 0 wait, 1 go, 2 sleeping */

static void play_cond(int me)
{
	for (long r = 0; r < rounds; r++) {
		SYNC_OK(pthread_mutex_lock(&lock));
		while (turn != me)
			SYNC_OK(pthread_cond_wait(&wake[me], &lock));
		turn = !me;
		SYNC_OK(pthread_cond_signal(&wake[!me]));
		SYNC_OK(pthread_mutex_unlock(&lock));
	}
}

static void play_sem(int me)
{
	for (long r = 0; r < rounds; r++) {
		while (sem_wait(&sem[me]) != 0)
			if (errno != EINTR)
				bench_die("sem_wait", errno);
		if (sem_post(&sem[!me]) != 0)
			bench_die("sem_post", errno);
	}
}

/* Wait for my word to become 1, announcing a sleep (2) before blocking so
 * that the giver knows a FUTEX_WAKE is needed; consume it back to 0. */
static void futex_take(atomic_int *w)
{
	for (;;) {
		int v = 1;
		if (atomic_compare_exchange_strong(w, &v, 0))
			return; /* it was 1: consumed */
		/* v is 0 or 2: make it say 2, then sleep while it does */
		if (v == 0 && !atomic_compare_exchange_strong(w, &v, 2))
			continue; /* it became 1 meanwhile */
		sync_futex_wait(w, 2);
	}
}

static void futex_give(atomic_int *w)
{
	if (atomic_exchange(w, 1) == 2)
		sync_futex_wake(w, 1);
}

static void play_futex(int me)
{
	for (long r = 0; r < rounds; r++) {
		futex_take(&go[me]);
		futex_give(&go[!me]);
	}
}

static void play(int me)
{
	if (strcmp(mode, "cond") == 0)
		play_cond(me);
	else if (strcmp(mode, "sem") == 0)
		play_sem(me);
	else
		play_futex(me);
}

static void *player_b(void *arg)
{
	(void)arg;
	play(1);
	return NULL;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "m:n:h")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'n': rounds = bench_arg_long("-n", optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc || rounds < 1 ||
	    (strcmp(mode, "cond") && strcmp(mode, "sem") && strcmp(mode, "futex")))
		goto usage;
	if (sem_init(&sem[0], 0, 1) != 0 || sem_init(&sem[1], 0, 0) != 0)
		bench_die("sem_init", errno);
	turn = 0;
	atomic_store(&go[0], 1);
	atomic_store(&go[1], 0);

	pthread_t b;
	double t0 = bench_now();
	SYNC_OK(pthread_create(&b, NULL, player_b, NULL));
	play(0);
	SYNC_OK(pthread_join(b, NULL));
	double sec = bench_now() - t0;

	double sw = 2.0 * (double)rounds;
	printf("RESULT bench=switch variant=%s metric=switches_per_s rounds=%ld sec=%.6f "
	       "switches_per_s=%.1f ns_per_switch=%.1f",
	       mode, rounds, sec, sw / sec, sec * 1e9 / sw);
	static const char *const cond_libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
						  "pthread_cond_signal", "pthread_create", NULL };
	static const char *const sem_libs[] = { "sem_wait", "sem_post", "pthread_create", NULL };
	static const char *const raw_libs[] = { "pthread_create", NULL };
	sync_print_libs(strcmp(mode, "cond") == 0 ? cond_libs
			: strcmp(mode, "sem") == 0 ? sem_libs : raw_libs);
	printf("\n");
	return 0;
usage:
	fprintf(stderr, "usage: %s [-m cond|sem|futex] [-n round trips]\n", argv[0]);
	return 2;
}
