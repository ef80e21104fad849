/* Named semaphores: the same files and creation protocol as glibc, so
   weft and glibc processes open the same semaphore by name.

   A name "/x" lives in /dev/shm/sem.x, a file holding one sem_t that
   every user maps MAP_SHARED.  A creator never exposes a half-made file:
   it writes the initial sem_t into a fresh temporary file
   /dev/shm/sem.XXXXXX, maps it, and link()s it to the final name, which
   fails with EEXIST if somebody else won; then it unlinks the temporary
   name.  Without O_EXCL an existing file is simply opened.

   Within one process each (device, inode, name) is mapped once: opening
   it again returns the same address and counts a reference, and
   sem_close unmaps on the last one (as glibc does). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/single.h"
#include "core/lock.h"
#include "sem.h"

#define SHM_DIR "/dev/shm/"
#define SEM_PREFIX "sem."
#define TEMP_TRIES 50

struct mapping {
	struct mapping *next;
	dev_t dev;
	ino_t ino;
	int refs;
	sem_t *sem;
	char name[];
};

static struct mapping *mappings;
static weft_lock_t mappings_lock = WEFT_LOCK_INIT;

/* fork: the list must not be caught half-changed, nor its lock held by
   a thread that does not exist in the child.  With one thread no other
   thread can hold it, and the lock is left alone, as core/fork.c does
   with its own: a write in the parent's handlers, or in the child's, is
   a page copied at every fork (issue 16), and a fork from a signal
   handler must not wait for a lock its own thread holds. */
static int fork_locked;

void sem_named_fork_prepare(void)
{
	int lock = !host_single_threaded();

	if (fork_locked != lock)
		fork_locked = lock;
	if (lock)
		weft_lock(&mappings_lock);
}

void sem_named_fork_parent(void)
{
	if (fork_locked)
		weft_unlock(&mappings_lock);
}

void sem_named_fork_child(void)
{
	if (fork_locked)
		weft_lock_reset(&mappings_lock);
}

/* "/dev/shm/sem.NAME" for a name with optional leading slashes and no
   other slash; 0, or -1 for an invalid name. */
static int shm_path(char *out, size_t size, const char *name)
{
	while (*name == '/')
		name++;
	if (!*name || strchr(name, '/'))
		return -1;
	if ((size_t)snprintf(out, size, "%s%s%s", SHM_DIR, SEM_PREFIX, name) >=
	    size)
		return -1;
	return 0;
}

/* Returns the process's mapping of the open file `fd` (adding a
   reference), installing `mine` (or a new mapping) when there is none.
   An unused `mine` is unmapped. */
static sem_t *adopt_mapping(const char *name, int fd, sem_t *mine, int *err)
{
	struct stat st;
	struct mapping *m;
	sem_t *res = SEM_FAILED;

	if (fstat(fd, &st) != 0) {
		*err = errno;
		goto out;
	}
	weft_lock(&mappings_lock);
	for (m = mappings; m; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino &&
		    strcmp(m->name, name) == 0)
			break;
	if (m) {
		m->refs++;
		res = m->sem;
	} else if ((m = malloc(sizeof *m + strlen(name) + 1)) == NULL) {
		*err = ENOMEM;
	} else {
		if (mine == SEM_FAILED) {
			void *p = mmap(NULL, sizeof(sem_t),
				       PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			mine = p == MAP_FAILED ? SEM_FAILED : p;
		}
		if (mine == SEM_FAILED) {
			*err = errno;
			free(m);
		} else {
			m->dev = st.st_dev;
			m->ino = st.st_ino;
			m->refs = 1;
			m->sem = res = mine;
			strcpy(m->name, name);
			m->next = mappings;
			mappings = m;
		}
	}
	weft_unlock(&mappings_lock);
out:
	if (mine != SEM_FAILED && mine != res)
		munmap(mine, sizeof(sem_t));
	return res;
}

/* An unguessable-enough temporary name in the same directory. */
static void temp_name(char *buf, size_t size)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	char tail[7];

	if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) {
		unsigned long x = (unsigned long)clock() ^
				  ((unsigned long)getpid() << 16) ^
				  (unsigned long)(uintptr_t)buf;
		for (int i = 0; i < 6; i++, x /= 62)
			rnd[i] = (unsigned char)x;
	}
	for (int i = 0; i < 6; i++)
		tail[i] = digits[rnd[i] % 62];
	tail[6] = 0;
	snprintf(buf, size, "%s%s%s", SHM_DIR, SEM_PREFIX, tail);
}

