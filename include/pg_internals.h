/*-------------------------------------------------------------------------
 *
 * pg_internals.h
 *		What pg_warmcache reads of PostgreSQL's private structures, in one
 *		place (pg_internals.c).
 *
 * No other file reads a private structure or includes a private header:
 * they call the functions below.  Each assumption the module makes is
 * listed here, with why no public interface serves, the majors where it
 * was checked, and what fails, loudly, if PostgreSQL changes it.  A
 * self-check that fails logs a WARNING that begins "PostgreSQL's" and ends
 * "pg_warmcache expects"; t/068 checks that a normal run logs none.
 *
 * 1. Buffer headers (storage/buf_internals.h): BufferDesc, reached by
 *	  GetBufferDescriptor(); its state word's BM_TAG_VALID and BM_PERMANENT
 *	  bits and usage count, read under the header spinlock (LockBufHdr);
 *	  its tag (BufferTag); the buffer mapping table (BufTableHashCode,
 *	  BufTableLookup, BufMappingPartitionLock); and up to 18 the free list
 *	  (have_free_buffer()).
 *	  - Why: the dump records what shared buffers hold, with each buffer's
 *		usage count, and the restore asks whether a block is in shared
 *		buffers without reading it into them, and whether a read would evict.
 *		bufmgr.h has no function for any of these; contrib's pg_buffercache
 *		and autoprewarm read the same headers.
 *	  - Checked: 15, 17, 18 and 19 headers; 16 in the stored sources.  The
 *		tag's fields were renamed in 16 (RelFileLocator), the state word
 *		grew to 64 bits and the free list went in 19.
 *	  - Guards: BM_MAX_USAGE_COUNT must equal WC_BUFFER_MAX_USAGE, the dump
 *		file's highest rank (a compile-time assertion).  Once per process,
 *		the first buffer the restore reads is checked against what bufmgr.h
 *		says of it (wc_check_buffer_reading()).  t/068 compares a dump with
 *		pg_buffercache; t/057 checks that a restore evicts nothing on 19.
 *
 * 2. Other backends' PGPROCs (storage/proc.h): ProcGlobal->allProcs[0 ..
 *	  MaxBackends), which holds the regular backends, autovacuum and
 *	  background workers and the walsenders (the auxiliary processes come
 *	  after); of each, pid and wait_event_info, read without a lock, as
 *	  pg_stat_activity reads wait_event_info through BackendPidGetProc().
 *	  - Why: the restore and the dump's walk of the OS cache look every 2 ms
 *		whether a query waits for a data file read or runs on a CPU.  The
 *		public way, the backend-status snapshot, copies every backend's
 *		entry, a few kB, on each look.
 *	  - Checked: 15, 17, 18 and 19 headers; 16 in the stored sources.
 *	  - Guards: once per process, our own PGPROC must be the one
 *		BackendPidGetProc(MyProcPid) returns, lie in the walked range, and
 *		show the wait event we set with pgstat_report_wait_start() and none
 *		after pgstat_report_wait_end().  Else nothing is read from the array
 *		(the restore no longer gives way to queries) and a WARNING says so.
 *
 * 3. Whether the process of a PGPROC still runs: from 17 ProcKill() clears
 *	  pid, so pid != 0 means the PGPROC is in use.  Up to 16 ProcKill()
 *	  leaves the pid of the process that exited in the freed PGPROC (only
 *	  AuxiliaryProcKill() clears it), with no wait event: it would look busy
 *	  on a CPU for good.  There a PGPROC's process is confirmed by
 *	  BackendPidGetProc(pid) returning that PGPROC (public, under
 *	  ProcArrayLock); a PGPROC found stale is remembered with its pid for a
 *	  second, one found running for 100 ms, so that each costs one
 *	  confirmation in that time.
 *	  - Checked: the stored proc.c of 17 and later ("Mark the proc no longer
 *		in use"); the 15 and 16 forms of ProcKill() disown the latch and
 *		leave pid.
 *	  - Guards: t/067 ends 50 connections, then checks that a restore beside
 *		busy loops outside the server never finds the CPUs busy, which
 *		ghosts of those connections would make it do.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/pg_internals.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PG_INTERNALS_H
#define PG_WARMCACHE_PG_INTERNALS_H

#include "common/relpath.h"
#include "storage/block.h"
#include "storage/buf.h"
#include "utils/relcache.h"

#include "compat.h"

/*
 * The highest usage count of a buffer (BM_MAX_USAGE_COUNT), which is the
 * highest rank of the dump file's buffer tier: part of the file's format.
 */
#define WC_BUFFER_MAX_USAGE 5

/* What a buffer holds, as a dump records it. */
typedef struct WcBufferPage
{
	Oid			db;
	Oid			spc;
	RelFileNumber relnumber;
	ForkNumber	fork;
	BlockNumber block;
	int			usage;			/* 0 .. WC_BUFFER_MAX_USAGE */
	bool		permanent;		/* WAL-logged: not of an unlogged or temporary
								 * relation, or its init fork */
} WcBufferPage;

/* Buffer headers */
extern bool wc_buffer_page(int id, WcBufferPage *page);
extern bool wc_buffer_unused(int id);
extern bool wc_have_free_buffer(void);
extern bool wc_block_in_buffers(Relation rel, ForkNumber fork,
								BlockNumber block);
extern void wc_check_buffer_reading(Relation rel, ForkNumber fork,
									BlockNumber block, Buffer buf);

/* Other backends' PGPROCs */
extern int	wc_backend_look(void);
extern bool wc_backend_seen(int slot, int *pid, uint32 *wait_event_info);
extern bool wc_backend_confirmed(int slot, int pid);

#endif							/* PG_WARMCACHE_PG_INTERNALS_H */
