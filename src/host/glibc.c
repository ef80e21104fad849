/* The glibc host adapter (see glibc.h).  Layout facts are discovered at
   start-up wherever glibc offers a way: libthread_db's descriptors, ld.so's
   static TLS information, and a probe glibc thread whose TCB we can read.
   Only what cannot be discovered is tied to the glibc version, and an
   unknown version switches weft into forwarding mode. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <resolv.h>
#undef p_type /* resolv.h defines it; it names an ELF field here */
#include <setjmp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <unistd.h>

#include "glibc.h"
#include "attr_layout.h"
#include "../kernel/rseq.h"
#include "../kernel/futex.h"
#include "../kernel/syscall.h"
#include "../core/cancel.h"

struct host_real host_real;

/* Fixed by the x86-64 ABI (tcbhead_t), stable across glibc releases. */
enum {
	TCB_OFF_TCB = 0,
	TCB_OFF_SELF = 16,
	TCB_OFF_MULTIPLE_THREADS = 24,
	TCB_OFF_STACK_GUARD = 40,
	TCB_OFF_POINTER_GUARD = 48,
	TCB_OFF_FEATURE_1 = 72,
};

#define NOT_FOUND ((size_t)-1)

/* Offsets inside glibc's struct pthread, found at start-up. */
static struct {
	size_t tcb_size;		 /* sizeof(struct pthread) */
	size_t tid, list, report_events; /* from libthread_db descriptors */
	size_t res, robust_head, stackblock, stackblock_size; /* probed */
	size_t result, user_stack, strerror_buf, strsignal_buf;
	size_t cancelhandling, setxid_futex; /* for list membership */
	size_t cleanup_jmp_buf, cleanup;     /* probed cleanup chains */
	ptrdiff_t resp_tls;	 /* __resp TLS variable, from TP */
	ptrdiff_t ctype_tls[3];	 /* libc's ctype table pointers, from TP */
	ptrdiff_t weft_self_tls; /* weft_tls_self, from TP */
	size_t tls_size, tls_align;
	/* libc malloc's per-thread words (tcache, thread_arena), from TP */
	ptrdiff_t malloc_word[WEFT_MALLOC_WORDS];
	int malloc_words;
} L;

static struct {
	void *(*dl_allocate_tls)(void *);
	void (*dl_deallocate_tls)(void *, _Bool);
	void (*dl_get_tls_static_info)(size_t *, size_t *);
	void (*ctype_init)(void);
	void (*call_tls_dtors)(void);
	unsigned int *nptl_nthreads;
	int (*register_atfork)(void (*)(void), void (*)(void), void (*)(void),
			       void *);
	int (*cxa_thread_atexit_impl)(void (*)(void *), void *, void *);
	/* glibc's thread lists in _rtld_global (NULL: not a member). */
	void **stack_user;	 /* list_t {next, prev} */
	uintptr_t *in_flight;	 /* _dl_in_flight_stack */
	volatile int *list_lock; /* _dl_stack_cache_lock */
} G;

/* Bits of glibc's cancelhandling word (stable 2.34 ... master); the
   cancellation bits are in glibc.h. */
#define CH_SETXID 0x40

extern void *__dso_handle;

static const char *status = "not initialised";
static char status_buf[160];

const char *host_status(void)
{
	return status;
}

/* getenv that also works before libc has set up `environ`: weft can
   start from another library's .preinit_array function (AddressSanitizer's
   start-up calls pthread functions there), which runs before libc's own
   initialisation.  The environment is then read where the kernel put it,
   after the argument vector that ld.so records in _dl_argv. */
