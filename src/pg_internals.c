/*-------------------------------------------------------------------------
 *
 * pg_internals.c
 *		Every read of PostgreSQL's private structures: the buffer headers
 *		and other backends' PGPROCs.
 *
 * The assumptions made here, why no public interface serves, the majors
 * where each was checked and the tests that guard them are listed in
 * include/pg_internals.h.  Nothing here calls the rest of pg_warmcache.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pg_internals.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "pg_internals.h"

StaticAssertDecl(BM_MAX_USAGE_COUNT == WC_BUFFER_MAX_USAGE,
				 "the dump file's ranks are the buffers' usage counts");

/*---- Buffer headers ----*/

/* Release a buffer header's spinlock; 19 takes no state to restore. */
static inline void
unlock_header(BufferDesc *desc, uint64 state)
{
#if PG_VERSION_NUM >= 190000
	UnlockBufHdr(desc);
#else
	UnlockBufHdr(desc, (uint32) state);
#endif
}

/*
 * What buffer id holds, read under its header spinlock (never a mapping
 * partition lock).  Returns false if it holds no valid page.
 */
bool
wc_buffer_page(int id, WcBufferPage *page)
{
	BufferDesc *desc = GetBufferDescriptor(id);
	uint64		state = LockBufHdr(desc);
	BufferTag	tag;

	if ((state & BM_TAG_VALID) == 0)
	{
		unlock_header(desc, state);
		return false;
	}
	tag = desc->tag;
	unlock_header(desc, state);
	page->usage = BUF_STATE_GET_USAGECOUNT(state);
	page->permanent = (state & BM_PERMANENT) != 0;
#if PG_VERSION_NUM >= 160000
	page->db = tag.dbOid;
	page->spc = tag.spcOid;
	page->relnumber = BufTagGetRelNumber(&tag);
	page->fork = BufTagGetForkNum(&tag);
#else
	page->db = tag.rnode.dbNode;
	page->spc = tag.rnode.spcNode;
	page->relnumber = tag.rnode.relNode;
	page->fork = tag.forkNum;
#endif
	page->block = tag.blockNum;
	return true;
}

/*
 * Whether a buffer holds no page (its tag is not valid), read without its
 * header lock: a hint, as the free list's answer always was.  The state
 * word is 64 bits from 19 on.
 */
bool
wc_buffer_unused(int id)
{
#if PG_VERSION_NUM >= 190000
	return (pg_atomic_read_u64(&GetBufferDescriptor(id)->state) & BM_TAG_VALID) == 0;
#else
	return (pg_atomic_read_u32(&GetBufferDescriptor(id)->state) & BM_TAG_VALID) == 0;
#endif
}

/*
 * Is an unused buffer left, one that a read can take without evicting a
 * page?  Up to 18 the free list says so.  19 has no free list: the clock
 * sweep hands out any unpinned buffer it has worn down, so the question
 * becomes whether some buffer holds no page.  A scan of the headers
 * answers it, resuming where the last one stopped (a buffer seldom becomes
 * unused again, and reads take unused buffers in the sweep's order, which
 * is the scan's), so that a caller asking before every block pays little;
 * after a scan that found none, the answer stays no for 100 ms.
 */
bool
wc_have_free_buffer(void)
{
#if PG_VERSION_NUM >= 190000
	static int	next = 0;
	static TimestampTz none_since = 0;
	int			n;

	if (none_since != 0)
	{
		if (!TimestampDifferenceExceeds(none_since, GetCurrentTimestamp(), 100))
			return false;
		none_since = 0;
	}
	for (n = 0; n < NBuffers; n++)
	{
		if (next >= NBuffers)
			next = 0;
		if (wc_buffer_unused(next))
			return true;
		next++;
	}
	none_since = GetCurrentTimestamp();
	return false;
#else
	return have_free_buffer();
#endif
}

/*
 * Is a block of a relation fork in shared buffers?  One lookup in the
 * buffer mapping table, under its partition lock in shared mode for that
 * moment only.
 */