/* Creates the file under `path` with an initial semaphore of `value`.
   Returns the mapping, or SEM_FAILED with *err (EEXIST when the name
   already exists). */
static sem_t *create(const char *name, const char *path, unsigned mode,
		     unsigned value, int *err)
{
	char tmp[sizeof SHM_DIR + sizeof SEM_PREFIX + 8];
	union {
		sem_t sem;
		struct weft_sem w;
	} init;
	sem_t *res = SEM_FAILED;
	void *p;
	int fd = -1;

	/* Checked only when creating, as glibc: opening an existing
	   semaphore ignores the value. */
	if (value > SEM_VALUE_MAX) {
		*err = EINVAL;
		return SEM_FAILED;
	}
	memset(&init, 0, sizeof init);
	sem_setup(&init.w, value, 1);
	for (int tries = 0; fd < 0; tries++) {
		if (tries == TEMP_TRIES) {
			*err = EAGAIN;
			return SEM_FAILED;
		}
		temp_name(tmp, sizeof tmp);
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST) {
			*err = errno;
			return SEM_FAILED;
		}
	}
	if (write(fd, &init.sem, sizeof init.sem) != sizeof init.sem) {
		*err = errno ? errno : EIO;
		goto out;
	}
	p = mmap(NULL, sizeof(sem_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		*err = errno;
		goto out;
	}
	if (link(tmp, path) != 0) {
		*err = errno;
		munmap(p, sizeof(sem_t));
		goto out;
	}
	res = adopt_mapping(name, fd, p, err);
out:
	unlink(tmp);
	close(fd);
	return res;
}

sem_t *sem_named_open(const char *name, int oflag, unsigned mode,
		      unsigned value, int *err)
{
	char path[sizeof SHM_DIR + sizeof SEM_PREFIX + NAME_MAX];
	sem_t *res;
	int fd, excl = (oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);

	if (shm_path(path, sizeof path, name) != 0) {
		*err = EINVAL;
		return SEM_FAILED;
	}
	for (;;) {
		if (!excl) {
			fd = open(path,
				  (oflag & ~(O_CREAT | O_ACCMODE)) | O_NOFOLLOW |
					  O_RDWR | O_CLOEXEC);
			if (fd >= 0) {
				res = adopt_mapping(name, fd, SEM_FAILED, err);
				close(fd);
				return res;
			}
			if (!(oflag & O_CREAT) || errno != ENOENT) {
				*err = errno;
				return SEM_FAILED;
			}
		}
		res = create(name, path, mode, value, err);
		/* Lost a creation race without O_EXCL: open the winner's. */
		if (res != SEM_FAILED || excl || *err != EEXIST)
			return res;
	}
}

int sem_named_close(sem_t *sem)
{
	struct mapping **pp, *m = NULL;
	int ret = EINVAL;

	weft_lock(&mappings_lock);
	for (pp = &mappings; *pp; pp = &(*pp)->next)
		if ((*pp)->sem == sem) {
			m = *pp;
			break;
		}
	if (m) {
		ret = 0;
		if (--m->refs == 0) {
			*pp = m->next;
			if (munmap(m->sem, sizeof(sem_t)) != 0)
				ret = EINVAL;
			free(m);
		}
	}
	weft_unlock(&mappings_lock);
	return ret;
}

int sem_named_unlink(const char *name)
{
	char path[sizeof SHM_DIR + sizeof SEM_PREFIX + NAME_MAX];

	if (shm_path(path, sizeof path, name) != 0)
		return ENOENT;
	if (unlink(path) != 0)
		return errno == EPERM ? EACCES : errno;
	return 0;
}