const char *host_getenv(const char *name)
{
	extern char **environ;
	char ***dl_argv;
	char **p;
	size_t n = strlen(name);

	if (environ)
		return getenv(name);
	dl_argv = dlsym(RTLD_DEFAULT, "_dl_argv");
	if (!dl_argv || !*dl_argv)
		return NULL;
	for (p = *dl_argv; *p; p++)
		; /* skip the arguments: the environment follows their NULL */
	for (p++; *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

const char *host_glibc_version(void)
{
	const char *pretend = host_getenv("WEFT_PRETEND_GLIBC");

	return pretend && *pretend ? pretend : gnu_get_libc_version();
}

static char *tp(void)
{
	return arch_thread_pointer();
}

#define FIELD(tcb, off, type) (*(type *)((char *)(tcb) + (off)))

/* ------------------------------------------------------------ symbols */

/* The next definition of `name` after libweft in the lookup order: libc's
   default version, or a tool's interceptor loaded between us and libc
   (ThreadSanitizer's, for example), which must see the calls weft
   forwards.  A versioned lookup would skip such an unversioned
   interceptor, so `version` is only the fallback. */
void *host_next_sym(const char *name, const char *version)
{
	void *p = dlsym(RTLD_NEXT, name);

	return p ? p : version ? dlvsym(RTLD_NEXT, name, version) : NULL;
}

static void resolve_real(void)
{
	struct host_real *r = &host_real;

#define REAL(field, ver) r->field = host_next_sym(#field, ver)
	REAL(pthread_create, "GLIBC_2.34");
	REAL(pthread_join, "GLIBC_2.34");
	REAL(pthread_tryjoin_np, "GLIBC_2.34");
	REAL(pthread_timedjoin_np, "GLIBC_2.34");
	REAL(pthread_clockjoin_np, "GLIBC_2.34");
	REAL(pthread_detach, "GLIBC_2.34");
	REAL(pthread_self, "GLIBC_2.2.5");
	REAL(pthread_exit, "GLIBC_2.2.5");
	REAL(pthread_getattr_np, "GLIBC_2.32");
	REAL(pthread_kill, "GLIBC_2.34");
	REAL(pthread_sigqueue, "GLIBC_2.34");
	REAL(pthread_setschedparam, "GLIBC_2.2.5");
	REAL(pthread_getschedparam, "GLIBC_2.2.5");
	REAL(pthread_setschedprio, "GLIBC_2.3.4");
	REAL(pthread_setaffinity_np, "GLIBC_2.34");
	REAL(pthread_getaffinity_np, "GLIBC_2.32");
	REAL(pthread_setname_np, "GLIBC_2.34");
	REAL(pthread_getname_np, "GLIBC_2.34");
	REAL(pthread_getcpuclockid, "GLIBC_2.34");
	REAL(confstr, "GLIBC_2.2.5");
	REAL(pthread_key_create, "GLIBC_2.34");
	REAL(pthread_key_delete, "GLIBC_2.34");
	REAL(pthread_getspecific, "GLIBC_2.34");
	REAL(pthread_setspecific, "GLIBC_2.34");
	REAL(thrd_create, "GLIBC_2.34");
#undef REAL
}

/* libthread_db describes fields as three words: bit size, count, byte
   offset.  glibc keeps them current because gdb depends on them. */
static int db_offset(void *libc, const char *name, size_t *out)
{
	const uint32_t *d = dlvsym(libc, name, "GLIBC_PRIVATE");

	if (!d)
		return -1;
	*out = d[2];
	return 0;
}

static int resolve_private(void *libc)
{
	const uint32_t *size;
	char *resp;

	G.dl_allocate_tls = dlvsym(RTLD_DEFAULT, "_dl_allocate_tls", "GLIBC_PRIVATE");
	G.dl_deallocate_tls = dlvsym(RTLD_DEFAULT, "_dl_deallocate_tls", "GLIBC_PRIVATE");
	G.dl_get_tls_static_info =
		dlvsym(RTLD_DEFAULT, "_dl_get_tls_static_info", "GLIBC_PRIVATE");
	G.ctype_init = dlvsym(libc, "__ctype_init", "GLIBC_PRIVATE");
	G.call_tls_dtors = dlvsym(libc, "__call_tls_dtors", "GLIBC_PRIVATE");
	G.nptl_nthreads = dlvsym(libc, "__nptl_nthreads", "GLIBC_PRIVATE");
	G.register_atfork = dlvsym(libc, "__register_atfork", "GLIBC_2.3.2");
	G.cxa_thread_atexit_impl = dlvsym(libc, "__cxa_thread_atexit_impl", "GLIBC_2.18");
	resp = dlvsym(libc, "__resp", "GLIBC_PRIVATE");
	size = dlvsym(libc, "_thread_db_sizeof_pthread", "GLIBC_PRIVATE");
	if (!G.dl_allocate_tls || !G.dl_deallocate_tls ||
	    !G.dl_get_tls_static_info || !G.ctype_init || !G.call_tls_dtors ||
	    !G.nptl_nthreads || !G.register_atfork ||
	    !G.cxa_thread_atexit_impl || !resp || !size)
		return -1;
	L.tcb_size = *size;
	if (db_offset(libc, "_thread_db_pthread_tid", &L.tid) ||
	    db_offset(libc, "_thread_db_pthread_list", &L.list) ||
	    db_offset(libc, "_thread_db_pthread_report_events", &L.report_events))
		return -1;
	if (db_offset(libc, "_thread_db_pthread_cancelhandling", &L.cancelhandling))
		return -1;
	host_tid_off = L.tid;
	L.resp_tls = resp - tp();
	/* The public *_loc functions return the calling thread's TLS words
	   that __ctype_init fills; their distance from TP is the same in
	   every thread. */
	L.ctype_tls[0] = (char *)__ctype_b_loc() - tp();
	L.ctype_tls[1] = (char *)__ctype_toupper_loc() - tp();
	L.ctype_tls[2] = (char *)__ctype_tolower_loc() - tp();
	L.weft_self_tls = (char *)&weft_tls_self - tp();
	G.dl_get_tls_static_info(&L.tls_size, &L.tls_align);
	if (L.tls_align < 64)
		L.tls_align = 64;
	return 0;
}

/* Membership of glibc's list of user-stack threads (dl_stack_user) makes
   glibc treat weft threads like its own where it walks its lists: the
   set*id broadcast (setuid & co. change every thread's credentials),
   static TLS of modules dlopen()ed later, and the loader's wait for
   threads inside lazy binding.  The list heads are described by
   libthread_db; the lock and in-flight word follow them in
   _rtld_global (used, user, cache, cache_actsize, in_flight, lock) in
   2.34 ... master, and setxid_futex has no descriptor: its offset is a
   fact of the glibc build, checked against the descriptor size. */
static const struct {
	const char *release;
	size_t tcb_size, setxid_futex;
} setxid_table[] = {
	{"2.36", 2368, 1564}, /* Debian 12 */
};

static void resolve_lists(void *libc)
{
	char *rtld = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");
	size_t used, user;

	if (!rtld ||
	    db_offset(libc, "_thread_db_rtld_global__dl_stack_used", &used) ||
	    db_offset(libc, "_thread_db_rtld_global__dl_stack_user", &user) ||
	    user != used + 16)
		return;
	for (size_t i = 0; i < sizeof setxid_table / sizeof *setxid_table; i++)
		if (strcmp(setxid_table[i].release, gnu_get_libc_version()) == 0 &&
		    setxid_table[i].tcb_size == L.tcb_size)
			L.setxid_futex = setxid_table[i].setxid_futex;
	if (!L.setxid_futex)
		return;
	G.stack_user = (void **)(rtld + user);
	G.in_flight = (uintptr_t *)(rtld + used + 56);
	G.list_lock = (volatile int *)(rtld + used + 64);
}

/* glibc's low-level lock: 0 free, 1 taken, 2 taken with waiters. */
static void glibc_lock(volatile int *l)
{
	int c = 0;

	if (__atomic_compare_exchange_n(l, &c, 1, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0)
		futex_wait(l, 2, WEFT_FUTEX_PRIVATE);
}

static void glibc_unlock(volatile int *l)
{
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2)
		futex_wake(l, 1, WEFT_FUTEX_PRIVATE);
}

/* List edits announce themselves in dl_in_flight_stack, which glibc's
   fork child uses to repair a list a forking thread was editing. */
static void list_add_listed(char *tcb)
{
	void **node = (void **)(tcb + L.list), **head = G.stack_user;

	glibc_lock(G.list_lock);
	*G.in_flight = (uintptr_t)node | 1;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	node[0] = head[0];
	node[1] = head;
	((void **)head[0])[1] = node;
	head[0] = node;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*G.in_flight = 0;
	glibc_unlock(G.list_lock);
}

static void list_unlink(void **node)
{
	void **next = node[0], **prev = node[1];

	next[1] = prev;
	prev[0] = next;
	node[0] = node[1] = node;
}

static void list_del_listed(char *tcb)
{
	void **node = (void **)(tcb + L.list);

	glibc_lock(G.list_lock);
	*G.in_flight = (uintptr_t)node;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	list_unlink(node);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*G.in_flight = 0;
	glibc_unlock(G.list_lock);
}

int host_threads_listed(void)
{
	return G.stack_user != NULL;
}

void host_list_add(char *tcb)
{
	if (!G.stack_user)
		return;
	/* -1: "not started yet"; a set*id call waits for the thread. */
	FIELD(tcb, L.setxid_futex, int) = -1;
	list_add_listed(tcb);
}

void host_list_del(char *tcb)
{
	if (G.stack_user)
		list_del_listed(tcb);
}

/* The thread stops taking part in set*id broadcasts, finishing one that
   is under way (glibc's own exit handshake), and leaves the list. */
void host_thread_unlist(char *tcb)
{
	int *ch = &FIELD(tcb, L.cancelhandling, int);
	volatile int *sf = &FIELD(tcb, L.setxid_futex, int);

	if (!G.stack_user)
		return;
	__atomic_fetch_or(ch, HOST_EXITING, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(ch, __ATOMIC_ACQUIRE) & CH_SETXID)
		futex_wait(sf, 0, WEFT_FUTEX_PRIVATE);
	*sf = 0;
	list_del_listed(tcb);
}

int host_cancel_requested(char *tcb)
{
	int ch = __atomic_load_n(&FIELD(tcb, L.cancelhandling, int),
				 __ATOMIC_ACQUIRE);

	return (ch & (HOST_CANCELING | HOST_CANCELED)) &&
	       !(ch & (HOST_CANCEL_DISABLED | HOST_EXITING));
}

/* x86-64 glibc stores rsp in jmp_buf word 6 as rol(sp ^ guard, 17),
   guard = the TCB's pointer guard (sysdeps/unix/sysv/linux/x86_64
   PTR_MANGLE, a fixed part of the x86-64 TCB header). */
uintptr_t host_jmpbuf_sp(const void *jmpbuf)
{
	uintptr_t v = ((const uintptr_t *)jmpbuf)[6];
	uintptr_t guard = FIELD(tp(), TCB_OFF_POINTER_GUARD, uintptr_t);

	v = (v >> 17) | (v << (64 - 17));
	return v ^ guard;
}

/* ------------------------------------------------------------- probe */

/* Where libc's own TLS block lies relative to TP, found through the
   loader's public module list. */
struct libc_tls {
	ptrdiff_t off;
	size_t size;
};

uintptr_t host_libc_text_lo, host_libc_text_hi;

static int find_libc_tls(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct libc_tls *lt = data;

	(void)sz;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so.6") ||
	    !info->dlpi_tls_data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_TLS)
			lt->size = ph->p_memsz;
		/* libc's code, for the cancellation handler (core/cancel.c) */
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			host_libc_text_lo = info->dlpi_addr + ph->p_vaddr;
			host_libc_text_hi = host_libc_text_lo + ph->p_memsz;
		}
	}
	lt->off = (char *)info->dlpi_tls_data - tp();
	return 1;
}

