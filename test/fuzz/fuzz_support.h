/*-------------------------------------------------------------------------
 *
 * fuzz_support.h
 *		The fuzz harnesses' stand-ins for the server (fuzz_support.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_support.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_FUZZ_SUPPORT_H
#define PG_WARMCACHE_FUZZ_SUPPORT_H

/* The system identifier of the harnesses' files, and shared_buffers. */
#define FUZZ_SYSID		UINT64CONST(7000000000000000001)
#define FUZZ_NBUFFERS	16384

extern void fuzz_reset(void);
extern void fuzz_fix_file(uint8 *bytes, size_t len, bool version);
extern void fuzz_fail(const char *fmt,...) pg_attribute_printf(1, 2) __attribute__((noreturn));
extern const char *fuzz_path(const char *what);
extern void fuzz_write(const char *path, const uint8 *data, size_t len);
extern uint8 *fuzz_read(const char *path, size_t *len);

#endif							/* PG_WARMCACHE_FUZZ_SUPPORT_H */
