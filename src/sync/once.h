/* pthread_once; see once.c. */
#ifndef WEFT_SYNC_ONCE_H
#define WEFT_SYNC_ONCE_H

#include <pthread.h>

#define ONCE_DONE 2

/* Called when the once word does not say ONCE_DONE. */
int once_slow(pthread_once_t *once, void (*init)(void));
/* fork child handler (abi/atfork.c calls it). */
void once_fork_child(void);

#endif