#define PROBE_RESULT ((void *)0x5eedf00dcafeUL)
#define LIBC_TLS_MAX 1024

/* The probe thread's stack: glibc places the thread's static TLS (every
   module's initial-exec and initial TLS blocks, some programs have
   megabytes of it) and its descriptor on a user-supplied stack, so the
   size follows the TLS size.  Mapped once, kept: glibc may look at the
   descriptor until the join, and the scan reads it after. */
#define PROBE_STACK_ROOM (256 * 1024)
static char *probe_stack;
static size_t probe_stack_size;
static char *probe_tcb;
static int probe_tid_ok;

static size_t scan_tcb(const char *tcb, uintptr_t value)
{
	for (size_t o = 0; o + sizeof(uintptr_t) <= L.tcb_size; o += 8)
		if (FIELD(tcb, o, uintptr_t) == value)
			return o;
	return NOT_FOUND;
}

/* glibc gives no interface to the malloc thread cache (S4): find the
   words in libc's TLS block that the first malloc of a thread sets (the
   tcache and the arena pointer) by comparing the block before and after
   one.  This runs first in a fresh glibc thread, which has not called
   malloc yet. */
/* Found by the thread that runs the probe (no loader calls in the probe
   thread: see cleanup_abi). */
static struct libc_tls probe_libc_tls;

