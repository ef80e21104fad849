/* POSIX semaphores in glibc's layout and futex protocol (sem.c), and the
   named ones (sem_named.c).  Functions return 0 or an error number; the
   entry points turn that into -1 and errno. */
#ifndef WEFT_SYNC_SEM_H
#define WEFT_SYNC_SEM_H

#include <semaphore.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

/* glibc 2.36's struct new_sem on x86-64. */
struct weft_sem {
	uint64_t data; /* value in bits 0..31, waiters in bits 32..63 */
	int private;   /* glibc's FUTEX_PRIVATE (0) or FUTEX_SHARED (128) */
	int pad;
};

#define SEM_GLIBC_PRIVATE 0
#define SEM_GLIBC_SHARED 128

void sem_setup(struct weft_sem *s, unsigned value, int shared);
int sem_do_init(sem_t *sem, int pshared, unsigned value);
int sem_do_destroy(sem_t *sem);
int sem_do_post(sem_t *sem);
int sem_do_trywait(sem_t *sem);
/* abstime NULL: wait forever. */
int sem_do_wait(sem_t *sem, clockid_t clock, const struct timespec *abstime);
int sem_do_getvalue(sem_t *sem, int *out);

/* sem_named.c: on failure return SEM_FAILED with *err set. */
sem_t *sem_named_open(const char *name, int oflag, unsigned mode,
		      unsigned value, int *err);
int sem_named_close(sem_t *sem);
int sem_named_unlink(const char *name);
/* fork handlers of the named-semaphore list (abi/atfork.c calls them). */
void sem_named_fork_prepare(void);
void sem_named_fork_parent(void);
void sem_named_fork_child(void);

#endif
