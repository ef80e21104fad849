/* The SIGCANCEL restorer (docs/cancel.md).  It has no CFI, on purpose.
 * (The cancellable system call is expanded inline: syscall_cp_window.h.)
 */
	.text
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
