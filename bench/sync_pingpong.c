/* bench/sync_pingpong.c - ping-pong at many tables (seed 001 §3.4).
 *
 * The seed describes it as: a number of tables at which two players hold
 * a rally; each rally has 10,000 hits and mutexes decide whose turn it is
 * to hit the ball; run with 500 tables (1000 threads).  Our definition:
 *
 *   table t: { mutex, one condition variable per player, turn, hits }
 *   player p of table t:
 *       lock
 *       loop: while (turn != p and hits < H) cond_wait(mine)
 *             if hits == H: break           (rally over)
 *             hits++; turn = other; cond_signal(other's)
 *       unlock
 *
 * so every hit hands the ball to the other player, who is asleep: with
 * 1000 threads the machine does nothing but lock, wake and switch.  All
 * players are created first and wait at a gate; two times are reported,
 * as in the seed's table: create_sec (creating the 2*T threads) and
 * games_sec (gate open -> last player joined; the headline metric).
 *
 * -m futex is the floor: the same hand-off on per-player futex words
 * (0 wait, 1 go, 2 sleeping; FUTEX_WAKE only when the other sleeps), no
 * mutex or condition variable.
 *
 * Usage: sync_pingpong [-m cond|futex] [-t tables] [-H hits per rally]
 */
#include "sync_common.h"

struct table {
	pthread_mutex_t lock;
	pthread_cond_t wake[2];
	int turn;
	long hits;
	atomic_int go[2]; /* futex mode */
	atomic_long fhits;
};

struct player {
	struct table *table;
	int me;
};

static long rally = 10000;
static int futex_mode;
static struct sync_gate gate;

static void play_cond(struct table *t, int me)
{
	SYNC_OK(pthread_mutex_lock(&t->lock));
	for (;;) {
		while (t->turn != me && t->hits < rally)
			SYNC_OK(pthread_cond_wait(&t->wake[me], &t->lock));
		if (t->hits >= rally)
			break;
		t->hits++;
		t->turn = !me;
		SYNC_OK(pthread_cond_signal(&t->wake[!me]));
	}
	/* the rally is over: make sure the other player sees it too */
	SYNC_OK(pthread_cond_signal(&t->wake[!me]));
	SYNC_OK(pthread_mutex_unlock(&t->lock));
}

/* Take the ball: wait for my word to be 1 (see sync_switch.c). */
static void futex_take(atomic_int *w)
{
	for (;;) {
		int v = 1;
		if (atomic_compare_exchange_strong(w, &v, 0))
			return;
		if (v == 0 && !atomic_compare_exchange_strong(w, &v, 2))
			continue;
		sync_futex_wait(w, 2);
	}
}

static void futex_give(atomic_int *w)
{
	if (atomic_exchange(w, 1) == 2)
		sync_futex_wake(w, 1);
}

static void play_futex(struct table *t, int me)
{
	for (;;) {
		futex_take(&t->go[me]);
		long h = atomic_load(&t->fhits);
		if (h < rally)
			atomic_store(&t->fhits, h + 1); /* only the ball holder writes */
		futex_give(&t->go[!me]);
		if (h + 1 >= rally)
			return; /* my last hit, or the rally was already over */
	}
}

static void *player(void *arg)
{
	struct player *p = arg;
	sync_gate_pass(&gate);
	if (futex_mode)
		play_futex(p->table, p->me);
	else
		play_cond(p->table, p->me);
	return NULL;
}

int main(int argc, char **argv)
{
	int opt, ntables = 500;
	const char *mode = "cond";
	while ((opt = getopt(argc, argv, "m:t:H:h")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 't': ntables = (int)bench_arg_long("-t", optarg); break;
		case 'H': rally = bench_arg_long("-H", optarg); break;
		default: goto usage;
		}
	}
	futex_mode = strcmp(mode, "futex") == 0;
	if (optind != argc || ntables < 1 || ntables > 10000 || rally < 1 ||
	    (!futex_mode && strcmp(mode, "cond") != 0))
		goto usage;

	int nplayers = 2 * ntables;
	struct table *tables = calloc((size_t)ntables, sizeof *tables);
	struct player *players = calloc((size_t)nplayers, sizeof *players);
	pthread_t *tid = calloc((size_t)nplayers, sizeof *tid);
	if (tables == NULL || players == NULL || tid == NULL)
		bench_die("calloc", ENOMEM);
	for (int i = 0; i < ntables; i++) {
		SYNC_OK(pthread_mutex_init(&tables[i].lock, NULL));
		SYNC_OK(pthread_cond_init(&tables[i].wake[0], NULL));
		SYNC_OK(pthread_cond_init(&tables[i].wake[1], NULL));
		atomic_store(&tables[i].go[0], 1); /* player 0 serves */
	}
	sync_gate_init(&gate);

	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	double t0 = bench_now();
	for (int i = 0; i < nplayers; i++) {
		players[i].table = &tables[i / 2];
		players[i].me = i % 2;
		SYNC_OK(pthread_create(&tid[i], &attr, player, &players[i]));
	}
	double t1 = bench_now();
	sync_gate_await(&gate, nplayers);
	double t2 = bench_now();
	sync_gate_open(&gate);
	for (int i = 0; i < nplayers; i++)
		SYNC_OK(pthread_join(tid[i], NULL));
	double t3 = bench_now();

	for (int i = 0; i < ntables; i++) {
		long h = futex_mode ? atomic_load(&tables[i].fhits) : tables[i].hits;
		if (h != rally) {
			fprintf(stderr, "FATAL table %d: %ld hits, expected %ld\n", i, h, rally);
			return 1;
		}
	}
	double hits = (double)ntables * (double)rally;
	printf("RESULT bench=pingpong variant=%s metric=games_sec tables=%d hits_per_rally=%ld "
	       "create_sec=%.6f games_sec=%.6f sec=%.6f hits_per_s=%.1f",
	       mode, ntables, rally, t1 - t0, t3 - t2, t3 - t2, hits / (t3 - t2));
	static const char *const cond_libs[] = { "pthread_mutex_lock", "pthread_cond_wait",
						  "pthread_cond_signal", "pthread_create", NULL };
	static const char *const raw_libs[] = { "pthread_create", NULL };
	sync_print_libs(futex_mode ? raw_libs : cond_libs);
	printf("\n");
	return 0;
usage:
	fprintf(stderr, "usage: %s [-m cond|futex] [-t tables] [-H hits per rally]\n", argv[0]);
	return 2;
}
