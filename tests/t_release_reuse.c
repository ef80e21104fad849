/* No touch after release (docs/sync.md, "No touch after release"): every
   release operation other than the mutex's and the condition variable's,
   in the completion pattern of tests/reuse.h.  Per iteration the main
   thread gets a fresh page, puts the object in it, blocks on it, and once
   let go destroys the object and reuses the page at once (counter
   pattern, munmap, 0xff, 0xab); the releaser is then "joined" (it reports
   the iteration done) and the page checked.

     rwlock wr->wr  the releaser write-unlocks, main waits in wrlock
     rwlock wr->rd  the releaser write-unlocks, main waits in rdlock
     rwlock rd->wr  the releaser read-unlocks, main waits in wrlock
     rwlock wr->wr shared   the same with a process-shared lock
     sem            the releaser posts, main waits in sem_wait
     sem shared     the same with a process-shared semaphore
     barrier 2      main waits, the releaser arrives last; main destroys
     barrier 3      main and a helper wait, the releaser arrives last
     once           the releaser runs the routine, main waits in
                    pthread_once and frees the page when it returns
     once exit      the releaser's routine ends its thread (pthread_exit):
                    the abandoned once wakes main, which runs it itself
     join stack     a thread on a user stack exits; after the join the
                    stack is reused (nothing may write it afterwards)

   Main is blocked when the release comes, in three ways, in turn:
     asleep   the releaser waits until main sleeps in the kernel
              (task_asleep);
     stopped  main is stopped right after it registered as a sleeper,
              before its sleep, and the release comes then;
     random   the releaser pauses a random 0-3 us once main is about
              to call.
   "Stopped" and the releaser's stop use watches on 8 bytes, which stop
   a thread right after its own write to them: main's on the field it
   writes when it registers, whose handler, once main's registration is
   visible, waits for the release; the releaser's on the word whose
   write releases, whose handler waits (bounded) until main has reused
   the page.  So in a "stopped" iteration main, not yet asleep, gets
   through while the releaser stands right after its release store, and
   whatever the library does afterwards hits reused memory: a stray
   access a few instructions after the release is caught every time,
   not only when a preemption happens to fall there.
   The watch, chosen at start-up by writing a watched word and looking
   for the trap, and named in the output:
     hardware watchpoint  perf_event_open, PERF_TYPE_BREAKPOINT with a
              synchronous SIGTRAP; also in the random way, where the
              releaser's stop after its release is short (STALL_NS);
     page watch  where perf_event_open fails or its watchpoint never
              fires (the PVM-hypervised VMs: it opens, and no write ever
              traps).  The watching thread makes the object's page
              read-only; each of its writes to the page faults, and the
              SIGSEGV handler makes the page writable and sets the trap
              flag (TF) in the context it returns to, so that the write
              runs and the next instruction boundary raises SIGTRAP,
              where the watchpoint's would come.  It sees the same
              writes (the thread's own to the 8 bytes, changed or not),
              for a fault, two mprotect calls and one step per write to
              the page (40-55 us there).  Stepping the whole call instead
              (TF alone, about 16 us a step, comparing the bytes
              after each) would step main's spin before it registers
              (rwlock: 700-830 steps) and, in "once exit", the unwinder
              (10,655 steps), and would take another thread's write to
              the bytes (barrier 3's `out`) for the releaser's.  One
              watch at a time: the releaser's is set only once main has
              stopped, and another thread's write to the watched page
              (barrier 3's helper arriving while main is watched) waits
              until the watch is over, at most STOP_NS.  The random way
              has no page watch: its mprotect call would delay the
              release far past the random pause.
   With neither (no perf event that fires, no SIGTRAP after a step) no
   thread is stopped, the "stopped" iterations run as random ones, and
   the test says so.
   The watched offsets and the registration checks follow weft's layouts
   (rwlock: word at 0, rd_waiters at 12, wr_waiters at 16; semaphore:
   glibc's, waiters in the high half of the first 8 bytes; barrier: the
   ticket counter at 0, `out`, whose count lets pthread_barrier_destroy
   return, at 16; once: the word, WAITERS bit 4).

   Iterations: 20,000 per (case, mode) (WEFT_REUSE_ITERS overrides;
   WEFT_REUSE_ONLY=text runs only the cases whose name contains it),
   within a time budget: the pairs share 150 s (WEFT_REUSE_SECONDS), each
   getting an even part of what is left, and a pair that reaches the end
   of its part stops early, but never before 300 iterations (100 of each
   way, "stopped" included).  The output gives the iterations each pair
   ran, and how many were "stopped" ones and really stopped.  An
   iteration takes about 0.1 ms on a quiet 2-core VM (3,000 per pair took
   15.5 s for the 44 (case, mode) pairs), 0.3 to 0.45 ms under load; on
   a PVM VM with the page watch 2,000 per pair took 31 s, the 150 s
   budget 6,900 to 16,000 per pair.  The
   catch does not rely on luck: every third iteration is a "stopped" one,
   and a library that touches the object after its release store fails
   at the first of them (the library at df4be32: rwlock at iteration 1,
   semaphore at the first stopped iteration in munmap mode; so with
   either watch). */
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <unistd.h>
#include "reuse.h"

