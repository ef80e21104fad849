/* Priority-protect mutexes (mutex_kinds.h): not made
   yet, init refuses them. */
#include "mutex_kinds.h"

int ppmutex_init(struct wmutex *w, int kind, unsigned attr)
{
	(void)w, (void)kind, (void)attr;
	return ENOTSUP;
}

/* A mutex whose kind claims PP was forged by hand (init
   refuses to make one): every call says so. */
int ppmutex_lock(struct wmutex *w, clockid_t clock,
		  const struct timespec *abstime)
{
	(void)w, (void)clock, (void)abstime;
	return ENOTSUP;
}

int ppmutex_trylock(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

int ppmutex_unlock(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

int ppmutex_check_owner(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

unsigned ppmutex_release_for_wait(struct wmutex *w)
{
	(void)w;
	return 0;
}

int ppmutex_reacquire_after_wait(struct wmutex *w, unsigned depth)
{
	(void)w, (void)depth;
	return ENOTSUP;
}

int ppmutex_destroy(struct wmutex *w)
{
	(void)w;
	return 0;
}

int ppmutex_getprioceiling(const struct wmutex *w, int *ceiling)
{
	(void)w, (void)ceiling;
	return ENOTSUP;
}

int ppmutex_setprioceiling(struct wmutex *w, int ceiling, int *old)
{
	(void)w, (void)ceiling, (void)old;
	return ENOTSUP;
}
