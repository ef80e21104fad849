/* bench/rawclone.c - the kernel's floor for a thread life cycle.
 *
 * No thread library is involved: each cycle issues clone(2) directly with
 * the flag set a POSIX thread library uses for a new thread (shared VM,
 * files, fs info, signal handlers, same thread group, SysV semaphore undo
 * list, kernel writes the TID to a word in the parent and clears it +
 * futex-wakes it when the child exits).  The child runs no C code at all:
 * the same asm block that made the syscall calls SYS_exit when it finds
 * itself in the child.  The parent sleeps on the TID word with FUTEX_WAIT
 * until the kernel has cleared it, which is the moment the child's stack
 * may be reused, so a single preallocated stack serves every cycle.
 *
 * No TLS, no signal mask juggling, no stack cache, no attributes: whatever
 * a real library spends on top of this number is its own overhead.
 *
 * With -C c, up to c children are alive at once, as in `creation -T 1 -C c`:
 * the parent waits only for the oldest before it makes the next.  They can
 * all share the one stack, since a child never touches it; each has its
 * own TID word.
 *
 * Usage: rawclone [-n iterations] [-w warmup] [-C children alive]
 * Output: RESULT bench=rawclone n=... C=... sec=... ops_per_s=...
 */
#include "common.h"

#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "rawclone.c is written for x86-64"
#endif

#define RAW_STACK_SIZE (64 * 1024)

static const unsigned long clone_flags =
	CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
	CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;

/* clone(flags, stack, parent_tid, child_tid, tls) on x86-64:
 * rdi, rsi, rdx, r10, r8.  Returns the child's TID (or -errno) in the
 * parent; the child never returns from here. */
static long clone_and_exit(unsigned long flags, void *stack_top,
			   volatile int *ptid, volatile int *ctid)
{
	long ret;
	register volatile int *r10 __asm__("r10") = ctid;
	register long r8 __asm__("r8") = 0;

	__asm__ volatile(
		"syscall\n\t"
		"testq %%rax, %%rax\n\t"
		"jnz 1f\n\t"
		/* child: nothing on its stack matters, just leave */
		"movl %[nr_exit], %%eax\n\t"
		"xorl %%edi, %%edi\n\t"
		"syscall\n\t"
		"ud2\n"
		"1:"
		: "=a"(ret)
		: "0"((long)SYS_clone), "D"(flags), "S"(stack_top), "d"(ptid),
		  "r"(r10), "r"(r8), [nr_exit] "i"(SYS_exit)
		: "rcx", "r11", "memory");
	return ret;
}

static void wait_tid_clear(volatile int *word)
{
	int v;
	while ((v = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != 0) {
		/* The kernel's wake on thread exit is a shared (non-private)
		 * futex wake, so wait without FUTEX_PRIVATE_FLAG. */
		long rc = syscall(SYS_futex, word, FUTEX_WAIT, v, NULL, NULL, 0);
		if (rc != 0 && errno != EAGAIN && errno != EINTR)
			bench_die("futex wait", errno);
	}
}

/* tid[] is a ring of c words: slot i % c belongs to the oldest child once
   c are alive.  Returns with every child gone. */
static void loop(long n, long c, void *stack_top, volatile int *tid)
{
	for (long i = 0; i < n; i++) {
		volatile int *slot = &tid[i % c];
		wait_tid_clear(slot);
		long r = clone_and_exit(clone_flags, stack_top, slot, slot);
		if (r < 0)
			bench_die("clone", (int)-r);
	}
	for (long k = 0; k < c; k++)
		wait_tid_clear(&tid[k]);
}

int main(int argc, char **argv)
{
	long n = 100000, warm = 1000, c = 1;
	int opt;

	while ((opt = getopt(argc, argv, "n:w:C:h")) != -1) {
		switch (opt) {
		case 'n': n = bench_arg_long("-n", optarg); break;
		case 'w': warm = bench_arg_long("-w", optarg); break;
		case 'C': c = bench_arg_long("-C", optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n iterations] [-w warmup] [-C children alive]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc || n == 0 || c < 1 || c > 100000) {
		fprintf(stderr, "usage: %s [-n iterations] [-w warmup] [-C children alive (1..100000)]\n", argv[0]);
		return 2;
	}
	volatile int *tid = calloc((size_t)c, sizeof *tid);
	if (tid == NULL)
		bench_die("calloc", ENOMEM);

	void *stack = mmap(NULL, RAW_STACK_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		bench_die("mmap", errno);
	void *top = (char *)stack + RAW_STACK_SIZE;

	loop(warm, c, top, tid);
	double t0 = bench_now();
	loop(n, c, top, tid);
	double sec = bench_now() - t0;

	printf("RESULT bench=rawclone n=%ld C=%ld sec=%.6f ops_per_s=%.1f ns_per_op=%.1f "
	       "pthread_lib=none\n", n, c, sec, (double)n / sec, sec * 1e9 / (double)n);
	munmap(stack, RAW_STACK_SIZE);
	return 0;
}
