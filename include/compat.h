/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Differences between the supported PostgreSQL major versions.
 *
 * Everything of PostgreSQL's public interfaces that depends on
 * PG_VERSION_NUM lives here, so that the logic files read the same on
 * every major.  The newest API name is used where the behaviour is the
 * same; a wc_ wrapper exists only where it differs.  How the private
 * structures that pg_warmcache reads differ between majors stays with
 * their reads, in pg_internals.c.
 *
 * Built and tested on 15, 17, 18 and 19; 16 has the same API as its
 * neighbours here, but is not tested (no Debian suite serves it).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_COMPAT_H
#define PG_WARMCACHE_COMPAT_H

#include "common/relpath.h"
#include "postmaster/bgworker.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#if PG_VERSION_NUM < 150000
#error "pg_warmcache requires PostgreSQL 15 or later"
#endif

/*---- varlena macros (VARDATA, SET_VARSIZE): their own header from 16 ----*/

#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*---- The alignment of a buffer for direct I/O: named from 16 ----*/

#ifndef PG_IO_ALIGN_SIZE
#define PG_IO_ALIGN_SIZE	4096
#endif

/*---- Relation file identifiers: RelFileNode became RelFileLocator in 16 ----*/

#include "utils/relmapper.h"
#if PG_VERSION_NUM >= 160000
#include "utils/relfilenumbermap.h"
#define wc_rel_filenumber(rel)	((rel)->rd_locator.relNumber)
#else
#include "utils/relfilenodemap.h"
typedef Oid RelFileNumber;
#define RelFileNumberIsValid(num)	OidIsValid(num)
#define RelidByRelfilenumber(spc, num)	RelidByRelfilenode((spc), (num))
#define RelationMapFilenumberToOid(num, shared) \
	RelationMapFilenodeToOid((num), (shared))
#define RelationMapOidToFilenumber(relid, shared) \
	RelationMapOidToFilenode((relid), (shared))
#define wc_rel_filenumber(rel)	((rel)->rd_node.relNode)
#endif

/*
 * Whether the relation was created, or given new storage, in the current
 * transaction: other processes cannot see that storage yet.
 */
#if PG_VERSION_NUM >= 160000
#define wc_rel_storage_is_new(rel) \
	((rel)->rd_createSubid != InvalidSubTransactionId || \
	 (rel)->rd_firstRelfilelocatorSubid != InvalidSubTransactionId)
#else
#define wc_rel_storage_is_new(rel) \
	((rel)->rd_createSubid != InvalidSubTransactionId || \
	 (rel)->rd_firstRelfilenodeSubid != InvalidSubTransactionId)
#endif

/*
 * The block a pinned buffer holds, as bufmgr.h's BufferGetTag() says.
 */
static inline void
wc_buffer_get_tag(Buffer buf, Oid *db, Oid *spc, RelFileNumber *num,
				  ForkNumber *fork, BlockNumber *block)
{
#if PG_VERSION_NUM >= 160000
	RelFileLocator loc;

	BufferGetTag(buf, &loc, fork, block);
	*db = loc.dbOid;
	*spc = loc.spcOid;
	*num = loc.relNumber;
#else
	RelFileNode node;

	BufferGetTag(buf, &node, fork, block);
	*db = node.dbNode;
	*spc = node.spcNode;
	*num = node.relNode;
#endif
}

/*
 * Path of a relation fork's first segment, relative to the data directory,
 * palloc'd.  18 returns a struct by value where older releases palloc.
 */
static inline char *
wc_relpath(Relation rel, ForkNumber fork)
{
#if PG_VERSION_NUM >= 180000
	return pstrdup(relpathbackend(rel->rd_locator, rel->rd_backend, fork).str);
#elif PG_VERSION_NUM >= 160000
	return relpathbackend(rel->rd_locator, rel->rd_backend, fork);
#else
	return relpathbackend(rel->rd_node, rel->rd_backend, fork);
#endif
}

/*
 * Path of the first segment of a permanent relation fork named by its
 * file, relative to the data directory, palloc'd.
 */
