#include "rseq.h"
#include "syscall.h"

struct rseq_head {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
};

long rseq_register(void *area, uint32_t len)
{
	struct rseq_head *r = area;
	long rc;

	/* The kernel rejects an area whose critical-section pointer is set,
	   and readers must not see a stale CPU number from a reused area. */
	for (uint32_t i = 0; i < len; i++)
		((volatile char *)area)[i] = 0;
	r->cpu_id = WEFT_RSEQ_CPU_UNINITIALIZED;
	rc = sys_call4(SYS_rseq, area, len, 0, WEFT_RSEQ_SIG);
	if (rc != 0)
		r->cpu_id = WEFT_RSEQ_CPU_FAILED;
	return rc;
}
