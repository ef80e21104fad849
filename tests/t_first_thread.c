/* Issue 16: weft costs nothing until the first thread, and that first
   thread is whole.  Before any thread:
     - /proc/self/task has one entry, and glibc is still in its
       single-threaded mode (__libc_single_threaded);
     - /proc/self/maps is glibc's: against the same program without
       weft (the plain build, run without LD_PRELOAD), no more address
       space besides what loading weft maps (libweft.so
       and no libgcc_s.so.1: weft loads it when something first
       unwinds), no more anonymous mappings nor anonymous memory,
       the same heap (no thread stack, arena or table of weft's);
     - mutexes locked and unlocked 10,000 times (and one left held) are
       consistent;
     - a fork child and a dlopen'd module work.
   Then the first pthread_create (with a pthread_cleanup_push active in
   main) gives a weft thread in which stdio, malloc, TLS (static and the
   dlopen'd module's), cancellation and cleanup handlers work, and the
   mutex locked with one thread is taken over correctly: the new thread
   blocks on it until main unlocks it.

   With WEFT_FIRST_THREAD_MAPS=1 the program only prints its maps summary
   (the baseline run). */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

/* --- maps and tasks -------------------------------------------------- */

static int task_count(void)
{
	char buf[4096];
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY), n = 0;
	long got;

	REQUIRE(fd >= 0, "open(/proc/self/task): %s", strerror(errno));
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < got;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *name = buf + off + 19;

			if (name[0] != '.')
				n++;
			off += reclen;
		}
	}
	close(fd);
	return n;
}

/* The mappings, summed: everything (KiB), the objects loading weft
   brings (libweft.so alone: libgcc_s.so.1 waits for the first unwind,
   as under glibc) with the .bss mapping right after
   them (KiB; the loader may place a small mapping of its own there,
   which then merges into it), the other anonymous mappings (count,
   KiB) and the heap (KiB).  [vsyscall] is left out. */
struct maps {
	unsigned long vm_kib, weft_kib, anon, anon_kib, heap_kib;
};

static void maps_read(struct maps *m)
{
	char line[PATH_MAX + 128];
	unsigned long lo, hi, prev_weft_end = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	REQUIRE(f, "reading /proc/self/maps failed");
	memset(m, 0, sizeof *m);
	while (fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/'), *br = strchr(line, '[');
		unsigned long kib;

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 ||
		    (br && strstr(br, "[vsyscall]")))
			continue;
		kib = (hi - lo) / 1024;
		m->vm_kib += kib;
		if (path && strstr(path, "libweft")) {
			m->weft_kib += kib;
			prev_weft_end = hi;
			continue;
		}
		if (!path && !br && lo == prev_weft_end) {
			m->weft_kib += kib; /* their .bss */
		} else if (!path && !br) {
			m->anon++;
			m->anon_kib += kib;
		} else if (br && strstr(br, "[heap]")) {
			m->heap_kib += kib;
		}
		prev_weft_end = 0;
	}
	fclose(f);
}

static const char *maps_text(const struct maps *m)
{
	static char buf[160];

	snprintf(buf, sizeof buf, "%lu %lu %lu %lu %lu", m->vm_kib, m->weft_kib,
		 m->anon, m->anon_kib, m->heap_kib);
	return buf;
}

/* The same program without weft: the plain build (build/tests/preload)
   run without LD_PRELOAD, printing its summary. */
