/* How weft's blocking calls are cancellation points, in one place,
   because issue 5 replaces the mechanism.

   Until then cancellation is glibc's: pthread_cancel on a thread whose
   type is deferred only sets a flag, and sends the cancellation signal
   only when the target's type is asynchronous.  So a blocking call
   switches to the asynchronous type around the one system call that
   sleeps (as glibc's own cancellation points do), and undoes its
   bookkeeping in a cleanup handler when the signal unwinds it.  A file
   using this must be compiled with -fexceptions (see the Makefile). */
#ifndef WEFT_SYNC_CANCEL_POINT_H
#define WEFT_SYNC_CANCEL_POINT_H

#include <pthread.h>

/* Acts on a pending cancellation at once (by unwinding). */
static inline int cancel_point_begin(void)
{
	int old;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	return old;
}

static inline void cancel_point_end(int old)
{
	int ignored;

	pthread_setcanceltype(old, &ignored);
}

#endif
