/* pthread_equal and thrd_equal, out of line for programs that do not use the header's
   inline version.  <pthread.h> and <threads.h> are not included on purpose: with
   optimisation it supplies its own inline definition of this function,
   which would clash with this one. */
#define WEFT_EXPORT __attribute__((visibility("default")))

WEFT_EXPORT int pthread_equal(unsigned long a, unsigned long b)
{
	return a == b;
}

WEFT_EXPORT int thrd_equal(unsigned long a, unsigned long b)
{
	return a == b;
}