static void baseline_maps(struct maps *m)
{
	char out[160];
	size_t size = sizeof out;
	char exe[PATH_MAX], *slash;
	char *argv[2], *envp[2] = {"WEFT_FIRST_THREAD_MAPS=1", NULL};
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
	int pipefd[2], status;
	posix_spawn_file_actions_t fa;
	pid_t pid;

	REQUIRE(n > 0, "readlink(/proc/self/exe) failed");
	exe[n] = 0;
	slash = strrchr(exe, '/');
	*slash = 0;
	slash = strrchr(exe, '/');
	REQUIRE(slash && (!strcmp(slash, "/linked") || !strcmp(slash, "/preload")),
		"unexpected test directory %s", exe);
	strcpy(slash, "/preload/t_first_thread");
	argv[0] = exe;
	argv[1] = NULL;
	REQUIRE(pipe(pipefd) == 0, "pipe failed");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	REQUIRE(posix_spawn(&pid, exe, &fa, NULL, argv, envp) == 0,
		"posix_spawn(%s) failed", exe);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	n = read(pipefd[0], out, size - 1);
	close(pipefd[0]);
	out[n > 0 ? n : 0] = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			WEXITSTATUS(status) == 0,
		"the baseline run failed (status %#x)", status);
	REQUIRE(sscanf(out, "%lu %lu %lu %lu %lu", &m->vm_kib, &m->weft_kib,
		       &m->anon, &m->anon_kib, &m->heap_kib) == 5,
		"the baseline run printed \"%s\"", out);
}

/* --- the first thread ------------------------------------------------ */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage, took_held, cleanup_ran, main_cleanup_ran;
static __thread int tls_word = 42;
static int (*mod_get)(void);
static void (*mod_set)(int);

static void cleanup(void *arg)
{
	*(int *)arg = 1;
}

static void *first(void *arg)
{
	char buf[64];
	FILE *mem;
	char *p, *memtext = NULL;
	size_t memlen = 0;
	int fds[2];

	(void)arg;
	CHECK_WEFT_THREAD();
	CHECK(!__libc_single_threaded, "glibc still single-threaded in a thread");
	/* TLS: a fresh copy of the initial image; the module's too. */
	CHECK_EQ(tls_word, 42);
	tls_word = 7;
	CHECK_EQ(mod_get(), 7); /* libtlsmod's initial value */
	mod_set(99);
	CHECK_EQ(mod_get(), 99);
	/* malloc and stdio */
	p = malloc(100000);
	CHECK(p != NULL, "malloc in the first thread failed");
	memset(p, 1, 100000);
	free(p);
	mem = open_memstream(&memtext, &memlen);
	CHECK(mem != NULL, "open_memstream failed");
	fprintf(mem, "thread %d", 5);
	fclose(mem);
	CHECK(memtext && !strcmp(memtext, "thread 5"), "stdio gave %s",
	      memtext ? memtext : "(null)");
	free(memtext);
	snprintf(buf, sizeof buf, "%.1f", 2.5);
	CHECK(!strcmp(buf, "2.5"), "snprintf gave %s", buf);
	/* The mutex main locked while alone: taken once main lets it go. */
	pthread_mutex_lock(&mu);
	stage = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_mutex_lock(&held);
	took_held = 1;
	pthread_mutex_unlock(&held);
	/* Cancellation at a cancellation point, with a cleanup handler. */
	REQUIRE(pipe(fds) == 0, "pipe failed");
	pthread_cleanup_push(cleanup, &cleanup_ran);
	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	for (;;)
		(void)read(fds[0], buf, 1); /* cancelled here */
	pthread_cleanup_pop(0);
	return NULL;
}

