/* Issue 16 and the lazy start-up: a process's first call into weft may
   come from a signal handler that interrupted malloc or the dynamic
   linker on its own thread.  Then neither the first interposed
   cancellation point (write) nor start-up itself (pthread_self, the
   first call that needs weft) may call malloc, dlsym, dlvsym or
   dl_iterate_phdr (the last three take the loader's locks, which the
   interrupted code may be taking or releasing: the handler would wait
   for ever), and both must give the right result.

   Each attempt runs in a fork child in which nothing has called weft yet
   (the parent calls nothing of weft's before its forks).  An interval
   timer interrupts a loop, and the handler, at the first tick that finds
   the loop where the phase wants it, makes the process's first write(),
   pthread_sigmask(), fcntl(F_GETFL) and pthread_self() (start-up):

     malloc   malloc/free; the tick lies in libc's or ld.so's code
     loader   dlsym and dl_iterate_phdr; the same
     iterate  dl_iterate_phdr; the loader's dl_load_write_lock is being
              taken or released (its word set, no owner yet or any more)
     dlopen   dlopen and dlclose of a test library; dl_load_lock or
              dl_load_write_lock is being taken or released
     dlclose  the same loop; dlclose has unmapped the library and not
              yet unlinked it from the loader's list (a walk of the
              list that reads each object's tables must skip it)

   The places of the two locks in ld.so's _rtld_global are found first,
   as the recursive mutexes this thread owns inside a dl_iterate_phdr
   callback and inside the test library's constructor (dlopen).

   This program interposes malloc, calloc, realloc, free, dlsym, dlvsym
   and dl_iterate_phdr (exported with -rdynamic, Makefile) to count the
   calls made while the handler runs: expected none.  Bounded: each loop
   stops after 5 s without the handler's turn (the child is made again,
   at most RETRIES times a phase, then it is a failure), and a child
   whose handler has begun is given 3 s to end, else it is killed and
   reported hung. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"

#define ATTEMPTS 20 /* children each of the iterate, dlopen, dlclose phases */
/* A child whose ticks never found the loop where its phase wants it
   (the dlopen windows are a few instructions wide: on a loaded VM where
   a dlopen and dlclose take 0.5 ms, one child in 20 once went 5 s
   without one) has tested nothing: it exits NO_TURN and is made again,
   up to RETRIES times a phase, and only a phase left without its
   attempts after those fails. */
#define NO_TURN 3
#define RETRIES ATTEMPTS

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static volatile sig_atomic_t in_handler, done;
static volatile long handler_mallocs, handler_dlsyms, handler_dlvsyms,
	handler_iterates;

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

/* glibc's own dlsym, dlvsym and dl_iterate_phdr, read from libc's
   dynamic symbol table (a lookup through dlsym or dlvsym would find the
   ones below), and libc's handle. */
typedef int iterate_fn(int (*)(struct dl_phdr_info *, size_t, void *), void *);
static void *(*real_dlsym)(void *, const char *);
static void *(*real_dlvsym)(void *, const char *, const char *);
static iterate_fn *real_iterate;
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

void *dlvsym(void *h, const char *name, const char *version)
{
	if (in_handler)
		handler_dlvsyms++;
	return real_dlvsym(h == RTLD_NEXT ? libc_handle : h, name, version);
}

int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	if (in_handler)
		handler_iterates++;
	return real_iterate(cb, data);
}

/* A function libc defines, from its .dynsym: the table lies just before
   its string table (.dynsym then .dynstr, as every linker lays them). */
static void *libc_function(const char *name)
{
	struct link_map *lm = NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;

	REQUIRE(dlinfo(libc_handle, RTLD_DI_LINKMAP, &lm) == 0 && lm,
		"libc's link map: expected found, got %s", dlerror());
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)d->d_un.d_ptr;
		else if (d->d_tag == DT_STRTAB)
			str = (const char *)d->d_un.d_ptr;
	}
	REQUIRE(sym && str && (const char *)sym < str,
		"libc's symbol table: expected before its strings, got %p %p",
		(void *)sym, (void *)str);
	for (; (const char *)(sym + 1) <= str; sym++)
		if (ELF64_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_shndx &&
		    strcmp(str + sym->st_name, name) == 0)
			return (void *)(lm->l_addr + sym->st_value);
	FAIL("libc's %s: expected in its symbol table, got none", name);
	exit(1);
}

