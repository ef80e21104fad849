/* glibc-layout: print the facts of the running glibc that weft's host
   adapter depends on, found the way weft finds them (libthread_db's
   descriptors, the loader's module list, a glibc thread on a stack we
   map and whose descriptor we read) plus the raw words around the ones
   weft cannot discover.  A diagnosis tool for a new glibc release, run
   inside a chroot by hand:
       cc -O1 -g -pthread -o glibc-layout tests/glibc/layout.c -ldl
       ./glibc-layout
   It does not use libweft and changes nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <resolv.h>
#undef p_type /* resolv.h defines it; it names an ELF field here */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static char *thread_pointer(void)
{
	char *p;

	__asm__("mov %%fs:0, %0" : "=r"(p));
	return p;
}

/* libthread_db descriptor: bit size, count, byte offset. */
static long db(const char *name, int word)
{
	const uint32_t *d = dlvsym(RTLD_DEFAULT, name, "GLIBC_PRIVATE");

	return d ? (long)d[word] : -1;
}

static const char *const fields[] = {
	"tid", "list", "report_events", "cancelhandling", "specific",
	"start_routine", "schedpolicy", "schedparam_sched_priority",
	"eventbuf", "nextevent", "dtvp",
};

struct libc_tls {
	ptrdiff_t off;
	size_t size;
};

static int find_libc_tls(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct libc_tls *lt = data;

	(void)sz;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so.6") ||
	    !info->dlpi_tls_data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			lt->size = info->dlpi_phdr[i].p_memsz;
	lt->off = (char *)info->dlpi_tls_data - thread_pointer();
	return 1;
}

#define RESULT ((void *)0x5eedf00dcafeUL)
#define STACK_SIZE (4u << 20)

static struct libc_tls lt;
static char *stack;
static size_t tcb_size;
static char *probe_tcb;
static uintptr_t tls_before[256], tls_after[256];
static long res_off = -1, robust_off = -1, stackblock_off = -1;
static long cleanup_jmp_off = -1, cleanup_off = -1;

/* Looked up before the probe thread starts (no loader calls in it). */
static void *cleanup_push, *cleanup_pop;

static long find_word(const char *base, uintptr_t v, long from)
{
	for (long o = from; o + 8 <= (long)tcb_size; o += 8)
		if (*(const uintptr_t *)(base + o) == v)
			return o;
	return -1;
}

static void *probe(void *arg)
{
	char *tp = thread_pointer();
	const uintptr_t *blk = (const uintptr_t *)(tp + lt.off);
	size_t n = lt.size / 8 < 256 ? lt.size / 8 : 256;
	void *head;
	size_t len;
	void *volatile p;
	__pthread_unwind_buf_t ub;

	(void)arg;
	memcpy(tls_before, blk, n * 8);
	p = malloc(40);
	free(p);
	memcpy(tls_after, blk, n * 8);
	probe_tcb = tp;
	res_off = (char *)__res_state() - tp;
	if (syscall(SYS_get_robust_list, 0, &head, &len) == 0)
		robust_off = (char *)head - tp;
	for (long o = 0; o + 16 <= (long)tcb_size; o += 8)
		if (*(char **)(tp + o) == stack &&
		    *(size_t *)(tp + o + 8) == STACK_SIZE) {
			stackblock_off = o;
			break;
		}
	memset(&ub, 0, sizeof ub);
	__pthread_register_cancel(&ub);
	cleanup_jmp_off = find_word(tp, (uintptr_t)&ub, 0);
	__pthread_unregister_cancel(&ub);
	/* The old cleanup ABI's chain, with glibc's own entry points. */
	{
		struct _pthread_cleanup_buffer cb;
		void (*push)(void *, void (*)(void *), void *) = cleanup_push;
		void (*pop)(void *, int) = cleanup_pop;

		if (push && pop) {
			push(&cb, NULL, NULL);
			cleanup_off = find_word(tp, (uintptr_t)&cb, 0);
			pop(&cb, 0);
		}
	}
	return RESULT;
}

static void dump_words(const char *what, const char *base, long from, long to)
{
	printf("%s:\n", what);
	for (long o = from; o < to; o += 4)
		printf("  +%-5ld %08x\n", o, *(const uint32_t *)(base + o));
}

/* The words after report_events through a thread's life: joinable and
   running, ended but not joined (what the kernel cleared at exit), and
   detached and running.  Where glibc keeps its join state and which
   word the kernel clears are facts weft cannot discover from a
   descriptor. */
static pthread_barrier_t life_bar;
static char *life_tcb;
static uint32_t detached_view[16];

static void *life_main(void *arg)
{
	life_tcb = thread_pointer();
	if (arg) /* detached: copy our own words while we run */
		memcpy(detached_view, life_tcb + 1552, sizeof detached_view);
	pthread_barrier_wait(&life_bar);
	pthread_barrier_wait(&life_bar);
	return RESULT;
}

