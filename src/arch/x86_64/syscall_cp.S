/* The cancellable system call and the SIGCANCEL restorer
 * (docs/cancel.md).  Neither has CFI, on purpose:
 *
 * long weft_syscall_cp_asm(long a1, long a2, long a3, long a4, long a5,
 *                          long a6, long nr);
 *
 *   Between weft_cp_begin and weft_cp_end the thread has not yet entered
 *   the system call (or the kernel will restart it), so a cancellation
 *   may act without losing a side effect: the SIGCANCEL handler moves an
 *   interrupted thread from there to weft_cp_cancel.  Nothing is pushed,
 *   so at weft_cp_cancel the stack is exactly as on entry and the jump
 *   to weft_cp_act is a tail call: the unwinder sees weft_cp_act called
 *   from weft_syscall_cp_asm's caller, and needs no unwind data here.
 *
 *   The argument order puts a1..a6 where the kernel wants them (but a4:
 *   rcx -> r10) and nr on the stack.  The cancellation word is found
 *   like glibc finds it: thread pointer + host_cancel_off.
 */
	.text
	.globl	weft_syscall_cp_asm
	.hidden	weft_syscall_cp_asm
	.type	weft_syscall_cp_asm, @function
	.globl	weft_cp_begin, weft_cp_end, weft_cp_cancel
	.hidden	weft_cp_begin, weft_cp_end, weft_cp_cancel
weft_syscall_cp_asm:
	movq	%rcx, %r10
	movq	8(%rsp), %rax		/* nr */
	movq	%fs:0, %r11
	addq	host_cancel_off(%rip), %r11 /* the cancellation word */
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