static void probe_malloc_words(void)
{
	struct libc_tls lt = probe_libc_tls;
	uintptr_t before[LIBC_TLS_MAX / 8];
	const uintptr_t *blk;
	size_t n;
	void *volatile p;

	if (lt.size == 0 || lt.size > LIBC_TLS_MAX)
		return;
	blk = (const uintptr_t *)(tp() + lt.off);
	n = lt.size / 8;
	memcpy(before, blk, n * 8);
	p = malloc(40);
	free(p);
	for (size_t i = 0; i < n; i++) {
		if (before[i] != 0 || blk[i] == 0)
			continue;
		if (L.malloc_words == WEFT_MALLOC_WORDS) {
			L.malloc_words = 0; /* not what we expect: give up */
			return;
		}
		L.malloc_word[L.malloc_words++] = lt.off + (ptrdiff_t)(i * 8);
	}
}

/* glibc publishes no offset for the two cleanup chains (docs/cancel.md):
   register a buffer with glibc's own functions and look for its address
   in the TCB, then unregister it.  The words must be found exactly once. */
static size_t scan_unique(const char *tcb, uintptr_t value)
{
	size_t o = scan_tcb(tcb, value);

	if (o == NOT_FOUND)
		return NOT_FOUND;
	for (size_t p = o + 8; p + sizeof(uintptr_t) <= L.tcb_size; p += 8)
		if (FIELD(tcb, p, uintptr_t) == value)
			return NOT_FOUND;
	return o;
}

/* glibc's cleanup-chain entry points, looked up by the thread that runs
   the probe: the probe thread itself must not call dlsym.  When libweft
   is loaded by dlopen, its constructor runs under the loader's lock, and
   a dlsym from the probe thread would wait for that lock while the
   constructor waits for the probe thread to end. */
static struct {
	void (*reg)(void *);
	void (*unreg)(void *);
	void (*push)(void *, void (*)(void *), void *);
	void (*pop)(void *, int);
} cleanup_abi;

static void resolve_cleanup_abi(void)
{
	cleanup_abi.reg = host_next_sym("__pthread_register_cancel", "GLIBC_2.34");
	cleanup_abi.unreg = host_next_sym("__pthread_unregister_cancel", "GLIBC_2.34");
	cleanup_abi.push = host_next_sym("_pthread_cleanup_push", "GLIBC_2.34");
	cleanup_abi.pop = host_next_sym("_pthread_cleanup_pop", "GLIBC_2.34");
}

