/* Robust and priority-inheritance mutexes (mutex_kinds.h): not made
   yet, init refuses them. */
#include "mutex_kinds.h"

int tidmutex_init(struct wmutex *w, int kind, unsigned attr)
{
	(void)w, (void)kind, (void)attr;
	return ENOTSUP;
}

/* A mutex whose kind claims robust or PI was forged by hand (init
   refuses to make one): every call says so. */
int tidmutex_lock(struct wmutex *w, clockid_t clock,
		  const struct timespec *abstime)
{
	(void)w, (void)clock, (void)abstime;
	return ENOTSUP;
}

int tidmutex_trylock(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

int tidmutex_unlock(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

int tidmutex_check_owner(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}

unsigned tidmutex_release_for_wait(struct wmutex *w)
{
	(void)w;
	return 0;
}

int tidmutex_reacquire_after_wait(struct wmutex *w, unsigned depth)
{
	(void)w, (void)depth;
	return ENOTSUP;
}

int tidmutex_destroy(struct wmutex *w)
{
	(void)w;
	return 0;
}

int tidmutex_consistent(struct wmutex *w)
{
	(void)w;
	return ENOTSUP;
}