enum kase {
	RW_WR_WR, RW_WR_RD, RW_RD_WR, RW_WR_WR_SHARED, SEM, SEM_SHARED,
	BARRIER2, BARRIER3, ONCE, ONCE_EXIT, JOIN_STACK, KASES
};

static const char *const kase_name[KASES] = {
	"rwlock wr->wr", "rwlock wr->rd", "rwlock rd->wr",
	"rwlock wr->wr shared", "sem", "sem shared", "barrier 2",
	"barrier 3", "once", "once exit", "join stack"};

/* Offsets of the watched 8 bytes in the object (see the top): the
   releaser's release store, and main's registration as a sleeper. */
static const int watch_off[KASES] = {[BARRIER2] = 16, [BARRIER3] = 16};
static const int main_watch_off[KASES] = {
	[RW_WR_WR] = 16, [RW_WR_RD] = 8, [RW_RD_WR] = 16, [RW_WR_WR_SHARED] = 16};

/* Has main registered as a sleeper (so that it is on its way to sleep)? */
static int main_registered(int kase, const char *o)
{
	switch (kase) {
	case RW_WR_RD:
		return __atomic_load_n((const uint32_t *)(o + 12), __ATOMIC_RELAXED) != 0;
	case RW_WR_WR: case RW_RD_WR: case RW_WR_WR_SHARED:
		return __atomic_load_n((const uint32_t *)(o + 16), __ATOMIC_RELAXED) != 0;
	case SEM: case SEM_SHARED:
		return __atomic_load_n((const uint64_t *)o, __ATOMIC_RELAXED) >> 32 != 0;
	case BARRIER2: case BARRIER3:
		return __atomic_load_n((const uint64_t *)o, __ATOMIC_RELAXED) != 0;
	case ONCE: case ONCE_EXIT:
		return (__atomic_load_n((const uint32_t *)o, __ATOMIC_RELAXED) & 4) != 0;
	default:
		return 0;
	}
}

enum way { WAY_ASLEEP, WAY_STOPPED, WAY_RANDOM };

/* How long a stop lasts at most: in a "stopped" iteration the other
   thread must get the CPU on a loaded machine (generous); in a "random"
   one main, if not asleep, gets through in a few us. */
#define STOP_NS 50000000L
#define STALL_NS 20000L
/* The releaser's random pause once main is about to call: about the
   time main takes to reach its sleep (spin included), so that main is
   caught spinning, on its way to sleep, or asleep. */
#define DELAY_NS 3000
#define JOIN_STACK_BYTES (128 << 10)

/* The iteration's state, shared by main, releaser and helper.  Each
   counter holds the number of the iteration it last reached. */
static struct {
	int kase, mode;
	char *mem;
	unsigned go, ready, entering, helper_in, reused, done, helper_done;
	unsigned main_stopped, released;
	enum way way;
	int stop;
	pid_t main_tid;
	int exit_bp_fd; /* once exit: the exiting thread's watchpoint */
	/* statistics of the case */
	unsigned stopped_iters, asleep_waits, main_stops, stalls, opened;
} ctl;

/* Raw futex handshakes: the test must not depend on the library under
   test for its own synchronisation. */
static void await_value(unsigned *w, unsigned v)
{
	for (int i = 0; __atomic_load_n(w, __ATOMIC_ACQUIRE) != v; i++) {
		if (i < 2000) {
			__builtin_ia32_pause();
			continue;
		}
		unsigned cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		if (cur != v)
			syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, cur, NULL);
	}
}

/* Waits until *w differs from `last`; returns the new value. */
static unsigned await_change(unsigned *w, unsigned last)
{
	unsigned v;

	for (int i = 0; (v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) == last; i++)
		if (i >= 2000)
			syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, last, NULL);
		else
			__builtin_ia32_pause();
	return v;
}

/* For the moment main enters its call: the releaser spins (yielding
   now and then) rather than sleep, so that main's store needs no wake
   and main goes straight into the call. */
