/* Issue 16 and the lazy start-up: a process's first call into weft may
   come from a signal handler that interrupted malloc or the dynamic
   linker.  Then neither the first interposed cancellation point (write)
   nor start-up itself (pthread_self, the first call that needs weft)
   may call malloc or dlsym (dlsym takes the loader's lock and may
   malloc; neither is async-signal-safe), and both must give the right
   result.

   Each phase runs in a fork child in which nothing has called weft yet
   (the parent calls nothing of weft's before its forks): a 200 us
   interval timer interrupts a loop of malloc/free (phase "malloc") or of
   dlsym and dl_iterate_phdr (phase "loader"); the first time the
   interrupted instruction lies in libc's or ld.so's code (read from the
   signal context), the handler makes the process's first write(),
   pthread_sigmask() and fcntl(F_GETFL), and in the malloc phase its first pthread_self(),
   which runs weft's start-up in the handler.  This program interposes malloc, calloc,
   realloc, free and dlsym (exported with -rdynamic, Makefile) to count
   the calls made while the handler runs: expected none.  Bounded: each
   loop stops after 5 s without the handler's turn (a failure). */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static volatile sig_atomic_t in_handler, done;
static volatile long handler_mallocs, handler_dlsyms;

void *malloc(size_t n)
{
	if (in_handler)
		handler_mallocs++;
	return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
	if (in_handler)
		handler_mallocs++;
	return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
	if (in_handler)
		handler_mallocs++;
	return __libc_realloc(p, n);
}
void free(void *p)
{
	if (in_handler)
		handler_mallocs++;
	__libc_free(p);
}

/* glibc's dlsym (GLIBC_2.34 on x86-64 from 2.34 on) and libc's handle,
   found before the timer runs. */
static void *(*real_dlsym)(void *, const char *);
static void *libc_handle;

void *dlsym(void *h, const char *name)
{
	if (in_handler)
		handler_dlsyms++;
	/* RTLD_NEXT from libweft (the only other caller): what follows
	   libweft is libc and ld.so, libc's dependency (a lookup with
	   RTLD_NEXT from here would find libweft's own definitions). */
	return real_dlsym(h == RTLD_NEXT ? libc_handle : h, name);
}

/* The code ranges of libc and ld.so. */
struct range {
	uintptr_t lo, hi;
};
static struct range code[2];

static int note_code(struct dl_phdr_info *info, size_t sz, void *data)
{
	int *n = data;
	(void)sz;
	if (*n >= 2 || (!strstr(info->dlpi_name, "libc.so") &&
			!strstr(info->dlpi_name, "ld-linux")))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			code[*n].lo = info->dlpi_addr + ph->p_vaddr;
			code[*n].hi = code[*n].lo + ph->p_memsz;
			++*n;
			break;
		}
	}
	return 0;
}

static sigset_t chld_set;
static int pipe_w;
static ssize_t wrote = -2;
static pthread_t self_in_handler;
static int loader_phase, mask_result = -1, flags_in_handler = -1;
static sigset_t mask_in_handler;
static uintptr_t interrupted_at;

static void on_tick(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t ip = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	int saved = errno;

	(void)sig, (void)si;
	if (done)
		return;
	if (!((ip >= code[0].lo && ip < code[0].hi) ||
	      (ip >= code[1].lo && ip < code[1].hi)))
		return;
	interrupted_at = ip;
	in_handler = 1;
	wrote = write(pipe_w, "x", 1); /* the first cancellation point */
	mask_result = pthread_sigmask(SIG_BLOCK, NULL, &mask_in_handler);
	flags_in_handler = fcntl(pipe_w, F_GETFL);
	/* The first call that starts weft, in the malloc phase only: start-up
	   reads the loader's list of objects under its lock
	   (dl_iterate_phdr), which a handler that interrupted the loader on
	   its own thread would wait for for ever (docs/glibc-host.md). */
	if (!loader_phase)
		self_in_handler = pthread_self();
	in_handler = 0;
	done = 1;
	errno = saved;
}

static int count_one(struct dl_phdr_info *info, size_t sz, void *data)
{
	(void)info, (void)sz;
	++*(int *)data;
	return 0;
}

static void *thread_writes(void *arg)
{
	return (void *)(intptr_t)write(*(int *)arg, "y", 1);
}

