/*-------------------------------------------------------------------------
 *
 * worker.c
 *		What the module's background workers share: the set-up of a dynamic
 *		worker, whether the server is shutting down, and the cancel of the
 *		autowarm worker, which stops the restore it leads.
 *
 * The autowarm worker (autowarm.c) and the restore leader that runs in it
 * (restore.c) both need to know whether a shutdown request is the server's
 * or someone's pg_terminate_backend(), and whether a cancel came; the
 * restore leader, the standby channel and their workers are started the
 * same way.  These pieces are here, below all of them.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/pmsignal.h"
#include "utils/backend_status.h"
#include "utils/pidfile.h"

#include "compat.h"
#include "worker.h"

volatile sig_atomic_t wc_cancel_pending = false;

/*
 * Fill in a dynamic background worker of this module that connects to a
 * database, starts once the server is consistent and is never restarted;
 * the caller names it and gives its argument.  It tells this process when
 * it started and stopped.
 */
void
wc_init_dynamic_worker(BackgroundWorker *worker, const char *function,
					   const char *type)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION | WC_BGWORKER_INTERRUPTIBLE;
	worker->bgw_start_time = BgWorkerStart_ConsistentState;
	worker->bgw_restart_time = BGW_NEVER_RESTART;
	strcpy(worker->bgw_library_name, "pg_warmcache");
	strlcpy(worker->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker->bgw_type, type, BGW_MAXLEN);
	worker->bgw_notify_pid = MyProcPid;
}

/*
 * Is the server shutting down?  The postmaster marks its lock file
 * "stopping" before it signals its children to stop (smart, fast and
 * immediate shutdown alike), so a SIGTERM that does not find it so came
 * from someone else.  A lock file that cannot be read, or a postmaster
 * that is gone, count as shutting down: nothing is to come back then.
 */
bool
wc_server_stopping(void)
{
	FILE	   *fp;
	char		line[2 * MAXPGPATH];
	int			lineno = 0;
	bool		stopping = true;

	if (!PostmasterIsAlive())
		return true;
	fp = AllocateFile("postmaster.pid", "r");
	if (fp == NULL)
		return true;
	while (fgets(line, sizeof(line), fp) != NULL)
	{
		if (++lineno == LOCK_FILE_LINE_PM_STATUS)
		{
			stopping = strncmp(line, PM_STATUS_STOPPING,
							   strlen(PM_STATUS_STOPPING)) == 0;
			break;
		}
	}
	FreeFile(fp);
	return stopping;
}

/*
 * How many of the server's processes are of this type now, as
 * pg_stat_activity shows them: from a snapshot of the backends' status,
 * dropped again at once so that the next count reads afresh.  A process
 * still starting up, that has not reported its status yet, is not counted.
 */
int
wc_count_processes(BackendType type)
{
	int			n = pgstat_fetch_stat_numbackends();
	int			count = 0;
	int			i;

	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *entry = WC_LOCAL_BEENTRY(i);

		if (entry != NULL && entry->backendStatus.st_backendType == type)
			count++;
	}
	pgstat_clear_backend_activity_snapshot();
	return count;
}
