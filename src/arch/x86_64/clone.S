/* long weft_clone(unsigned long flags, void *stack_top, int *parent_tid,
 *                 int *child_tid, void *tls, int (*fn)(void *), void *arg);
 *
 * Starts a thread with the raw clone system call.  The entry function
 * and its argument are stored on the *child's* stack before the call, so
 * the child never reads the creator's stack (which may be gone by the
 * time the child runs).  The child's half is its own CFI procedure whose
 * return address is marked undefined: unwinders (C++ exceptions, forced
 * unwinding for pthread_exit, gdb backtraces) stop cleanly there.
 *
 * Register use on entry (SysV): rdi flags, rsi stack_top, rdx parent_tid,
 * rcx child_tid, r8 tls, r9 fn, 8(%rsp) arg.  The kernel wants
 * rdi flags, rsi stack, rdx parent_tid, r10 child_tid, r8 tls.
 */
	.text
	.globl	weft_clone
	.hidden	weft_clone
	.type	weft_clone, @function
weft_clone:
	.cfi_startproc
	movq	8(%rsp), %rax		/* arg */
	andq	$-16, %rsi		/* keep the ABI's 16-byte alignment */
	subq	$16, %rsi
	movq	%r9, 0(%rsi)		/* fn, popped first by the child */
	movq	%rax, 8(%rsi)		/* arg */
	movq	%rcx, %r10
	movl	$56, %eax		/* SYS_clone */
	syscall
	testq	%rax, %rax
	jz	1f
	ret				/* parent: tid or -errno */
	.cfi_endproc

1:	/* child: rsp is stack_top - 16, the thread pointer is already set */
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp		/* outermost frame for frame-pointer walks */
	popq	%rax			/* fn */
	popq	%rdi			/* arg; rsp is 16-aligned again */
	call	*%rax
	movl	%eax, %edi		/* fn should never return; exit anyway */
	movl	$60, %eax		/* SYS_exit: this thread only */
	syscall
	hlt
	.cfi_endproc
	.size	weft_clone, .-weft_clone

	.section .note.GNU-stack,"",@progbits
