/* Spin locks (pthread_spinlock_t); see spin.c. */
#ifndef WEFT_SYNC_SPIN_H
#define WEFT_SYNC_SPIN_H

#include <pthread.h>

void spin_init(pthread_spinlock_t *l);
int spin_lock(pthread_spinlock_t *l);
int spin_trylock(pthread_spinlock_t *l);
int spin_unlock(pthread_spinlock_t *l);

#endif
