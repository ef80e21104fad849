/* Barriers (pthread_barrier_t); protocol in barrier.c. */
#ifndef WEFT_SYNC_BARRIER_H
#define WEFT_SYNC_BARRIER_H

#include <pthread.h>

int barrier_init(pthread_barrier_t *b, unsigned count, int pshared);
int barrier_wait(pthread_barrier_t *b);
int barrier_destroy(pthread_barrier_t *b);

#endif