bool
wc_block_in_buffers(Relation rel, ForkNumber fork, BlockNumber block)
{
	BufferTag	tag;
	uint32		hash;
	LWLock	   *lock;
	int			id;

#if PG_VERSION_NUM >= 160000
	InitBufferTag(&tag, &rel->rd_locator, fork, block);
#else
	INIT_BUFFERTAG(tag, rel->rd_node, fork, block);
#endif
	hash = BufTableHashCode(&tag);
	lock = BufMappingPartitionLock(hash);
	LWLockAcquire(lock, LW_SHARED);
	id = BufTableLookup(&tag, hash);
	LWLockRelease(lock);
	return id >= 0;
}

/*
 * Check, once per process, what this module reads of a buffer against
 * what bufmgr.h's public functions say of it: buf is pinned, and holds
 * block of rel's fork, just read.  A mismatch means that the buffer
 * headers are no longer laid out as this module expects: dumps would
 * record wrong blocks, and restores misjudge what shared buffers hold.
 */
void
wc_check_buffer_reading(Relation rel, ForkNumber fork, BlockNumber block,
						Buffer buf)
{
	static bool checked = false;
	WcBufferPage page;
	Oid			db;
	Oid			spc;
	RelFileNumber relnumber;
	ForkNumber	tag_fork;
	BlockNumber tag_block;
	const char *problem = NULL;

	if (checked || !BufferIsValid(buf) || BufferIsLocal(buf))
		return;
	checked = true;
	wc_buffer_get_tag(buf, &db, &spc, &relnumber, &tag_fork, &tag_block);
	if (!wc_buffer_page(buf - 1, &page))
		problem = "a pinned buffer's tag does not read as valid";
	else if (page.db != db || page.spc != spc ||
			 page.relnumber != relnumber || page.fork != tag_fork ||
			 page.block != tag_block || tag_fork != fork || tag_block != block)
		problem = "a buffer's tag does not name the block BufferGetTag() names";
	else if (page.usage < 1 || page.usage > WC_BUFFER_MAX_USAGE)
		problem = "a buffer just read has a usage count out of range";
	else if (page.permanent !=
			 (rel->rd_rel->relpersistence == RELPERSISTENCE_PERMANENT ||
			  fork == INIT_FORKNUM))
		problem = "a buffer's permanent bit does not match its relation";
	else if (wc_buffer_unused(buf - 1))
		problem = "a pinned buffer reads as unused";
	else if (!wc_block_in_buffers(rel, fork, block))
		problem = "the buffer mapping table does not find a pinned block";
	if (problem != NULL)
		ereport(WARNING,
				(errmsg("PostgreSQL's buffer headers are not laid out as pg_warmcache expects"),
				 errdetail("In buffer %d: %s.", buf, problem),
				 errhint("Dumps may record wrong blocks.  Report this with the PostgreSQL version.")));
}

/*---- Other backends' PGPROCs ----*/

/* Whether this process's look at its own PGPROC passed: 0 not yet made. */
static int	proc_check = 0;

#if PG_VERSION_NUM < 170000
/*
 * Up to 16, the pid found stale in each PGPROC, whose process exited; a
 * PGPROC is confirmed again once a second, in case its process was only
 * starting (its pid is set before it enters the process array).
 */
#define WC_STALE_FORGET_MS	1000
static int *stale_pid = NULL;
static TimestampTz stale_since = 0;

/*
 * And the pid confirmed to run in each PGPROC, trusted for 100 ms: each
 * confirmation takes ProcArrayLock, which every commit up to 16 takes in
 * exclusive mode, and a look every 2 ms may count as many backends as
 * there are CPUs.  A process that exits meanwhile is counted for at most
 * that long.
 */
#define WC_CONFIRMED_FORGET_MS	100
static int *confirmed_pid = NULL;
static TimestampTz confirmed_since = 0;
#endif

/*
 * Look at our own PGPROC through the same reads as at the others', and
 * compare with the public answers: BackendPidGetProc(), and the wait event
 * that pgstat_report_wait_start() sets.
 */