/* --- the loader's locks ------------------------------------------------ */

static char *rtld;	    /* _rtld_global */
static size_t rtld_size;
static char *snap_out, *snap_in;
static struct __pthread_mutex_s *write_lock, *load_lock;
static const char *lib_path;

/* The recursive mutex that this thread owns in snap_in and nobody in
   snap_out, other than `not`; NULL unless exactly one. */
static struct __pthread_mutex_s *owned_lock(struct __pthread_mutex_s *not)
{
	struct __pthread_mutex_s *found = NULL;
	int me = gettid(), n = 0;
	size_t sz = sizeof(struct __pthread_mutex_s);

	for (size_t k = 0; k + sz <= rtld_size; k += sizeof(int)) {
		struct __pthread_mutex_s out, in;

		memcpy(&out, snap_out + k, sz);
		memcpy(&in, snap_in + k, sz);
		if (out.__lock == 0 && out.__owner == 0 && out.__count == 0 &&
		    out.__kind == PTHREAD_MUTEX_RECURSIVE_NP && in.__lock != 0 &&
		    in.__owner == me && in.__count >= 1 &&
		    (void *)(rtld + k) != (void *)not) {
			found = (struct __pthread_mutex_s *)(rtld + k);
			n++;
		}
	}
	return n == 1 ? found : NULL;
}

static int snapshot_in(struct dl_phdr_info *info, size_t sz, void *data)
{
	(void)info, (void)sz, (void)data;
	memcpy(snap_in, rtld, rtld_size);
	return 1;
}

void t_sig_first_call_in_ctor(void);
void t_sig_first_call_in_ctor(void)
{
	if (snap_in)
		memcpy(snap_in, rtld, rtld_size);
}

static void find_locks(void)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	void *h;

	rtld = real_dlsym(RTLD_DEFAULT, "_rtld_global");
	REQUIRE(rtld && dladdr1(rtld, &di, (void **)&sym, RTLD_DL_SYMENT) && sym,
		"ld.so's _rtld_global: expected found, got %p", (void *)rtld);
	rtld_size = sym->st_size;
	snap_out = __libc_malloc(rtld_size);
	snap_in = __libc_malloc(rtld_size);
	REQUIRE(snap_out && snap_in, "malloc of %zu bytes failed", rtld_size);
	memcpy(snap_out, rtld, rtld_size);
	real_iterate(snapshot_in, NULL);
	write_lock = owned_lock(NULL);
	REQUIRE(write_lock, "dl_load_write_lock: expected one recursive mutex "
			    "held inside dl_iterate_phdr, got none or several");
	h = dlopen(lib_path, RTLD_NOW);
	REQUIRE(h, "dlopen(%s): %s", lib_path, dlerror());
	load_lock = owned_lock(write_lock);
	REQUIRE(load_lock, "dl_load_lock: expected one recursive mutex held in "
			   "a constructor dlopen runs, got none or several");
	dlclose(h);
	__libc_free(snap_in);
	snap_in = NULL;
}

/* Taken or released just now: the word is set and nobody owns it (the
   process has one thread, so no other thread can hold it). */
static int in_transition(const struct __pthread_mutex_s *m)
{
	return __atomic_load_n(&m->__lock, __ATOMIC_RELAXED) != 0 &&
	       __atomic_load_n(&m->__owner, __ATOMIC_RELAXED) == 0;
}

/* The loader's own r_debug (the program's DT_DEBUG): this program's
   _r_debug is a copy (a copy relocation) that the loader never updates. */
static struct r_debug *loader_debug;

static void find_loader_debug(void)
{
	for (const ElfW(Dyn) *d = _r_debug.r_map->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_DEBUG)
			loader_debug = (struct r_debug *)d->d_un.d_ptr;
	REQUIRE(loader_debug, "the program's DT_DEBUG: expected set, got none");
}

/* dlclose has unmapped the test library and not yet unlinked it. */
static int lib_unmapped_listed(void)
{
	unsigned char vec;

	if (__atomic_load_n(&loader_debug->r_state, __ATOMIC_RELAXED) != RT_DELETE)
		return 0;
	for (struct link_map *l = loader_debug->r_map; l; l = l->l_next)
		if (l->l_name && strstr(l->l_name, "libsigfirst") &&
		    syscall(SYS_mincore, (uintptr_t)l->l_ld & ~4095UL, 1, &vec) != 0)
			return 1;
	return 0;
}

