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
 * What only the server needs: never called by a harness (a check for
 * interrupts is, but finds none pending).  They are defined without their
 * headers, whose prototypes differ between majors; the linker needs only
 * their names.
 */
#define NEVER(name) \
	void name(void); \
	void name(void) { fuzz_fail("%s called", #name); }

NEVER(ProcessInterrupts)
