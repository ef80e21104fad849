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

/* Under AddressSanitizer these two frames are left uninstrumented: the
   forced unwind skips their epilogues, so the redzones around their
   cleanup buffers stay poisoned below the landing pad of cm_exc_layer,
   where ASan's __asan_handle_no_return (before _Unwind_Resume) calls its
   own sigaltstack interceptor on a local in that dead area and aborts
   ("CHECK failed: asan_thread.cpp:371 ... kCurrentStackFrameMagic").  The
   same happens with glibc's cancellation, without weft (gcc 12). */
#if defined(__SANITIZE_ADDRESS__)
#define CM_NO_ASAN __attribute__((no_sanitize_address))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CM_NO_ASAN __attribute__((no_sanitize_address))
#endif
#endif
#ifndef CM_NO_ASAN
#define CM_NO_ASAN
#endif

/* The innermost layer: between it and the next setjmp-form buffer
   (cm_plain_layer) lie -fexceptions frames, so only the unwinder's stop
   function can run it in the right place. */
CM_NO_ASAN __attribute__((noinline)) void cm_legacy_layer(void (*inner)(void))
{
	struct _pthread_cleanup_buffer b;

	_pthread_cleanup_push(&b, handler, "legacy");
	inner();
	_pthread_cleanup_pop(&b, 0);
}

CM_NO_ASAN __attribute__((noinline)) void cm_plain_layer(void (*inner)(void))
{
	pthread_cleanup_push(handler, "plain-push");
	cm_exc_layer(inner);
	pthread_cleanup_pop(0);
}