/* --- one attempt -------------------------------------------------------- */

enum phase { MALLOC, LOADER, ITERATE, DLOPEN, DLCLOSE };
static const char *const phase_name[] = {"malloc", "loader", "iterate",
					 "dlopen", "dlclose"};

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

static enum phase phase_now;
static int pipe_w, status_w;
static ssize_t wrote = -2;
static pthread_t self_in_handler;
static int mask_result = -1, flags_in_handler = -1;
static sigset_t mask_in_handler;
static uintptr_t interrupted_at;
static const char *interrupted_in;

static int turn(uintptr_t ip)
{
	switch (phase_now) {
	case MALLOC:
	case LOADER:
		interrupted_in = "libc's or ld.so's code";
		return (ip >= code[0].lo && ip < code[0].hi) ||
		       (ip >= code[1].lo && ip < code[1].hi);
	case ITERATE:
		interrupted_in = "dl_load_write_lock taken or released";
		return in_transition(write_lock);
	case DLOPEN:
		if (in_transition(load_lock))
			interrupted_in = "dl_load_lock taken or released";
		else if (in_transition(write_lock))
			interrupted_in = "dl_load_write_lock taken or released";
		else
			return 0;
		return 1;
	case DLCLOSE:
		interrupted_in = "dlclose between unmapping and unlinking";
		return lib_unmapped_listed();
	}
	return 0;
}