static void wait_stage(int s)
{
	pthread_mutex_lock(&mu);
	while (stage < s)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

int main(void)
{
	char path[PATH_MAX], *slash;
	struct maps mine, base;
	pthread_mutex_t many[16];
	pthread_t th;
	void *res, *mod;
	int status;
	pid_t pid;

	if (getenv("WEFT_FIRST_THREAD_MAPS")) {
		free(malloc(64)); /* the heap exists in both runs */
		maps_read(&mine);
		printf("%s\n", maps_text(&mine));
		return 0;
	}
	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_mutex_lock);
	free(malloc(64));

	/* No thread, no mapping of weft's before the first thread. */
	CHECK_EQ(task_count(), 1);
	CHECK(__libc_single_threaded, "glibc left single-threaded mode at load");
	maps_read(&mine);
	baseline_maps(&base);
	printf("maps (KiB all, KiB libweft, anonymous count, KiB, "
	       "heap KiB): glibc %s", maps_text(&base));
	printf(", weft %s\n", maps_text(&mine));
	CHECK(base.weft_kib == 0, "the baseline run has weft's objects mapped");
	CHECK(mine.vm_kib - mine.weft_kib <= base.vm_kib,
	      "address space besides weft's own objects: expected at most "
	      "glibc's %lu KiB, got %lu KiB", base.vm_kib,
	      mine.vm_kib - mine.weft_kib);
	CHECK(mine.anon <= base.anon && mine.anon_kib <= base.anon_kib,
	      "anonymous mappings: expected at most glibc's %lu (%lu KiB), got "
	      "%lu (%lu KiB)", base.anon, base.anon_kib, mine.anon, mine.anon_kib);
	CHECK(mine.heap_kib == base.heap_kib, "heap: expected glibc's %lu KiB, "
	      "got %lu KiB", base.heap_kib, mine.heap_kib);

	/* 10,000 mutex operations, one mutex left held. */
	for (int i = 0; i < 16; i++)
		CHECK_ERR(pthread_mutex_init(&many[i], NULL), 0);
	for (int i = 0; i < 10000; i++) {
		CHECK_ERR(pthread_mutex_lock(&many[i % 16]), 0);
		CHECK_ERR(pthread_mutex_unlock(&many[i % 16]), 0);
	}
	CHECK_ERR(pthread_mutex_trylock(&many[0]), 0);
	CHECK_ERR(pthread_mutex_trylock(&many[0]), EBUSY);
	CHECK_ERR(pthread_mutex_unlock(&many[0]), 0);
	CHECK_ERR(pthread_mutex_lock(&held), 0);

	/* A fork child that uses malloc, stdio and a mutex. */
	pid = fork();
	REQUIRE(pid >= 0, "fork failed");
	if (pid == 0) {
		char *q = malloc(4000);
		int bad = q == NULL || pthread_mutex_unlock(&held) != 0 ||
			  pthread_mutex_lock(&many[3]) != 0 ||
			  pthread_mutex_unlock(&many[3]) != 0;
		free(q);
		_exit(bad ? 3 : 0);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork child: status %#x", status);
	CHECK(__libc_single_threaded, "glibc left single-threaded mode at fork");

	/* dlopen a module with TLS of its own. */
	{
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);

		REQUIRE(n > 0, "readlink failed");
		path[n] = 0;
		slash = strrchr(path, '/');
		strcpy(slash, "/../libtlsmod.so");
	}
	mod = dlopen(path, RTLD_NOW);
	REQUIRE(mod, "dlopen(%s): %s", path, dlerror());
	mod_get = (int (*)(void))dlsym(mod, "mod_tls_get");
	mod_set = (void (*)(int))dlsym(mod, "mod_tls_set");
	REQUIRE(mod_get && mod_set, "libtlsmod's symbols not found");
	mod_set(5);
	CHECK_EQ(task_count(), 1);
	CHECK(__libc_single_threaded, "glibc left single-threaded mode at dlopen");

	/* The first thread, made inside a cleanup region of main. */
	pthread_cleanup_push(cleanup, &main_cleanup_ran);
	CHECK_ERR(pthread_create(&th, NULL, first, NULL), 0);
	CHECK(!__libc_single_threaded, "glibc single-threaded after pthread_create");
	wait_stage(1);
	CHECK_EQ(took_held, 0);
	CHECK_ERR(pthread_mutex_unlock(&held), 0);
	wait_stage(2);
	CHECK_ERR(pthread_cancel(th), 0);
	CHECK_ERR(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED, "join: expected PTHREAD_CANCELED, got %p", res);
	CHECK_EQ(cleanup_ran, 1);
	CHECK_EQ(took_held, 1);
	CHECK_EQ(mod_get(), 5); /* main's own copy */
	CHECK_EQ(tls_word, 42);
	pthread_cleanup_pop(1);
	CHECK_EQ(main_cleanup_ran, 1);
	TEST_DONE();
}
