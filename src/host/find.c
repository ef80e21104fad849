/* Finding glibc's layout without a second thread (layout.h, first
   step): what glibc publishes for debuggers and tools (libthread_db's
   field descriptors, ld.so's static TLS information, __rseq_offset),
   what the loader's module list shows of libc (its TLS block and image,
   its code), libc's cancellation window, and the release table's row
   for what cannot be discovered.  Nothing here leaves a trace in the
   process: no thread, no mapping, no signal. */
#include <ctype.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/rseq.h>

#include "elf_sym.h"
#include "env.h"
#include "objects.h"
#include "layout.h"
#include "releases.h"

struct host_layout host_layout;

#define L host_layout

static char why_buf[200];

/* A reason in why_buf (weft prints it in one line). */
static const char *why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof why_buf, fmt, ap);
	va_end(ap);
	return why_buf;
}

/* glibc's private symbols (GLIBC_PRIVATE, libc's and ld.so's), read
   from their symbol tables (elf_sym.h): dlvsym takes the loader's
   dl_load_lock, which a signal handler starting weft may have
   interrupted on its own thread (docs/glibc-host.md, "Signal handlers
   before start-up").  (Not from a handle of dlopen("libc.so.6",
   RTLD_NOLOAD) either: start-up can run from a .preinit_array function,
   before libc's own initialiser, and that dlopen ran the initialiser
   then, without the arguments and environment ld.so did not have yet:
   tests/t_preinit_env.c.) */
static void *private_sym(const char *name)
{
	return host_vsym_addr(name, "GLIBC_PRIVATE");
}

/* libthread_db describes fields as three 32-bit words: bit size, count,
   byte offset.  glibc keeps them current because gdb depends on them. */
static const uint32_t *descriptor(const char *name)
{
	return private_sym(name);
}

static int db_offset(const char *name, size_t *out)
{
	const uint32_t *d = descriptor(name);

	if (!d)
		return -1;
	*out = d[2];
	return 0;
}

static const char *find_symbols(void)
{
	void (*tls_static_info)(size_t *, size_t *);
	const uint32_t *size;
	char *tp = arch_thread_pointer();

	L.dl_allocate_tls = private_sym("_dl_allocate_tls");
	L.dl_deallocate_tls = private_sym("_dl_deallocate_tls");
	tls_static_info = private_sym("_dl_get_tls_static_info");
	L.ctype_init = private_sym("__ctype_init");
	L.call_tls_dtors = private_sym("__call_tls_dtors");
	L.nthreads = private_sym("__nptl_nthreads");
	size = descriptor("_thread_db_sizeof_pthread");
	if (!L.dl_allocate_tls || !L.dl_deallocate_tls || !tls_static_info ||
	    !L.ctype_init || !L.call_tls_dtors || !L.nthreads || !size)
		return "a private glibc symbol weft needs is missing";
	L.tcb_size = size[0];
	if (db_offset("_thread_db_pthread_tid", &L.tid) ||
	    db_offset("_thread_db_pthread_list", &L.list) ||
	    db_offset("_thread_db_pthread_report_events", &L.report_events) ||
	    db_offset("_thread_db_pthread_cancelhandling", &L.cancelhandling))
		return "a libthread_db descriptor weft needs is missing";
	/* Optional: without them glibc's copy of a thread's scheduling is
	   not updated (sched_cache.c). */
	if (db_offset("_thread_db_pthread_schedpolicy", &L.sched_policy) ||
	    db_offset("_thread_db_pthread_schedparam_sched_priority",
		      &L.sched_priority))
		L.sched_policy = L.sched_priority = 0;
	/* The public *_loc functions return the calling thread's TLS words
	   that __ctype_init fills; their distance from TP is the same in
	   every thread. */
	L.ctype_tls[0] = (char *)__ctype_b_loc() - tp;
	L.ctype_tls[1] = (char *)__ctype_toupper_loc() - tp;
	L.ctype_tls[2] = (char *)__ctype_tolower_loc() - tp;
	tls_static_info(&L.tls_size, &L.tls_align);
	if (L.tls_align < 64)
		L.tls_align = 64;
	L.rseq_off = __rseq_offset;
	L.rseq_size = __rseq_size;
	return NULL;
}

/* libc's module: its static TLS block in this thread (the same distance
   from TP in every thread), its TLS image (a fresh thread's initial
   values) and its code. */
struct libc_module {
	const char *tls_image;
	size_t tls_image_size;
};

static int find_libc(struct host_object *o, void *data)
{
	struct libc_module *m = data;

	if (!strstr(o->name, "/libc.so.6"))
		return 0;
	L.libc_base = o->base;
	for (int i = 0; i < host_object_phdrs(o); i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];

		if (ph->p_type == PT_TLS) {
			L.libc_tls_size = ph->p_memsz;
			m->tls_image = (const char *)(o->base + ph->p_vaddr);
			m->tls_image_size = ph->p_filesz;
		}
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			L.libc_text_lo = o->base + ph->p_vaddr;
			L.libc_text_hi = L.libc_text_lo + ph->p_memsz;
		}
	}
	return 1;
}