/* One phase, in a fork child: exits 0 when every check passed. */
static int phase(int loader)
{
	struct sigaction sa;
	struct itimerval it = {{0, 200}, {0, 200}}, off;
	int fds[2], n = 0, objects = 0;
	long deadline = mono_ns() + 5000000000L, loops = 0;
	char buf[4] = {0};
	void *res = NULL;
	pthread_t t;
	Dl_info di;

	loader_phase = loader;
	dl_iterate_phdr(note_code, &n);
	REQUIRE(n == 2, "code ranges of libc and ld.so: expected 2, got %d", n);
	REQUIRE(pipe(fds) == 0, "pipe: %s", strerror(errno));
	pipe_w = fds[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (!done && mono_ns() < deadline) {
		if (loader) {
			CHECK(real_dlsym(RTLD_DEFAULT, "strlen") != NULL,
			      "dlsym(strlen) failed");
			dl_iterate_phdr(count_one, &objects);
		} else {
			void *p = malloc(16 + (size_t)(loops % 512));

			free(malloc(1000 + (size_t)(loops % 4096)));
			free(p);
		}
		loops++;
	}
	memset(&off, 0, sizeof off);
	setitimer(ITIMER_REAL, &off, NULL);
	REQUIRE(done, "%s phase: expected the handler's turn within 5 s, got "
		      "none after %ld loops", loader ? "loader" : "malloc", loops);
	printf("%s phase: handler interrupted %p after %ld loops\n",
	       loader ? "loader" : "malloc", (void *)interrupted_at, loops);
	/* Weft served: its start-up ran (in the handler) and it is active;
	   write is libweft's. */
	WEFT_REQUIRE();
	CHECK(dladdr((void *)write, &di) && strstr(di.dli_fname, "libweft"),
	      "write: expected libweft's, got %s", di.dli_fname);
	CHECK_EQ(wrote, 1);
	CHECK_EQ(handler_mallocs, 0);
	CHECK_EQ(handler_dlsyms, 0);
	CHECK_EQ(mask_result, 0);
	CHECK_EQ(flags_in_handler & O_ACCMODE, O_WRONLY);
	CHECK(sigismember(&mask_in_handler, SIGALRM) == 1,
	      "the handler's mask: expected SIGALRM in it, got %d",
	      sigismember(&mask_in_handler, SIGALRM));
	CHECK(loader || pthread_equal(self_in_handler, pthread_self()),
	      "pthread_self in the handler: expected %#lx, got %#lx",
	      (unsigned long)pthread_self(), (unsigned long)self_in_handler);
	CHECK_EQ(read(fds[0], buf, 1), 1);
	CHECK_EQ(buf[0], 'x');
	/* And weft works on after a start-up in a handler. */
	CHECK_EQ(pthread_create(&t, NULL, thread_writes, &fds[1]), 0);
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK_EQ((intptr_t)res, 1);
	CHECK_EQ(read(fds[0], buf, 1), 1);
	CHECK_EQ(buf[0], 'y');
	fflush(stdout);
	return harness_failures ? 1 : 0;
}

/* The child's end within 30 s, else it is killed (a deadlock: the old
   start-up's dlsym in a handler that interrupted the loader hung). */
static int wait_bounded(pid_t pid, const char *what)
{
	struct timespec limit = {30, 0};
	int status;
	long end = mono_ns() + 30000000000L;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		REQUIRE(r == 0, "waitpid: %s", strerror(errno));
		if (mono_ns() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			FAIL("%s phase: expected the child to end within 30 s, "
			     "got none (deadlock?)", what);
			return -1;
		}
		sigtimedwait(&chld_set, NULL, &limit);
	}
}

int main(void)
{
	int status;

	real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	libc_handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	REQUIRE(real_dlsym && libc_handle,
		"glibc's dlsym@GLIBC_2.34 and libc's handle: expected found, "
		"got %p, %p", (void *)real_dlsym, libc_handle);
	sigemptyset(&chld_set);
	sigaddset(&chld_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld_set, NULL);
	for (int loader = 0; loader < 2; loader++) {
		pid_t pid = fork();

		REQUIRE(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			sigprocmask(SIG_UNBLOCK, &chld_set, NULL);
			_exit(phase(loader));
		}
		status = wait_bounded(pid, loader ? "loader" : "malloc");
		CHECK(status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
		      "%s phase: expected exit 0, got status %#x",
		      loader ? "loader" : "malloc", status);
	}
	WEFT_REQUIRE();
	TEST_DONE();
}
