/* The count of yielding waiters (see yield_wait.h). */
#include "yield_wait.h"

struct yield_waiters yield_waiters;
