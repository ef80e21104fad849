/* Every thread has its robust list registered with the kernel from
   birth, as under glibc: get_robust_list in a weft thread gives glibc's
   head in the thread's own TCB (the same offset from the thread pointer
   as in the main thread, which glibc set up), empty (pointing at itself)
   with glibc's futex offset, 24 bytes long.  Also in a thread created in
   a fork child, and in the fork child itself (glibc's fork registers the
   forking thread again).  stress-ng --pthread copies from that head. */
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

struct robust_head {
	void *list;
	long futex_offset;
	void *pending;
};

static char *thread_pointer(void)
{
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

static long main_offset; /* head - thread pointer, in the main thread */

/* Checks the calling thread's registration; returns the failures. */
static int check_self(const char *who)
{
	struct robust_head *head = NULL;
	size_t len = 0;
	int bad = 0;

	if (syscall(SYS_get_robust_list, 0, &head, &len) != 0) {
		FAIL("%s: get_robust_list: %s", who, strerror(errno));
		return 1;
	}
	if (!head) {
		FAIL("%s: expected a registered robust list head, got NULL", who);
		return 1;
	}
	if ((char *)head - thread_pointer() != main_offset) {
		FAIL("%s: head at thread pointer %+ld, expected glibc's field "
		     "at %+ld", who, (long)((char *)head - thread_pointer()),
		     main_offset);
		bad++;
	}
	if (len != sizeof *head) {
		FAIL("%s: length expected %zu, got %zu", who, sizeof *head, len);
		bad++;
	}
	if (head->list != head) {
		FAIL("%s: an empty list points at its head: expected %p, got %p",
		     who, (void *)head, head->list);
		bad++;
	}
	if (head->futex_offset != -32) {
		FAIL("%s: futex offset expected -32 (glibc's), got %ld", who,
		     head->futex_offset);
		bad++;
	}
	return bad;
}

static void *thread_check(void *p)
{
	CHECK_WEFT_THREAD();
	return (void *)(long)check_self(p);
}

static int in_thread(const char *who)
{
	pthread_t t;
	void *r;

	if (pthread_create(&t, NULL, thread_check, (void *)who) != 0) {
		FAIL("%s: pthread_create failed", who);
		return 1;
	}
	pthread_join(t, &r);
	return (int)(long)r;
}

/* A weft thread forks: the child's only thread must be registered, and
   so must a thread it creates. */
static void *forker(void *p)
{
	pid_t pid;
	int st;

	(void)p;
	CHECK_WEFT_THREAD();
	pid = fork();
	if (pid == 0) {
		int bad = check_self("fork child of a weft thread");
		bad += in_thread("thread created in the fork child");
		_exit(bad ? 1 : 0);
	}
	if (pid < 0) {
		FAIL("fork: %s", strerror(errno));
		return NULL;
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "fork child: expected exit 0, got status 0x%x", st);
	return NULL;
}

int main(void)
{
	struct robust_head *head = NULL;
	size_t len = 0;
	pthread_t t;

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	/* The main thread is glibc's: its head is where glibc keeps it. */
	REQUIRE(syscall(SYS_get_robust_list, 0, &head, &len) == 0 && head,
		"main thread: expected glibc's registered head, got none");
	main_offset = (char *)head - thread_pointer();
	for (int i = 0; i < 20; i++) /* fresh and cached stacks */
		if (in_thread("weft thread"))
			break;
	REQUIRE(pthread_create(&t, NULL, forker, NULL) == 0, "pthread_create");
	pthread_join(t, NULL);
	TEST_DONE();
}