static void await_spin(unsigned *w, unsigned v)
{
	for (int i = 1; __atomic_load_n(w, __ATOMIC_ACQUIRE) != v; i++)
		if (i % 1000 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
}

static void publish(unsigned *w, unsigned v)
{
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX);
}

static unsigned rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* ---- the watchpoints that stop main and the releaser (see the top) */
enum { WATCH_NONE, WATCH_PERF, WATCH_PAGE } watch_mech;
static __thread int bp_fd = -1;
static int bp_unavailable; /* perf_event_open's errno */
static int probing;	   /* the start-up probe: a hit only counts */
static volatile int probe_hits;

static __thread int is_main;

/* Waits until *w == v, at most `ns`; 1 if it came. */
static int stop_until(unsigned *w, unsigned v, long ns)
{
	long end = mono_ns() + ns;

	/* Yielding: the other thread may be waiting for this CPU. */
	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != v)
		if (mono_ns() > end)
			return 0;
		else
			sched_yield();
	return 1;
}

/* Main, right after a write to its watched field: whether it stops
   there (once its registration as a sleeper shows, once an iteration). */
static int main_may_stop(unsigned it)
{
	return __atomic_load_n(&ctl.main_stopped, __ATOMIC_RELAXED) != it &&
	       __atomic_load_n(&ctl.released, __ATOMIC_ACQUIRE) != it &&
	       main_registered(ctl.kase, ctl.mem);
}

/* ... and then it waits for the release. */
static void main_stop(unsigned it)
{
	ctl.main_stops++;
	__atomic_store_n(&ctl.main_stopped, it, __ATOMIC_RELEASE);
	stop_until(&ctl.released, it, STOP_NS);
}

/* The releaser, right after its release store: it waits until main has
   reused the page (main cannot when it sleeps: then the stop is short). */
static void releaser_trap(unsigned it)
{
	if (__atomic_load_n(&ctl.released, __ATOMIC_RELAXED) == it)
		return; /* a later write: the stop is over */
	ctl.stalls++;
	__atomic_store_n(&ctl.released, it, __ATOMIC_RELEASE);
	if (stop_until(&ctl.reused, it,
		       ctl.way == WAY_STOPPED ? STOP_NS : STALL_NS))
		ctl.opened++;
}

/* A write watchpoint on the 8 bytes at `addr` (aligned), raising a
   synchronous SIGTRAP in the thread that wrote, right after the write. */
static void bp_attr(struct perf_event_attr *a, void *addr)
{
	memset(a, 0, sizeof *a);
	a->type = PERF_TYPE_BREAKPOINT;
	a->size = sizeof *a;
	a->bp_type = HW_BREAKPOINT_W;
	a->bp_addr = (unsigned long)addr;
	a->bp_len = HW_BREAKPOINT_LEN_8;
	a->sample_period = 1;
	a->sigtrap = 1;
	a->remove_on_exec = 1;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

/* The calling thread's watchpoint, disabled (moved per iteration). */
static void bp_open(void)
{
	struct perf_event_attr a;

	bp_attr(&a, &ctl.mem); /* any aligned word: it starts disabled */
	bp_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			     PERF_FLAG_FD_CLOEXEC);
	if (bp_fd < 0)
		__atomic_store_n(&bp_unavailable, errno, __ATOMIC_RELAXED);
}

static void bp_arm(void *addr)
{
	struct perf_event_attr a;

	if (bp_fd < 0)
		return;
	bp_attr(&a, addr);
	REQUIRE(ioctl(bp_fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a) == 0 &&
			ioctl(bp_fd, PERF_EVENT_IOC_ENABLE, 0) == 0,
		"watchpoint: expected it armed, got %s", strerror(errno));
}

static void bp_disarm(void)
{
	if (bp_fd >= 0)
		ioctl(bp_fd, PERF_EVENT_IOC_DISABLE, 0);
}

/* ---- the page watch, where no hardware watchpoint fires (see the top).
   The owner (the thread that watches) makes the object's page read-only;
   each of its writes to the page then faults, and the SIGSEGV handler
   makes the page writable and sets the trap flag in the context it
   returns to: the write runs, and the next instruction boundary raises
   SIGTRAP, right after the write.  That handler clears the flag (it is
   set for that one instruction only) and, if the write was to the
   watched 8 bytes and calls for a stop, ends the watch and stops; else
   it protects the page again.  Another thread's write to the page
   faults too: it waits until the watch is over (the owner is in a call
   that writes the page at once), at most STOP_NS, after which it ends
   the watch itself.  One watch at a time, on ctl.mem's page. */
