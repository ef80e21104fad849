/* libgcc's unwinder, loaded when first needed (unwinder.h).  glibc does
   the same for its own cancellation: libgcc_s.so.1 is opened at the
   first pthread_cancel or pthread_exit, so a program that makes no
   thread never maps it.  weft's forced unwind, and the landing pads of
   its own -fexceptions code (the personality routine and
   _Unwind_Resume they name, defined here, hidden), go through the
   pointers below. */
#include <dlfcn.h>

#include "kernel/syscall.h"
#include "unwinder.h"

struct host_unwinder host_unwinder;

static int load_state; /* 0 not tried, 1 loading, 2 loaded, 3 failed */

int host_unwinder_load(void)
{
	struct host_unwinder u;
	void *h;
	int s = 0;

	if (__atomic_load_n(&load_state, __ATOMIC_ACQUIRE) == 2)
		return 0;
	if (!__atomic_compare_exchange_n(&load_state, &s, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		/* Another thread loads it: dlopen is quick, and the loader's
		   lock orders us after it. */
		while ((s = __atomic_load_n(&load_state, __ATOMIC_ACQUIRE)) == 1)
			sys_call0(SYS_sched_yield);
		return s == 2 ? 0 : -1;
	}
	h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		u.forced_unwind = dlsym(h, "_Unwind_ForcedUnwind");
		u.get_cfa = dlsym(h, "_Unwind_GetCFA");
		u.resume = dlsym(h, "_Unwind_Resume");
		u.personality = dlsym(h, "__gcc_personality_v0");
	}
	if (!h || !u.forced_unwind || !u.get_cfa || !u.resume || !u.personality) {
		__atomic_store_n(&load_state, 3, __ATOMIC_RELEASE);
		return -1;
	}
	host_unwinder = u;
	__atomic_store_n(&load_state, 2, __ATOMIC_RELEASE);
	return 0;
}

__attribute__((noreturn)) static void missing(void)
{
	static const char msg[] = "weft: libgcc_s.so.1 (the unwinder) could "
				  "not be loaded; aborting\n";

	sys_call3(SYS_write, 2, msg, sizeof msg - 1);
	sys_call2(SYS_kill, sys_getpid(), 6);
	for (;;)
		sys_call1(SYS_exit_group, 127);
}

void host_unwinder_resume(void *exc)
{
	if (host_unwinder_load())
		missing();
	host_unwinder.resume(exc);
	missing(); /* _Unwind_Resume does not return */
}

int host_unwinder_personality(int version, int actions, unsigned long cls,
			      void *exc, void *ctx)
{
	if (host_unwinder_load())
		missing();
	return host_unwinder.personality(version, actions, cls, exc, ctx);
}
