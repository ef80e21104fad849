/* The cancellation state machine (docs/cancel.md).

   One word per thread, glibc's `cancelhandling`, read and changed with
   atomic operations by the thread itself, by pthread_cancel in another
   thread and by the SIGCANCEL handler:

       pthread_cancel            target deferred      target async/in point
       --------------            ---------------      ---------------------
       word |= CANCELING|CANCELED                     word |= CANCELING
                                                      tgkill(SIGCANCEL)
                                                      handler: |= CANCELED

   The bits are glibc's, so that libc's own cancellation points (which
   nothing can interpose: stdio's reads, wait3, system ...) act on weft's
   requests, and weft's points on libc's.  How those points notice a
   request is the release's (host_layout.cancel_protocol):

     2.36   they set ASYNC around their system call
            (__pthread_enable_asynccancel; __pthread_disable_asynccancel
            waits while CANCELING is set without CANCELED), so the
            signal a canceller sends to an async target reaches them,
            and the handler acts as for the async type;
     2.41+  they make the system call in libc's window
            (__syscall_cancel_arch), testing CANCELED just before it and
            setting no bit; a canceller signals every target whose
            cancellation is enabled (deferred too: it may be in the
            window), and the handler acts when the thread stopped in
            libc's window, as glibc's own handler does. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "kernel/syscall.h"
#include "cancel_inline.h"
#include "thread.h"

__thread int weft_in_cp __attribute__((tls_model("initial-exec")));

/* Labels in arch/x86_64/syscall_cp.S. */
extern void weft_sigreturn(void);

__attribute__((noreturn)) void cancel_act(void)
{
	char *tcb = arch_thread_pointer();

	if (__builtin_expect(weft_threads_refused() != NULL, 0)) {
		weft_in_cp = 0;
		host_real.pthread_exit(PTHREAD_CANCELED); /* as cancel_exit */
	}
	__atomic_fetch_or(host_cancel_word(tcb), HOST_EXITING, __ATOMIC_ACQ_REL);
	*host_result(tcb) = PTHREAD_CANCELED;
	weft_in_cp = 0;
	cancel_unwind(*host_unwind_chain(tcb));
}

/* Called from a cancellable system call's cancel label
   (syscall_cp_window.h), inside the function that expanded it, so the
   unwinder walks on with that function's unwind data. */
__attribute__((noreturn)) void weft_cp_act(void)
{
	cancel_act();
}

/* weft_in_cp's place in every thread's static TLS, from the thread
   pointer (the same in all threads); set by cancel_init. */
static long weft_in_cp_off;

int cancel_request(char *tcb)
{
	int *w = host_cancel_word(tcb);
	int old = __atomic_load_n(w, __ATOMIC_RELAXED);
	int want;

	for (;;) {
		want = old | HOST_CANCELING | HOST_CANCELED;
		if (want == old)
			return 0; /* already asked */
		if (cancel_due_async(want)) {
			/* The handler (or, for ourselves, this code) marks it
			   CANCELED once it has seen it. */
			if (!__atomic_compare_exchange_n(w, &old,
							 old | HOST_CANCELING, 1,
							 __ATOMIC_ACQ_REL,
							 __ATOMIC_RELAXED))
				continue;
			if (tcb != (char *)arch_thread_pointer())
				return 1;
			__atomic_fetch_or(w, HOST_CANCELED, __ATOMIC_ACQ_REL);
			/* Inside a cancellation point's C part the request
			   waits for its checks (a completed call is kept). */
			if (!weft_in_cp)
				cancel_act();
			return 0;
		}
		if (__atomic_compare_exchange_n(w, &old, want, 1,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			/* A deferred target asleep in one of weft's inline
			   points (cancel_inline.h) is woken by the signal too:
			   its weft_in_cp flag, read after the full barrier of
			   the CAS (it sets the flag with an exchange before it
			   reads the word: one of the two sees the other). */
			if (tcb == (char *)arch_thread_pointer() ||
			    (want & HOST_CANCEL_DISABLED))
				return 0;
			/* From 2.41 it may be in libc's window, which
			   nothing marks. */
			if (host_layout.cancel_protocol == HOST_CANCEL_WINDOW)
				return 1;
			return __atomic_load_n((int *)(tcb + weft_in_cp_off),
					       __ATOMIC_SEQ_CST);
		}
	}
}

/* Sets or clears `bit` in the calling thread's word; acts when the new
   word makes an asynchronous cancellation due.  Returns the old word. */
static int change_own(int bit, int set)
{
	int *w = cancel_self_word();
	int old = __atomic_load_n(w, __ATOMIC_RELAXED);
	int want;

	do
		want = set ? old | bit : old & ~bit;
	while (want != old &&
	       !__atomic_compare_exchange_n(w, &old, want, 1, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED));
	if (want != old && cancel_due_async(want))
		cancel_act();
	return old;
}

int cancel_set_state(int state, int *oldstate)
{
	int old;

	if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE)
		return EINVAL;
	old = change_own(HOST_CANCEL_DISABLED, state == PTHREAD_CANCEL_DISABLE);
	if (oldstate)
		*oldstate = old & HOST_CANCEL_DISABLED ? PTHREAD_CANCEL_DISABLE
						       : PTHREAD_CANCEL_ENABLE;
	return 0;
}