#define EFL_TF 0x100 /* the trap flag in RFLAGS */
static char *page_watched; /* the page of the watch under way, or NULL */
static __thread char *my_watch; /* the owner's watched 8 bytes */
static __thread int my_hit; /* the write being stepped is to them */
static unsigned page_watches_broken; /* ended by another thread */

static void page_protect(int read_only)
{
	mprotect(ctl.mem, REUSE_BYTES,
		 read_only ? PROT_READ : PROT_READ | PROT_WRITE);
}

static void page_arm(char *addr)
{
	my_watch = addr;
	__atomic_store_n(&page_watched, ctl.mem, __ATOMIC_RELEASE);
	page_protect(1);
}

static void page_end(void)
{
	if (!my_watch)
		return;
	my_watch = NULL;
	page_protect(0);
	__atomic_store_n(&page_watched, NULL, __ATOMIC_RELEASE);
}

/* SIGSEGV for a write to a read-only page at `a`: 1 if it was a page
   watch's (the write is then made again). */
static int page_fault(char *a, ucontext_t *uc)
{
	char *p = ctl.mem;
	long end = mono_ns() + STOP_NS;

	if (!p || a < p || a >= p + REUSE_BYTES)
		return 0;
	if (my_watch) { /* the owner's write: it runs, single-stepped */
		page_protect(0);
		my_hit = a >= my_watch && a < my_watch + 8;
		uc->uc_mcontext.gregs[REG_EFL] |= EFL_TF;
		return 1;
	}
	while (__atomic_load_n(&page_watched, __ATOMIC_ACQUIRE) == p &&
	       mono_ns() < end)
		sched_yield();
	if (__atomic_exchange_n(&page_watched, NULL, __ATOMIC_ACQ_REL) == p)
		__atomic_fetch_add(&page_watches_broken, 1, __ATOMIC_RELAXED);
	/* Also undoes an owner's protection racing with that end. */
	page_protect(0);
	return 1;
}

/* SIGTRAP right after the owner's write (the trap flag's step). */
static void page_step(ucontext_t *uc, unsigned it)
{
	uc->uc_mcontext.gregs[REG_EFL] &= ~EFL_TF;
	if (!my_watch)
		return;
	if (my_hit && (probing || !is_main || main_may_stop(it))) {
		page_end();
		if (probing)
			probe_hits++;
		else if (is_main)
			main_stop(it);
		else
			releaser_trap(it);
	} else if (__atomic_load_n(&page_watched, __ATOMIC_ACQUIRE) == ctl.mem) {
		page_protect(1);
	} else {
		my_watch = NULL; /* ended by another thread */
	}
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	unsigned it = ctl.done + 1; /* the iteration under way */

	(void)sig, (void)si;
	if (watch_mech == WATCH_PAGE)
		page_step(uc, it);
	else if (probing)
		probe_hits++;
	else if (!is_main)
		releaser_trap(it);
	else if (main_may_stop(it))
		main_stop(it);
}

/* The calling thread watches its writes to the 8 bytes at `addr`. */
static void watch_arm(void *addr)
{
	if (watch_mech == WATCH_PERF)
		bp_arm(addr);
	else if (watch_mech == WATCH_PAGE)
		page_arm(addr);
}

static void watch_disarm(void)
{
	if (watch_mech == WATCH_PERF) {
		bp_disarm();
	} else if (watch_mech == WATCH_PAGE) {
		page_end();
		/* The trap flag lasts one instruction and its trap clears
		   it; cleared here too, so that it cannot outlive the call
		   whatever happened (below the red zone). */
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushfq\n\t"
				 "andq $~0x100, (%%rsp)\n\tpopfq\n\t"
				 "lea 128(%%rsp), %%rsp" ::: "memory", "cc");
	}
}

/* At start-up: does a watch on a word of a fresh page see a write? */
static int watch_fires(void)
{
	char *saved = ctl.mem;

	ctl.mem = reuse_alloc();
	probing = 1;
	probe_hits = 0;
	watch_arm(ctl.mem + 8);
	__atomic_store_n((uint64_t *)(ctl.mem + 8), 1, __ATOMIC_RELAXED);
	watch_disarm();
	probing = 0;
	munmap(ctl.mem, REUSE_BYTES);
	ctl.mem = saved;
	return probe_hits == 1;
}