static void probe_cleanup_chains(char *self)
{
	__pthread_unwind_buf_t ub;
	struct _pthread_cleanup_buffer cb;

	L.cleanup_jmp_buf = L.cleanup = NOT_FOUND;
	if (!cleanup_abi.reg || !cleanup_abi.unreg || !cleanup_abi.push ||
	    !cleanup_abi.pop)
		return;
	memset(&ub, 0, sizeof ub);
	cleanup_abi.reg(&ub);
	L.cleanup_jmp_buf = scan_unique(self, (uintptr_t)&ub);
	cleanup_abi.unreg(&ub);
	cleanup_abi.push(&cb, NULL, NULL);
	L.cleanup = scan_unique(self, (uintptr_t)&cb);
	cleanup_abi.pop(&cb, 0);
}

static void *probe_main(void *arg)
{
	char *self = tp();
	void *head = NULL;
	size_t len;

	(void)arg;
	probe_malloc_words();
	probe_cleanup_chains(self);
	probe_tcb = self;
	probe_tid_ok = FIELD(self, L.tid, int) == sys_gettid();
	L.res = (char *)__res_state() - self;
	if (sys_get_robust_list(0, &head, &len) == 0)
		L.robust_head = (char *)head - self;
	L.stackblock = NOT_FOUND;
	for (size_t o = 0; o + 16 <= L.tcb_size; o += 8)
		if (FIELD(self, o, char *) == probe_stack &&
		    FIELD(self, o + 8, size_t) == probe_stack_size) {
			L.stackblock = o;
			L.stackblock_size = o + 8;
			break;
		}
	/* Not strerror/strsignal here: see probe_string_buffers. */
	/* The byte after report_events is user_stack (<= 2.41); this probe
	   runs on a user-supplied stack, so it must read 1. */
	L.user_stack = FIELD(self, L.report_events + 1, unsigned char) == 1
			       ? L.report_events + 1
			       : NOT_FOUND;
	return PROBE_RESULT;
}

/* One real glibc thread: glibc's pthread_create switches the process to
   multi-threaded mode (both copies of __libc_single_threaded, stdio
   locking, SIGSETXID handler, the TCB flag of this thread: G1-G3, H3),
   and its TCB tells us the offsets glibc does not publish. */
static int run_probe(void)
{
	pthread_attr_t a;
	pthread_t th;
	void *res = NULL;
	struct glibc_attr *ga = gattr(&a);

	resolve_cleanup_abi();
	dl_iterate_phdr(find_libc_tls, &probe_libc_tls);
	probe_stack_size = PROBE_STACK_ROOM +
			   ((L.tls_size + L.tcb_size + 4095) & ~(size_t)4095);
	probe_stack = sys_mmap(NULL, probe_stack_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (sys_mmap_failed(probe_stack))
		return -ENOMEM;
	memset(&a, 0, sizeof a);
	ga->guardsize = 0;
	ga->stackaddr = probe_stack + probe_stack_size;
	ga->stacksize = probe_stack_size;
	ga->flags = GATTR_STACKADDR;
	int r = host_real.pthread_create(&th, &a, probe_main, NULL);
	if (r != 0)
		return -r;
	if (host_real.pthread_join(th, &res) != 0 || res != PROBE_RESULT)
		return -EPROTO;
	L.result = scan_tcb(probe_tcb, (uintptr_t)PROBE_RESULT);
	return 0;
}

/* ---------------------------------------------------------- start-up */

/* Whether weft comes before libc in the dynamic linker's load order, the
   order it searches for symbols: preloaded, linked before libc, or linked
   into the program itself.  A libweft loaded later by dlopen comes after
   libc; the program and libc keep calling glibc's pthread functions, so
   weft must take nothing over, least of all the SIGCANCEL handler that
   glibc's threads rely on. */
struct load_order {
	uintptr_t self;
	int self_at, libc_at, n;
};

static int find_order(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct load_order *o = data;

	(void)sz;
	if (o->libc_at < 0 && info->dlpi_name &&
	    strstr(info->dlpi_name, "/libc.so.6"))
		o->libc_at = o->n;
	for (int i = 0; o->self_at < 0 && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && o->self >= lo &&
		    o->self - lo < ph->p_memsz)
			o->self_at = o->n;
	}
	o->n++;
	return 0;
}

static int loaded_before_libc(void)
{
	struct load_order o = { (uintptr_t)&loaded_before_libc, -1, -1, 0 };

	dl_iterate_phdr(find_order, &o);
	return o.self_at >= 0 && (o.libc_at < 0 || o.self_at < o.libc_at);
}

