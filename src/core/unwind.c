/* Unwinding for pthread_exit and cancellation, and glibc's cleanup ABI
   (docs/cancel.md, ../shared/design/glibc-host.md section 4).

   Programs compiled against glibc's pthread.h leave three kinds of
   handlers on the stack:

     plain C      a __pthread_unwind_buf_t filled by __sigsetjmp and
                  registered on the TCB chain `cleanup_jmp_buf`; the
                  handler runs when the unwinder longjmps into it, and
                  continues with __pthread_unwind_next
     -fexceptions, C++, __attribute__((cleanup))
                  landing pads, run by the personality routines of a
                  forced unwind (libgcc's _Unwind_ForcedUnwind)
     legacy       struct _pthread_cleanup_buffer on the TCB chain
                  `cleanup` (_pthread_cleanup_push; libc uses it too)

   One forced unwind serves all three: its stop function is called for
   every frame, innermost first; it runs the legacy buffers of the frames
   being left, and when the frame of the innermost registered buffer is
   reached (or the end of the stack) it longjmps there.  The chains are
   glibc's own fields, so glibc's unwinder (reached from a libc-internal
   cancellation point) and weft's walk the same lists, and the main
   thread ends in glibc's bottom buffer in __libc_start_call_main. */
#include <setjmp.h>
#include <stdlib.h>
#include <unwind.h>

#include "host/unwinder.h"
#include "kernel/syscall.h"
#include "cancel.h"
#include "thread.h"

/* glibc's layout of __pthread_unwind_buf_t's private words (the same
   positions, because glibc's unwinder may walk weft's buffers). */
struct ubuf {
	struct {
		long jmp[8];
		int mask_was_saved;
	} jb;
	struct ubuf *prev;				  /* outer registration */
	struct _pthread_cleanup_buffer *cleanup; /* legacy chain then */
	int canceltype;				  /* for _defer/_restore */
};

_Static_assert(sizeof(struct ubuf) <= sizeof(__pthread_unwind_buf_t),
	       "cleanup buffer layout");

/* The exception object must outlive the frames being unwound: landing
   pads call _Unwind_Resume with it after the unwinder's own frames are
   gone.  One per thread, as glibc keeps one in the TCB. */
static __thread struct _Unwind_Exception unwind_exc
	__attribute__((tls_model("initial-exec")));

__attribute__((noreturn)) static void die(const char *msg, size_t len)
{
	sys_call3(SYS_write, 2, msg, len);
	abort();
}

#define DIE(s) die(s, sizeof(s) - 1)

/* Called when a handler stops the unwind: a C++ catch (...) that does
   not rethrow.  The thread cannot go on (its handlers have run). */
static void swallowed(_Unwind_Reason_Code r, struct _Unwind_Exception *e)
{
	(void)r;
	(void)e;
	DIE("weft: cancellation/pthread_exit unwinding was caught and not "
	    "rethrown (a catch (...) block must rethrow); aborting\n");
}

/* Runs the legacy handlers registered by frames the unwind is leaving:
   all down to `stop` (the chain as it was when `buf` was registered)
   when jumping, else those whose buffer lies below the current CFA. */
static void run_legacy(char *tcb, uintptr_t cfa, int jumping,
		       struct _pthread_cleanup_buffer *stop)
{
	struct _pthread_cleanup_buffer **chain =
		(struct _pthread_cleanup_buffer **)host_cleanup_chain(tcb);
	struct _pthread_cleanup_buffer *b;

	while ((b = *chain) != NULL && b != stop &&
	       (jumping || cfa >= (uintptr_t)b)) {
		*chain = b->__prev; /* popped before it runs */
		b->__routine(b->__arg);
	}
}

/* The main thread's bottom buffer is glibc's: its code after the jump
   knows only glibc's thread-specific data, so weft's key destructors
   run here, after every cleanup handler, as POSIX orders them.  One of
   them may call pthread_exit (thread_exit_duty). */
static void before_bottom(void)
{
	struct weft_thread *self = weft_tls_self;

	if (self && self->origin == WEFT_ORIGIN_MAIN) {
		self->result = *host_result(arch_thread_pointer());
		thread_exit_duty(self, tsd_run_destructors);
	}
}

static _Unwind_Reason_Code stop_fn(int version, _Unwind_Action actions,
				   _Unwind_Exception_Class cls,
				   struct _Unwind_Exception *exc,
				   struct _Unwind_Context *ctx, void *param)
{
	struct ubuf *buf = param;
	char *tcb = arch_thread_pointer();
	/* libgcc's CFA for a frame is the stack pointer the frame had when
	   it made its call: at or above the buffer's saved stack pointer
	   means the frame that registered it has been reached. */
	uintptr_t cfa = (uintptr_t)host_unwinder.get_cfa(ctx);
	int jump = (actions & _UA_END_OF_STACK) ||
		   (buf && cfa >= host_jmpbuf_sp(buf->jb.jmp));

	(void)version;
	(void)cls;
	(void)exc;
	run_legacy(tcb, cfa, jump, buf ? buf->cleanup : NULL);
	if (!jump)
		return _URC_NO_REASON;
	if (!buf)
		DIE("weft: a thread unwound past its start without a "
		    "registered bottom buffer; aborting\n");
	if (!buf->prev)
		before_bottom();
	/* The handler being resumed is popped: what it registers links to
	   the outer ones. */
	*host_unwind_chain(tcb) = buf->prev;
	longjmp((struct __jmp_buf_tag *)(void *)buf, 1);
}