/* ---- a touch of the unmapped page kills the test: say where (the
   harness's async-signal-safe output) */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SEGV_ACCERR && page_fault(si->si_addr, uc))
		return;
	harness_put("t_release_reuse: FAIL: ");
	harness_put(kase_name[ctl.kase]);
	harness_put(" (");
	harness_put(reuse_mode_name[ctl.mode]);
	harness_put("), iteration ");
	harness_put_long((long)ctl.done + 1);
	harness_put(": expected no access to the object's page after the "
		"release, got SIGSEGV (the page was unmapped by the released "
		"thread)\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- the releaser: waits until main is blocked, then releases. */
static void until_main_blocked(unsigned it, unsigned *seed)
{
	long end;

	await_spin(&ctl.entering, it);
	if (ctl.kase == BARRIER3)
		await_spin(&ctl.helper_in, it);
	switch (ctl.way) {
	case WAY_ASLEEP:
		ctl.asleep_waits += task_asleep(ctl.main_tid, 20000000L);
		break;
	case WAY_STOPPED:
		stop_until(&ctl.main_stopped, it, STOP_NS);
		/* barrier 3: until the helper's ticket is taken too, so that
		   the releaser arrives last (the helper may have had to wait
		   for main's page watch). */
		for (end = mono_ns() + STOP_NS;
		     ctl.kase == BARRIER3 && mono_ns() < end &&
		     __atomic_load_n((uint64_t *)ctl.mem, __ATOMIC_ACQUIRE) < 2;)
			sched_yield();
		break;
	default:
		end = mono_ns() + rnd(seed) % DELAY_NS;
		while (mono_ns() < end)
			__builtin_ia32_pause();
	}
}

static void *mem_obj(void)
{
	return ctl.mem;
}

static unsigned seed_releaser = 0x1234567u;

/* The releaser's watch on its release store at `addr`, called before
   and after main is let in: a hardware watchpoint before (arming takes
   system calls that main would sleep through), in the stopped and
   random ways; a page watch after, and only once main has stopped (one
   watch at a time, and main writes nothing meanwhile; in the random way
   the protection's system call would delay the release far past the
   random pause). */
static void releaser_watch(void *addr, int main_in)
{
	if (watch_mech == WATCH_PERF ? !main_in && ctl.way != WAY_ASLEEP
	    : main_in && __atomic_load_n(&ctl.main_stopped, __ATOMIC_ACQUIRE) ==
				 ctl.done + 1)
		watch_arm(addr);
}

static void once_routine(void)
{
	unsigned it = ctl.done + 1;

	/* The releaser writes nothing of the object meanwhile. */
	releaser_watch(ctl.mem, 0);
	publish(&ctl.ready, it);
	until_main_blocked(it, &seed_releaser);
	releaser_watch(ctl.mem, 1);
	if (ctl.kase == ONCE_EXIT)
		pthread_exit(NULL); /* unwinds through pthread_once */
}

static void release_once(unsigned it)
{
	CHECK_ERR(pthread_once(mem_obj(), once_routine), 0);
	watch_disarm();
	(void)it;
}

static void release(unsigned it)
{
	void *o = mem_obj();
	int r;

	switch (ctl.kase) {
	case RW_WR_WR: case RW_WR_RD: case RW_WR_WR_SHARED:
		CHECK_ERR(pthread_rwlock_wrlock(o), 0);
		break;
	case RW_RD_WR:
		CHECK_ERR(pthread_rwlock_rdlock(o), 0);
		break;
	case ONCE:
		release_once(it);
		return;
	default:
		break;
	}
	releaser_watch((char *)o + watch_off[ctl.kase], 0);
	publish(&ctl.ready, it);
	until_main_blocked(it, &seed_releaser);
	releaser_watch((char *)o + watch_off[ctl.kase], 1);
	switch (ctl.kase) {
	case SEM: case SEM_SHARED:
		r = sem_post(o) ? errno : 0;
		break;
	case BARRIER2: case BARRIER3:
		r = pthread_barrier_wait(o);
		if (r == PTHREAD_BARRIER_SERIAL_THREAD)
			r = 0;
		break;
	default:
		r = pthread_rwlock_unlock(o);
	}
	watch_disarm();
	CHECK_ERR(r, 0);
}

static void *releaser(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	if (watch_mech == WATCH_PERF)
		bp_open();
	for (unsigned it = 0;;) {
		it = await_change(&ctl.go, it);
		if (ctl.stop)
			return NULL;
		release(it);
		publish(&ctl.done, it);
	}
}

/* barrier 3: the helper waits too (after main, before the releaser). */
static void *helper(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	for (unsigned it = 0;;) {
		int r;

		it = await_change(&ctl.go, it);
		if (ctl.stop)
			return NULL;
		if (ctl.kase == BARRIER3) {
			await_spin(&ctl.entering, it);
			__atomic_store_n(&ctl.helper_in, it, __ATOMIC_RELEASE);
			r = pthread_barrier_wait(mem_obj());
			CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD,
			      "helper's barrier wait: expected 0 or SERIAL, got %d",
			      r);
		}
		publish(&ctl.helper_done, it);
	}
}

