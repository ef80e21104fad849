/* Building a TCB (tcb.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kernel/rseq.h"
#include "kernel/syscall.h"
#include "tcb.h"
#include "threads.h"

#define L host_layout
#define FIELD(tcb, off, type) (*(type *)((char *)(tcb) + (off)))

/* Fixed by the x86-64 ABI (tcbhead_t), stable across glibc releases. */
enum {
	TCB_OFF_TCB = 0,
	TCB_OFF_DTV = 8,
	TCB_OFF_SELF = 16,
	TCB_OFF_MULTIPLE_THREADS = 24,
	TCB_OFF_STACK_GUARD = 40,
	TCB_OFF_POINTER_GUARD = 48,
	TCB_OFF_FEATURE_1 = 72,
};

static char *tp(void)
{
	return arch_thread_pointer();
}

static void set_join(char *tcb, unsigned int state, void *pointer)
{
	if (L.join.kind == HOST_JOIN_STATE)
		__atomic_store_n(&FIELD(tcb, L.join.off, unsigned int), state,
				 __ATOMIC_RELEASE);
	else
		__atomic_store_n(&FIELD(tcb, L.join.off, void *), pointer,
				 __ATOMIC_RELEASE);
}

int host_tcb_prepare(char *tcb, char *block, size_t block_size)
{
	char *robust;

	memset(tcb, 0, L.tcb_size);
	/* H2: DTV + copies of every module's TLS image (also weft's own). */
	if (!L.dl_allocate_tls(tcb))
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
	/* P2: glibc's fork child unlinks and relinks this node; the
	   user-stack marker tells it never to cache our memory (2.43's
	   stack_mode reads "glibc's own stack" when zero). */
	FIELD(tcb, L.list, void *) = tcb + L.list;
	FIELD(tcb, L.list + 8, void *) = tcb + L.list;
	if (L.user_stack.width == 1)
		FIELD(tcb, L.user_stack.off, unsigned char) = (unsigned char)L.user_stack.value;
	else
		FIELD(tcb, L.user_stack.off, int) = L.user_stack.value;
	/* glibc's own calls on this TCB (2.43's joinstate: 0 reads "ended",
	   and they answer ESRCH). */
	set_join(tcb, L.join.joinable, NULL);
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
	FIELD(tcb, L.rseq_off + 4, uint32_t) = WEFT_RSEQ_CPU_FAILED;
	return 0;
}

void host_tcb_set_detached(char *tcb)
{
	set_join(tcb, L.join.detached, tcb);
}

void host_tcb_set_ended(char *tcb)
{
	if (L.join.kind == HOST_JOIN_STATE)
		set_join(tcb, L.join.exited, NULL);
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

const volatile uint32_t *host_rseq_cpu(char *tcb)
{
	return L.rseq_size > 0 ? &FIELD(tcb, L.rseq_off + 4, uint32_t) : NULL;
}

void host_thread_begin(char *tcb)
{
	/* P7: sched_getcpu and rseq users read the area at __rseq_offset. */
	if (L.rseq_size > 0) {
		uint32_t len = L.rseq_size < 32 ? 32 : L.rseq_size;
		rseq_register(tcb + L.rseq_off, len);
	} else {
		FIELD(tcb, L.rseq_off + 4, uint32_t) = WEFT_RSEQ_CPU_FAILED;
	}
	/* P5: per-thread ctype table pointers for isalpha & co. */
	L.ctype_init();
	/* P3: the head, ready since host_tcb_prepare, goes to the kernel. */
	host_robust_list_register(tcb);
	/* Started: a set*id call may now signal us. */
	host_list_started(tcb);
}

void host_tls_release(char *tcb)
{
	L.dl_deallocate_tls(tcb, 0);
}

/* ld.so allocates a DTV with its length in entry 0 and stores a pointer
   to entry 1 in the TCB (INSTALL_DTV, also after _dl_resize_dtv); an
   entry (dtv_t) is two words. */
void *host_tls_dtv_block(char *tcb)
{
	char *dtv = FIELD(tcb, TCB_OFF_DTV, char *);

	return dtv ? dtv - 2 * sizeof(void *) : NULL;
}

int host_cancel_requested(char *tcb)
{
	int ch = __atomic_load_n(host_cancel_word(tcb), __ATOMIC_ACQUIRE);

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
