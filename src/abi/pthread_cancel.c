/* Cancellation entry points (docs/cancel.md): pthread_cancel,
   pthread_setcancelstate/-type, pthread_testcancel, and the cleanup ABI
   that glibc's pthread.h compiles into programs (__pthread_register_cancel
   & co., the legacy _pthread_cleanup_push & co.).  The engine is in
   core/cancel.c and core/unwind.c.

   weft exports these unversioned (as all its symbols), which satisfies
   programs bound to glibc's GLIBC_2.34 and compatibility versions. */
#include <errno.h>
#include <pthread.h>

#include "core/cancel.h"
#include "export.h"

/* The cleanup ABI's own prototypes (pthread.h declares some only under
   conditions). */
extern void __pthread_register_cancel(__pthread_unwind_buf_t *);
extern void __pthread_unregister_cancel(__pthread_unwind_buf_t *);
extern void __pthread_register_cancel_defer(__pthread_unwind_buf_t *);
extern void __pthread_unregister_cancel_restore(__pthread_unwind_buf_t *);
extern void __pthread_unwind_next(__pthread_unwind_buf_t *)
	__attribute__((noreturn));
extern void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *,
					void (*)(void *), void *);
extern void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *, int);

/* A thread weft made: marked and signalled under a pin (core/target.c),
   which holds its registry slot.  Without it, a join racing with this
   call could hand the thread's block to a new thread between the
   lookup and the mark, and the new thread would be the one cancelled.
   Pinned, the thread cannot exit and free its tid meanwhile either. */
static int cancel_weft_thread(pthread_t th, const struct target *x)
{
	struct weft_pin pin;
	int tid, err = 0;
	long r;

	if ((tid = thread_pin(x->t, th, &pin)) < 0)
		return 0; /* ended meanwhile: its outcome is settled (glibc: 0) */
	if (cancel_request((char *)x->glibc)) {
		r = sys_tgkill(sys_getpid(), tid, WEFT_SIGCANCEL);
		err = r < 0 && r != -ESRCH ? (int)-r : 0;
	}
	thread_unpin(x->t, &pin);
	return err;
}

/* A thread glibc made (or adopted): its tid is read from its TCB.  The
   main thread's never changes while the process lives; for glibc's
   helper threads a tid could in theory be reused between the read and
   the signal (glibc guards this with its private exit_lock). */
static int cancel_glibc_thread(const struct target *x)
{
	volatile int *tidw = host_tid_word((char *)x->glibc);
	int tid = __atomic_load_n(tidw, __ATOMIC_ACQUIRE);
	long r;

	/* A thread that has ended: its outcome is settled (glibc: 0). */
	if (tid <= 0 || !cancel_request((char *)x->glibc))
		return 0;
	if ((tid = __atomic_load_n(tidw, __ATOMIC_ACQUIRE)) <= 0)
		return 0;
	r = sys_tgkill(sys_getpid(), tid, WEFT_SIGCANCEL);
	return r < 0 && r != -ESRCH ? (int)-r : 0;
}

WEFT_EXPORT int pthread_cancel(pthread_t th)
{
	struct target x;

	if (!weft_serving())
		return GLIBC_FN(pthread_cancel)(th);
	/* The target's handler unwinds: the unwinder must be loaded
	   before, not in the handler (host/unwinder.h). */
	(void)host_unwinder_load();
	x = target_of(th);
	if (x.err)
		return x.err;
	if (x.t && x.origin == WEFT_ORIGIN_CREATED)
		return cancel_weft_thread(th, &x);
	return cancel_glibc_thread(&x);
}

WEFT_EXPORT int pthread_setcancelstate(int state, int *old)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_setcancelstate)(state, old);
	return cancel_set_state(state, old);
}

WEFT_EXPORT int pthread_setcanceltype(int type, int *old)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_setcanceltype)(type, old);
	return cancel_set_type(type, old);
}

/* Start-up, forwarding, and a request that is due: out of line, so
   that the common case below is a leaf that builds no frame. */
static __attribute__((noinline)) void testcancel_slow(void)
{
	if (!weft_serving()) {
		GLIBC_FN(pthread_testcancel)();
		return;
	}
	cancel_test();
}

WEFT_EXPORT void pthread_testcancel(void)
{
	/* glibc's test on the word cancel_test_off names: weft's request
	   while weft serves; before start-up a word that never says due; while
	   weft forwards one that always does (then glibc's own decides). */
	if (__builtin_expect(!cancel_due(cancel_test_load()), 1))
		return;
	testcancel_slow();
}

/* --- the cleanup ABI ------------------------------------------------------ */

WEFT_EXPORT void __pthread_register_cancel(__pthread_unwind_buf_t *b)
{
	if (!weft_serving()) {
		GLIBC_FN(__pthread_register_cancel)(b);
		return;
	}
	cancel_register(b);
}

WEFT_EXPORT void __pthread_unregister_cancel(__pthread_unwind_buf_t *b)
{
	if (!weft_serving()) {
		GLIBC_FN(__pthread_unregister_cancel)(b);
		return;
	}
	cancel_unregister(b);
}

WEFT_EXPORT void __pthread_register_cancel_defer(__pthread_unwind_buf_t *b)
{
	if (!weft_serving()) {
		GLIBC_FN(__pthread_register_cancel_defer)(b);
		return;
	}
	cancel_register_defer(b);
}

WEFT_EXPORT void __pthread_unregister_cancel_restore(__pthread_unwind_buf_t *b)
{
	if (!weft_serving()) {
		GLIBC_FN(__pthread_unregister_cancel_restore)(b);
		return;
	}
	cancel_unregister_restore(b);
}

WEFT_EXPORT void __pthread_unwind_next(__pthread_unwind_buf_t *b)
{
	if (!weft_serving())
		GLIBC_FN(__pthread_unwind_next)(b);
	cancel_unwind_next(b);
}

WEFT_EXPORT void _pthread_cleanup_push(struct _pthread_cleanup_buffer *b,
				       void (*fn)(void *), void *arg)
{
	if (!weft_serving()) {
		GLIBC_FN(_pthread_cleanup_push)(b, fn, arg);
		return;
	}
	cancel_push_old(b, fn, arg, 0);
}

WEFT_EXPORT void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *b,
				      int execute)
{
	if (!weft_serving()) {
		GLIBC_FN(_pthread_cleanup_pop)(b, execute);
		return;
	}
	cancel_pop_old(b, execute, 0);
}

WEFT_EXPORT void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b,
					     void (*fn)(void *), void *arg)
{
	if (!weft_serving()) {
		GLIBC_FN(_pthread_cleanup_push_defer)(b, fn, arg);
		return;
	}
	cancel_push_old(b, fn, arg, 1);
}

WEFT_EXPORT void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b,
					      int execute)
{
	if (!weft_serving()) {
		GLIBC_FN(_pthread_cleanup_pop_restore)(b, execute);
		return;
	}
	cancel_pop_old(b, execute, 1);
}