int cancel_set_type(int type, int *oldtype)
{
	int old;

	if (type != PTHREAD_CANCEL_DEFERRED &&
	    type != PTHREAD_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	old = change_own(HOST_CANCEL_ASYNC, type == PTHREAD_CANCEL_ASYNCHRONOUS);
	if (oldtype)
		*oldtype = old & HOST_CANCEL_ASYNC ? PTHREAD_CANCEL_ASYNCHRONOUS
						   : PTHREAD_CANCEL_DEFERRED;
	return 0;
}

/* --- SIGCANCEL ------------------------------------------------------------

   Decision table (the word has already been OR'ed with CANCELING|CANCELED,
   which glibc's __pthread_disable_asynccancel waits for, so it is done
   even when the handler does not act):

     word before                 where the thread was          action
     -------------------------   ---------------------------   ------------
     disabled/exiting            anywhere                      none
     enabled                     in a window [begin, end)      resume at its
                                  (before or at the syscall)   cancel label
     enabled                     elsewhere in cancel_syscall   none: its own
                                  (weft_in_cp)                 checks decide
     enabled, ASYNC bit          elsewhere (user async type,   unwind from
                                  or 2.36 libc's own point)    here
     enabled                     in libc's window (2.41+)      unwind from
                                  (before or at the syscall)   here
     enabled, deferred           elsewhere                     none (pending) */
/* Whether the thread was stopped right after a system call inside libc
   that completed (its result is not -EINTR): one of libc's own
   cancellation points (stdio's reads and writes, system, ...; weft
   interposes the others), which in 2.36 run with the asynchronous type
   around their system call.  Acting there would lose what the call did (glibc
   bug 12683), so the cancellation stays pending for the next
   cancellation point.  The kernel delivers a signal to a thread blocked
   in a system call on the way out of it, so this is where the common
   race lands; a signal that arrives in the few instructions between
   that and the end of libc's window still acts.  A thread whose own type
   is asynchronous has no business in libc (only the three
   async-cancel-safe calls are allowed), so treating libc's code alone
   this way costs it nothing. */
static int completed_libc_syscall(const ucontext_t *uc, uintptr_t ip)
{
	const unsigned char *p = (const unsigned char *)ip;

	if (ip < host_layout.libc_text_lo + 2 || ip >= host_layout.libc_text_hi)
		return 0;
	return p[-2] == 0x0f && p[-1] == 0x05 &&
	       uc->uc_mcontext.gregs[REG_RAX] != -EINTR;
}

static void sigcancel(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	int *w, old;
	uintptr_t ip;

	if (sig != WEFT_SIGCANCEL || si->si_code != SI_TKILL ||
	    si->si_pid != sys_getpid())
		return;
	w = cancel_self_word();
	old = __atomic_fetch_or(w, HOST_CANCELING | HOST_CANCELED,
				__ATOMIC_ACQ_REL);
	if (old & (HOST_CANCEL_DISABLED | HOST_EXITING | HOST_TERMINATED))
		return;
	ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	/* The cancellable system call's windows (syscall_cp_window.h). */
	for (const struct weft_cp_window *cw = __start_weft_cp_windows;
	     cw < __stop_weft_cp_windows; cw++)
		if (ip >= cw->begin && ip < cw->end) {
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)cw->cancel;
			return;
		}
	if (weft_in_cp)
		return;
	if ((old & HOST_CANCEL_ASYNC) && !completed_libc_syscall(uc, ip))
		cancel_act();
	/* libc's own cancellation point, before its system call or to
	   restart it: nothing was done yet.  One that completed returns to
	   the instruction after the window and keeps its result; one the
	   signal made fail with EINTR acts in libc (glibc's
	   __syscall_do_cancel, which walks the same chains). */
	if (host_layout.cancel_protocol == HOST_CANCEL_WINDOW &&
	    host_in_libc_cp_window(ip))
		cancel_act();
}

/* The kernel's struct sigaction (not libc's: glibc's sigaction refuses
   signal 32, and the restorer must be weft's, see syscall_cp.S). */
struct ksigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	ksigset_t mask;
};

#define KSA_RESTORER 0x04000000

/* pthread_testcancel's word (cancel.h, cancel_test_load), as a distance
   from the thread pointer, the same in every thread:
   - 0 before start-up has decided: the word at the thread pointer (the
     TCB's address on x86-64) is aligned (ARCH_TP_WORD0_ALIGN), so it never
     reads as a request due, and none can be: pthread_cancel starts weft
     before it asks for anything;
   - glibc's cancelhandling while weft serves (the word weft keeps its
     requests in);
   - cancel_forward_word while weft forwards: a request due, so that every
     call goes out of line, where glibc's own pthread_testcancel decides.
   One load then, and no test of weft_is_active: its test and branch cost
   the call an eighth (bench/RESULTS.md, 2026-11-27-s25). */
long cancel_test_off;
_Static_assert(ARCH_TP_WORD0_ALIGN > (HOST_CANCEL_DISABLED | HOST_CANCELED |
				      HOST_EXITING | HOST_TERMINATED),
	       "the word at the thread pointer must never read as due");
static __thread int cancel_forward_word
	__attribute__((tls_model("initial-exec"))) = HOST_CANCELED;

void cancel_test_init(int serving)
{
	char *tp = arch_thread_pointer();
	char *w = serving ? (char *)host_cancel_word(tp)
			  : (char *)&cancel_forward_word;

	__atomic_store_n(&cancel_test_off, (long)(w - tp), __ATOMIC_RELEASE);
}

void cancel_init(void)
{
	struct ksigaction sa;

	weft_in_cp_off = (char *)&weft_in_cp - (char *)arch_thread_pointer();

	memset(&sa, 0, sizeof sa);
	sa.handler = sigcancel;
	/* SA_RESTART: a request to a thread that does not act (disabled)
	   must not make its system calls fail with EINTR. */
	sa.flags = SA_SIGINFO | SA_RESTART | KSA_RESTORER;
	sa.restorer = weft_sigreturn;
	sys_call4(SYS_rt_sigaction, WEFT_SIGCANCEL, &sa, NULL, sizeof(ksigset_t));
}
