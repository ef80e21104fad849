/* Checking the release table's row against what glibc really does
   (layout.h, steps two and three).  A fact that differs refuses the
   release (fail closed), naming the facts that differed in weft's one
   line.

   Step two, at start-up, leaves no trace: the facts the calling thread
   (the main thread, usually) shows of itself are checked on its own TCB
   (tid, robust_head, the cleanup chains, and on the main thread the
   user-stack marker and the stackblock pair glibc gives it).  They are
   the facts weft uses on threads it did not create, so once they hold
   weft may serve every call of a program that never makes a thread.

   Step three, the probe thread, runs at the first thread creation weft
   serves: one real glibc thread, made with glibc's own pthread_create
   on a stack weft maps, whose TCB shows the facts of a thread that
   weft's own TCBs reproduce (res, stackblock, the user-stack marker of
   a thread on a user stack, the join state, malloc's words, result).
   Made through glibc, it also switches glibc into multi-threaded mode
   the only complete way (both copies of __libc_single_threaded, stdio
   locking, the SIGSETXID handler, the main thread's multiple_threads
   flag: G1-G3, H3), just before the program's own first thread, which
   is when glibc itself switches (docs/glibc-host.md, "Start-up").

   The probe thread makes no call into the dynamic linker: what it needs
   from it (glibc's cleanup-chain functions) is looked up before it
   starts, since the creation may run under the loader's lock (a
   constructor during dlopen), which the probe would wait for while its
   creator waits for the probe.  Nor does it call strerror or strsignal,
   which take gettext's lock (libc_state.c says why that matters). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attr_layout.h"
#include "env.h"
#include "layout.h"
#include "real.h"

#define L host_layout
#define FIELD(tcb, off, type) (*(type *)((char *)(tcb) + (off)))
#define PROBE_RESULT ((void *)0x5eedf00dcafeUL)
#define LIBC_TLS_MAX 1024

/* The probe thread's stack: glibc places the thread's static TLS (every
   module's initial-exec and initial TLS blocks, some programs have
   megabytes of it) and its descriptor on a user-supplied stack, so the
   size follows the TLS size (a fixed size made programs with more than
   ~250 KiB of __thread data fall back to forwarding: tests/t_bigtls.c).
   Unmapped once joined and checked (glibc may look at the descriptor
   until the join, and the checks read it after). */
#define PROBE_STACK_ROOM (256 * 1024)

static struct {
	char *stack;
	size_t stack_size;
	char *tcb;
	char mismatch[120]; /* the facts that differed, comma-separated */
	int libc_malloc;    /* the program's malloc is libc's */
	/* glibc's cleanup-chain entry points (looked up before the probe) */
	void (*reg)(void *);
	void (*unreg)(void *);
	void (*push)(void *, void (*)(void *), void *);
	void (*pop)(void *, int);
} P;

/* Records a fact that differs from the row (once each; no stdio: it runs
   in the probe thread). */
static void differs(const char *fact)
{
	size_t n = strlen(P.mismatch), k = strlen(fact);

	if (strstr(P.mismatch, fact))
		return;
	if (n && n + 2 < sizeof P.mismatch) {
		memcpy(P.mismatch + n, ", ", 2);
		n += 2;
	}
	if (n + k < sizeof P.mismatch)
		memcpy(P.mismatch + n, fact, k + 1);
}

/* malloc's per-thread words: the words of libc's TLS block that a
   thread's first malloc/free changes must be among the row's, and hold
   the TLS image's values before it (what weft restores when it takes
   them from a thread that ends).  This runs first in the fresh probe
   thread, which has not called malloc yet.  Only when malloc is libc's:
   another allocator (jemalloc) leaves libc's words alone, and the probe
   thread calls nothing but glibc, since an allocator may call weft (its
   locks, its key), which would adopt the probe thread, and adopting
   takes the loader's lock, which the probe's creator may hold while it
   waits for the probe (a thread created by a constructor in dlopen). */
static void check_malloc_words(char *self)
{
	uintptr_t before[LIBC_TLS_MAX / 8];
	const uintptr_t *blk = (const uintptr_t *)(self + L.libc_tls);
	size_t n = L.libc_tls_size / 8;
	void *volatile p;

	if (!P.libc_malloc)
		return;
	if (L.libc_tls_size > LIBC_TLS_MAX) {
		differs("libc's TLS block size");
		return;
	}
	memcpy(before, blk, n * 8);
	p = malloc(40);
	free(p);
	for (size_t i = 0; i < n; i++) {
		ptrdiff_t off = L.libc_tls + (ptrdiff_t)(i * 8);
		int k;

		if (before[i] == blk[i])
			continue;
		for (k = 0; k < L.state_words; k++)
			if (L.state[k].off == off)
				break;
		if (k == L.state_words || before[i] != L.state[k].fresh) {
			differs("malloc's thread words");
			return;
		}
	}
}

/* glibc publishes no offset for the two cleanup chains (docs/cancel.md):
   a buffer registered with glibc's own functions must be the word the
   row names, and be gone from it once unregistered. */
static void check_cleanup_chains(char *self)
{
	__pthread_unwind_buf_t ub;
	struct _pthread_cleanup_buffer cb;
	void *outer = FIELD(self, L.cleanup_jmp_buf, void *);

	memset(&ub, 0, sizeof ub);
	P.reg(&ub);
	if (FIELD(self, L.cleanup_jmp_buf, void *) != &ub)
		differs("cleanup_jmp_buf");
	P.unreg(&ub);
	if (FIELD(self, L.cleanup_jmp_buf, void *) != outer)
		differs("cleanup_jmp_buf");
	outer = FIELD(self, L.cleanup, void *);
	P.push(&cb, NULL, NULL);
	if (FIELD(self, L.cleanup, void *) != &cb)
		differs("cleanup");
	P.pop(&cb, 0);
	if (FIELD(self, L.cleanup, void *) != outer)
		differs("cleanup");
}

