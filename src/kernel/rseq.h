/* Restartable sequences: the kernel keeps the current CPU number in a
   per-thread area it was told about.  glibc (sched_getcpu) and external
   users (librseq, tcmalloc) read that area at TP + __rseq_offset and
   assume every thread registered one. */
#ifndef WEFT_KERNEL_RSEQ_H
#define WEFT_KERNEL_RSEQ_H

#include <stdint.h>

/* Values the kernel ABI defines for rseq.cpu_id. */
#define WEFT_RSEQ_CPU_UNINITIALIZED ((uint32_t)-1)
#define WEFT_RSEQ_CPU_FAILED ((uint32_t)-2)
#define WEFT_RSEQ_SIG 0x53053053u /* glibc's signature on x86 */

/* Registers `area` (32-byte aligned, `len` >= 32 bytes) for the calling
   thread.  On failure marks the area so readers fall back to getcpu.
   Returns 0 or a negative errno. */
long rseq_register(void *area, uint32_t len);

#endif
