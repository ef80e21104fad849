/* bench/creation.c - concurrent thread creation (after the NPTL paper's
 * section 7 experiment).
 *
 * T "top-level" threads share a budget of N thread creations (default
 * 100000).  Each top-level thread keeps up to C children: as in the
 * paper, once C of its children exist it waits for the oldest one to
 * terminate (joins it) before creating the next.  Children do nothing
 * but return.  The clock runs from before the first top-level thread is
 * created until the last one has been joined; only children are counted.
 *
 * Usage: creation -T tops -C children [-n total] [-s stack]
 * Output: RESULT bench=creation T=.. C=.. n=.. sec=.. ops_per_s=..
 */
#include "common.h"

#include <pthread.h>
#include <unistd.h>

struct top {
	pthread_t tid;
	long quota;     /* children this top-level thread must create */
	long children;  /* max children alive at once (C) */
	const pthread_attr_t *attr;
};

static void *child(void *arg)
{
	return arg;
}

static void *top_main(void *arg)
{
	struct top *tp = arg;
	pthread_t kids[tp->children];
	long left = tp->quota;

	long made = 0, alive = 0;
	int rc;

	/* kids[] is a ring: slot made % C holds the oldest child once C
	   are alive. */
	while (made < left) {
		long slot = made % tp->children;

		if (alive == tp->children) {
			if ((rc = pthread_join(kids[slot], NULL)) != 0)
				bench_die("pthread_join (child)", rc);
			alive--;
		}
		if ((rc = pthread_create(&kids[slot], tp->attr, child, NULL)) != 0)
			bench_die("pthread_create (child)", rc);
		made++;
		alive++;
	}
	/* The last `alive` children, oldest first. */
	for (long k = made - alive; k < made; k++)
		if ((rc = pthread_join(kids[k % tp->children], NULL)) != 0)
			bench_die("pthread_join (child)", rc);
	return NULL;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -T tops -C children [-n total] [-s stacksize]\n"
		"  -T K   top-level threads (1..1000, the paper uses 1..20)\n"
		"  -C K   children each top-level thread keeps alive at once (1..1000)\n"
		"  -n N   total child creations across all tops (default 100000)\n"
		"  -s B   stack size for children (default: library default)\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	long tops = 0, kids = 0, total = 100000, stack = 0;
	int opt;

	while ((opt = getopt(argc, argv, "T:C:n:s:h")) != -1) {
		switch (opt) {
		case 'T': tops = bench_arg_long("-T", optarg); break;
		case 'C': kids = bench_arg_long("-C", optarg); break;
		case 'n': total = bench_arg_long("-n", optarg); break;
		case 's': stack = bench_arg_long("-s", optarg); break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || tops < 1 || tops > 1000 || kids < 1 || kids > 1000 ||
	    total < 1)
		usage(argv[0]);

	pthread_attr_t attr;
	int rc = 0;
	bench_attr_init(&attr, stack);

	struct top *tv = calloc((size_t)tops, sizeof *tv);
	if (tv == NULL)
		bench_die("calloc", ENOMEM);
	for (long i = 0; i < tops; i++) {
		tv[i].quota = total / tops + (i < total % tops ? 1 : 0);
		tv[i].children = kids;
		tv[i].attr = &attr;
	}

	double t0 = bench_now();
	for (long i = 0; i < tops; i++) {
		rc = pthread_create(&tv[i].tid, NULL, top_main, &tv[i]);
		if (rc != 0)
			bench_die("pthread_create (top)", rc);
	}
	for (long i = 0; i < tops; i++) {
		rc = pthread_join(tv[i].tid, NULL);
		if (rc != 0)
			bench_die("pthread_join (top)", rc);
	}
	double sec = bench_now() - t0;

	printf("RESULT bench=creation T=%ld C=%ld n=%ld sec=%.6f ops_per_s=%.1f "
	       "ns_per_op=%.1f pthread_lib=%s\n",
	       tops, kids, total, sec, (double)total / sec, sec * 1e9 / (double)total,
	       bench_pthread_lib());
	free(tv);
	pthread_attr_destroy(&attr);
	return 0;
}
