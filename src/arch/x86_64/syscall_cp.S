/* The cancellable system call and the SIGCANCEL restorer
 * (docs/cancel.md).  Neither has CFI, on purpose:
 *
 * long weft_syscall_cp_asm(int *word, long nr, long a1, long a2, long a3,
 *                          long a4, long a5, long a6);
 *
 *   Between weft_cp_begin and weft_cp_end the thread has not yet entered
 *   the system call (or the kernel will restart it), so a cancellation
 *   may act without losing a side effect: the SIGCANCEL handler moves an
 *   interrupted thread from there to weft_cp_cancel.  Nothing is pushed,
 *   so at weft_cp_cancel the stack is exactly as on entry and the jump
 *   to weft_cp_act is a tail call: the unwinder sees weft_cp_act called
 *   from weft_syscall_cp's caller, and needs no unwind data for this code.
 *
 *   SysV in: rdi word, rsi nr, rdx a1, rcx a2, r8 a3, r9 a4, 8(%rsp) a5,
 *   16(%rsp) a6.  Kernel in: rax nr, rdi, rsi, rdx, r10, r8, r9.
 */
	.text
	.globl	weft_syscall_cp_asm
	.hidden	weft_syscall_cp_asm
	.type	weft_syscall_cp_asm, @function
	.globl	weft_cp_begin, weft_cp_end, weft_cp_cancel
	.hidden	weft_cp_begin, weft_cp_end, weft_cp_cancel
weft_syscall_cp_asm:
	movq	%rdi, %r11		/* the cancellation word */
	movq	%rsi, %rax
	movq	%rdx, %rdi
	movq	%rcx, %rsi
	movq	%r8, %rdx
	movq	%r9, %r10
	movq	8(%rsp), %r8
	movq	16(%rsp), %r9
weft_cp_begin:
	/* A request already recorded (and enabled, not exiting) acts here,
	   before the call can have any effect. */
	movl	(%r11), %ecx
	andl	$(0x1 | 0x8 | 0x10 | 0x20), %ecx /* DISABLED CANCELED EXITING TERMINATED */
	cmpl	$0x8, %ecx
	je	weft_cp_cancel
	syscall
weft_cp_end:
	ret
weft_cp_cancel:
	jmp	weft_cp_act
	.size	weft_syscall_cp_asm, .-weft_syscall_cp_asm

/* void weft_sigreturn(void): the sa_restorer of weft's SIGCANCEL handler.
 * libgcc's x86-64 unwinder recognises exactly these bytes (movq $15,%rax;
 * syscall) when it finds no unwind data for a return address, and then
 * reads the interrupted registers from the signal frame: that is how an
 * asynchronous cancellation unwinds from the handler into the
 * interrupted code.  The nop keeps "return address - 1" (where the
 * unwinder looks up data) inside this data-less code. */
	.globl	weft_sigreturn
	.hidden	weft_sigreturn
	.type	weft_sigreturn, @function
	nop
weft_sigreturn:
	.byte	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00 /* movq $15, %rax */
	syscall
	.size	weft_sigreturn, .-weft_sigreturn

	.section .note.GNU-stack,"",@progbits
