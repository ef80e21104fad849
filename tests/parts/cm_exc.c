/* Part of t_cancel_mixed: C compiled WITH -fexceptions, so
   pthread_cleanup_push is the __attribute__((cleanup)) form run by the
   unwinder's landing pads, next to a plain __attribute__((cleanup)). */
#include <pthread.h>

void rec(const char *what);
void cm_legacy_layer(void (*inner)(void));

static void handler(void *what)
{
	rec(what);
}

static void attr_cleanup(const char **what)
{
	rec(*what);
}

__attribute__((noinline)) void cm_exc_layer(void (*inner)(void))
{
	pthread_cleanup_push(handler, "exc-push");
	{
		const char *v __attribute__((cleanup(attr_cleanup))) = "exc-attr";
		cm_legacy_layer(inner);
		(void)v;
	}
	pthread_cleanup_pop(0);
}