__attribute__((noreturn)) void cancel_unwind(void *buf)
{
	/* Loaded before: at the first thread creation, by pthread_cancel
	   before it signals, by pthread_exit (host/unwinder.h); this load
	   is the last resort of a thread glibc made and weft never saw
	   cancelled by itself. */
	if (host_unwinder_load())
		DIE("weft: libgcc_s.so.1 (the unwinder) could not be loaded; "
		    "aborting\n");
	unwind_exc.exception_class = 0;
	unwind_exc.exception_cleanup = swallowed;
	host_unwinder.forced_unwind(&unwind_exc, stop_fn, buf);
	DIE("weft: the stack could not be unwound (no unwind data?); "
	    "aborting\n");
}

__attribute__((noreturn)) void cancel_exit(void *value)
{
	char *tcb = arch_thread_pointer();

	/* The probe refuted the row (init.c): only glibc's threads and the
	   main thread exist, and `result` may not be where the row says. */
	if (__builtin_expect(weft_threads_refused() != NULL, 0))
		host_real.pthread_exit(value);
	(void)host_unwinder_load(); /* here, not in the unwind's frames */
	*host_result(tcb) = value;
	__atomic_fetch_or(host_cancel_word(tcb), HOST_EXITING, __ATOMIC_ACQ_REL);
	weft_in_cp = 0;
	cancel_unwind(*host_unwind_chain(tcb));
}

/* The bottom unwind buffer (glibc's cleanup ABI): pthread_exit and
   cancellation unwind the stack until the innermost registered buffer
   and jump into it; this one catches the end of the thread.  It is
   filled by glibc's __sigsetjmp (typed here for the 72-byte buffer, as
   glibc's own pthread.h declares it for pthread_cleanup_push) because
   weft's unwinder, like glibc's, resumes it with glibc's longjmp. */
extern int sigsetjmp_cancel(void *buf, int savemask) __asm__("__sigsetjmp")
	__attribute__((returns_twice, nothrow));

__attribute__((noinline)) void *cancel_run(void *(*fn)(void *), void *arg)
{
	__pthread_unwind_buf_t ub;
	void *ret;

	if (sigsetjmp_cancel(ub.__cancel_jmp_buf, 0))
		return *host_result(arch_thread_pointer());
	cancel_register(&ub);
	ret = fn(arg);
	cancel_unregister(&ub);
	/* With no buffer left to unwind to, a cancellation must not act in
	   the thread's exit steps (key destructors may call cancellation
	   points).  DISABLED rather than EXITING, which would take the
	   thread out of set*id broadcasts too early (host_thread_unlist). */
	__atomic_fetch_or(host_cancel_word(arch_thread_pointer()),
			  HOST_CANCEL_DISABLED, __ATOMIC_ACQ_REL);
	return ret;
}

/* --- glibc's cleanup ABI -------------------------------------------------- */

void cancel_register(__pthread_unwind_buf_t *b)
{
	struct ubuf *buf = (struct ubuf *)(void *)b;
	char *tcb = arch_thread_pointer();

	buf->prev = *host_unwind_chain(tcb);
	buf->cleanup = *host_cleanup_chain(tcb);
	*host_unwind_chain(tcb) = buf;
}

void cancel_unregister(__pthread_unwind_buf_t *b)
{
	*host_unwind_chain(arch_thread_pointer()) = ((struct ubuf *)(void *)b)->prev;
}

void cancel_register_defer(__pthread_unwind_buf_t *b)
{
	struct ubuf *buf = (struct ubuf *)(void *)b;
	int old;

	cancel_set_type(PTHREAD_CANCEL_DEFERRED, &old);
	buf->canceltype = old;
	cancel_register(b);
}

void cancel_unregister_restore(__pthread_unwind_buf_t *b)
{
	struct ubuf *buf = (struct ubuf *)(void *)b;

	cancel_unregister(b);
	if (buf->canceltype == PTHREAD_CANCEL_ASYNCHRONOUS)
		cancel_set_type(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
}

__attribute__((noreturn)) void cancel_unwind_next(__pthread_unwind_buf_t *b)
{
	cancel_unwind(((struct ubuf *)(void *)b)->prev);
}

void cancel_push_old(struct _pthread_cleanup_buffer *b, void (*fn)(void *),
		     void *arg, int defer)
{
	void **chain = host_cleanup_chain(arch_thread_pointer());

	b->__routine = fn;
	b->__arg = arg;
	if (defer)
		cancel_set_type(PTHREAD_CANCEL_DEFERRED, &b->__canceltype);
	b->__prev = *chain;
	*chain = b;
}

void cancel_pop_old(struct _pthread_cleanup_buffer *b, int execute,
		    int restore)
{
	*host_cleanup_chain(arch_thread_pointer()) = b->__prev;
	if (execute)
		b->__routine(b->__arg);
	if (restore && b->__canceltype == PTHREAD_CANCEL_ASYNCHRONOUS)
		cancel_set_type(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
}
