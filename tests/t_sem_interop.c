/* weft <-> glibc interoperation of semaphores.  This process (weft)
   starts a peer that is a plain glibc process: the preload build of this
   same test, executed without LD_PRELOAD (the peer proves weft is
   absent).  They ping-pong, each side blocking in turn, through
     1. two unnamed process-shared semaphores in a shared memfd mapping;
     2. a named semaphore created by weft and one created by glibc;
   then both increment a counter under one spin lock at the same time.
   Every wait has a deadline, so a lost wake-up fails instead of
   hanging. */
#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

enum { ROUNDS = 20000, NAMED_ROUNDS = 5000, BULK = 1000, SPINS = 200000 };

struct area {
	sem_t ping, pong, bulk, go;
	pthread_spinlock_t spin; /* glibc's encoding too: 0 free, 1 held */
	long counter;
};

/* Both processes at once: a non-atomic increment under the spin lock. */
static void spin_count(struct area *m)
{
	for (int i = 0; i < SPINS; i++) {
		pthread_spin_lock(&m->spin);
		m->counter = m->counter + 1;
		pthread_spin_unlock(&m->spin);
	}
}

static struct timespec deadline(int s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += s;
	return ts;
}

/* Waits with a 20 s deadline; 0 or the error number. */
static int wait20(sem_t *s)
{
	struct timespec ts = deadline(20);

	while (sem_timedwait(s, &ts) != 0)
		if (errno != EINTR)
			return errno;
	return 0;
}

static int peer(int fd, const char *name_weft, const char *name_glibc)
{
	struct area *m;
	sem_t *a, *b;
	int v;

	if (weft_active) {
		fprintf(stderr, "peer: expected plain glibc, got libweft\n");
		return 2;
	}
	alarm(60); /* the spin phase has no deadline of its own */
	m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b = sem_open(name_glibc, O_CREAT | O_EXCL, 0600, 0);
	a = sem_open(name_weft, 0);
	if (m == MAP_FAILED || a == SEM_FAILED || b == SEM_FAILED) {
		fprintf(stderr, "peer: set-up failed: %s\n", strerror(errno));
		return 3;
	}
	for (int i = 0; i < ROUNDS; i++) {
		if (wait20(&m->ping))
			return 4;
		sem_post(&m->pong);
	}
	for (int i = 0; i < NAMED_ROUNDS; i++) {
		if (wait20(a))
			return 5;
		sem_post(b);
	}
	/* weft posted BULK units on bulk before the named rounds. */
	for (int i = 0; i < BULK; i++)
		if (sem_trywait(&m->bulk) != 0)
			return 6;
	if (sem_trywait(&m->bulk) == 0 || errno != EAGAIN)
		return 7;
	sem_post(&m->go);
	spin_count(m);
	sem_getvalue(&m->pong, &v);
	sem_close(a);
	sem_close(b);
	return v == 0 ? 0 : 8;
}

/* The preload build of this test: what the peer runs. */
static void peer_path(char *out, size_t size)
{
	char self[4096], *p;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	REQUIRE(n > 0, "readlink /proc/self/exe");
	self[n] = 0;
	p = strstr(self, "/linked/");
	if (p)
		snprintf(out, size, "%.*s/preload/%s", (int)(p - self), self,
			 p + strlen("/linked/"));
	else
		snprintf(out, size, "%s", self);
}

extern char **environ;

static pid_t start_peer(int fd, const char *na, const char *nb)
{
	char path[4096], fds[16];
	char *argv[] = {path, "peer", fds, (char *)na, (char *)nb, NULL};
	char *env[256];
	int k = 0;
	pid_t pid;

	peer_path(path, sizeof path);
	snprintf(fds, sizeof fds, "%d", fd);
	for (char **e = environ; *e && k < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			env[k++] = *e;
	env[k] = NULL;
	pid = fork();
	if (pid == 0) {
		execve(path, argv, env);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	char na[64], nb[64];
	struct area *m;
	sem_t *a, *b;
	int fd, status;
	pid_t pid;

	if (argc == 5 && strcmp(argv[1], "peer") == 0)
		return peer(atoi(argv[2]), argv[3], argv[4]);

	WEFT_REQUIRE();
	alarm(60); /* the spin phase has no deadline of its own */
	REQUIRE_SERVED(sem_post);
	REQUIRE_SERVED(sem_timedwait);
	REQUIRE_SERVED(sem_open);
	REQUIRE_SERVED(pthread_spin_lock);

	fd = memfd_create("weft-sem-interop", 0); /* inherited by the peer */
	REQUIRE(fd >= 0 && ftruncate(fd, sizeof *m) == 0, "memfd");
	m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(m != MAP_FAILED, "mmap");
	CHECK_ERR(sem_init(&m->ping, 1, 0), 0);
	CHECK_ERR(sem_init(&m->pong, 1, 0), 0);
	CHECK_ERR(sem_init(&m->bulk, 1, 0), 0);
	CHECK_ERR(sem_init(&m->go, 1, 0), 0);
	CHECK_ERR(pthread_spin_init(&m->spin, PTHREAD_PROCESS_SHARED), 0);
	snprintf(na, sizeof na, "/weft-interop-w-%d", (int)getpid());
	snprintf(nb, sizeof nb, "/weft-interop-g-%d", (int)getpid());
	sem_unlink(na);
	sem_unlink(nb);
	a = sem_open(na, O_CREAT | O_EXCL, 0600, 0);
	REQUIRE(a != SEM_FAILED, "sem_open: %s", strerror(errno));

	pid = start_peer(fd, na, nb);
	REQUIRE(pid > 0, "fork");
	for (int i = 0; i < ROUNDS; i++) {
		sem_post(&m->ping);
		int e = wait20(&m->pong);
		REQUIRE(e == 0, "round %d: pong wait: %s", i, strerror(e));
	}
	for (int i = 0; i < BULK; i++)
		sem_post(&m->bulk);
	b = sem_open(nb, 0); /* the peer made it before its first pong */
	REQUIRE(b != SEM_FAILED, "sem_open of glibc's: %s", strerror(errno));
	for (int i = 0; i < NAMED_ROUNDS; i++) {
		sem_post(a);
		int e = wait20(b);
		REQUIRE(e == 0, "named round %d: %s", i, strerror(e));
	}
	REQUIRE(wait20(&m->go) == 0, "peer never reached the spin phase");
	spin_count(m);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK_EQ(m->counter, 2L * SPINS);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "peer: status 0x%x", status);
	CHECK_ERR(sem_close(a), 0);
	CHECK_ERR(sem_close(b), 0);
	CHECK_ERR(sem_unlink(na), 0);
	CHECK_ERR(sem_unlink(nb), 0);
	printf("%d unnamed and %d named ping-pong rounds, %d spin-locked "
	       "increments each, with a glibc peer\n",
	       ROUNDS, NAMED_ROUNDS, SPINS);
	TEST_DONE();
}