/* ---- main's side */
static void set_up(void *o)
{
	pthread_rwlockattr_t ra;
	pthread_barrierattr_t ba;

	switch (ctl.kase) {
	case RW_WR_WR: case RW_WR_RD: case RW_RD_WR:
		CHECK_ERR(pthread_rwlock_init(o, NULL), 0);
		break;
	case RW_WR_WR_SHARED:
		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
		CHECK_ERR(pthread_rwlock_init(o, &ra), 0);
		pthread_rwlockattr_destroy(&ra);
		break;
	case SEM: case SEM_SHARED:
		CHECK_ERR(sem_init(o, ctl.kase == SEM_SHARED, 0) ? errno : 0, 0);
		break;
	case BARRIER2: case BARRIER3:
		pthread_barrierattr_init(&ba);
		CHECK_ERR(pthread_barrier_init(o, &ba, ctl.kase == BARRIER2 ? 2 : 3),
			  0);
		pthread_barrierattr_destroy(&ba);
		break;
	default: /* once: PTHREAD_ONCE_INIT is 0, as the fresh page */
		break;
	}
}

static int main_ran_routine;

static void main_routine(void)
{
	main_ran_routine = 1;
}

/* The blocking call; main's watchpoint, if armed, is disarmed as soon
   as it returns (the page is about to go). */
static void block(void *o)
{
	int r;

	switch (ctl.kase) {
	case RW_WR_WR: case RW_RD_WR: case RW_WR_WR_SHARED:
		CHECK_ERR(pthread_rwlock_wrlock(o), 0);
		break;
	case RW_WR_RD:
		CHECK_ERR(pthread_rwlock_rdlock(o), 0);
		break;
	case SEM: case SEM_SHARED:
		while ((r = sem_wait(o) ? errno : 0) == EINTR)
			;
		CHECK_ERR(r, 0);
		break;
	case BARRIER2: case BARRIER3:
		r = pthread_barrier_wait(o);
		CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD,
		      "barrier wait: expected 0 or SERIAL, got %d", r);
		break;
	case ONCE: case ONCE_EXIT:
		main_ran_routine = 0;
		CHECK_ERR(pthread_once(o, main_routine), 0);
		CHECK_EQ(main_ran_routine, ctl.kase == ONCE_EXIT);
		break;
	default:
		break;
	}
	watch_disarm();
}

/* Blocks until released, then destroys the object at once. */
static void block_and_destroy(void *o)
{
	if (ctl.way == WAY_STOPPED)
		watch_arm((char *)o + main_watch_off[ctl.kase]);
	__atomic_store_n(&ctl.entering, ctl.done + 1, __ATOMIC_RELEASE);
	block(o);
	switch (ctl.kase) {
	case RW_WR_WR: case RW_RD_WR: case RW_WR_WR_SHARED: case RW_WR_RD:
		CHECK_ERR(pthread_rwlock_unlock(o), 0);
		CHECK_ERR(pthread_rwlock_destroy(o), 0);
		break;
	case SEM: case SEM_SHARED:
		CHECK_ERR(sem_destroy(o) ? errno : 0, 0);
		break;
	case BARRIER2: case BARRIER3:
		CHECK_ERR(pthread_barrier_destroy(o), 0);
		break;
	default: /* once: nothing to destroy */
		break;
	}
}

static void *once_exit_thread(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	if (watch_mech == WATCH_PERF)
		bp_open();
	ctl.exit_bp_fd = bp_fd;
	release_once(ctl.done + 1);
	return NULL; /* not reached: the routine exits the thread */
}

/* once exit: a thread per iteration (the routine ends it). */
static void once_exit_iteration(unsigned it)
{
	pthread_t th;

	CHECK_ERR(pthread_create(&th, NULL, once_exit_thread, NULL), 0);
	await_value(&ctl.ready, it);
	block_and_destroy(ctl.mem);
	reuse_memory(ctl.mem, ctl.mode, it);
	__atomic_store_n(&ctl.reused, it, __ATOMIC_RELEASE);
	CHECK_ERR(pthread_join(th, NULL), 0);
	if (ctl.exit_bp_fd >= 0)
		close(ctl.exit_bp_fd);
	publish(&ctl.done, it);
}

/* join stack: the thread's user stack is reused right after the join;
   it is checked after the next thread has come and gone. */
