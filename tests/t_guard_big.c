/* A thread with a huge guard (64 GiB, then 1 TiB) costs no page tables:
   such a guard is a PROT_NONE mapping, as glibc makes it, not
   MADV_GUARD_INSTALL advice, which writes a page-table entry per guard
   page (128 MiB of page tables for 64 GiB, 2 GiB for 1 TiB).  Each
   thread checks, while it runs, that the process's VmPTE grew by less
   than PTE_BOUND_KIB since before its creation, that a ---p mapping
   covers the whole guard below its stack, and that writes to the top
   and the bottom byte of the guard kill a forked copy with SIGSEGV. */
#include <stdint.h>
#include "harness.h"
#include "child.h"

/* The thread's own stack pages, a page-table page or two for a new
   region of the address space, malloc's arena: a few tens of KiB.  The
   advice would cost 2 KiB per MiB of guard. */
#define PTE_BOUND_KIB 256

struct big {
	size_t guard;
	long pte_before;
};

/* The mapping that ends exactly at `end`: its start and permissions. */
static int mapping_ending_at(uintptr_t end, uintptr_t *start, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char p[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && hi == end) {
			*start = lo;
			memcpy(perms, p, 5);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

static int write_byte(int wfd, void *p)
{
	(void)wfd;
	*(volatile char *)p = 1;
	return 0;
}

/* A write to `p` must kill the writer with SIGSEGV (tried in a child). */
static void check_write_faults(char *p, const char *what)
{
	struct child_result r;

	REQUIRE(run_child(write_byte, p, 20000, &r) == 0, "fork");
	CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV,
	      "expected SIGSEGV writing %s (%p), got %s", what, (void *)p,
	      status_str(&r));
}

static void *probe(void *arg)
{
	struct big *b = arg;
	long pte = proc_status_kib("VmPTE");
	pthread_attr_t a;
	void *lo;
	size_t size, guard;
	uintptr_t start = 0;
	char perms[5] = "";

	CHECK_WEFT_THREAD();
	CHECK(pte - b->pte_before < PTE_BOUND_KIB,
	      "guard %zu GiB: expected VmPTE to grow by less than %d KiB, "
	      "grew by %ld KiB (%ld -> %ld)", b->guard >> 30, PTE_BOUND_KIB,
	      pte - b->pte_before, b->pte_before, pte);
	REQUIRE(pthread_getattr_np(pthread_self(), &a) == 0, "getattr_np");
	pthread_attr_getstack(&a, &lo, &size);
	pthread_attr_getguardsize(&a, &guard);
	pthread_attr_destroy(&a);
	start = (uintptr_t)lo;
	CHECK(guard == b->guard, "expected guardsize %zu, got %zu", b->guard,
	      guard);
	CHECK(mapping_ending_at((uintptr_t)lo, &start, perms),
	      "no mapping ends at the stack's low end %p", lo);
	CHECK(strcmp(perms, "---p") == 0 && (uintptr_t)lo - start >= b->guard,
	      "expected a ---p mapping of at least %zu bytes below %p, got "
	      "\"%s\" of %zu bytes", b->guard, lo, perms,
	      (size_t)((uintptr_t)lo - start));
	printf("guard %zu GiB: VmPTE +%ld KiB, guard mapping %s %zu GiB\n",
	       b->guard >> 30, pte - b->pte_before, perms,
	       (size_t)((uintptr_t)lo - start) >> 30);
	check_write_faults((char *)lo - 1, "the guard's top byte");
	check_write_faults((char *)lo - b->guard, "the guard's bottom byte");
	return NULL;
}

/* Returns pthread_create's answer; the thread has been joined. */
static int run_with_guard(size_t guard)
{
	struct big b = { .guard = guard };
	pthread_attr_t a;
	pthread_t t;
	int rc;

	pthread_attr_init(&a);
	pthread_attr_setguardsize(&a, guard);
	b.pte_before = proc_status_kib("VmPTE");
	REQUIRE(b.pte_before >= 0, "no VmPTE in /proc/self/status");
	rc = pthread_create(&t, &a, probe, &b);
	if (rc == 0)
		REQUIRE(pthread_join(t, NULL) == 0, "pthread_join");
	pthread_attr_destroy(&a);
	return rc;
}

int main(void)
{
	int rc;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK_ERR(run_with_guard((size_t)64 << 30), 0);
	/* With advice guards 1 TiB would take 2 GiB of page tables: not
	   tried after a failure. */
	REQUIRE(harness_failures == 0, "the 64 GiB guard failed; 1 TiB not tried");
	rc = run_with_guard((size_t)1 << 40);
	if (rc == EAGAIN)
		printf("guard 1 TiB: no address space for it here, not tried\n");
	else
		CHECK_ERR(rc, 0);
	TEST_DONE();
}