static inline char *
wc_relpath_of(Oid db, Oid spc, RelFileNumber relnumber, ForkNumber fork)
{
#if PG_VERSION_NUM >= 160000
	RelFileLocator locator;

	locator.spcOid = spc;
	locator.dbOid = db;
	locator.relNumber = relnumber;
#if PG_VERSION_NUM >= 180000
	return pstrdup(relpathperm(locator, fork).str);
#else
	return relpathperm(locator, fork);
#endif
#else
	RelFileNode node;

	node.spcNode = spc;
	node.dbNode = db;
	node.relNode = relnumber;
	return relpathperm(node, fork);
#endif
}

/*---- Streaming reads into shared buffers (17+) ----*/

/*
 * From 17 a read stream combines reads and, from 18, runs them through
 * asynchronous I/O.  Before 17 there is none: WC_HAVE_READ_STREAM is 0 and
 * the stubs below are never called, so that the engine reads the same on
 * every major.
 */
#if PG_VERSION_NUM >= 170000
#define WC_HAVE_READ_STREAM 1
#include "storage/read_stream.h"
/*
 * Whether a read stream's reads copy the blocks in this process: on 18
 * with io_method = worker, I/O worker processes do; with sync and io_uring
 * this process does (t/085 checks each method by page faults).
 */
#if PG_VERSION_NUM >= 180000
#include "storage/aio.h"
#define WC_STREAM_COPIES_HERE() (io_method != IOMETHOD_WORKER)
#else
#define WC_STREAM_COPIES_HERE() true
#endif
#if PG_VERSION_NUM >= 180000
/* Our callback takes no locks, so batching is safe. */
#define WC_READ_STREAM_FLAGS \
	(READ_STREAM_MAINTENANCE | READ_STREAM_FULL | READ_STREAM_USE_BATCHING)
#else
#define WC_READ_STREAM_FLAGS (READ_STREAM_MAINTENANCE | READ_STREAM_FULL)
#endif
#else
#define WC_HAVE_READ_STREAM 0
#define WC_READ_STREAM_FLAGS 0
#define WC_STREAM_COPIES_HERE() true
typedef struct ReadStream ReadStream;
typedef BlockNumber (*ReadStreamBlockNumberCB) (ReadStream *stream,
												void *callback_private_data,
												void *per_buffer_data);

static inline ReadStream *
read_stream_begin_relation(int flags, BufferAccessStrategy strategy,
						   Relation rel, ForkNumber forknum,
						   ReadStreamBlockNumberCB callback,
						   void *callback_private_data,
						   size_t per_buffer_data_size)
{
	elog(ERROR, "read streams exist from PostgreSQL 17 on");
	pg_unreachable();
}

static inline Buffer
read_stream_next_buffer(ReadStream *stream, void **per_buffer_data)
{
	pg_unreachable();
}

static inline void
read_stream_end(ReadStream *stream)
{
}
#endif

/*---- Wait events that mean "a backend is waiting for a data file read" ----*/

#include "utils/wait_event.h"
static inline bool
wc_is_read_wait(uint32 wait_event_info)
{
	if (wait_event_info == WAIT_EVENT_DATA_FILE_READ)
		return true;
#if PG_VERSION_NUM >= 180000
	/* Reads issued through AIO are waited for under this event. */
	if (wait_event_info == WAIT_EVENT_AIO_IO_COMPLETION)
		return true;
#endif
	return false;
}

/*---- Background workers ----*/

/*
 * From 19 a worker connected to a database can let DROP DATABASE and the
 * like end it by SIGTERM; up to 18 a restore worker notices that its
 * database is wanted and leaves by itself.  Either way the restore worker
 * leaves the database and the restore comes back to it (pacer.c,
 * wc_restore_sigterm_handler()).
 */
#ifdef BGWORKER_INTERRUPTIBLE
#define WC_BGWORKER_INTERRUPTIBLE BGWORKER_INTERRUPTIBLE
#else
#define WC_BGWORKER_INTERRUPTIBLE 0
#endif

