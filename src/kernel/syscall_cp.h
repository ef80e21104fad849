/* The cancellable system call (docs/cancel.md): what every blocking
   call that POSIX makes a cancellation point goes through.

   weft_syscall_cp(nr, a1..a6) makes the system call `nr` like
   sys_call6, and acts on a cancellation (by unwinding, never returning)
   when one is due before the call starts, or interrupts it (the
   kernel's answer is -EINTR, or it would restart it).  A call that
   completed is returned even if a cancellation arrived meanwhile: the
   request stays pending for the next cancellation point, so no side
   effect (data read, a connection accepted, a child reaped) is lost. */
#ifndef WEFT_KERNEL_SYSCALL_CP_H
#define WEFT_KERNEL_SYSCALL_CP_H

#include "syscall.h"

/* core/cancel_cp.c (nr last) */
long weft_syscall_cp(long a1, long a2, long a3, long a4, long a5, long a6,
		     long nr);

#define sys_cp0(n) weft_syscall_cp(0, 0, 0, 0, 0, 0, n)
#define sys_cp1(n, a) weft_syscall_cp((long)(a), 0, 0, 0, 0, 0, n)
#define sys_cp2(n, a, b) weft_syscall_cp((long)(a), (long)(b), 0, 0, 0, 0, n)
#define sys_cp3(n, a, b, c)                                                    \
	weft_syscall_cp((long)(a), (long)(b), (long)(c), 0, 0, 0, n)
#define sys_cp4(n, a, b, c, d)                                                 \
	weft_syscall_cp((long)(a), (long)(b), (long)(c), (long)(d), 0, 0, n)
#define sys_cp5(n, a, b, c, d, e)                                              \
	weft_syscall_cp((long)(a), (long)(b), (long)(c), (long)(d), (long)(e), \
			0, n)
#define sys_cp6(n, a, b, c, d, e, f)                                           \
	weft_syscall_cp((long)(a), (long)(b), (long)(c), (long)(d), (long)(e), \
			(long)(f), n)

#endif
