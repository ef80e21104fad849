/* glibc's thread lists (threads.h).

   Membership of glibc's list of user-stack threads (dl_stack_user) makes
   glibc treat weft threads like its own where it walks its lists: the
   set*id broadcast (setuid & co. change every thread's credentials),
   static TLS of modules dlopen()ed later, and the loader's wait for
   threads inside lazy binding.  weft follows glibc's own protocol: the
   list lock (_dl_stack_cache_lock, glibc's low-level lock), the
   in-flight word that lets glibc's fork child repair an edit a forking
   thread cut short, and the setxid_futex handshake (-1 until the thread
   runs, so a set*id caller waits for it; the EXITING bit and a final
   wait at exit). */
#include "kernel/futex.h"
#include "threads.h"

#define L host_layout
#define FIELD(tcb, off, type) (*(type *)((char *)(tcb) + (off)))

/* List edits announce themselves in dl_in_flight_stack, which glibc's
   fork child uses to repair a list a forking thread was editing. */
static void list_add_listed(char *tcb)
{
	void **node = (void **)(tcb + L.list), **head = L.stack_user;

	futex_lll_lock(L.list_lock);
	*L.in_flight = (uintptr_t)node | 1;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	node[0] = head[0];
	node[1] = head;
	((void **)head[0])[1] = node;
	head[0] = node;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*L.in_flight = 0;
	futex_lll_unlock(L.list_lock);
}

static void list_unlink(void **node)
{
	void **next = node[0], **prev = node[1];

	next[1] = prev;
	prev[0] = next;
	node[0] = node[1] = node;
}

static void list_del_listed(char *tcb)
{
	void **node = (void **)(tcb + L.list);

	futex_lll_lock(L.list_lock);
	*L.in_flight = (uintptr_t)node;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	list_unlink(node);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*L.in_flight = 0;
	futex_lll_unlock(L.list_lock);
}

void host_list_add(char *tcb)
{
	if (!L.stack_user)
		return;
	/* -1: "not started yet"; a set*id call waits for the thread. */
	FIELD(tcb, L.setxid_futex, int) = -1;
	list_add_listed(tcb);
}

void host_list_started(char *tcb)
{
	int *sf = &FIELD(tcb, L.setxid_futex, int);

	/* A set*id caller that found us not started waits with -2. */
	if (L.stack_user && __atomic_exchange_n(sf, 0, __ATOMIC_ACQ_REL) == -2)
		futex_wake(sf, 1, WEFT_FUTEX_PRIVATE);
}

void host_list_del(char *tcb)
{
	if (L.stack_user)
		list_del_listed(tcb);
}

/* The thread stops taking part in set*id broadcasts, finishing one that
   is under way (glibc's own exit handshake), and leaves the list. */
void host_thread_unlist(char *tcb)
{
	int *ch = host_cancel_word(tcb);
	volatile int *sf = &FIELD(tcb, L.setxid_futex, int);

	if (!L.stack_user)
		return;
	__atomic_fetch_or(ch, HOST_EXITING, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(ch, __ATOMIC_ACQUIRE) & HOST_SETXID)
		futex_wait(sf, 0, WEFT_FUTEX_PRIVATE);
	*sf = 0;
	list_del_listed(tcb);
}

void host_fork_child(char *tcb)
{
	/* glibc's child (reclaim_stacks) re-initialised its lists with only
	   the forking thread, on dl_stack_user since the user-stack marker
	   is set.  A listed weft thread stays there; otherwise it must
	   leave. */
	if (!L.stack_user)
		list_unlink((void **)(tcb + L.list));
}
