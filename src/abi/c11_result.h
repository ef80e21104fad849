/* C11 threads report results, not error numbers: glibc's mapping of the
   POSIX error numbers to them, shared by the thrd, mtx and cnd calls. */
#ifndef WEFT_ABI_C11_RESULT_H
#define WEFT_ABI_C11_RESULT_H

#include <errno.h>
#include <threads.h>

static inline int c11_result(int err)
{
	switch (err) {
	case 0:
		return thrd_success;
	case ENOMEM:
		return thrd_nomem;
	case ETIMEDOUT:
		return thrd_timedout;
	case EBUSY:
		return thrd_busy;
	default:
		return thrd_error;
	}
}

#endif
