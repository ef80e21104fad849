/* bench/sync_contention.c - lock contention vs number of critical regions
 * (Figure 3 of seed 000, after Bradford's csfast5a).
 *
 * T threads (default 32) enter K critical regions, each guarded by its own
 * mutex, E times in total (default 50,000, split evenly).  Thread i visits
 * the regions in turn starting at region i mod K, so with K = 1 every
 * entry contends and with K >= T collisions are rare: the fewer regions,
 * the more contention.  Inside a region a thread does a little work on
 * the region's data (-w steps of a counter), so a holder is still inside
 * when others arrive.  All threads start together from a gate.
 *
 * Reported: sec (gate open -> last join; the figure's y axis) and
 * us_per_entry; the driver sweeps K to redraw the figure.
 *
 * -l rwlock guards each region with a rwlock taken for writing instead
 * (the same layout: the lock, then the region's counters).
 *
 * -s spreads the threads: thread i is pinned to the (i mod n)-th of the n
 * CPUs the process may use, as programs that pin one worker to each CPU
 * do (with one CPU it changes nothing).
 *
 * Usage: sync_contention [-t threads] [-k regions] [-e total entries] [-w work]
 *                        [-l mutex|rwlock] [-s]
 */
#include "sync_common.h"

struct region {
	pthread_mutex_t lock;
	long entries;
	volatile long work;
	char pad[64];
};

struct rwregion {
	pthread_rwlock_t lock;
	long entries;
	volatile long work;
	char pad[64];
};

static int nthreads = 32, nregions = 8, inner = 50, use_rw, spread;
static cpu_set_t usable; /* -s: the CPUs to spread over */
static long total = 50000;
static struct region *regions;
static struct rwregion *rwregions;
static struct sync_gate gate;

/* -s: pins the calling thread, number `id`, to the (id mod n)-th
   usable CPU. */
static void spread_self(int id)
{
	int n = CPU_COUNT(&usable), k = id % n;
	cpu_set_t one;

	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &usable) || k-- > 0)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		SYNC_OK(pthread_setaffinity_np(pthread_self(), sizeof one, &one));
		return;
	}
}

static void *contender(void *arg)
{
	int id = (int)(intptr_t)arg;
	long mine = total / nthreads + (id < total % nthreads ? 1 : 0);
	int r = id % nregions;
	if (spread)
		spread_self(id);
	sync_gate_pass(&gate);
	for (long e = 0; e < mine; e++) {
		struct region *g = &regions[r];
		SYNC_OK(pthread_mutex_lock(&g->lock));
		g->entries++;
		for (int w = 0; w < inner; w++)
			g->work++;
		SYNC_OK(pthread_mutex_unlock(&g->lock));
		if (++r == nregions)
			r = 0;
	}
	return NULL;
}

static void *rw_contender(void *arg)
{
	int id = (int)(intptr_t)arg;
	long mine = total / nthreads + (id < total % nthreads ? 1 : 0);
	int r = id % nregions;
	if (spread)
		spread_self(id);
	sync_gate_pass(&gate);
	for (long e = 0; e < mine; e++) {
		struct rwregion *g = &rwregions[r];
		SYNC_OK(pthread_rwlock_wrlock(&g->lock));
		g->entries++;
		for (int w = 0; w < inner; w++)
			g->work++;
		SYNC_OK(pthread_rwlock_unlock(&g->lock));
		if (++r == nregions)
			r = 0;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "t:k:e:w:l:sh")) != -1) {
		switch (opt) {
		case 't': nthreads = (int)bench_arg_long("-t", optarg); break;
		case 'k': nregions = (int)bench_arg_long("-k", optarg); break;
		case 'e': total = bench_arg_long("-e", optarg); break;
		case 'w': inner = (int)bench_arg_long("-w", optarg); break;
		case 's': spread = 1; break;
		case 'l':
			if (strcmp(optarg, "rwlock") == 0)
				use_rw = 1;
			else if (strcmp(optarg, "mutex") != 0)
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > 10000 || nregions < 1 ||
	    nregions > 1000000 || total < nthreads)
		goto usage;
	if (spread && sched_getaffinity(0, sizeof usable, &usable) != 0)
		bench_die("sched_getaffinity", errno);
	regions = calloc((size_t)nregions, sizeof *regions);
	rwregions = calloc((size_t)nregions, sizeof *rwregions);
	pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
	if (regions == NULL || rwregions == NULL || tid == NULL)
		bench_die("calloc", ENOMEM);
	for (int i = 0; i < nregions; i++) {
		SYNC_OK(pthread_mutex_init(&regions[i].lock, NULL));
		SYNC_OK(pthread_rwlock_init(&rwregions[i].lock, NULL));
	}
	sync_gate_init(&gate);

	pthread_attr_t attr;
	bench_attr_init(&attr, SYNC_SMALL_STACK);
	for (int i = 0; i < nthreads; i++)
		SYNC_OK(pthread_create(&tid[i], &attr, use_rw ? rw_contender : contender,
				       (void *)(intptr_t)i));
	sync_gate_await(&gate, nthreads);
	double t0 = bench_now();
	sync_gate_open(&gate);
	for (int i = 0; i < nthreads; i++)
		SYNC_OK(pthread_join(tid[i], NULL));
	double sec = bench_now() - t0;

	long sum = 0;
	for (int i = 0; i < nregions; i++) {
		long entries = use_rw ? rwregions[i].entries : regions[i].entries;
		long work = use_rw ? rwregions[i].work : regions[i].work;
		sum += entries;
		if (work != entries * inner) {
			fprintf(stderr, "FATAL region %d: mutual exclusion broken\n", i);
			return 1;
		}
	}
	if (sum != total) {
		fprintf(stderr, "FATAL %ld entries, expected %ld\n", sum, total);
		return 1;
	}
	printf("RESULT bench=contention variant=%sK%d metric=sec threads=%d regions=%d "
	       "entries=%ld work=%d spread=%d sec=%.6f us_per_entry=%.4f",
	       use_rw ? "rw" : "", nregions, nthreads, nregions, total, inner, spread,
	       sec, sec * 1e6 / (double)total);
	static const char *const libs[] = { "pthread_mutex_lock", "pthread_mutex_unlock",
					     "pthread_create", NULL };
	static const char *const rwlibs[] = { "pthread_rwlock_wrlock", "pthread_rwlock_unlock",
					      "pthread_create", NULL };
	sync_print_libs(use_rw ? rwlibs : libs);
	printf("\n");
	pthread_attr_destroy(&attr);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-t threads] [-k regions] [-e total entries] [-w work]"
		" [-l mutex|rwlock] [-s]\n", argv[0]);
	return 2;
}
