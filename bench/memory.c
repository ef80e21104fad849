/* bench/memory.c - memory cost of idle threads.
 *
 * Creates N threads that each touch U bytes of their stack and then
 * sleep on a futex, and measures what they cost while alive:
 *
 *   user:   VmRSS, VmPTE (page tables) and VmSize from /proc/self/status,
 *           the number of mappings (lines of /proc/self/maps);
 *   kernel: KernelStack, PageTables, SUnreclaim and Slab from
 *           /proc/meminfo.  These are system-wide, so other activity
 *           adds noise: the driver takes medians over repetitions.
 *
 * Then the threads are woken and joined, and VmRSS and the mapping count
 * are read again: what the library keeps of dead threads (its stack
 * cache, and whether the used part of their stacks is given back).
 *
 * Usage: memory [-N threads] [-s stack] [-u bytes]
 * Output: RESULT bench=memory N=.. stack=.. use=.. rss_kib=.. (per-thread
 *         values, KiB) ... pthread_lib=..
 */
#include "common.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static int gate;	/* futex: 0 = threads sleep, 1 = go */
static int ready;	/* threads that reached the gate */
static long stack_use;

static void __attribute__((noinline)) use_stack(long n)
{
	if (n <= 0)
		return;
	char buf[n];
	for (long i = 0; i < n; i += 4096)
		buf[i] = (char)i;
	__asm__ volatile("" : : "r"(buf) : "memory");
}

/* A raw futex, the same system call under every library, so the idle
   state costs the same everywhere. */
static void *idle(void *arg)
{
	use_stack(stack_use);
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return arg;
}

/* A "Key: N kB" line of the given file, in KiB (-1 if absent). */
static long kib(const char *file, const char *key)
{
	FILE *f = fopen(file, "r");
	char line[256];
	size_t n = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

enum { RSS, PTE, VSZ, MAPS, KSTACK, PGTBL, SUNREC, SLAB, NSNAP };
static const char *const names[NSNAP] = {
	"rss_kib", "pte_kib", "vsz_kib", "maps", "kstack_kib",
	"pagetables_kib", "sunreclaim_kib", "slab_kib"};

static void snap(long *v)
{
	v[RSS] = kib("/proc/self/status", "VmRSS");
	v[PTE] = kib("/proc/self/status", "VmPTE");
	v[VSZ] = kib("/proc/self/status", "VmSize");
	v[MAPS] = bench_maps_count();
	v[KSTACK] = kib("/proc/meminfo", "KernelStack");
	v[PGTBL] = kib("/proc/meminfo", "PageTables");
	v[SUNREC] = kib("/proc/meminfo", "SUnreclaim");
	v[SLAB] = kib("/proc/meminfo", "Slab");
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-N threads] [-s stacksize] [-u bytes]\n"
		"  -N K   idle threads alive at once (default 1000)\n"
		"  -s B   stack size (default: library default; 16384 = PTHREAD_STACK_MIN)\n"
		"  -u B   bytes of its stack each thread touches (default 0)\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 1000, stack = 0, before[NSNAP], alive[NSNAP], after[NSNAP];
	int opt;

	while ((opt = getopt(argc, argv, "N:s:u:h")) != -1) {
		switch (opt) {
		case 'N': n = bench_arg_long("-N", optarg); break;
		case 's': stack = bench_arg_long("-s", optarg); break;
		case 'u': stack_use = bench_arg_long("-u", optarg); break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || n < 1 || n > 30000)
		usage(argv[0]);

	pthread_attr_t attr;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	if (!t)
		bench_die("calloc", ENOMEM);
	bench_attr_init(&attr, stack);
	/* One thread first, so one-time costs (the library's tables, the
	   first malloc arena) are not charged to the N. */
	int rc = pthread_create(&t[0], &attr, idle, NULL);
	if (rc != 0)
		bench_die("pthread_create", rc);
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < 1)
		sched_yield();
	snap(before);
	double t0 = bench_now();
	for (long i = 1; i < n; i++) {
		rc = pthread_create(&t[i], &attr, idle, NULL);
		if (rc != 0)
			bench_die("pthread_create", rc);
	}
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < n)
		sched_yield();
	double sec = bench_now() - t0;
	snap(alive);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, (int)n, NULL, NULL, 0);
	for (long i = 0; i < n; i++)
		if ((rc = pthread_join(t[i], NULL)) != 0)
			bench_die("pthread_join", rc);
	snap(after);

	/* Per thread: the N - 1 threads made between the two snapshots. */
	double per = (double)(n - 1);
	printf("RESULT bench=memory N=%ld stack=%ld use=%ld sec=%.6f ops_per_s=%.1f",
	       n, stack, stack_use, sec, per / sec);
	for (int k = 0; k < NSNAP; k++)
		printf(" %s=%.2f", names[k], (double)(alive[k] - before[k]) / per);
	printf(" rss_after_join_kib=%ld maps_after_join=%ld pthread_lib=%s\n",
	       after[RSS] - before[RSS], after[MAPS] - before[MAPS],
	       bench_pthread_lib());
	pthread_attr_destroy(&attr);
	free(t);
	return 0;
}
