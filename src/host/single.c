/* The flag of host/single.h that weft keeps itself: whether its clone()
   has made a thread that glibc's __libc_single_threaded does not show. */
#include "single.h"

int host_foreign_thread;