/* The value of libc's TLS symbol `name` (GLIBC_PRIVATE): its offset in
   libc's block; -1 if libc does not define it so. */
static ptrdiff_t libc_tls_sym(const char *name)
{
	uintptr_t base;
	const ElfW(Sym) *s = host_vsym_lookup(name, "GLIBC_PRIVATE", &base);

	if (!s || base != L.libc_base || ELF64_ST_TYPE(s->st_info) != STT_TLS)
		return -1;
	return (ptrdiff_t)s->st_value;
}

/* libc's TLS block in this thread, from where this thread's errno is:
   libc exports errno itself as a TLS symbol whose value is its offset in
   the block.  (dl_iterate_phdr's dlpi_tls_data says the same, from the
   loader's private module id, under the loader's lock.)  A wrong block
   would show at the probe: malloc's words would not be where the row
   says (probe.c). */
static const char *find_libc_tls(void)
{
	ptrdiff_t errno_at = libc_tls_sym("errno"), resp_at = libc_tls_sym("__resp");
	char *block = (char *)&errno - errno_at, *tp = arch_thread_pointer();

	if (errno_at < 0 || resp_at < 0)
		return "libc's TLS block (its errno and __resp) was not found";
	L.libc_tls = block - tp;
	L.resp_tls = block + resp_at - tp;
	return NULL;
}

/* glibc's thread lists (docs/glibc-host.md, "Membership of glibc's
   thread list"): the heads are described by libthread_db, the lock and
   in-flight word follow them in _rtld_global as the row says, and
   setxid_futex is the row's.  Without them weft threads stay unlisted. */
static void find_lists(const struct host_release *row)
{
	char *rtld = private_sym("_rtld_global");
	size_t used, user;

	if (!rtld || db_offset("_thread_db_rtld_global__dl_stack_used", &used) ||
	    db_offset("_thread_db_rtld_global__dl_stack_user", &user) ||
	    user != used + 16 || !row->setxid_futex)
		return;
	L.setxid_futex = row->setxid_futex;
	L.stack_user = (void **)(rtld + user);
	L.in_flight = (uintptr_t *)(rtld + used + row->rtld_in_flight);
	L.list_lock = (volatile int *)(rtld + used + row->rtld_list_lock);
}

/* --- libc's cancellation window (HOST_CANCEL_WINDOW) ------------------

   From 2.41 libc's cancellation points make their system call in
   __syscall_cancel_arch, whose bounds (__syscall_cancel_arch_start,
   _end) are not exported.  Its code is a fixed sequence written in
   assembly (sysdeps/unix/sysv/linux/x86_64/syscall_cancel.S): test the
   CANCELED bit, move the arguments into place, syscall, ret.  It is
   found by following the calls that libc's own `read` makes (read ->
   its cancellable wrapper -> __internal_syscall_cancel -> the window),
   looking for that sequence at each call's target: a few hundred bytes
   read, where a scan of all of libc's code would fault in over a
   megabyte. */
static const unsigned char cp_head[] = {
	0x8b, 0x07,	  /* mov (%rdi),%eax */
	0xf6, 0x07, 0x08, /* testb $CANCELED,(%rdi) */
	0x0f, 0x85,	  /* jne rel32 (__syscall_do_cancel) */
};
static const unsigned char cp_tail[] = {
	0x49, 0x89, 0xfb,		/* mov %rdi,%r11 */
	0x48, 0x89, 0xf0,		/* mov %rsi,%rax */
	0x48, 0x89, 0xd7,		/* mov %rdx,%rdi */
	0x48, 0x89, 0xce,		/* mov %rcx,%rsi */
	0x4c, 0x89, 0xc2,		/* mov %r8,%rdx */
	0x4d, 0x89, 0xca,		/* mov %r9,%r10 */
	0x4c, 0x8b, 0x44, 0x24, 0x08,	/* mov 8(%rsp),%r8 */
	0x4c, 0x8b, 0x4c, 0x24, 0x10,	/* mov 16(%rsp),%r9 */
	0x4c, 0x89, 0x5c, 0x24, 0x08,	/* mov %r11,8(%rsp) */
	0x0f, 0x05,			/* syscall */
	0xc3,				/* ret */
};
#define CP_TAIL_AT (sizeof cp_head + 4)
#define CP_LEN (CP_TAIL_AT + sizeof cp_tail)
#define CP_FOLLOW_BYTES 192 /* of each function, looking for calls */
#define CP_FOLLOW_DEPTH 4

static int in_libc_text(uintptr_t a, size_t len)
{
	return a >= L.libc_text_lo && a + len <= L.libc_text_hi && a + len > a;
}

