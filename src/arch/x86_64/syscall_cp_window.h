/* An inline cancellable system call window (docs/cancel.md, "The
   cancellable system call").

   Expanded inside the calling function, so a cancellation point that is
   not cancelled costs no call besides the system call itself (an
   out-of-line window measured about 40 ns more per call than glibc's
   wrapper on the development VM, the inline one the same as glibc's).

   The window tests the calling thread's cancellation word, at `word_off`
   from the thread pointer, and goes to its cancel label instead of the
   system call when (word & mask) == due.  Each expansion records its
   (begin, end, cancel) addresses in the section weft_cp_windows, which
   the SIGCANCEL handler searches: a thread interrupted in [begin, end)
   has not entered the system call yet (or the kernel will restart it),
   and is moved to `cancel`, which calls `act` from inside the same
   function, so the unwinder walks on with that function's own unwind
   data (the window does not move the stack pointer).  The call needs a
   frame without a red zone in use: files using this are built with
   -mno-red-zone (Makefile).  What the word is, its bits and what acting
   means are the caller's (core/cancel_inline.h). */
#ifndef WEFT_ARCH_SYSCALL_CP_WINDOW_H
#define WEFT_ARCH_SYSCALL_CP_WINDOW_H

struct weft_cp_window {
	unsigned long begin, end, cancel;
};

extern const struct weft_cp_window __start_weft_cp_windows[]
	__attribute__((visibility("hidden")));
extern const struct weft_cp_window __stop_weft_cp_windows[]
	__attribute__((visibility("hidden")));

/* `act` must be a function that does not return; `mask` and `due` are
   constants. */
#define arch_syscall_cp_window(nr, a1, a2, a3, a4, a5, a6, word_off, mask,    \
			       due, act)                                       \
	({                                                                     \
		register long r10_ __asm__("r10") = (a4);                      \
		register long r8_ __asm__("r8") = (a5);                        \
		register long r9_ __asm__("r9") = (a6);                        \
		long r_;                                                       \
		__asm__ volatile(                                              \
			"1:\n\t"                                               \
			"movl	%%fs:(%q[w_off]), %%ecx\n\t"                      \
			"andl	%[w_msk], %%ecx\n\t"                              \
			"cmpl	%[w_due], %%ecx\n\t"                              \
			"je	3f\n\t"                                          \
			"syscall\n"                                            \
			"4:\n\t"                                               \
			"jmp	2f\n"                                            \
			"3:\n\t"                                               \
			"call	%c[w_act]\n"                                       \
			"2:\n\t"                                               \
			".pushsection weft_cp_windows, \"aw\"\n\t"              \
			".balign 8\n\t"                                         \
			".quad	1b, 4b, 3b\n\t"                                 \
			".popsection"                                          \
			: "=a"(r_)                                             \
			: "0"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10_),       \
			  "r"(r8_), "r"(r9_), [w_off] "r"(word_off),             \
			  [w_msk] "i"(mask), [w_due] "i"(due), [w_act] "i"(act)      \
			: "rcx", "r11", "memory", "cc");                       \
		r_;                                                            \
	})

#endif
