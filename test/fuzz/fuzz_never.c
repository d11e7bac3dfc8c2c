/*-------------------------------------------------------------------------
 *
 * fuzz_never.c
 *		What the module's code that the fuzz harnesses link refers to but
 *		never calls there (see fuzz_support.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_never.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fuzz_support.h"

/*
 * What only a dump or the server needs: never called by a harness.  They
 * are defined without their headers, whose prototypes differ between
 * majors; the linker needs only their names.
 */
#define NEVER(name) \
	void name(void); \
	void name(void) { fuzz_fail("%s called", #name); }

void	   *BufferDescriptors = NULL;
bool		wc_dump_os_cache = false;
int			wc_sort_chunk = 0;
void	   *wc_shared = NULL;

NEVER(ProcessInterrupts)
NEVER(pg_re_throw)
NEVER(LockBufHdr)
NEVER(wc_buffer_page)
NEVER(LWLockAcquire)
NEVER(LWLockRelease)
NEVER(SetLatch)
NEVER(before_shmem_exit)
NEVER(cancel_before_shmem_exit)
NEVER(lappend_int)
NEVER(wc_scan_os_cache)
NEVER(binaryheap_allocate)
NEVER(binaryheap_free)
NEVER(binaryheap_add_unordered)
NEVER(binaryheap_build)
NEVER(binaryheap_first)
NEVER(binaryheap_remove_first)
NEVER(binaryheap_replace_first)