static int is_cp_window(const unsigned char *p)
{
	if (!in_libc_text((uintptr_t)p, CP_LEN + 4))
		return 0;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4; /* endbr64: a CET build's entry */
	if (memcmp(p, cp_head, sizeof cp_head) != 0 ||
	    memcmp(p + CP_TAIL_AT, cp_tail, sizeof cp_tail) != 0)
		return 0;
	L.libc_cp_begin = (uintptr_t)p;
	L.libc_cp_end = (uintptr_t)p + CP_LEN - 1; /* the `ret`, after syscall */
	return 1;
}

/* Looks for the window at the targets of the direct calls (e8 rel32) in
   the first bytes of `f`, and in what those call.  A byte e8 inside
   another instruction gives a false target; only targets in libc's code
   at a function's alignment are followed, and only the exact sequence
   counts. */
static int follow_calls(const unsigned char *f, int depth)
{
	if (!in_libc_text((uintptr_t)f, CP_FOLLOW_BYTES))
		return 0;
	for (size_t i = 0; i + 5 <= CP_FOLLOW_BYTES; i++) {
		int32_t rel;
		const unsigned char *t;

		if (f[i] != 0xe8)
			continue;
		memcpy(&rel, f + i + 1, 4);
		t = f + i + 5 + rel;
		if (((uintptr_t)t & 15) != 0 || !in_libc_text((uintptr_t)t, 1))
			continue;
		if (is_cp_window(t) ||
		    (depth > 1 && follow_calls(t, depth - 1)))
			return 1;
	}
	return 0;
}

/* libc's own read, under the name `__read` that libc exports besides
   `read` and that nothing interposes (weft exports `read`). */
static const unsigned char *libc_read(void)
{
	const unsigned char *r = host_vsym_addr("__read", "GLIBC_2.2.5");

	return r && in_libc_text((uintptr_t)r, 1) ? r : NULL;
}

static const char *find_cp_window(void)
{
	const unsigned char *r = libc_read();

	if (r && follow_calls(r, CP_FOLLOW_DEPTH))
		return NULL;
	L.libc_cp_begin = L.libc_cp_end = 0;
	return "libc's cancellation window (__syscall_cancel_arch) was not found";
}

/* --- the row ---------------------------------------------------------- */

/* malloc's words from the row, with the fresh values of libc's TLS
   image, and the getrandom state word: the per-thread libc state weft
   hands on (libc_state.c). */
static const char *state_words(const struct host_release *row,
			       const struct libc_module *m)
{
	int n = 0;

	for (int i = 0; i < 2; i++) {
		ptrdiff_t k = row->malloc_word[i];
		uintptr_t fresh = 0;

		if (k < 0 || (size_t)k + 8 > L.libc_tls_size)
			return "malloc's thread words lie outside libc's TLS block";
		if ((size_t)k + 8 <= m->tls_image_size)
			memcpy(&fresh, m->tls_image + k, 8);
		L.state[n++] = (struct host_state_word){L.libc_tls + k, fresh, 0};
	}
	/* The low bit of getrandom_buf marks it reserved during a call. */
	if (row->getrandom_buf)
		L.state[n++] = (struct host_state_word){
			(ptrdiff_t)row->getrandom_buf, 0, 1};
	L.state_words = n;
	return NULL;
}

static void apply_row(const struct host_release *row)
{
	L.res = row->res;
	L.robust_head = row->robust_head;
	L.stackblock = row->stackblock;
	L.stackblock_size = row->stackblock + 8;
	L.result = row->result;
	L.cleanup = row->cleanup;
	L.cleanup_jmp_buf = row->cleanup_jmp_buf;
	L.user_stack.off = row->user_stack.off;
	L.user_stack.width = row->user_stack.width;
	L.user_stack.value = row->user_stack.value;
	L.join.off = row->join.off;
	L.join.kind = row->join.kind;
	L.join.joinable = row->join.joinable;
	L.join.detached = row->join.detached;
	L.join.exited = row->join.exited;
	L.getrandom_buf = row->getrandom_buf;
	L.cancel_protocol = row->cancel_protocol;
}

const char *host_layout_find(void)
{
	struct libc_module m = {NULL, 0};
	const struct host_release *row;
	const char *err;
	int other_size;

	L.release = host_glibc_version();
	if ((err = find_symbols()))
		return err;
	row = host_release_find(L.release, L.tcb_size, &other_size);
	if (!row && other_size)
		return why("glibc %s with a %zu-byte thread descriptor is not a "
			   "build weft knows", L.release, L.tcb_size);
	if (!row)
		return why("glibc %s is not a release weft knows", L.release);
	host_objects_each(find_libc, &m);
	if (!L.libc_text_hi || !L.libc_tls_size)
		return "libc's module (code, TLS block) was not found";
	if ((err = find_libc_tls()))
		return err;
	apply_row(row);
	if ((err = state_words(row, &m)))
		return err;
	find_lists(row);
	if (row->cancel_protocol == HOST_CANCEL_WINDOW && (err = find_cp_window()))
		return err;
	return NULL;
}