/*
 * A signal handler that needs the sender's pid.  From 19, pqsignal() hands
 * every handler the sender (SA_SIGINFO), and its wrapper leaves out a
 * process forked by system() that has not exec'd yet.  Up to 18 a handler
 * gets the signal number alone, so this one is installed with sigaction()
 * itself, like pqsignal() with SA_RESTART, and tells such a child by its
 * pid, as 17 and 18's wrapper does.  The handler keeps errno itself.  The
 * caller installs it before it unblocks signals, and nothing installs
 * another for the signal afterwards.
 */
#if PG_VERSION_NUM >= 190000
#define WC_SENDER_SIGNAL_ARGS	SIGNAL_ARGS
#define WC_SIGNAL_SENDER()		((pid_t) pg_siginfo->pid)
#define WC_SIGNAL_INHERITED()	false
#define wc_pqsignal_sender(signo, handler)	pqsignal((signo), (handler))
#else
#include <signal.h>
#include <unistd.h>
#define WC_SENDER_SIGNAL_ARGS \
	int postgres_signal_arg, siginfo_t *wc_siginfo, void *wc_context
#define WC_SIGNAL_SENDER()		(wc_siginfo->si_pid)
#define WC_SIGNAL_INHERITED()	(getpid() != MyProcPid)
static inline void
wc_pqsignal_sender(int signo, void (*handler) (WC_SENDER_SIGNAL_ARGS))
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	sigemptyset(&act.sa_mask);
	act.sa_sigaction = handler;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(signo, &act, NULL) < 0)
		elog(FATAL, "could not set the handler of signal %d: %m", signo);
}
#endif

/*---- The backend-status snapshot (what pg_stat_activity reads) ----*/

/*
 * Entry i, from 1 to pgstat_fetch_stat_numbackends(), of this process's
 * snapshot of the backends' status.  16 renamed the accessor when it added
 * one by backend ID; the index is the same.
 */
#include "utils/backend_status.h"
#if PG_VERSION_NUM >= 160000
#define WC_LOCAL_BEENTRY(i)	pgstat_get_local_beentry_by_index(i)
#else
#define WC_LOCAL_BEENTRY(i)	pgstat_fetch_stat_local_beentry(i)
#endif

/*
 * A GUC check hook's *extra: from 16 on GUC memory is guc_malloc()'s (it
 * is freed with guc_free()); 15 frees it with free().
 */
#if PG_VERSION_NUM >= 160000
#define WC_GUC_MALLOC(size) guc_malloc(LOG, (size))
#else
#define WC_GUC_MALLOC(size) malloc(size)
#endif

/* 15 keeps this macro private to procarray.c. */
#ifndef UINT32_ACCESS_ONCE
#define UINT32_ACCESS_ONCE(var)		 ((uint32)(*((volatile uint32 *)&(var))))
#endif

/*---- Module magic, and the library's initialization ----*/

#if PG_VERSION_NUM >= 180000
/* WC_VERSION is the control file's default_version (Makefile). */
#define WC_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "pg_warmcache", .version = WC_VERSION)
#else
#define WC_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* fmgr.h declares _PG_init from 16 on. */
#if PG_VERSION_NUM < 160000
extern PGDLLEXPORT void _PG_init(void);
#endif

/*---- The fuzz harnesses' stand-ins (test/fuzz/fuzz_support.c) ----*/

/*
 * 16 made appendBinaryStringInfo()'s data const void * and dropped
 * ExceptionalCondition()'s errorType.
 */
#if PG_VERSION_NUM >= 160000
#define WC_BINARY_DATA const void
#define WC_ASSERT_PARAMS const char *conditionName, const char *fileName, \
	int lineNumber
#else
#define WC_BINARY_DATA const char
#define WC_ASSERT_PARAMS const char *conditionName, const char *errorType, \
	const char *fileName, int lineNumber
#endif

#endif							/* PG_WARMCACHE_COMPAT_H */
