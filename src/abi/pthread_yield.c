/* Yielding the CPU and the (advisory) concurrency level.  All three
   yields are the kernel's sched_yield; none needs glibc, so they are the
   same in fallback mode. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "kernel/sched.h"
#include "export.h"

WEFT_EXPORT int sched_yield(void)
{
	sys_sched_yield(); /* cannot fail on Linux */
	return 0;
}

/* Old binaries still call pthread_yield (glibc keeps it as a compat
   symbol; its header redirects new callers to sched_yield, hence the
   assembler name). */
WEFT_EXPORT int weft_pthread_yield(void) __asm__("pthread_yield");
WEFT_EXPORT int weft_pthread_yield(void)
{
	sys_sched_yield();
	return 0;
}

/* Linux threads are all kernel-scheduled, so the level is only stored
   and reported back, as POSIX permits. */
static int concurrency;

WEFT_EXPORT int pthread_setconcurrency(int level)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_setconcurrency)(level);
	if (level < 0)
		return EINVAL;
	__atomic_store_n(&concurrency, level, __ATOMIC_RELAXED);
	return 0;
}

WEFT_EXPORT int pthread_getconcurrency(void)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_getconcurrency)();
	return __atomic_load_n(&concurrency, __ATOMIC_RELAXED);
}
