/* Part of t_cancel_mixed: plain C, compiled WITHOUT -fexceptions, so
   pthread_cleanup_push is glibc's setjmp-based form
   (__pthread_register_cancel, __pthread_unwind_next), plus a legacy
   _pthread_cleanup_push buffer. */
#include <pthread.h>

void rec(const char *what);
void cm_exc_layer(void (*inner)(void));
extern void _pthread_cleanup_push(struct _pthread_cleanup_buffer *,
				  void (*)(void *), void *);
extern void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *, int);

static void handler(void *what)
{
	rec(what);
}

/* The innermost layer: between it and the next setjmp-form buffer
   (cm_plain_layer) lie -fexceptions frames, so only the unwinder's stop
   function can run it in the right place. */
__attribute__((noinline)) void cm_legacy_layer(void (*inner)(void))
{
	struct _pthread_cleanup_buffer b;

	_pthread_cleanup_push(&b, handler, "legacy");
	inner();
	_pthread_cleanup_pop(&b, 0);
}

__attribute__((noinline)) void cm_plain_layer(void (*inner)(void))
{
	pthread_cleanup_push(handler, "plain-push");
	cm_exc_layer(inner);
	pthread_cleanup_pop(0);
}