static void
check_own_proc(void)
{
	PGPROC	   *first = ProcGlobal->allProcs;
	const char *problem = NULL;

	if (MyProc == NULL || MyProc < first || MyProc >= first + MaxBackends)
		problem = "This process's PGPROC is not among the first MaxBackends";
	else if (*((volatile int *) &MyProc->pid) != MyProcPid)
		problem = "This process's PGPROC does not hold its pid";
	else if (BackendPidGetProc(MyProcPid) != MyProc)
		problem = "BackendPidGetProc() returns another PGPROC for this process";
	else
	{
		uint32		during;
		uint32		after;

		pgstat_report_wait_start(WAIT_EVENT_PG_SLEEP);
		during = UINT32_ACCESS_ONCE(MyProc->wait_event_info);
		pgstat_report_wait_end();
		after = UINT32_ACCESS_ONCE(MyProc->wait_event_info);
		if (during != WAIT_EVENT_PG_SLEEP || after != 0)
			problem = "This process's PGPROC does not show the wait event it reports";
	}
	if (problem != NULL)
	{
		proc_check = -1;
		ereport(WARNING,
				(errmsg("PostgreSQL's process array is not laid out as pg_warmcache expects"),
				 errdetail("%s.", problem),
				 errhint("The restore and the dump no longer give way to queries.  Report this with the PostgreSQL version.")));
		return;
	}
	proc_check = 1;
#if PG_VERSION_NUM < 170000
	stale_pid = MemoryContextAllocZero(TopMemoryContext,
									   MaxBackends * sizeof(int));
	confirmed_pid = MemoryContextAllocZero(TopMemoryContext,
										   MaxBackends * sizeof(int));
	stale_since = confirmed_since = GetCurrentTimestamp();
#endif
}

/*
 * Begin a look at the other backends: returns the number of PGPROCs to
 * pass to wc_backend_seen(), 0 if they are not to be read.
 */
int
wc_backend_look(void)
{
	if (proc_check == 0)
		check_own_proc();
	if (proc_check < 0)
		return 0;
#if PG_VERSION_NUM < 170000
	{
		TimestampTz now = GetCurrentTimestamp();

		if (TimestampDifferenceExceeds(stale_since, now, WC_STALE_FORGET_MS))
		{
			memset(stale_pid, 0, MaxBackends * sizeof(int));
			stale_since = now;
		}
		if (TimestampDifferenceExceeds(confirmed_since, now,
									   WC_CONFIRMED_FORGET_MS))
		{
			memset(confirmed_pid, 0, MaxBackends * sizeof(int));
			confirmed_since = now;
		}
	}
#endif
	return MaxBackends;
}

/*
 * What the PGPROC at slot shows: false if it is free, ours, or known
 * stale.  The pid and wait event are read without a lock, as
 * pg_stat_activity reads them: a stale value delays the answer by one
 * look.  Up to 16 a PGPROC that shows a pid may be one whose process
 * exited: wc_backend_confirmed() tells.
 */
bool
wc_backend_seen(int slot, int *pid, uint32 *wait_event_info)
{
	PGPROC	   *proc = &ProcGlobal->allProcs[slot];

	*pid = *((volatile int *) &proc->pid);
	if (*pid == 0 || *pid == MyProcPid)
		return false;
#if PG_VERSION_NUM < 170000
	if (stale_pid[slot] == *pid)
		return false;
#endif
	*wait_event_info = UINT32_ACCESS_ONCE(proc->wait_event_info);
	return true;
}

/*
 * Whether the process that the PGPROC at slot showed as pid still runs.
 * From 17 on a pid shown is one in use.  Up to 16 the process array
 * confirms it, under ProcArrayLock in shared mode; a PGPROC found stale is
 * passed over by wc_backend_seen() for the next second, and one confirmed
 * is not asked about again for the next 100 ms.
 */
bool
wc_backend_confirmed(int slot, int pid)
{
#if PG_VERSION_NUM >= 170000
	return true;
#else
	if (confirmed_pid[slot] == pid)
		return true;
	if (BackendPidGetProc(pid) == &ProcGlobal->allProcs[slot])
	{
		confirmed_pid[slot] = pid;
		return true;
	}
	stale_pid[slot] = pid;
	return false;
#endif
}
