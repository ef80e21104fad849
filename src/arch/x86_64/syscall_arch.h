/* Raw system calls for x86-64: the kernel ABI, nothing from libc.
   The kernel clobbers rcx (return address) and r11 (rflags).  Results in
   [-4095, -1] are negated errno values; callers check them directly, so
   no errno is ever touched (safe in signal handlers, fork children and
   half-built threads).  */
#ifndef WEFT_ARCH_SYSCALL_ARCH_H
#define WEFT_ARCH_SYSCALL_ARCH_H

#include <stddef.h>

static inline long __syscall0(long n)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall1(long n, long a1)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall2(long n, long a1, long a2)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall3(long n, long a1, long a2, long a3)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2),
			 "d"(a3) : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall4(long n, long a1, long a2, long a3, long a4)
{
	long r;
	register long r10 __asm__("r10") = a4;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2),
			 "d"(a3), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall5(long n, long a1, long a2, long a3, long a4,
			      long a5)
{
	long r;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2),
			 "d"(a3), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return r;
}

static inline long __syscall6(long n, long a1, long a2, long a3, long a4,
			      long a5, long a6)
{
	long r;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2),
			 "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

/* The alignment of the word at the thread pointer (the TCB's own
   address, so the TCB's alignment: glibc's TLS_TCB_ALIGN): its low bits
   are 0 in every thread, which pthread_testcancel relies on before
   start-up (core/cancel.c, cancel_test_off). */
#define ARCH_TP_WORD0_ALIGN 64

/* The thread pointer (%fs base).  glibc keeps the TCB's own address in
   its first word, so a load of %fs:0 yields it without a syscall.  */
static inline void *arch_thread_pointer(void)
{
	void *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* An initial-exec TLS variable of libweft read from the thread pointer
   in one load: ARCH_TP_SEG qualifies a pointer as %fs-relative, and
   ARCH_TLS_IE_OFFSET(var) is var's offset from the thread pointer (the
   GOT word the loader fills, as gcc itself reads it).  For an array
   with a variable index gcc reads %fs:0 and adds, a longer chain than
   `mov off(%rip); mov %fs:(off,index)`. */
#define ARCH_TP_SEG __seg_fs
#define ARCH_TLS_IE_OFFSET(var)                                                \
	({                                                                     \
		long off_;                                                     \
		__asm__("movq " #var "@gottpoff(%%rip), %0" : "=r"(off_));    \
		off_;                                                          \
	})

/* The 32-bit word `off` bytes past the thread pointer, read in one
   %fs-relative load (no trip through the TCB's address first).
   Volatile: the caller wants the word as it is now. */
static inline int arch_tp_load32(size_t off)
{
	int v;
	__asm__ volatile("movl %%fs:(%1), %0" : "=r"(v) : "r"(off));
	return v;
}

static inline void arch_spin_pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

/* The CPU's time-stamp counter (rdtsc: about 13 ns on the VM of
   bench/RESULTS.md, against 35-63 ns for the vDSO's CLOCK_MONOTONIC).
   Whether it is a clock at all: arch_cycles_invariant. */
static inline unsigned long arch_cycles(void)
{
	unsigned lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (unsigned long)hi << 32 | lo;
}

/* CPUID 0x80000007 EDX bit 8, "invariant TSC": the counter runs at one
   constant rate in every power state (and the kernel keeps the CPUs'
   counters in step when it uses it as its clocksource). */
static inline int arch_cycles_invariant(void)
{
	unsigned a = 0x80000000u, b, c = 0, d;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (a < 0x80000007u)
		return 0;
	a = 0x80000007u;
	c = 0;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return (d >> 8) & 1;
}

#endif
