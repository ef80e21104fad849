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
   "Stopped" and the releaser's stop use hardware watchpoints
   (perf_event_open, PERF_TYPE_BREAKPOINT with a synchronous SIGTRAP):
   main's on the field it writes when it registers, whose handler, once
   main's registration is visible, waits for the release; the releaser's
   on the word whose write releases, whose handler waits (bounded) until
   main has reused the page.  So in a "stopped" iteration main, not yet
   asleep, gets through while the releaser stands right after its release
   store, and whatever the library does afterwards hits reused memory:
   a stray access a few instructions after the release is caught every
   time, not only when a preemption happens to fall there.  A probe at
   start-up writes a watched word and looks for the trap: where
   perf_event_open fails (no permission) or its watchpoint never fires
   (the PVM-hypervised VMs: it opens, and no write ever traps) no thread
   is stopped, the "stopped" iterations run as random ones, and the test
   says so.
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
   15.5 s for the 44 (case, mode) pairs), 0.3 to 0.45 ms under load.  The
   catch does not rely on luck: every third iteration is a "stopped" one,
   and a library that touches the object after its release store fails
   at the first of them (the library at df4be32: rwlock at iteration 1,
   semaphore at the first stopped iteration in munmap mode). */
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
enum { WATCH_NONE, WATCH_PERF } watch_mech;
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

/* Main, right after a write to its watched field: once its registration
   as a sleeper shows, it waits there for the release. */
static void main_trap(unsigned it)
{
	if (__atomic_load_n(&ctl.main_stopped, __ATOMIC_RELAXED) == it ||
	    __atomic_load_n(&ctl.released, __ATOMIC_ACQUIRE) == it ||
	    !main_registered(ctl.kase, ctl.mem))
		return;
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

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	unsigned it = ctl.done + 1; /* the iteration under way */

	(void)sig, (void)si, (void)uc;
	if (probing)
		probe_hits++;
	else if (is_main)
		main_trap(it);
	else
		releaser_trap(it);
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

/* At start-up: does a watchpoint on a word of a fresh page see a write? */
static int watch_fires(void)
{
	char *p = reuse_alloc();

	probing = 1;
	probe_hits = 0;
	bp_arm(p + 8);
	__atomic_store_n((uint64_t *)(p + 8), 1, __ATOMIC_RELAXED);
	bp_disarm();
	probing = 0;
	munmap(p, REUSE_BYTES);
	return probe_hits == 1;
}

/* ---- a touch of the unmapped page kills the test: say where */
static void put_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

static void on_segv(int sig)
{
	char num[16], *p = num + sizeof num - 1;
	unsigned it = ctl.done + 1;

	*p = 0;
	do
		*--p = (char)('0' + it % 10);
	while ((it /= 10) && p > num);
	put_str("t_release_reuse: FAIL: ");
	put_str(kase_name[ctl.kase]);
	put_str(" (");
	put_str(reuse_mode_name[ctl.mode]);
	put_str("), iteration ");
	put_str(p);
	put_str(": expected no access to the object's page after the "
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

static void once_routine(void)
{
	unsigned it = ctl.done + 1;

	/* Armed first: arming takes system calls that main would sleep
	   through.  The releaser writes nothing of the object meanwhile. */
	if (ctl.way != WAY_ASLEEP)
		bp_arm(ctl.mem);
	publish(&ctl.ready, it);
	until_main_blocked(it, &seed_releaser);
	if (ctl.kase == ONCE_EXIT)
		pthread_exit(NULL); /* unwinds through pthread_once */
}

static void release_once(unsigned it)
{
	CHECK_ERR(pthread_once(mem_obj(), once_routine), 0);
	bp_disarm();
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
	if (ctl.way != WAY_ASLEEP)
		bp_arm((char *)o + watch_off[ctl.kase]);
	publish(&ctl.ready, it);
	until_main_blocked(it, &seed_releaser);
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
	bp_disarm();
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
	bp_disarm();
}

/* Blocks until released, then destroys the object at once. */
static void block_and_destroy(void *o)
{
	if (ctl.way == WAY_STOPPED)
		bp_arm((char *)o + main_watch_off[ctl.kase]);
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
	unsigned prev_it = 0;
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

	WEFT_REQUIRE();
	reuse_watchdog(budget + 90 > 240 ? (unsigned)budget + 90 : 240);
	for (int k = 0; k < KASES; k++)
		if (!only || strstr(kase_name[k], only))
			pairs_left += REUSE_MODES;
	signal(SIGSEGV, on_segv);
	sigaction(SIGTRAP, &sa, NULL);
	ctl.main_tid = gettid();
	is_main = 1;
	/* Whether a hardware watchpoint fires here (see the top). */
	bp_open();
	if (bp_fd >= 0 && watch_fires()) {
		watch_mech = WATCH_PERF;
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
		printf("no thread is ever stopped; the \"stopped\" iterations "
		       "run as random ones and stray accesses are caught only "
		       "by chance\n");
	}
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
	ctl.stop = 1;
	publish(&ctl.go, ctl.done + 1);
	CHECK_ERR(pthread_join(rel, NULL), 0);
	CHECK_ERR(pthread_join(hlp, NULL), 0);
	printf("total %.1f s\n", now_s() - t0);
	TEST_DONE();
}