/* Tools that intercept the thread functions themselves to watch every
   thread and lock: ThreadSanitizer, and valgrind's helgrind and DRD.
   Serving the program would hide its threads and locks from them (false
   race reports, crashes in the tool), so weft stands aside.  memcheck
   and AddressSanitizer watch memory only and work with weft. */
static int find_thread_tool(struct dl_phdr_info *info, size_t sz, void *data)
{
	const char **tool = data;

	(void)sz;
	if (!info->dlpi_name)
		return 0;
	if (strstr(info->dlpi_name, "vgpreload_helgrind"))
		*tool = "valgrind's helgrind";
	else if (strstr(info->dlpi_name, "vgpreload_drd"))
		*tool = "valgrind's DRD";
	return *tool != NULL;
}

static const char *thread_tool(void)
{
	const char *tool = NULL;

	if (dlsym(RTLD_DEFAULT, "__tsan_init"))
		return "ThreadSanitizer";
	dl_iterate_phdr(find_thread_tool, &tool);
	return tool;
}

/* glibc releases whose non-discoverable facts weft knows (user_stack as
   a bool after report_events; kernel clears `tid`; rseq inside the TCB
   or placed by __rseq_offset).  Others run in forwarding mode. */
static int known_release(const char *v)
{
	return strcmp(v, "2.36") == 0;
}

/* Records why weft does not serve; returns 0 (not active).  No strerror
   here: see probe_string_buffers. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status_buf, sizeof status_buf, fmt, ap);
	va_end(ap);
	status = status_buf;
	return 0;
}

int host_init(void)
{
	const char *ver = host_glibc_version(), *tool;
	/* Where libc's private symbols are looked up: the global scope, not
	   a handle from dlopen("libc.so.6", RTLD_NOLOAD).  Start-up can run
	   from a .preinit_array function, before libc's own initialiser, and
	   that dlopen ran the initialiser then, without the arguments and
	   environment ld.so did not have yet: `environ` stayed NULL for the
	   whole run (tests/t_preinit_env.c).  The names are libc's own
	   (GLIBC_PRIVATE and the like); libweft defines none of them. */
	void *libc = RTLD_DEFAULT;
	int err;

	resolve_real();
	if (!host_real.pthread_create || !host_real.pthread_join ||
	    !host_real.pthread_exit || !host_real.pthread_self)
		return fail("glibc's pthread functions not found");
	if (!loaded_before_libc())
		return fail("libweft was loaded after libc (by dlopen?), so "
			    "the program's thread calls go to glibc");
	tool = thread_tool();
	if (tool)
		return fail("%s watches the thread functions itself", tool);
	if (!known_release(ver))
		return fail("glibc %s is not a release weft knows", ver);
	if (resolve_private(libc) != 0)
		return fail("a private glibc symbol weft needs is missing");
	err = run_probe();
	if (err != 0)
		return fail("the probe glibc thread failed (%s: error %d)",
			    err == -EPROTO ? "its result" :
			    err == -ENOMEM ? "mapping its stack" : "pthread_create",
			    -err);
	resolve_lists(libc);
	if (!probe_tid_ok || L.stackblock == NOT_FOUND ||
	    L.result == NOT_FOUND || L.user_stack == NOT_FOUND ||
	    L.robust_head == 0 || L.res >= L.tcb_size ||
	    L.cleanup_jmp_buf == NOT_FOUND || L.cleanup == NOT_FOUND)
		return fail("glibc's thread descriptor did not match the probe");
	host_nthreads_word = G.nptl_nthreads;
	host_cancel_off = L.cancelhandling;
	host_cleanup_jmp_buf_off = L.cleanup_jmp_buf;
	host_cleanup_off = L.cleanup;
	host_result_off = L.result;
	status = "ok";
	return 1;
}

size_t host_tls_area_size(void)
{
	return L.tls_size;
}

size_t host_tls_align(void)
{
	return L.tls_align;
}

size_t host_tcb_size(void)
{
	return L.tcb_size;
}

size_t host_tid_off;
size_t host_cancel_off, host_cleanup_jmp_buf_off, host_cleanup_off,
	host_result_off;

volatile int *host_tid_word(char *tcb)
{
	return &FIELD(tcb, L.tid, int);
}

void host_set_tls_self(char *tcb, void *desc)
{
	FIELD(tcb, L.weft_self_tls, void *) = desc;
}

/* ------------------------------------------------------- thread start */

