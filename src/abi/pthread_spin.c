/* pthread_spin_*.  The lock is in sync/spin.c; `pshared` is accepted and
   needs nothing (the lock makes no system call), as in glibc. */
#include "sync/spin.h"
#include "export.h"

WEFT_EXPORT int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_spin_init)(l, pshared);
	spin_init(l);
	return 0;
}

WEFT_EXPORT int pthread_spin_destroy(pthread_spinlock_t *l)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_spin_destroy)(l);
	return 0;
}

WEFT_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_spin_lock)(l);
	return spin_lock(l);
}

WEFT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_spin_trylock)(l);
	return spin_trylock(l);
}

WEFT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	if (!weft_serving())
		return GLIBC_FN(pthread_spin_unlock)(l);
	return spin_unlock(l);
}
