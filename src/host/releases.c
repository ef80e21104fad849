/* The glibc releases weft serves (releases.h).  Offsets are bytes from
   the start of struct pthread (the thread pointer on x86-64), measured
   on Debian's builds: 2.36-9+deb12u14 (Debian 12), 2.41-12+deb13u5
   (Debian 13), 2.43-7 (unstable, November 2026), with libthread_db's
   descriptors, a glibc thread on a user stack, and gdb's `ptype /o
   struct pthread` on libc6-dbg (docs/glibc-releases.md has the
   measurements and how to add a release).

   What changed between them, as far as weft is concerned:
     2.41  libc's cancellation points use the hidden window
           __syscall_cancel_arch (HOST_CANCEL_WINDOW); a per-thread
           getrandom state (getrandom_buf) at the end of struct pthread;
           rseq area moved to static TLS (found through __rseq_offset)
     2.43  user_stack (bool) became stack_mode (enum, 2 = user stack),
           three bytes later, moving what follows by 8: setxid_futex,
           the join state (joinid, a pointer, became joinstate, an enum
           the kernel clears at exit), result; malloc's tcache word
           starts at a dummy, not 0 */
#include <string.h>

#include "releases.h"

static const struct host_release rows[] = {
	{
		.release = "2.36",
		.tcb_size = 2368,
		.res = 1720,
		.robust_head = 736,
		.stackblock = 1680,
		.result = 1576,
		.cleanup = 760,
		.cleanup_jmp_buf = 768,
		.user_stack = {1554, 1, 1},
		.join = {1568, HOST_JOIN_POINTER, 0, 0, 0},
		.malloc_word = {72, 88},
		.setxid_futex = 1564,
		.getrandom_buf = 0,
		.cancel_protocol = HOST_CANCEL_ASYNC_BIT,
		.rtld_in_flight = 56,
		.rtld_list_lock = 64,
	},
	{
		.release = "2.41",
		.tcb_size = 2368,
		.res = 1720,
		.robust_head = 736,
		.stackblock = 1680,
		.result = 1576,
		.cleanup = 760,
		.cleanup_jmp_buf = 768,
		.user_stack = {1554, 1, 1},
		.join = {1568, HOST_JOIN_POINTER, 0, 0, 0},
		.malloc_word = {72, 88},
		.setxid_futex = 1564,
		.getrandom_buf = 2328,
		.cancel_protocol = HOST_CANCEL_WINDOW,
		.rtld_in_flight = 56,
		.rtld_list_lock = 64,
	},
	{
		.release = "2.43",
		.tcb_size = 2368,
		.res = 1720,
		.robust_head = 736,
		.stackblock = 1680,
		.result = 1584,
		.cleanup = 760,
		.cleanup_jmp_buf = 768,
		/* ALLOCATE_GUARD_USER */
		.user_stack = {1556, 4, 2},
		/* THREAD_STATE_JOINABLE, _DETACHED, _EXITED */
		.join = {1576, HOST_JOIN_STATE, 2, 3, 0},
		.malloc_word = {32, 80},
		.setxid_futex = 1572,
		.getrandom_buf = 2328,
		.cancel_protocol = HOST_CANCEL_WINDOW,
		.rtld_in_flight = 56,
		.rtld_list_lock = 64,
	},
};

const struct host_release *host_release_find(const char *release,
					     size_t tcb_size, int *other_size)
{
	*other_size = 0;
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		if (strcmp(rows[i].release, release) != 0)
			continue;
		if (rows[i].tcb_size == tcb_size)
			return &rows[i];
		*other_size = 1;
	}
	return NULL;
}