int host_tcb_prepare(char *tcb, char *block, size_t block_size)
{
	char *robust;

	memset(tcb, 0, L.tcb_size);
	/* H2: DTV + copies of every module's TLS image (also weft's own). */
	if (!G.dl_allocate_tls(tcb))
		return -ENOMEM;
	/* H1: TP-relative code and stdio/abort lock owners use these. */
	FIELD(tcb, TCB_OFF_TCB, void *) = tcb;
	FIELD(tcb, TCB_OFF_SELF, void *) = tcb;
	/* H3: x86 catomic_* and ld.so test the calling thread's flag. */
	FIELD(tcb, TCB_OFF_MULTIPLE_THREADS, int) = 1;
	/* H4: canary, pointer mangling key and CET state are per process. */
	FIELD(tcb, TCB_OFF_STACK_GUARD, uint64_t) = FIELD(tp(), TCB_OFF_STACK_GUARD, uint64_t);
	FIELD(tcb, TCB_OFF_POINTER_GUARD, uint64_t) = FIELD(tp(), TCB_OFF_POINTER_GUARD, uint64_t);
	FIELD(tcb, TCB_OFF_FEATURE_1, uint32_t) = FIELD(tp(), TCB_OFF_FEATURE_1, uint32_t);
	/* P2: glibc's fork child unlinks and relinks this node; user_stack
	   tells it never to cache our memory. */
	FIELD(tcb, L.list, void *) = tcb + L.list;
	FIELD(tcb, L.list + 8, void *) = tcb + L.list;
	FIELD(tcb, L.user_stack, unsigned char) = 1;
	/* P3: glibc's field is the thread's one robust list head (glibc's
	   fork re-registers it in the child): empty circular list, futex
	   offset from a mutex's list node to its lock word. */
	robust = tcb + L.robust_head;
	FIELD(robust, 0, void *) = robust;
	FIELD(robust, 8, long) = -32;
	FIELD(robust, 16, void *) = NULL;
	FIELD(tcb, L.robust_head - 8, void *) = robust;
	/* P6: alloca cut-off and stack bounds for the unwinder. */
	FIELD(tcb, L.stackblock, char *) = block;
	FIELD(tcb, L.stackblock_size, size_t) = block_size;
	/* P4: the resolver state is per thread, in glibc's own field. */
	FIELD(tcb, L.resp_tls, void *) = tcb + L.res;
	/* The new thread may run a signal handler before its own start-up
	   code (weft does not block signals around clone, see
	   docs/lifecycle.md), so it must already be usable then:
	   P5: the creator's ctype tables until the thread's own
	   __ctype_init; P7: "not registered" until rseq registration, which
	   makes sched_getcpu ask the kernel. */
	for (int i = 0; i < 3; i++)
		FIELD(tcb, L.ctype_tls[i], uintptr_t) = FIELD(tp(), L.ctype_tls[i], uintptr_t);
	FIELD(tcb, __rseq_offset + 4, uint32_t) = WEFT_RSEQ_CPU_FAILED;
	return 0;
}

void host_malloc_state_install(char *tcb, const uintptr_t *words)
{
	for (int i = 0; i < L.malloc_words; i++)
		FIELD(tcb, L.malloc_word[i], uintptr_t) = words[i];
}

/* The kernel walks a thread's registered robust list when it dies, to
   mark the robust mutexes it held.  Every thread has its list (glibc's
   head in its TCB) registered from birth, as under glibc: programs read
   it back with get_robust_list (stress-ng copies from that head), and a
   robust mutex locked by whichever library finds the list ready.
   glibc's fork child registers the forking thread's head itself. */
void host_robust_list_register(char *tcb)
{
	sys_set_robust_list(tcb + L.robust_head, 24);
}

struct host_robust_head *host_robust_head(void)
{
	return (struct host_robust_head *)(tp() + L.robust_head);
}

const volatile uint32_t *host_rseq_cpu(char *tcb)
{
	return __rseq_size > 0 ? &FIELD(tcb, __rseq_offset + 4, uint32_t) : NULL;
}

void host_thread_begin(char *tcb)
{
	/* P7: sched_getcpu and rseq users read the area at __rseq_offset. */
	if (__rseq_size > 0) {
		uint32_t len = __rseq_size < 32 ? 32 : __rseq_size;
		rseq_register(tcb + __rseq_offset, len);
	} else {
		FIELD(tcb, __rseq_offset + 4, uint32_t) = WEFT_RSEQ_CPU_FAILED;
	}
	/* P5: per-thread ctype table pointers for isalpha & co. */
	G.ctype_init();
	/* P3: the head, ready since host_tcb_prepare, goes to the kernel. */
	host_robust_list_register(tcb);
	/* Started: a set*id call may now signal us (it waits for this). */
	if (G.stack_user &&
	    __atomic_exchange_n(&FIELD(tcb, L.setxid_futex, int), 0,
				__ATOMIC_ACQ_REL) == -2)
		futex_wake(&FIELD(tcb, L.setxid_futex, int), 1, WEFT_FUTEX_PRIVATE);
}