static void life_cycle(long tid_off)
{
	pthread_t th;
	pthread_attr_t a;
	uint32_t alive[16], ended[16];
	int tid_alive, tid_ended = -1;

	pthread_barrier_init(&life_bar, NULL, 2);
	pthread_create(&th, NULL, life_main, NULL);
	pthread_barrier_wait(&life_bar);
	memcpy(alive, life_tcb + 1552, sizeof alive);
	tid_alive = *(int *)(life_tcb + tid_off);
	pthread_barrier_wait(&life_bar);
	/* wait for the kernel's clear at exit (tid or another word) */
	for (int i = 0; i < 1000; i++) {
		usleep(1000);
		tid_ended = *(volatile int *)(life_tcb + tid_off);
		memcpy(ended, life_tcb + 1552, sizeof ended);
		if (tid_ended == 0 || memcmp(alive, ended, sizeof ended) != 0)
			break;
	}
	usleep(20000);
	tid_ended = *(volatile int *)(life_tcb + tid_off);
	memcpy(ended, life_tcb + 1552, sizeof ended);
	pthread_join(th, NULL);

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&th, &a, life_main, (void *)1);
	pthread_barrier_wait(&life_bar);
	pthread_barrier_wait(&life_bar);
	usleep(20000);

	printf("glibc-stack thread, words from +1552: alive joinable / ended, not joined / "
	       "alive detached\n");
	for (int i = 0; i < 16; i++)
		printf("  +%-5d %08x %08x %08x\n", 1552 + 4 * i, alive[i], ended[i],
		       detached_view[i]);
	printf("  tid: alive %s, ended %d; TCB %p\n", tid_alive > 0 ? "set" : "NOT set", tid_ended,
	       (void *)life_tcb);
}

int main(void)
{
	pthread_attr_t a;
	pthread_t th;
	void *ret;
	long rep;
	char *rtld = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");

	printf("glibc %s\n", gnu_get_libc_version());
	tcb_size = (size_t)db("_thread_db_sizeof_pthread", 0);
	printf("sizeof(struct pthread) %zu\n", tcb_size);
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		char name[96];

		snprintf(name, sizeof name, "_thread_db_pthread_%s", fields[i]);
		printf("%-28s off %ld (bits %ld)\n", fields[i], db(name, 2), db(name, 0));
	}
	printf("_rtld_global._dl_stack_used  +%ld\n",
	       db("_thread_db_rtld_global__dl_stack_used", 2));
	printf("_rtld_global._dl_stack_user  +%ld\n",
	       db("_thread_db_rtld_global__dl_stack_user", 2));
	printf("_rtld_global %s\n", rtld ? "found" : "MISSING");
	printf("__rseq_offset %ld, __rseq_size %u\n",
	       &__rseq_offset ? (long)__rseq_offset : 0L, &__rseq_size ? __rseq_size : 0u);
	{
		static const char *const syms[] = {
			"_dl_allocate_tls", "_dl_deallocate_tls", "_dl_get_tls_static_info",
			"_dl_argv", "__nptl_nthreads", "__ctype_init", "__call_tls_dtors",
			"__resp", "__libc_single_threaded",
		};
		for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
			void *s = dlvsym(RTLD_DEFAULT, syms[i], "GLIBC_PRIVATE");
			if (!s)
				s = dlsym(RTLD_DEFAULT, syms[i]);
			printf("symbol %-24s %s\n", syms[i], s ? "found" : "MISSING");
		}
		printf("symbol %-24s %s\n", "pthread_gettid_np",
		       dlsym(RTLD_DEFAULT, "pthread_gettid_np") ? "exported" : "absent");
		printf("symbol %-24s %s\n", "getrandom",
		       dlsym(RTLD_DEFAULT, "getrandom") ? "exported" : "absent");
	}
	dl_iterate_phdr(find_libc_tls, &lt);
	printf("libc TLS block %zu bytes at TP%+ld\n", lt.size, (long)lt.off);

	cleanup_push = dlsym(RTLD_DEFAULT, "_pthread_cleanup_push");
	cleanup_pop = dlsym(RTLD_DEFAULT, "_pthread_cleanup_pop");
	stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pthread_attr_init(&a);
	pthread_attr_setstack(&a, stack, STACK_SIZE);
	if (pthread_create(&th, &a, probe, NULL) || pthread_join(th, &ret) || ret != RESULT) {
		printf("probe thread failed\n");
		return 1;
	}
	printf("probe thread on a user stack:\n");
	printf("  res %ld, robust_head %ld, stackblock %ld\n", res_off, robust_off,
	       stackblock_off);
	printf("  cleanup_jmp_buf %ld, cleanup %ld\n", cleanup_jmp_off,
	       cleanup_off);
	printf("  result %ld\n", find_word(probe_tcb, (uintptr_t)RESULT, 0));
	printf("malloc words (libc TLS block, before -> after one malloc/free):\n");
	for (size_t i = 0; i < lt.size / 8 && i < 256; i++)
		if (tls_before[i] != tls_after[i])
			printf("  +%zu: %#lx -> %#lx%s\n", i * 8, (unsigned long)tls_before[i],
			       (unsigned long)tls_after[i],
			       tls_before[i] ? "  (was NOT zero)" : "");
	rep = db("_thread_db_pthread_report_events", 2);
	dump_words("words from report_events (after join, user-stack thread)", probe_tcb,
		   rep & ~3L, rep + 48);
	life_cycle(db("_thread_db_pthread_tid", 2));
	return 0;
}