static int marker_value(char *self)
{
	return L.user_stack.width == 1 ? FIELD(self, L.user_stack.off, unsigned char)
				       : FIELD(self, L.user_stack.off, int);
}

/* The facts every glibc thread shows of itself: its tid, its robust
   list head (registered at its birth), the two cleanup chains. */
static void check_own_facts(char *self)
{
	void *head = NULL;
	size_t len;

	if (FIELD(self, L.tid, int) != sys_gettid())
		differs("tid");
	if (sys_get_robust_list(0, &head, &len) != 0 ||
	    (char *)head != self + L.robust_head)
		differs("robust_head");
	check_cleanup_chains(self);
}

static char why_buf[256];

static const char *verdict(void)
{
	if (!P.mismatch[0])
		return NULL;
	snprintf(why_buf, sizeof why_buf,
		 "glibc's thread descriptor did not match the probe (%s, "
		 "release %s)", P.mismatch, L.release);
	return why_buf;
}

/* glibc's cleanup-chain entry points, looked up by the thread that
   checks (never by the probe thread: no loader calls there). */
static const char *lookup_cleanup_functions(void)
{
	if (P.reg)
		return NULL;
	P.unreg = host_next_sym("__pthread_unregister_cancel", "GLIBC_2.34");
	P.push = host_next_sym("_pthread_cleanup_push", "GLIBC_2.34");
	P.pop = host_next_sym("_pthread_cleanup_pop", "GLIBC_2.34");
	P.reg = host_next_sym("__pthread_register_cancel", "GLIBC_2.34");
	if (!P.reg || !P.unreg || !P.push || !P.pop) {
		P.reg = NULL;
		return "glibc's cleanup functions were not found";
	}
	return NULL;
}

/* ld.so's: the top of the main thread's stack at process start. */
extern void *__libc_stack_end;

const char *host_layout_check_here(void)
{
	char *self = arch_thread_pointer();
	char *block = FIELD(self, L.stackblock, char *);
	size_t size = FIELD(self, L.stackblock_size, size_t);
	const char *why = lookup_cleanup_functions();
	char here;

	if (why)
		return why;
	check_own_facts(self);
	if (!block) {
		/* The main thread: glibc marks the stack the kernel gave it
		   as a user stack, with the block's size set to the top of
		   that stack (__tls_init_tp). */
		if (size != (size_t)__libc_stack_end)
			differs("stackblock");
		if (marker_value(self) != L.user_stack.value)
			differs("the user-stack marker");
	} else if (&here < block || &here >= block + size) {
		/* A thread glibc made (start-up may run in one first): its
		   stack is the block. */
		differs("stackblock");
	}
	return verdict();
}

static void *probe_main(void *arg)
{
	char *self = arch_thread_pointer();

	(void)arg;
	check_malloc_words(self);
	check_own_facts(self);
	P.tcb = self;
	if ((char *)__res_state() != self + L.res)
		differs("res");
	if (FIELD(self, L.stackblock, char *) != P.stack ||
	    FIELD(self, L.stackblock_size, size_t) != P.stack_size)
		differs("stackblock");
	/* This thread runs on a user-supplied stack, and is joinable. */
	if (marker_value(self) != L.user_stack.value)
		differs("the user-stack marker");
	if (L.join.kind == HOST_JOIN_STATE
		    ? FIELD(self, L.join.off, unsigned int) != L.join.joinable
		    : FIELD(self, L.join.off, void *) != NULL)
		differs("the join state");
	return PROBE_RESULT;
}

const char *host_layout_probe(void)
{
	pthread_attr_t a;
	pthread_t th;
	void *res = NULL;
	struct glibc_attr *ga = gattr(&a);
	const char *why;
	uintptr_t m;
	int r;

	if ((why = lookup_cleanup_functions()))
		return why;
	m = (uintptr_t)host_default_sym("malloc");
	P.libc_malloc = m >= L.libc_text_lo && m < L.libc_text_hi;
	P.stack_size = PROBE_STACK_ROOM +
		       ((L.tls_size + L.tcb_size + 4095) & ~(size_t)4095);
	P.stack = sys_mmap(NULL, P.stack_size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (sys_mmap_failed(P.stack))
		return "the probe glibc thread failed (mapping its stack)";
	memset(&a, 0, sizeof a);
	ga->guardsize = 0;
	ga->stackaddr = P.stack + P.stack_size;
	ga->stacksize = P.stack_size;
	ga->flags = GATTR_STACKADDR;
	r = host_real.pthread_create(&th, &a, probe_main, NULL);
	if (r != 0) {
		/* The stack is kept: glibc may not be done with it. */
		snprintf(why_buf, sizeof why_buf,
			 "the probe glibc thread failed (pthread_create: error %d)", r);
		return why_buf;
	}
	if (host_real.pthread_join(th, &res) != 0 || res != PROBE_RESULT)
		return "the probe glibc thread failed (its result)";
	if (FIELD(P.tcb, L.result, void *) != PROBE_RESULT)
		differs("result");
	/* Tests of what a late refusal does (docs/tunables.md). */
	if (host_getenv("WEFT_TEST_REFUTE_PROBE"))
		differs("WEFT_TEST_REFUTE_PROBE");
	/* Joined: glibc is done with a thread on a user stack (its TLS was
	   released by the join), so the mapping goes. */
	sys_munmap(P.stack, P.stack_size);
	P.stack = NULL;
	return verdict();
}