/* The bottom unwind buffer (glibc's cleanup ABI): pthread_exit and
   cancellation unwind the stack until the innermost registered buffer
   and jump into it; this one catches the end of the thread.  It is
   filled by glibc's __sigsetjmp (typed here for the 72-byte buffer, as
   glibc's own pthread.h declares it for pthread_cleanup_push) because
   weft's unwinder, like glibc's, resumes it with glibc's longjmp. */
extern int sigsetjmp_cancel(void *buf, int savemask) __asm__("__sigsetjmp")
	__attribute__((returns_twice, nothrow));

__attribute__((noinline)) void *host_run_thread(void *(*fn)(void *), void *arg)
{
	__pthread_unwind_buf_t ub;
	void *ret;

	if (sigsetjmp_cancel(ub.__cancel_jmp_buf, 0))
		return *host_result(tp());
	cancel_register(&ub);
	ret = fn(arg);
	cancel_unregister(&ub);
	/* With no buffer left to unwind to, a cancellation must not act in
	   the thread's exit steps (key destructors may call cancellation
	   points).  DISABLED rather than EXITING, which would take the
	   thread out of set*id broadcasts too early (host_thread_unlist). */
	__atomic_fetch_or(host_cancel_word(tp()), HOST_CANCEL_DISABLED,
			  __ATOMIC_ACQ_REL);
	return ret;
}

static void free_tcb_buffer(char *tcb, size_t off)
{
	if (off == NOT_FOUND)
		return;
	free(FIELD(tcb, off, void *));
	FIELD(tcb, off, void *) = NULL;
}

/* S3: C++ thread_local destructors (first, in glibc's order). */
void host_call_tls_dtors(void)
{
	G.call_tls_dtors();
}

/* Where the TCB keeps the buffers strerror and strsignal return for
   unknown numbers.  Found by calling them and looking for the result,
   but not in the start-up probe: both translate their message, which
   takes gettext's lock, and start-up may run inside that lock (a
   library constructor in bindtextdomain whose malloc, jemalloc's, calls
   pthread_mutex_trylock: libgpg-error under redis-server), so a probe
   thread waiting for it while its creator waits for the probe would
   deadlock.  So the first weft thread to end finds them, on itself,
   holding nothing.  Threads ending while it does so keep their buffers
   (a few bytes, and only if they asked for an unknown number). */
static int probe_string_buffers(char *self)
{
	static int state; /* 0 not probed, 1 probing, 2 done */
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

	if (s == 2)
		return 1;
	if (s != 0 || !__atomic_compare_exchange_n(&state, &s, 1, 0,
						   __ATOMIC_ACQ_REL,
						   __ATOMIC_ACQUIRE))
		return 0;
	L.strerror_buf = scan_tcb(self, (uintptr_t)strerror(12345));
	L.strsignal_buf = scan_tcb(self, (uintptr_t)strsignal(SIGRTMIN + 1));
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
	return 1;
}

void host_libc_freeres(char *tcb)
{
	res_state rs;

	/* S4, the reachable part of __libc_thread_freeres: dlerror state (a
	   second call frees it), resolver sockets, strerror/strsignal
	   buffers (P8). */
	dlerror();
	dlerror();
	rs = __res_state();
	if (rs->nscount != 0)
		res_nclose(rs);
	if (tcb == tp() && probe_string_buffers(tcb)) {
		free_tcb_buffer(tcb, L.strerror_buf);
		free_tcb_buffer(tcb, L.strsignal_buf);
	}
}

void host_tls_release(char *tcb)
{
	G.dl_deallocate_tls(tcb, 0);
}

/* S4, the unreachable part: the malloc thread cache and arena binding.
   Instead of leaking them, the dying thread hands them to the next thread
   weft creates; nothing uses them in between. */
int host_malloc_state_take(char *tcb, uintptr_t *words)
{
	int any = 0;

	for (int i = 0; i < L.malloc_words; i++) {
		words[i] = FIELD(tcb, L.malloc_word[i], uintptr_t);
		FIELD(tcb, L.malloc_word[i], uintptr_t) = 0;
		any |= words[i] != 0;
	}
	return any;
}

unsigned int *host_nthreads_word;

int host_nthreads_add(int delta)
{
	return (int)__atomic_add_fetch(G.nptl_nthreads, delta, __ATOMIC_ACQ_REL);
}

void host_fork_child(char *tcb)
{
	/* glibc's child (reclaim_stacks) re-initialised its lists with only
	   the forking thread, on dl_stack_user since user_stack is set.  A
	   listed weft thread stays there; otherwise it must leave. */
	if (!G.stack_user)
		list_unlink((void **)(tcb + L.list));
}

int host_register_atfork(void (*prepare)(void), void (*parent)(void),
			 void (*child)(void))
{
	return G.register_atfork(prepare, parent, child, &__dso_handle);
}

int host_at_thread_exit(void (*fn)(void *), void *arg)
{
	return G.cxa_thread_atexit_impl(fn, arg, &__dso_handle);
}
