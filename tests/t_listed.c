/* weft threads take part in glibc's process-wide thread operations:
   - set*id: setresuid/setresgid called in one thread change the
     credentials of every thread (the kernel keeps them per thread; glibc
     signals each thread it knows to repeat the call);
   - a module with initial-exec TLS dlopen()ed after threads started has
     its TLS initialised in those threads.
   Both fail if weft threads are invisible to glibc. */
#include <dlfcn.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

#define N 4
static pthread_barrier_t ready, go, done;
static int uid_seen[N + 1], gid_seen[N + 1], ie_seen[N];
static int (*ie_get)(void);

/* Real and effective uid of the calling thread, from the kernel. */
static void own_ids(int *uid, int *gid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/status", gettid());
	f = fopen(path, "r");
	*uid = *gid = -1;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		sscanf(line, "Uid: %d", uid);
		sscanf(line, "Gid: %d", gid);
	}
	fclose(f);
}

static void *sleeper(void *arg)
{
	long i = (long)arg;

	CHECK_WEFT_THREAD();
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go); /* main changes ids and dlopens here */
	own_ids(&uid_seen[i], &gid_seen[i]);
	ie_seen[i] = ie_get ? ie_get() : -1;
	pthread_barrier_wait(&done);
	return NULL;
}

static void *changer(void *arg)
{
	(void)arg;
	/* From a weft thread this time: main must follow too. */
	if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
		return (void *)1;
	return NULL;
}

static int scenario(void)
{
	pthread_t t[N], c;
	void *r;
	char lib[PATH_MAX], *slash;
	void *h;

	pthread_barrier_init(&ready, NULL, N + 1);
	pthread_barrier_init(&go, NULL, N + 1);
	pthread_barrier_init(&done, NULL, N + 1);
	for (long i = 0; i < N; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, sleeper, (void *)i), 0);
	pthread_barrier_wait(&ready);

	/* All threads exist; now change ids (from another weft thread) and
	   load the initial-exec TLS module. */
	CHECK_ERR(pthread_create(&c, NULL, changer, NULL), 0);
	CHECK_ERR(pthread_join(c, &r), 0);
	CHECK(r == NULL, "setresuid/setresgid failed in a weft thread");
	ssize_t n = readlink("/proc/self/exe", lib, sizeof lib - 32);
	REQUIRE(n > 0, "readlink /proc/self/exe failed");
	lib[n] = 0;
	slash = strrchr(lib, '/');
	*slash = 0;
	slash = strrchr(lib, '/');
	strcpy(slash, "/libietls.so");
	h = dlopen(lib, RTLD_NOW);
	REQUIRE(h != NULL, "dlopen %s: %s", lib, dlerror());
	ie_get = (int (*)(void))dlsym(h, "ie_get");
	REQUIRE(ie_get != NULL, "ie_get not found");

	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	for (int i = 0; i < N; i++)
		CHECK_ERR(pthread_join(t[i], NULL), 0);
	own_ids(&uid_seen[N], &gid_seen[N]);
	for (int i = 0; i <= N; i++) {
		CHECK_EQ(uid_seen[i], 65534);
		CHECK_EQ(gid_seen[i], 65534);
	}
	for (int i = 0; i < N; i++)
		CHECK_EQ(ie_seen[i], 42);
	return harness_failures ? 1 : 0;
}

int main(void)
{
	int st;
	pid_t p;

	WEFT_REQUIRE();
	if (geteuid() != 0) {
		/* Without root the uid part cannot run; still check TLS. */
		fprintf(stderr, "not root: the set*id part needs root\n");
		return 1;
	}
	p = fork(); /* the credential change must not outlive the test */
	REQUIRE(p >= 0, "fork failed");
	if (p == 0)
		_exit(scenario());
	REQUIRE(waitpid(p, &st, 0) == p, "waitpid failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child: expected exit 0, got status 0x%x", st);
	TEST_DONE();
}
