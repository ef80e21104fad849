/* Sleeping cancellation points: nanosleep, clock_nanosleep, sleep,
   usleep, pause.  See cp.h. */
#include <time.h>
#include <unistd.h>

#include "cp.h"

/* The kernel's name of the calling process's CPU-time clock (what
   glibc's clock_nanosleep substitutes for CLOCK_PROCESS_CPUTIME_ID):
   pid 0, "scheduler time". */
#define PROCESS_CPUCLOCK_SCHED ((clockid_t)((~0U << 3) | 2))

/* Returns an error number, not -1/errno (POSIX). */
static int do_clock_nanosleep(clockid_t clock, int flags,
			      const struct timespec *req, struct timespec *rem)
{
	long r;

	if (clock == CLOCK_THREAD_CPUTIME_ID)
		return EINVAL;
	if (clock == CLOCK_PROCESS_CPUTIME_ID)
		clock = PROCESS_CPUCLOCK_SCHED;
	r = cp_sys4(SYS_clock_nanosleep, clock, flags, req, rem);
	return r < 0 ? (int)-r : 0;
}

WEFT_EXPORT int clock_nanosleep(clockid_t clock, int flags,
				const struct timespec *req, struct timespec *rem)
{
	if (!cp_serving())
		return GLIBC_FN(clock_nanosleep)(clock, flags, req, rem);
	return do_clock_nanosleep(clock, flags, req, rem);
}

WEFT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	int err;

	if (!cp_serving())
		return GLIBC_FN(nanosleep)(req, rem);
	err = do_clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* Interrupted: the whole seconds not yet slept (glibc rounds down);
   errno is left as it was on success. */
WEFT_EXPORT unsigned int sleep(unsigned int seconds)
{
	struct timespec ts = {.tv_sec = seconds, .tv_nsec = 0};
	int saved = errno;

	if (!cp_serving())
		return GLIBC_FN(sleep)(seconds);
	if (nanosleep(&ts, &ts) < 0)
		return (unsigned int)ts.tv_sec;
	errno = saved;
	return 0;
}

WEFT_EXPORT int usleep(useconds_t usec)
{
	struct timespec ts = {.tv_sec = usec / 1000000,
			      .tv_nsec = (long)(usec % 1000000) * 1000};

	if (!cp_serving())
		return GLIBC_FN(usleep)(usec);
	return nanosleep(&ts, NULL);
}

WEFT_EXPORT int pause(void)
{
	if (!cp_serving())
		return GLIBC_FN(pause)();
	return (int)cp_ret(cp_sys0(SYS_pause));
}