static void *quick_thread(void *arg)
{
	CHECK_WEFT_THREAD();
	return arg;
}

/* The time budget (see the top): a pair stops at its deadline once it
   has run MIN_ITERS iterations. */
#define MIN_ITERS 300u
static double case_deadline;

static int out_of_time(unsigned done)
{
	return done >= MIN_ITERS && now_s() > case_deadline;
}

static int join_stack_case(unsigned *iters_p, int mode)
{
	unsigned iters = *iters_p;
	const size_t words = JOIN_STACK_BYTES / 4;
	uint32_t *prev = NULL;
	unsigned prev_it = 0, ran = 0;
	int bad = 0;

	for (unsigned it = 1; it <= iters + 1 && !bad; it++) {
		uint32_t *stk = NULL;

		if (it <= iters && out_of_time(it - 1))
			*iters_p = iters = it - 1;

		if (it <= iters) {
			pthread_attr_t a;
			pthread_t th;
			void *res = NULL;

			stk = mmap(NULL, JOIN_STACK_BYTES, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			REQUIRE(stk != MAP_FAILED, "mmap: %s", strerror(errno));
			pthread_attr_init(&a);
			CHECK_ERR(pthread_attr_setstack(&a, stk, JOIN_STACK_BYTES), 0);
			CHECK_ERR(pthread_create(&th, &a, quick_thread, stk), 0);
			pthread_attr_destroy(&a);
			CHECK_ERR(pthread_join(th, &res), 0);
			ran = it;
			CHECK(res == stk, "join result: expected %p, got %p",
			      (void *)stk, res);
			if (mode == REUSE_UNMAP) {
				munmap(stk, JOIN_STACK_BYTES);
				stk = NULL;
			} else {
				for (size_t i = 0; i < words; i++)
					stk[i] = mode == REUSE_PATTERN
							 ? reuse_word(i, it)
						 : mode == REUSE_FF ? 0xffffffffu
								    : 0xababababu;
			}
		}
		/* The previous stack, after another thread came and went. */
		for (size_t i = 0; prev && i < words; i++) {
			uint32_t want = mode == REUSE_PATTERN ? reuse_word(i, prev_it)
					: mode == REUSE_FF    ? 0xffffffffu
							      : 0xababababu;
			if (prev[i] != want && bad++ == 0)
				FAIL("join stack (%s), iteration %u: user stack "
				     "changed after the join: byte offset %zu "
				     "expected 0x%08x, got 0x%08x",
				     reuse_mode_name[mode], prev_it, i * 4, want,
				     prev[i]);
		}
		if (prev)
			munmap(prev, JOIN_STACK_BYTES);
		prev = stk;
		prev_it = it;
	}
	*iters_p = ran; /* also when a check failed early */
	return bad;
}

/* Runs up to *iters iterations of the current pair; *iters becomes the
   number run. */
static int run_case(unsigned *iters)
{
	int bad = 0;
	unsigned n;

	if (ctl.kase == JOIN_STACK)
		return join_stack_case(iters, ctl.mode);
	for (n = 0; n < *iters && !bad && !out_of_time(n); n++) {
		unsigned it = ctl.done + 1;

		ctl.mem = reuse_alloc();
		ctl.way = it % 3 == 0 ? WAY_ASLEEP : it % 3 == 1 ? WAY_STOPPED
							 : WAY_RANDOM;
		/* Without a watch no stop can come: a random iteration. */
		if (ctl.way == WAY_STOPPED && watch_mech == WATCH_NONE)
			ctl.way = WAY_RANDOM;
		ctl.stopped_iters += ctl.way == WAY_STOPPED;
		set_up(ctl.mem);
		if (ctl.kase == ONCE_EXIT) {
			once_exit_iteration(it);
		} else {
			publish(&ctl.go, it);
			await_value(&ctl.ready, it);
			block_and_destroy(ctl.mem);
			reuse_memory(ctl.mem, ctl.mode, it);
			__atomic_store_n(&ctl.reused, it, __ATOMIC_RELEASE);
			await_value(&ctl.done, it);
			await_value(&ctl.helper_done, it);
		}
		bad += reuse_check(ctl.mem, ctl.mode, it, kase_name[ctl.kase]);
	}
	*iters = n;
	return bad;
}

int main(void)
{
	unsigned iters = reuse_iters(20000);
	/* WEFT_REUSE_ONLY=text: only the cases whose name contains it. */
	const char *only = getenv("WEFT_REUSE_ONLY");
	const char *secs = getenv("WEFT_REUSE_SECONDS");
	double budget = secs && *secs ? strtod(secs, NULL) : 150.0;
	pthread_t rel, hlp;
	double t0 = now_s();
	int pairs_left = 0;

	struct sigaction sa = {.sa_sigaction = on_trap, .sa_flags = SA_SIGINFO};
	struct sigaction sv = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};

	WEFT_REQUIRE();
	reuse_watchdog(budget + 90 > 240 ? (unsigned)budget + 90 : 240);
	for (int k = 0; k < KASES; k++)
		if (!only || strstr(kase_name[k], only))
			pairs_left += REUSE_MODES;
	sigaction(SIGSEGV, &sv, NULL);
	sigaction(SIGTRAP, &sa, NULL);
	ctl.main_tid = gettid();
	is_main = 1;
	/* Which watch stops the threads: a hardware watchpoint if one
	   fires here, else the page watch (see the top). */
	bp_open();
	watch_mech = WATCH_PERF;
	if (bp_fd >= 0 && watch_fires()) {
		printf("watch: hardware watchpoints (perf_event_open)\n");
	} else {
		if (bp_fd < 0) {
			printf("no hardware watchpoint (perf_event_open: "
			       "%s)\n", strerror(bp_unavailable));
		} else {
			printf("no hardware watchpoint (perf_event_open "
			       "succeeded, but its watchpoint never fired)\n");
			close(bp_fd);
			bp_fd = -1;
		}
		watch_mech = WATCH_PAGE;
		if (!watch_fires())
			watch_mech = WATCH_NONE;
	}
	if (watch_mech == WATCH_PAGE)
		printf("watch: page watch (write-protected page, each write "
		       "single-stepped with the trap flag)\n");
	else if (watch_mech == WATCH_NONE)
		printf("no page watch either (no SIGTRAP after a single step): "
		       "no thread is ever stopped; the \"stopped\" iterations "
		       "run as random ones and stray accesses are caught only "
		       "by chance\n");
	fflush(stdout);
	CHECK_ERR(pthread_create(&rel, NULL, releaser, NULL), 0);
	CHECK_ERR(pthread_create(&hlp, NULL, helper, NULL), 0);
	for (ctl.kase = 0; ctl.kase < KASES; ctl.kase++) {
		if (only && !strstr(kase_name[ctl.kase], only))
			continue;
		for (ctl.mode = 0; ctl.mode < REUSE_MODES; ctl.mode++) {
			double t = now_s();
			unsigned ran = iters;
			int bad;

			case_deadline = t + (t0 + budget - t) / pairs_left--;
			ctl.stopped_iters = ctl.asleep_waits = ctl.main_stops = 0;
			ctl.stalls = ctl.opened = 0;
			bad = run_case(&ran);
			/* A watch that never stops anyone would let the
			   test pass without its decisive check: a pair's
			   stopped iterations must stop both sides at least
			   once (all of them do on a quiet machine). */
			if (!bad && watch_mech != WATCH_NONE &&
			    ctl.stopped_iters >= MIN_ITERS / 3 &&
			    (!ctl.main_stops || !ctl.stalls)) {
				FAIL("%s (%s): expected the %u stopped "
				     "iterations to stop main and the releaser "
				     "at least once, got main %u, releaser %u",
				     kase_name[ctl.kase],
				     reuse_mode_name[ctl.mode],
				     ctl.stopped_iters, ctl.main_stops,
				     ctl.stalls);
				bad = 1;
			}
			printf("%-20s %-7s %5u iterations (%u stopped): main "
			       "asleep %u, main stopped before its sleep %u, "
			       "releaser stopped after its release %u, main "
			       "through meanwhile %u; %.1f s%s\n",
			       kase_name[ctl.kase], reuse_mode_name[ctl.mode],
			       ran, ctl.stopped_iters, ctl.asleep_waits,
			       ctl.main_stops, ctl.stalls, ctl.opened, now_s() - t,
			       bad ? "  FAILED" : "");
			fflush(stdout);
			if (bad)
				goto out;
		}
	}
out:
	if (watch_mech == WATCH_NONE)
		printf("no watch: no thread was stopped; stray accesses were "
		       "caught only by chance\n");
	if (page_watches_broken)
		printf("page watches ended by another thread's write after "
		       "%ld ms: %u\n", STOP_NS / 1000000, page_watches_broken);
	ctl.stop = 1;
	publish(&ctl.go, ctl.done + 1);
	CHECK_ERR(pthread_join(rel, NULL), 0);
	CHECK_ERR(pthread_join(hlp, NULL), 0);
	printf("total %.1f s\n", now_s() - t0);
	TEST_DONE();
}
