/* pthread_spin_*.  The lock is in sync/spin.{h,c}; `pshared` is
   accepted and needs nothing (the lock makes no system call), as in
   glibc.  Served by weft whether or not it serves the rest: the encoding
   is glibc's, so the answer is the same, and no start-up runs here
   (spin.h). */
#include "sync/spin.h"
#include "export.h"

WEFT_EXPORT int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	(void)pshared;
	return spin_unlock(l);
}

WEFT_EXPORT int pthread_spin_destroy(pthread_spinlock_t *l)
{
	(void)l;
	return 0;
}

WEFT_FAST_ENTRY int pthread_spin_lock(pthread_spinlock_t *l)
{
	return spin_lock(l);
}

WEFT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	return spin_trylock(l);
}

WEFT_FAST_ENTRY int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return spin_unlock(l);
}
