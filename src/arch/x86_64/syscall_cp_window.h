/* An inline cancellable system call window (docs/cancel.md, "The
   cancellable system call").

   The same instructions as weft_syscall_cp_asm (syscall_cp.S), but
   expanded inside the calling function, so a cancellation point that is
   not cancelled costs no extra call: the out-of-line version measured
   about 40 ns more per call than glibc's wrapper on the development VM,
   the inline one the same as glibc's.

   Each expansion records its (begin, end, cancel) addresses in the
   section weft_cp_windows, which the SIGCANCEL handler searches: a
   thread interrupted in [begin, end) has not entered the system call
   yet (or the kernel will restart it), and is moved to `cancel`, which
   calls weft_cp_act from inside the same function, so the unwinder
   walks on with that function's own unwind data (the window does not
   move the stack pointer).  The call needs a frame without a red zone
   in use: files using this are built with -mno-red-zone (Makefile). */
#ifndef WEFT_ARCH_SYSCALL_CP_WINDOW_H
#define WEFT_ARCH_SYSCALL_CP_WINDOW_H

struct weft_cp_window {
	unsigned long begin, end, cancel;
};

extern const struct weft_cp_window __start_weft_cp_windows[]
	__attribute__((visibility("hidden")));
extern const struct weft_cp_window __stop_weft_cp_windows[]
	__attribute__((visibility("hidden")));

/* The cancellation word's bits tested (glibc 2.36's, host/glibc.h):
   DISABLED 0x1, CANCELED 0x8, EXITING 0x10, TERMINATED 0x20. */
static inline __attribute__((always_inline)) long
arch_syscall_cp_window(long nr, long a1, long a2, long a3, long a4, long a5,
		       long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long r;

	__asm__ volatile(
		"1:\n\t"
		"movq	%%fs:0, %%r11\n\t"
		"addq	host_cancel_off(%%rip), %%r11\n\t"
		"movl	(%%r11), %%ecx\n\t"
		"andl	$0x39, %%ecx\n\t"
		"cmpl	$0x8, %%ecx\n\t"
		"je	3f\n\t"
		"syscall\n"
		"4:\n\t"
		"jmp	2f\n"
		"3:\n\t"
		"call	weft_cp_act\n"
		"2:\n\t"
		".pushsection weft_cp_windows, \"aw\"\n\t"
		".balign 8\n\t"
		".quad	1b, 4b, 3b\n\t"
		".popsection"
		: "=a"(r)
		: "0"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8),
		  "r"(r9)
		: "rcx", "r11", "memory", "cc");
	return r;
}

#endif
