/* The kernel's order of futex wake-ups among waiters of different
   priorities: the facts docs/sync.md ("Priority order") rests on.  No
   thread library is involved beyond creating the threads: the waits
   and wakes are raw futex system calls.

     cc -O2 -Wall -Wextra -pthread tools/futex-order.c -o futex-order
     sudo ./futex-order          (needs SCHED_FIFO)

   Every thread runs on the first CPU the process may use.  Waiters are
   started one after the other, each seen asleep in the futex call
   (/proc/self/task/TID/stat state S, .../syscall number 202) before the
   next starts.  The main thread (SCHED_FIFO 90) then wakes them one at a
   time and waits until the woken one has recorded itself, so what is
   printed is the order in which the kernel picked them.

   1. FUTEX_WAKE(1): priorities 10 30 20 30 50 5 other 20 other.
   2. FUTEX_WAKE_BITSET(1) with readers' and writers' bits: the same
      waiters, the writers woken first, then the rest.
   3. A waiter's priority raised while it sleeps (20 and 10, the 10
      raised to 60): on a plain futex, and on a PI futex
      (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAXW 9
#define OTHER 0
#define BIT_RD 1u
#define BIT_WR 2u

enum kind { PLAIN, BITS, PI };

struct waiter {
	pthread_t th;
	int idx, prio;
	unsigned bits; /* BITS: the waiter's bitset */
	pid_t tid;
};

static int cpu;
static enum kind kind;
static int word;
static int order[MAXW], norder;

static long futex(int *addr, int op, int val, unsigned bits)
{
	return syscall(SYS_futex, addr, op | FUTEX_PRIVATE_FLAG, val, NULL,
		       NULL, bits);
}

static void ms_sleep(void)
{
	struct timespec t = {0, 1000000};

	nanosleep(&t, NULL);
}

static void record(struct waiter *w)
{
	order[__atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST)] = w->idx;
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	pid_t self = (pid_t)syscall(SYS_gettid);

	__atomic_store_n(&w->tid, self, __ATOMIC_RELEASE);
	if (kind == PI) {
		/* The kernel makes us the owner before it returns. */
		while (futex(&word, FUTEX_LOCK_PI, 0, 0) != 0)
			;
		record(w);
		futex(&word, FUTEX_UNLOCK_PI, 0, 0);
		return NULL;
	}
	while (futex(&word, kind == BITS ? FUTEX_WAIT_BITSET : FUTEX_WAIT, 0,
		     kind == BITS ? w->bits : FUTEX_BITSET_MATCH_ANY) != 0 &&
	       errno == EINTR)
		;
	record(w);
	return NULL;
}

/* Asleep (state S) in the futex system call. */
static int asleep_in_futex(pid_t tid)
{
	char path[64], buf[512];
	size_t n;
	FILE *f;
	char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return atol(buf) == SYS_futex;
}

static void start(struct waiter *w, int idx, int prio, unsigned bits)
{
	struct sched_param sp = {.sched_priority = prio};
	pthread_attr_t a;
	long end = time(NULL) + 5;

	w->idx = idx;
	w->prio = prio;
	w->bits = bits;
	w->tid = 0;
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, prio == OTHER ? SCHED_OTHER : SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	if (pthread_create(&w->th, &a, waiter_main, w) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
	pthread_attr_destroy(&a);
	while (!__atomic_load_n(&w->tid, __ATOMIC_ACQUIRE) ||
	       !asleep_in_futex(w->tid)) {
		if (time(NULL) > end) {
			fprintf(stderr, "waiter %d never slept\n", idx);
			exit(1);
		}
		ms_sleep();
	}
}

static void wait_recorded(int n)
{
	while (__atomic_load_n(&norder, __ATOMIC_SEQ_CST) < n)
		ms_sleep();
}

static void print_waiter(const struct waiter *w)
{
	const char *k = kind != BITS ? "" : w->bits == BIT_RD ? "r" : "w";

	if (w->prio == OTHER)
		printf(" other%s#%d", k, w->idx);
	else
		printf(" %d%s#%d", w->prio, k, w->idx);
}

static void print_line(const char *title, const char *what,
		       const struct waiter *ws, const int *idx, int n)
{
	printf("%-30s %s:", title, what);
	for (int i = 0; i < n; i++)
		print_waiter(&ws[idx[i]]);
	printf("\n");
}

/* Experiments 1 and 2.  With bitsets, the writers are woken first (one
   at a time, with the writers' bit), then everyone left. */
static void wake_order(enum kind k, const char *title)
{
	static const int prios[MAXW] = {10, 30, 20, 30, 50, 5, OTHER, 20, OTHER};
	static const unsigned bits[MAXW] = {BIT_RD, BIT_WR, BIT_RD, BIT_RD, BIT_WR,
					    BIT_WR, BIT_RD, BIT_WR, BIT_WR};
	struct waiter ws[MAXW];
	int queued[MAXW];
	unsigned wake = k == BITS ? BIT_WR : FUTEX_BITSET_MATCH_ANY;

	kind = k;
	word = 0;
	norder = 0;
	for (int i = 0; i < MAXW; i++) {
		start(&ws[i], i, prios[i], bits[i]);
		queued[i] = i;
	}
	for (int i = 0; i < MAXW; i++) {
		while (futex(&word, FUTEX_WAKE_BITSET, 1, wake) != 1)
			wake = FUTEX_BITSET_MATCH_ANY; /* no writer left */
		wait_recorded(i + 1);
	}
	for (int i = 0; i < MAXW; i++)
		pthread_join(ws[i].th, NULL);
	print_line(title, "queued", ws, queued, MAXW);
	print_line("", "woken ", ws, order, MAXW);
}

/* Experiment 3. */
static void raised_while_asleep(enum kind k, const char *title)
{
	struct sched_param sp = {.sched_priority = 60};
	struct waiter ws[2];
	pid_t self = (pid_t)syscall(SYS_gettid);

	kind = k;
	word = k == PI ? self : 0; /* PI: held by us */
	norder = 0;
	start(&ws[0], 0, 20, 0);
	start(&ws[1], 1, 10, 0);
	if (sched_setparam(ws[1].tid, &sp) != 0)
		perror("sched_setparam");
	if (k == PI) {
		futex(&word, FUTEX_UNLOCK_PI, 0, 0);
	} else {
		futex(&word, FUTEX_WAKE, 1, 0);
		wait_recorded(1);
		futex(&word, FUTEX_WAKE, 1, 0);
	}
	wait_recorded(2);
	for (int i = 0; i < 2; i++)
		pthread_join(ws[i].th, NULL);
	printf("%-30s 20#0 and 10#1, #1 raised to 60 while asleep: #%d first\n",
	       title, order[0]);
}

static int first_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}

int main(void)
{
	struct sched_param sp = {.sched_priority = 90};
	cpu_set_t set;

	cpu = first_cpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (cpu < 0 || sched_setaffinity(0, sizeof set, &set) != 0 ||
	    sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		perror("CPU or SCHED_FIFO");
		return 1;
	}
	wake_order(PLAIN, "FUTEX_WAKE(1)");
	wake_order(BITS, "FUTEX_WAKE_BITSET(1), w first");
	raised_while_asleep(PLAIN, "plain futex:");
	raised_while_asleep(PI, "PI futex:");
	return 0;
}