static void on_tick(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t ip = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	int saved = errno;

	(void)sig, (void)si;
	if (done || !turn(ip))
		return;
	interrupted_at = ip;
	/* Tell the parent that start-up is about to run (a raw write: the
	   parent's bound on a hang starts here). */
	syscall(SYS_write, status_w, "h", 1);
	in_handler = 1;
	wrote = write(pipe_w, "x", 1); /* the first cancellation point */
	mask_result = pthread_sigmask(SIG_BLOCK, NULL, &mask_in_handler);
	flags_in_handler = fcntl(pipe_w, F_GETFL);
	self_in_handler = pthread_self(); /* start-up, in the handler */
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

static void loop_once(enum phase ph, long loops)
{
	int objects = 0;
	void *p, *h;

	switch (ph) {
	case MALLOC:
		p = malloc(16 + (size_t)(loops % 512));
		free(malloc(1000 + (size_t)(loops % 4096)));
		free(p);
		break;
	case LOADER:
		CHECK(real_dlsym(RTLD_DEFAULT, "strlen") != NULL,
		      "dlsym(strlen) failed");
		/* fall through */
	case ITERATE:
		real_iterate(count_one, &objects);
		break;
	case DLOPEN:
	case DLCLOSE:
		h = dlopen(lib_path, RTLD_NOW);
		REQUIRE(h, "dlopen(%s): %s", lib_path, dlerror());
		dlclose(h);
		break;
	}
}

/* One attempt, in a fork child: exits 0 when every check passed,
   NO_TURN when no tick found its place. */
static int attempt(enum phase ph)
{
	struct sigaction sa;
	struct itimerval it = {{0, 100}, {0, 100}}, off;
	int fds[2], n = 0;
	long deadline = mono_ns() + 5000000000L, loops = 0;
	char buf[4] = {0};
	void *res = NULL;
	pthread_t t;

	phase_now = ph;
	real_iterate(note_code, &n);
	REQUIRE(n == 2, "code ranges of libc and ld.so: expected 2, got %d", n);
	REQUIRE(pipe(fds) == 0, "pipe: %s", strerror(errno));
	pipe_w = fds[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (!done && mono_ns() < deadline)
		loop_once(ph, loops++);
	memset(&off, 0, sizeof off);
	setitimer(ITIMER_REAL, &off, NULL);
	if (!done) {
		printf("%s phase: no tick found the loop in place (%s) within "
		       "5 s, %ld loops: made again\n",
		       phase_name[ph], interrupted_in, loops);
		fflush(stdout);
		return NO_TURN;
	}
	/* Weft served: its start-up ran (in the handler) and it is active;
	   write and pthread_self are libweft's. */
	WEFT_REQUIRE();
	REQUIRE_SERVED(write);
	REQUIRE_SERVED(pthread_self);
	CHECK_EQ(wrote, 1);
	CHECK_EQ(handler_mallocs, 0);
	CHECK_EQ(handler_dlsyms, 0);
	CHECK_EQ(handler_dlvsyms, 0);
	CHECK_EQ(handler_iterates, 0);
	CHECK_EQ(mask_result, 0);
	CHECK_EQ(flags_in_handler & O_ACCMODE, O_WRONLY);
	CHECK(sigismember(&mask_in_handler, SIGALRM) == 1,
	      "the handler's mask: expected SIGALRM in it, got %d",
	      sigismember(&mask_in_handler, SIGALRM));
	CHECK(pthread_equal(self_in_handler, pthread_self()),
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
	if (harness_failures)
		printf("%s phase: handler interrupted %p (%s) after %ld loops\n",
		       phase_name[ph], (void *)interrupted_at, interrupted_in,
		       loops);
	fflush(stdout);
	return harness_failures ? 1 : 0;
}

/* Runs one attempt in a child; 0 passed, 1 failed, 2 hung (killed 3 s
   after its handler began start-up, or 8 s after its start), NO_TURN. */
static int run_child(enum phase ph)
{
	int st[2], status;
	char c;
	pid_t pid;
	long end;
	struct pollfd pfd;
	int began = 0;

	REQUIRE(pipe2(st, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		harness_failures = 0; /* the parent's are its own */
		close(st[0]);
		status_w = st[1];
		_exit(attempt(ph));
	}
	close(st[1]);
	pfd.fd = st[0];
	pfd.events = POLLIN;
	end = mono_ns() + 8000000000L;
	for (;;) {
		long left = (end - mono_ns()) / 1000000;
		int r = poll(&pfd, 1, left > 0 ? (int)left : 0);

		if (r <= 0) { /* the bound */
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(st[0]);
			return began ? 2 : 1;
		}
		if (read(st[0], &c, 1) != 1)
			break; /* the child is ending: its pipe closed */
		began = 1;
		end = mono_ns() + 3000000000L;
	}
	close(st[0]);
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("%s phase: a child was killed by signal %d\n",
		       phase_name[ph], WTERMSIG(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) == NO_TURN)
		return NO_TURN;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void test_library(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	REQUIRE(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	for (int i = 0; i < 2; i++) { /* build/tests/{linked,preload}/t_... */
		slash = strrchr(self, '/');
		REQUIRE(slash, "no directory in %s", self);
		*slash = '\0';
	}
	REQUIRE(snprintf(path, sizeof path, "%s/libsigfirst.so", self) <
			(int)sizeof path, "path too long");
	lib_path = path;
}

int main(void)
{
	static const int attempts[] = {1, 1, ATTEMPTS, ATTEMPTS, ATTEMPTS};

	libc_handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	REQUIRE(libc_handle, "libc's handle: expected found, got %s", dlerror());
	real_dlsym = (void *(*)(void *, const char *))libc_function("dlsym");
	real_dlvsym = (void *(*)(void *, const char *, const char *))
		libc_function("dlvsym");
	real_iterate = (iterate_fn *)libc_function("dl_iterate_phdr");
	test_library();
	find_loader_debug();
	find_locks();
	for (enum phase ph = MALLOC; ph <= DLCLOSE; ph++) {
		int failed = 0, hung = 0, untested = 0, retries = 0;

		for (int i = 0; i < attempts[ph]; i++) {
			int r = run_child(ph);

			while (r == NO_TURN && retries < RETRIES) {
				retries++;
				r = run_child(ph);
			}
			failed += r == 1;
			hung += r == 2;
			untested += r == NO_TURN;
		}
		printf("%s phase: %d attempts, %d failed, %d hung, %d made "
		       "again\n", phase_name[ph], attempts[ph], failed, hung,
		       retries);
		CHECK(failed == 0 && hung == 0,
		      "%s phase: expected every attempt to pass, got %d failed "
		      "and %d hung (a hung one's handler had begun start-up "
		      "and not returned 3 s later)", phase_name[ph], failed, hung);
		CHECK(untested == 0,
		      "%s phase: expected every attempt to get its tick, got %d "
		      "without one after %d attempts made again",
		      phase_name[ph], untested, retries);
	}
	WEFT_REQUIRE();
	TEST_DONE();
}
