/* The count of yielding waiters and their clock (see yield_wait.h). */
#include <time.h>
#include "yield_wait.h"

struct yield_waiters yield_waiters;

long yield_wait_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}
