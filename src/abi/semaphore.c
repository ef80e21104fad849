/* POSIX semaphores: sem_* return 0, or -1 with errno set.  Unnamed ones
   are in sync/sem.c, named ones in sync/sem_named.c. */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdarg.h>

#include "kernel/futex.h"
#include "sync/sem.h"
#include "export.h"

static inline int result(int err)
{
	if (err == 0)
		return 0;
	errno = err;
	return -1;
}

WEFT_EXPORT int sem_init(sem_t *sem, int pshared, unsigned value)
{
	if (!weft_serving())
		return GLIBC_FN(sem_init)(sem, pshared, value);
	return result(sem_do_init(sem, pshared, value));
}

WEFT_EXPORT int sem_destroy(sem_t *sem)
{
	if (!weft_serving())
		return GLIBC_FN(sem_destroy)(sem);
	return result(sem_do_destroy(sem));
}

WEFT_EXPORT int sem_post(sem_t *sem)
{
	if (!weft_serving())
		return GLIBC_FN(sem_post)(sem);
	return result(sem_do_post(sem));
}

WEFT_EXPORT int sem_wait(sem_t *sem)
{
	if (!weft_serving())
		return GLIBC_FN(sem_wait)(sem);
	return result(sem_do_wait(sem, CLOCK_REALTIME, NULL));
}

WEFT_EXPORT int sem_trywait(sem_t *sem)
{
	if (!weft_serving())
		return GLIBC_FN(sem_trywait)(sem);
	return result(sem_do_trywait(sem));
}

/* The deadline is checked before the semaphore is looked at, as glibc. */
WEFT_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(sem_timedwait)(sem, abstime);
	if (futex_abstime_check(CLOCK_REALTIME, abstime))
		return result(EINVAL);
	return result(sem_do_wait(sem, CLOCK_REALTIME, abstime));
}

WEFT_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock,
			      const struct timespec *abstime)
{
	if (!weft_serving())
		return GLIBC_FN(sem_clockwait)(sem, clock, abstime);
	if (futex_abstime_check(clock, abstime))
		return result(EINVAL);
	return result(sem_do_wait(sem, clock, abstime));
}

WEFT_EXPORT int sem_getvalue(sem_t *restrict sem, int *restrict sval)
{
	if (!weft_serving())
		return GLIBC_FN(sem_getvalue)(sem, sval);
	return result(sem_do_getvalue(sem, sval));
}

/* Cancellation is disabled meanwhile (open is a cancellation point), so
   a cancelled caller leaves no temporary file and no half-made entry. */
WEFT_EXPORT sem_t *sem_open(const char *name, int oflag, ...)
{
	unsigned mode = 0, value = 0;
	int err = 0, state;
	sem_t *s;

	if (oflag & O_CREAT) {
		va_list ap;

		va_start(ap, oflag);
		mode = va_arg(ap, unsigned);
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	if (!weft_serving())
		return GLIBC_FN(sem_open)(name, oflag, mode, value);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	s = sem_named_open(name, oflag, mode, value, &err);
	pthread_setcancelstate(state, NULL);
	if (s == SEM_FAILED)
		errno = err;
	return s;
}

WEFT_EXPORT int sem_close(sem_t *sem)
{
	if (!weft_serving())
		return GLIBC_FN(sem_close)(sem);
	return result(sem_named_close(sem));
}

WEFT_EXPORT int sem_unlink(const char *name)
{
	if (!weft_serving())
		return GLIBC_FN(sem_unlink)(name);
	return result(sem_named_unlink(name));
}
