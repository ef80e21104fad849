/* libc's per-thread state at a weft thread's end (libc_state.h). */
#include <dlfcn.h>
#include <resolv.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "libc_state.h"

#define L host_layout
#define FIELD(tcb, off, type) (*(type *)((char *)(tcb) + (off)))
#define NOT_FOUND ((size_t)-1)

/* S3: C++ thread_local destructors (first, in glibc's order). */
void host_call_tls_dtors(void)
{
	L.call_tls_dtors();
}

/* Where the TCB keeps the buffers strerror and strsignal return for
   unknown numbers (P8; they moved by 8 bytes in 2.37).  Found by calling
   them and looking for the result, but not in the start-up probe: both
   translate their message, which takes gettext's lock, and start-up may
   run inside that lock (a library constructor in bindtextdomain whose
   malloc, jemalloc's, calls pthread_mutex_trylock: libgpg-error under
   redis-server), so a probe thread waiting for it while its creator
   waits for the probe would deadlock.  So the first weft thread to end
   finds them, on itself, holding nothing.  Threads ending while it does
   so keep their buffers (a few bytes, and only if they asked for an
   unknown number). */
static struct {
	int state; /* 0 not looked for, 1 looking, 2 found */
	size_t strerror_buf, strsignal_buf;
} S;

static size_t scan_tcb(const char *tcb, uintptr_t value)
{
	for (size_t o = 0; o + sizeof(uintptr_t) <= L.tcb_size; o += 8)
		if (FIELD(tcb, o, uintptr_t) == value)
			return o;
	return NOT_FOUND;
}

static int find_string_buffers(char *self)
{
	int s = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);

	if (s == 2)
		return 1;
	if (s != 0 || !__atomic_compare_exchange_n(&S.state, &s, 1, 0,
						   __ATOMIC_ACQ_REL,
						   __ATOMIC_ACQUIRE))
		return 0;
	S.strerror_buf = scan_tcb(self, (uintptr_t)strerror(12345));
	S.strsignal_buf = scan_tcb(self, (uintptr_t)strsignal(SIGRTMIN + 1));
	__atomic_store_n(&S.state, 2, __ATOMIC_RELEASE);
	return 1;
}

static void free_tcb_buffer(char *tcb, size_t off)
{
	if (off == NOT_FOUND)
		return;
	free(FIELD(tcb, off, void *));
	FIELD(tcb, off, void *) = NULL;
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
	if (tcb == (char *)arch_thread_pointer() && find_string_buffers(tcb)) {
		free_tcb_buffer(tcb, S.strerror_buf);
		free_tcb_buffer(tcb, S.strsignal_buf);
	}
}

int host_malloc_state_take(char *tcb, uintptr_t *words)
{
	int any = 0;

	for (int i = 0; i < L.state_words; i++) {
		const struct host_state_word *w = &L.state[i];
		uintptr_t *p = &FIELD(tcb, w->off, uintptr_t);

		words[i] = *p & ~w->flag_bits;
		*p = w->fresh;
		any |= words[i] != w->fresh;
	}
	return any;
}

void host_malloc_state_install(char *tcb, const uintptr_t *words)
{
	for (int i = 0; i < L.state_words; i++)
		FIELD(tcb, L.state[i].off, uintptr_t) = words[i];
}
